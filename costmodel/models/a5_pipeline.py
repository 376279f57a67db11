"""A5 pipeline cost model: simulate a plan's VF program on the fitted `A5Uarch` (costmodel.md §8 machine).

The engine (`a5_pipeline_engine`) is exact but costs time per dynamic instruction, so trip counts are clipped and
the result extended linearly: once a loop's schedule is periodic, cycles grow by a fixed period per extra
iteration. Each *shape* loop (role rows / chunks / elements) whose trip n exceeds its clip C is evaluated at
C - s and C and extrapolated from the clipped point B congruent to n modulo s (B in (C - s, C]):
f(n) = f(B) + (n - B) (f(B) - f(B - s)) / s, multilinearly over the loops; exact once the schedule's period
divides s.
Simulations are cached per (program signature, clipped trips), in one cache per process for the parameters in use,
so a sweep of many shapes of one (op, dtype, strategy) costs a few dozen small simulations, and `cycles_for`
evaluates whole arrays of trip counts at once. A program whose shape loops all stay within their first clip is
simulated as is, without the clip search.

Results: cycles; a breakdown along the critical path (startup, frontend, loop_overhead, window, latency, ports,
agu, pack_store, drain) whose terms sum to the cycles; named analytical bounds; the bottleneck (bounds >= 98 %
of the cycles); the recorded trace of the simulation (for the timeline view).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product
from typing import Any

import numpy as np

from ..isa_a5 import VfProgram
from ..plan import Plan
from .a5_pipeline_engine import Template, Trace, compile_program, simulate
from . import provenance
from .a5_pipeline_uarch import A5Uarch, fit_summary, path_in_use, shipped
from .a5_pipeline_views import TERMS, BottleneckView, Timeline, critical_path

SHAPE_ROLES = ("rows", "chunks", "elements")
INNER_CLIP, INNER_SPAN = 48, 12   # innermost shape loops: exact up to 48 trips, slope over the last 12
OUTER_CLIP, OUTER_SPAN = 24, 12   # outer shape loops (rows): exact up to 24, slope over 12 rows (periods 1-4, 6, 12)
BOTTLENECK_SHARE = 0.98
MAX_CLIP = 768                    # beyond this a transient is extrapolated as is
TIMELINE_TRIPS = 4                # a shape loop's trips the recorded timeline trace runs at most


@dataclass(frozen=True)
class PipelineResult:
    """One costed VF program (or the sum over a plan's programs)."""

    cycles: float
    breakdown: tuple[tuple[str, float], ...]
    bounds: tuple[tuple[str, float], ...]
    bottleneck: tuple[str, ...]
    extrapolated: bool
    template: Template | None = field(default=None, repr=False, compare=False)
    trace: Trace | None = field(default=None, repr=False, compare=False)

    def bottleneck_view(self) -> BottleneckView:
        return BottleneckView(self.cycles, self.bounds, self.bottleneck, self.breakdown)

    @property
    def trace_clipped(self) -> bool:
        """Whether the recorded trace (the timeline's) ran a shape loop for fewer trips than the program has: it
        runs each at most TIMELINE_TRIPS, other loops (e.g. a bit-serial sequence's steps) in full."""
        return self.template is not None and any(
            n > TIMELINE_TRIPS for lid, n in enumerate(self.template.trips) if lid in _shape_loops(self.template))

    def timeline(self, max_iterations: int = 2, max_lines: int = 200) -> Timeline:
        return Timeline(self.template, self.trace, max_iterations, max_lines)

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": 1, "model": "pipeline", "cycles": self.cycles, "breakdown": dict(self.breakdown),
                "bounds": dict(self.bounds), "bottleneck": list(self.bottleneck), "extrapolated": self.extrapolated}


def _shape_loops(tpl: Template) -> list[int]:
    return [lp.id for lp in tpl.loops if lp.role in SHAPE_ROLES]


def _inner_outer(tpl: Template) -> tuple[list[int], list[int]]:
    """The template's shape loops: (innermost ones: chunks or 1D iterations, those holding another: rows)."""
    shape = _shape_loops(tpl)
    outer = [lid for lid in shape if _has_nested_shape(tpl, lid)]
    return [lid for lid in shape if lid not in outer], outer


def _has_nested_shape(tpl: Template, lid: int) -> bool:
    def find(body, inside):
        for item in body:
            if item[0] == "L":
                here = inside or item[1] == lid
                if inside and tpl.loops[item[1]].role in SHAPE_ROLES:
                    return True
                if find(item[2], here):
                    return True
        return False

    return find(tpl.body, False)


def _first_clip(tpl: Template, lid: int) -> tuple[int, int]:
    """The (clip, span) a shape loop's clip search starts from; the clip only grows from there."""
    return (OUTER_CLIP, OUTER_SPAN) if _has_nested_shape(tpl, lid) else (INNER_CLIP, INNER_SPAN)


def _base(n, clip: int, span: int):
    """The clipped point congruent to n modulo span (so schedules whose period divides span extrapolate exactly)."""
    return clip - ((clip - n) % span)


def _points(n: int, clip: int, span: int) -> list[tuple[int, float]]:
    """Clipped evaluation points and weights for trip n."""
    if n <= clip:
        return [(n, 1.0)]
    c = _base(n, clip, span)
    a = (n - c) / span
    return [(c - span, -a), (c, 1.0 + a)]


_SHARED: dict[int, tuple[A5Uarch, dict, dict]] = {}
SHARED_LIMIT = 100_000  # simulations kept per process before the shared cache starts afresh


def _shared_caches(ua: A5Uarch) -> tuple[dict, dict]:
    """Return (simulated cycles, clips) of the parameters in use, one pair per process shared by every model that
    reads them, so an estimate's strategies, their anchors and a sweep's per-request path pay each clip search once
    (a model given parameters in memory keeps its own). New parameters (the file changed) start afresh. The cycles
    are numbers only: recorded traces are not shared."""
    hit = _SHARED.get(id(ua))
    if hit is None or hit[0] is not ua or len(hit[1]) > SHARED_LIMIT:
        _SHARED.clear()
        hit = _SHARED[id(ua)] = (ua, {}, {})
    return hit[1], hit[2]


def forget_simulations() -> None:
    """Empty the per-process cache of the parameters in use (a benchmark's cold start)."""
    _SHARED.clear()


class PipelineModel:
    """Prices A5 plans by simulating their VF programs (parameters: the shipped fit unless given)."""

    name = "pipeline"

    def __init__(self, uarch: A5Uarch | None = None):
        self.uarch = uarch
        # (simulated cycles by (signature, trips, mode), clips by signature): the model's own for parameters given,
        # else the process's (`_shared_caches`), looked up once, on first use, so a hit costs no file check
        self._caches: tuple[dict, dict] | None = None if uarch is None else ({}, {})
        self._tpl_cache: dict = {}
        self._records: dict = {}  # recorded traces (~250 kB each) stay with the model that asked for them

    def _pair(self) -> tuple[dict, dict]:
        if self._caches is None:
            self._caches = _shared_caches(shipped())
        return self._caches

    @property
    def _cache(self) -> dict:
        return self._pair()[0]

    @property
    def _clips(self) -> dict:
        return self._pair()[1]

    # ----------------------------------------------------------------------------------------------------
    @property
    def ua(self) -> A5Uarch:
        return self.uarch or shipped()

    @property
    def provenance(self) -> dict:
        """The parameter file in use, its digest and its fit ({} for parameters given in memory)."""
        if self.uarch is not None:
            return {}
        path = path_in_use()
        return {"pipeline": provenance.table(path, fitted_from=fit_summary(path))}

    def template(self, program: VfProgram) -> Template:
        key = id(program)
        hit = self._tpl_cache.get(key)
        if hit is None or hit[0] is not program:
            hit = (program, compile_program(program))
            if len(self._tpl_cache) > 4096:
                self._tpl_cache.clear()
            self._tpl_cache[key] = hit
        return hit[1]

    def clips(self, tpl: Template) -> dict[int, tuple[int, int]]:
        """Clip and span of every shape loop of the template.

        Starting from the default clip, a loop's clip doubles (up to MAX_CLIP) until its slope over the last span
        equals the slope over the span before and is no less than the slope of the dependency chains alone (probed
        with the other shape loops at 1, 2 and 3 trips): a schedule whose window fills slowly, or whose recurrence
        eats a faster start's slack slowly, reaches its period late, and extrapolating from the transient is wrong.
        """
        sig = tpl.sig_key
        if sig not in self._clips:
            shape = _shape_loops(tpl)
            out = {}
            for lid in shape:
                clip, span = _first_clip(tpl, lid)
                for k in (1, 2, 3):  # the other shape loops at 1 (flattened), 2 and 3 trips
                    probe = list(tpl.trips)
                    for other in shape:
                        if other != lid:
                            probe[other] = k

                    def f(n, mode="fast", probe=probe):
                        probe[lid] = n
                        return self._sim(tpl, tuple(probe), mode)

                    while clip < MAX_CLIP:
                        a, b, c = f(clip - 2 * span), f(clip - span), f(clip)
                        tol = 1e-6 * max(1.0, abs(c))
                        # below the slope of its dependency recurrences alone, a schedule is still eating the slack
                        # of a faster start (TADD: the predicate chain overtakes dispatch after ~55 iterations)
                        recurrence = f(clip, "latency") - f(clip - span, "latency")
                        if abs((c - b) - (b - a)) <= tol and c - b >= recurrence - tol:
                            break
                        clip *= 2
                    if len(shape) == 1:
                        break
                out[lid] = (clip, span)
            self._clips[sig] = out
        return self._clips[sig]

    def _sim(self, tpl: Template, trips: tuple[int, ...], mode: str):
        key = (tpl.sig_key, trips, mode)
        cache = self._records if mode == "record" else self._cache
        hit = cache.get(key)
        if hit is None:
            if mode == "record":
                c, tr = simulate(tpl, trips, self.ua, record=True)
                hit = (c, critical_path(tr), tr)
            else:
                hit = simulate(tpl, trips, self.ua, latency_only=(mode == "latency"))[0]
            cache[key] = hit
        return hit

    def combination(self, tpl: Template, trips: tuple[int, ...]) -> list[tuple[tuple[int, ...], float]]:
        """The clipped trip vectors and weights whose weighted sum of cycles extrapolates `trips`."""
        if all(trips[lid] <= _first_clip(tpl, lid)[0] for lid in _shape_loops(tpl)):
            return [(tuple(trips), 1.0)]  # within every clip the search could settle on: simulated exactly
        clips = self.clips(tpl)
        axes = []
        for lid, n in enumerate(trips):
            axes.append(_points(n, *clips[lid]) if lid in clips else [(n, 1.0)])
        out = []
        for combo in product(*axes):
            w = 1.0
            for _, wk in combo:
                w *= wk
            out.append((tuple(p for p, _ in combo), w))
        return out

    def program_cycles(self, tpl: Template, trips: tuple[int, ...] | None = None, mode: str = "fast") -> float:
        """Cycles of the template at `trips` (extrapolated where a shape loop exceeds its clip)."""
        trips = tpl.trips if trips is None else tuple(trips)
        total = 0.0
        for pts, w in self.combination(tpl, trips):
            v = self._sim(tpl, pts, mode)
            total += w * (v[0] if mode == "record" else v)
        return total

    # ----------------------------------------------------------------------------------------------------
    def simulate_program(self, program: VfProgram, *, trace: bool = True) -> PipelineResult:
        """Cost one VF program: cycles, critical-path breakdown, bounds, bottleneck and (small) trace."""
        tpl = self.template(program)
        trips = tpl.trips
        combo = self.combination(tpl, trips)
        cycles = 0.0
        terms = dict.fromkeys(TERMS, 0.0)
        for pts, w in combo:
            c, cp, _ = self._sim(tpl, pts, "record")
            cycles += w * c
            for k, v in cp.items():
                terms[k] += w * v
        extrapolated = len(combo) > 1 or combo[0][0] != trips
        tr = None
        if trace:
            small = tuple(min(n, TIMELINE_TRIPS) if lid in _shape_loops(tpl) else n for lid, n in enumerate(trips))
            tr = self._sim(tpl, small, "record")[2]
        bounds = self.bounds(tpl, trips)
        neck = tuple(name for name, v in bounds if cycles > 0 and v >= BOTTLENECK_SHARE * cycles)
        return PipelineResult(cycles, tuple((k, v) for k, v in terms.items() if abs(v) > 1e-9), bounds, neck,
                              extrapolated, tpl, tr)

    def simulate(self, plan: Plan, *, trace: bool = True) -> PipelineResult:
        """Cost every VF program of the plan (their cycles, terms and bounds add up)."""
        progs = [p for p in plan.body if isinstance(p, VfProgram)]
        if not progs:
            return PipelineResult(0.0, (), (), (), False)
        results = [self.simulate_program(p, trace=trace) for p in progs]
        if len(results) == 1:
            return results[0]
        terms: dict[str, float] = {}
        bounds: dict[str, float] = {}
        for r in results:
            for k, v in r.breakdown:
                terms[k] = terms.get(k, 0.0) + v
            for k, v in r.bounds:
                bounds[k] = bounds.get(k, 0.0) + v
        cycles = sum(r.cycles for r in results)
        neck = tuple(k for k, v in bounds.items() if v >= BOTTLENECK_SHARE * cycles)
        return PipelineResult(cycles, tuple(terms.items()), tuple(bounds.items()), neck,
                              any(r.extrapolated for r in results), results[0].template, results[0].trace)

    def cost(self, plan: Plan) -> tuple[float, tuple[tuple[str, float], ...]]:
        """Return (cycles, breakdown) — the Estimate contract; the breakdown terms sum to the cycles."""
        r = self.simulate(plan, trace=False)
        return r.cycles, r.breakdown

    def cycles(self, plan: Plan) -> float:
        """Return the plan's cycles alone, equal to `cost`'s: no breakdown, bounds or trace (the sweep's
        per-request path), so simulations run in their fast mode and share the cache `cycles_for` fills."""
        total = 0.0
        for p in plan.body:
            if isinstance(p, VfProgram):
                total += self.program_cycles(self.template(p))
        return total

    # ----------------------------------------------------------------------------------------------------
    def bounds(self, tpl: Template, trips: tuple[int, ...]) -> tuple[tuple[str, float], ...]:
        """Named lower bounds (Facile style) at full trip counts; each is <= the simulated cycles."""
        ua = self.ua
        S, D = ua.startup, ua.drain
        counts = dynamic_counts(tpl, trips)
        n_total = sum(counts)
        if n_total == 0:
            return (("frontend", S + D),)
        lat = {"load": ua.load_latency, "store": ua.store_latency, "scalar": ua.scalar_latency, "pred": ua.pred_latency}
        ii = {"load": ua.load_ii, "store": ua.store_ii, "scalar": ua.scalar_ii, "pred": ua.pred_ii}
        for ins in tpl.instrs:
            if ins.unit == "exu":
                lat[ins.cls], ii[ins.cls] = ua.vector(ins.cls)
        present = [k for k, ins in enumerate(tpl.instrs) if counts[k]]
        min_lat = min(lat[tpl.instrs[k].cls] for k in present)
        out: dict[str, float] = {}
        entries, chain = loop_front_end(tpl, trips, ua)
        out["frontend"] = S + D + min_lat + max((n_total - 1) / ua.dispatch_width + entries * ua.loop_entry, chain)

        def pool_bound(name, pick, ports):
            ks = [k for k in present if pick(tpl.instrs[k])]
            if not ks:
                return
            occ = sum(counts[k] * ii[tpl.instrs[k].cls] for k in ks)
            ii_max = max(ii[tpl.instrs[k].cls] for k in ks)
            lmin = min(lat[tpl.instrs[k].cls] for k in ks)
            out[name] = S + D + max(0.0, occ / ports - ii_max) + lmin

        pool_bound("exu_alu", lambda i: i.unit == "exu" and not i.cls.startswith("sfu") and not i.exu0, ua.exu_ports)
        pool_bound("exu_sfu", lambda i: i.unit == "exu" and i.cls.startswith("sfu"), ua.exu_ports)
        pool_bound("exu0", lambda i: i.unit == "exu" and i.exu0, 1)
        pool_bound("load_ports", lambda i: i.unit == "load", ua.load_ports)
        pool_bound("store_port", lambda i: i.unit == "store", ua.store_ports)
        pool_bound("scalar_unit", lambda i: i.unit == "scalar", 1)
        pool_bound("pred_unit", lambda i: i.unit == "pred", 1)
        agu = [k for k in present if tpl.instrs[k].agu]
        if agu:
            n_agu = sum(counts[k] for k in agu)
            out["agu"] = S - ua.agu_lead + D + (n_agu - 1) * ua.agu_ii + min(lat[tpl.instrs[k].cls] for k in agu)
        out["latency"] = self.program_cycles(tpl, trips, mode="latency")
        return tuple(out.items())

    def _fill_prefixes(self, tpl: Template, base: list[int], values: dict[int, list[int]]) -> None:
        """Cache the cycles of every needed trip count of the last top-level shape loop from one simulation each.

        When the program ends with a shape loop L, the program with L cut to k >= 2 trips is a prefix of the
        program with L at its largest needed trip count (in-order dispatch: see `simulate(prefixes=...)`), so one
        simulation per combination of the other loops' trips gives all of them (a 2D sweep simulated its rows
        1..24 one by one before).
        """
        last = tpl.body[-1] if tpl.body else None
        if last is None or last[0] != "L" or last[1] not in values:
            return
        lid = last[1]
        ks = [k for k in values[lid] if k >= 2]
        if len(ks) < 2:
            return
        top = max(ks)
        others = [o for o in values if o != lid]
        for combo in product(*(values[o] for o in others)):
            trips = list(base)
            for o, p in zip(others, combo):
                trips[o] = int(p)
            keys = {}
            for k in ks:
                trips[lid] = int(k)
                keys[k] = (tpl.sig_key, tuple(trips), "fast")
            if all(key in self._cache for key in keys.values()):
                continue
            trips[lid] = int(top)
            marks: list[float] = []
            total = simulate(tpl, tuple(trips), self.ua, prefixes=(lid, marks))[0]
            ends = {k + 1: v for k, v in enumerate(marks)}  # cycles after k + 1 completed iterations
            ends[top] = total
            for k, key in keys.items():
                self._cache.setdefault(key, ends[k])

    def warm(self, programs) -> None:
        """Run, in few simulations, those `cycles` of these programs will read: programs that differ only in the
        trips of their shape loops are grouped and each group goes through `cycles_for` (a group's row counts come
        from one simulation per chunk count). Only the cache is filled, keyed by exact trip counts, so the cycles do
        not change; a program whose inner (or outer) shape loops run different trip counts is left to `cycles`."""
        groups: dict[tuple, tuple[VfProgram, list[int], list[int]]] = {}
        for p in programs:
            tpl = self.template(p)
            inner_ids, outer_ids = _inner_outer(tpl)
            shape = inner_ids + outer_ids
            trips = tpl.trips
            ins, outs = {trips[i] for i in inner_ids}, {trips[i] for i in outer_ids}
            if not inner_ids or len(ins) > 1 or len(outs) > 1 or min(trips[lid] for lid in shape) < 1:
                continue
            fixed = tuple(n for lid, n in enumerate(trips) if lid not in shape)
            _, inner, outer = groups.setdefault((tpl.sig_key, fixed), (p, [], []))
            inner.append(ins.pop())
            outer.append(outs.pop() if outs else 0)
        for p, inner, outer in groups.values():
            self.cycles_for(p, inner=inner, outer=outer if any(outer) else None)

    # ----------------------------------------------------------------------------------------------------
    def cycles_for(self, program: VfProgram, *, inner=None, outer=None) -> np.ndarray:
        """Vectorised cycles of `program`'s loop nest for arrays of trip counts.

        `inner` = trips of the innermost shape loop (chunks per row, or 1D iterations), `outer` = trips of the
        row loop (2D). Every other loop keeps the program's own trip count. Trip counts must be >= 1.
        """
        tpl = self.template(program)
        inner_ids, outer_ids = _inner_outer(tpl)
        arrays = {}
        for ids, vals, what in ((inner_ids, inner, "inner"), (outer_ids, outer, "outer")):
            if vals is None:
                continue
            if not ids:
                raise ValueError(f"this program has no {what} shape loop")
            for lid in ids:
                arrays[lid] = np.asarray(vals, dtype=np.int64)
        if not arrays:
            return np.full(1, self.program_cycles(tpl))
        n = np.broadcast_shapes(*(a.shape for a in arrays.values()))
        arrays = {k: np.broadcast_to(v, n) for k, v in arrays.items()}
        if any((v < 1).any() for v in arrays.values()):
            raise ValueError("trip counts must be >= 1")
        first = {lid: _first_clip(tpl, lid) for lid in arrays}
        small = all((v <= first[lid][0]).all() for lid, v in arrays.items())
        clips = first if small else self.clips(tpl)  # as `combination`: no search where every trip is exact
        base = list(tpl.trips)
        lids = sorted(arrays)
        # per loop: (low point, high point, weight of high point); exact trips have low == high
        per = {}
        for lid in lids:
            c, s = clips[lid]
            v = arrays[lid]
            big = v > c
            b = _base(v, c, s)
            lo = np.where(big, b - s, v)
            hi = np.where(big, b, v)
            a = np.where(big, (v - b) / s, 0.0)
            per[lid] = (lo, hi, a)
        # distinct clipped points, simulated once each
        grid_vals = {lid: np.unique(np.concatenate([per[lid][0], per[lid][1]])) for lid in lids}
        self._fill_prefixes(tpl, base, {lid: grid_vals[lid].tolist() for lid in lids})
        table = {}
        for combo in product(*(grid_vals[lid].tolist() for lid in lids)):
            trips = base.copy()
            for lid, p in zip(lids, combo):
                trips[lid] = int(p)
            table[combo] = self._sim(tpl, tuple(trips), "fast")
        # gather: multilinear combination of low/high corners
        shape_idx = {lid: {int(p): k for k, p in enumerate(grid_vals[lid].tolist())} for lid in lids}
        dense = np.empty([len(grid_vals[lid]) for lid in lids])
        for combo, v in table.items():
            dense[tuple(shape_idx[lid][p] for lid, p in zip(lids, combo))] = v
        idx_lo = [np.searchsorted(grid_vals[lid], per[lid][0]) for lid in lids]
        idx_hi = [np.searchsorted(grid_vals[lid], per[lid][1]) for lid in lids]
        out = np.zeros(n)
        for corner in product((0, 1), repeat=len(lids)):
            w = np.ones(n)
            idx = []
            for bit, lid, lo, hi in zip(corner, lids, idx_lo, idx_hi):
                a = per[lid][2]
                w = w * (1.0 + a if bit else -a)
                idx.append(hi if bit else lo)
            out += w * dense[tuple(idx)]
        return out


def dynamic_counts(tpl: Template, trips: tuple[int, ...]) -> list[int]:
    """Dynamic issue count of every static instruction at the given trips."""
    counts = [0] * len(tpl.instrs)

    def visit(body, mult):
        for item in body:
            if item[0] == "i":
                counts[item[1]] += mult
            else:
                visit(item[2], mult * max(trips[item[1]], 0))

    visit(tpl.body, 1)
    return counts


def loop_front_end(tpl: Template, trips: tuple[int, ...], ua: A5Uarch) -> tuple[int, float]:
    """(loop instances entered with >= 2 trips, the serial loop-overhead chain of innermost loops in cycles)."""
    entries = 0
    chain = 0.0

    def visit(body, mult):
        nonlocal entries, chain
        for item in body:
            if item[0] != "L":
                continue
            n = trips[item[1]]
            if n <= 0:
                continue
            if n >= 2:
                entries += mult
            lp = tpl.loops[item[1]]
            if lp.innermost:
                chain += mult * ((ua.loop_entry if n >= 2 else 0.0) + (n - 1) * ua.iter_gap)
            visit(item[2], mult * n)

    visit(tpl.body, 1)
    return entries, chain
