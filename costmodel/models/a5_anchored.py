"""The anchored A5 model: the pipeline simulation of an unmeasured op, corrected at the request's own tiles and loop
form by what the measured ops need there.

The pipeline model prices any VF program from class parameters, but at a given shape it is off for every op in much
the same way (startup, loop entries and row overheads are shared by all elementwise programs of one loop form),
while the formula model reproduces the measured ops at that shape closely. So an op without formula parameters
(TRSQRT: two SFU ops per chunk, like no measured op) is priced as

    pipeline(op) + mean over anchors A of (formula(A) - pipeline(A)),

the anchors being the measured elementwise ops with their own formula parameters on the request's dtype, lowered
on the same tiles in the same loop form (a reduction's anchors walk its source tile). With every op of the A5 file
left out in turn, this prices the left-out op at 1.5 % MAPE on average against 2.1 % for the pipeline alone
(benchmarks/a5_pipeline.py).

An elementwise op is never priced below an anchor whose per-chunk work its own contains (`chunk_work`: TDIV's two
loads, divide and store hold TRECIP's load, divide and store; TSUBRELU's hold TSUB's): such a chunk issues all the
anchor's instructions and more, so it cannot take fewer cycles (inferred from costmodel.md §8: extra ops only add
issue slots). The mean correction alone put TDIV f32 64x64 9.5 cycles below the measured TRECIP. A measured op on
a dtype nobody measured it on (TSUB f16, priced by TSUB f32's rows) is no anchor, but floors the ops that contain it
all the same (`floors`): this tool's own price of the smaller op bounds the larger one's.
"""
from __future__ import annotations

import functools

import numpy as np

from ..errors import PtoCostError
from ..isa_a5 import VfProgram
from ..lower.a5.reduce import REDUCE_FAMILIES
from ..plan import Plan
from ..request import Request
from .a5_features import chunk_work, contains_work
from .a5_formula import A5FormulaModel, formula_beyond
from . import provenance
from .a5_pipeline import PipelineModel
from .params import ParamTable, shipped

ANCHOR_FAMILIES = ("unary", "binary", "binary_scalar")  # one load or two, one store, ops per chunk in between
CORRECTION = "measured_op_correction"
FLOOR = "measured_subset_floor"  # what lifts the price to an anchor whose chunk work the op's contains
# mean difference, anchor names, their formula prices, the anchors whose formula runs beyond their measured extent
Correction = tuple[float, tuple[str, ...], tuple[float, ...], tuple[str, ...]]
CORRECTIONS_KEPT = 100_000  # corrections an instance keeps (a sweep's distinct anchor requests)


@functools.lru_cache(maxsize=8)
def _measured_ops(table: ParamTable) -> tuple[str, ...]:
    """Ops of an anchor family with formula rows of their own in `table`."""
    from ..catalog import instruction

    names = {r.name for r in table.rows if r.arch == "a5" and r.form == "vf" and r.scope == "op"}
    out = []
    for n in sorted(names):
        try:
            if instruction(n).family in ANCHOR_FAMILIES:
                out.append(n)
        except PtoCostError:
            continue
    return tuple(out)


def anchor_tile(req: Request):
    """Return the tile whose shape and valid region the anchors take: dst, or for a reduction the source it walks
    (every valid source element is loaded and combined once, as an elementwise op walks its tile; inferred)."""
    return req.tile("src") if req.family in REDUCE_FAMILIES else req.dst


def anchor_rows(req: Request) -> int:
    """Return the rows of `anchor_tile` the anchors take: all of them, except for a reduction whose source is too
    large for three tiles of it (a binary anchor's) to sit side by side in the unified buffer — then as many rows as
    fit, and the correction is scaled to the valid rows (`correction`), so it does not vanish past a tile size."""
    t = anchor_tile(req)
    if req.family not in REDUCE_FAMILIES:
        return t.rows
    return int(rows_that_fit(t.rows, t.row_stride * t.dtype.bits // 8))


def rows_that_fit(rows, row_bytes):
    """Return how many of a source's rows (scalars or arrays), of `row_bytes` bytes each, fit the unified buffer three
    times side by side, at least one (`anchor_rows`)."""
    from ..arch import constants

    # 96: the alignment three tiles may take, once per tile (QA 54: it was counted once per row, 16 rows for 17)
    return np.maximum(1, np.minimum(rows, (constants("a5").ub_bytes - 96) // (3 * row_bytes)))


def anchor_request(op: str, req: Request, strategy: str, rows: int | None = None) -> Request:
    """Return the request of anchor `op` on `req`'s tiles (`anchor_tile`: shape and valid region; its first `rows`
    rows if given), source dtype, static or dynamic valid shape, in loop form `strategy` (raises PtoCostError where
    `op` cannot take them)."""
    from ..operands import make_request

    t = anchor_tile(req)
    r = t.rows if rows is None else rows
    return make_request(op, (r, t.cols), req.dtype.name, arch="a5", valid=(min(t.valid_rows, r), t.valid_cols),
                        static_valid=t.static_valid, strategy=strategy)


def anchor_plans(req: Request, strategy: str, table: ParamTable, rows: int | None = None,
                 ops: tuple[str, ...] | None = None, own: bool = True) -> list[tuple[Request, Plan, tuple]]:
    """Return (request, plan, (P, D) formula coefficients) of every anchor of `req` in loop form `strategy`: the
    measured ops (or those of `ops`) that take `req`'s tiles (their first `rows` rows) there and whose own formula
    key in `table` prices them — or, with `own` False, whose family's or body's rows do (a measured op on a dtype
    nobody measured it on: a floor, not an anchor)."""
    from .. import lower
    from .a5_features import body_signature
    from .a5_formula import key_of, lookup

    out = []
    for op in _measured_ops(table) if ops is None else ops:
        if op == req.op:
            continue
        try:
            a = anchor_request(op, req, strategy, rows)
            p = lower.lower(a, strategy)
        except PtoCostError:
            continue
        found = lookup(table, key_of(a, strategy), body_signature(p)) if p.strategy == strategy else None
        if found is not None and (found[2] == "key") == own:
            out.append((a, p, found[:2]))
    return out


class AnchoredPipeline:
    """Pipeline cycles plus the mean formula-minus-pipeline difference of the measured anchor ops (module doc)."""

    name = "anchored"  # "pipeline" after pricing a plan no anchor could take

    def __init__(self, table: ParamTable | None = None, pipeline: PipelineModel | None = None):
        self.formula = A5FormulaModel(table)
        self.pipeline = pipeline or PipelineModel()
        self.source = self.source_note = self.group_note = ""  # group_note: as A5FormulaModel's
        self.anchors: tuple[str, ...] = ()
        self._corrections: dict[tuple, Correction] = {}
        self._works: dict[tuple, tuple] = {}
        self._floors: dict[tuple, tuple] = {}

    @property
    def table(self) -> ParamTable:
        return self.formula.table or shipped()

    def correction(self, plan: Plan) -> Correction:
        """Return (mean formula - pipeline cycles of the anchors on the plan's tiles and loop form, their names, their
        formula cycles there); (0, (), ()) when no anchor can be priced there. Kept per anchor request (everything
        `anchor_request` reads, and the op itself where it is one of the measured ops it leaves out), so ops priced
        on the same tiles share it."""
        hit = self._corrections.get(self._key(plan.request, plan.strategy))
        if hit is None:
            diffs, names, prices, far = [], [], [], []
            rows = anchor_rows(plan.request)
            for a, p, _ in anchor_plans(plan.request, plan.strategy, self.table, rows):
                prices.append(self.formula.cost(p)[0])
                diffs.append(prices[-1] - self.pipeline.cycles(p))
                names.append(a.op)
                if formula_beyond(self.table, a, p):
                    far.append(a.op)
            valid = anchor_tile(plan.request).valid_rows
            scale = valid / min(valid, rows) if valid else 1.0  # the anchors took fewer rows than the source has
            hit = ((scale * sum(diffs) / len(diffs), tuple(names), tuple(prices), tuple(far)) if diffs else
                   (0.0, (), (), ()))
            self.remember(plan.request, plan.strategy, hit)
        return hit

    def remember(self, req: Request, strategy: str, correction: Correction) -> None:
        """Keep the correction of `req`'s anchors in `strategy` (computed here, or in closed form by a sweep)."""
        if len(self._corrections) >= CORRECTIONS_KEPT:
            self._corrections.clear()
        self._corrections[self._key(req, strategy)] = correction

    def _key(self, req: Request, strategy: str) -> tuple:
        # the rows the anchors take too: a reduction's anchors may take fewer than its source has (`anchor_rows`, the
        # correction then scaled), an elementwise op's on a tile of the same shape all of them (a sweep of TRSQRT
        # and TROWSUM on 128x192 f32 priced TROWSUM with TRSQRT's correction, 1138 cycles against 1127)
        table, d = self.table, anchor_tile(req)
        return (table, req.op if req.op in _measured_ops(table) else "", req.dtype.name, d.rows, d.cols, d.valid,
                d.static_valid, strategy, anchor_rows(req))

    def contained(self, plan: Plan, names: tuple[str, ...]) -> tuple[bool, ...]:
        """Per anchor of `names`: whether the plan's per-chunk work contains the anchor's on the plan's tiles and
        loop form (never for a reduction, whose anchors walk its source, not its work)."""
        if plan.request.family in REDUCE_FAMILIES:
            return (False,) * len(names)
        own = chunk_work(plan)
        return tuple(contains_work(own, self._anchor_work(n, plan.request, plan.strategy)) for n in names)

    def _anchor_work(self, op: str, req: Request, strategy: str) -> tuple:
        """The per-chunk work of anchor `op` on `req`'s tiles in `strategy`, kept per (op, dtype, strategy): the
        chunk body of an elementwise form does not change with the tiles."""
        from .. import lower

        key = (op, req.dtype.name, strategy)
        if key not in self._works:
            try:
                self._works[key] = chunk_work(lower.lower(anchor_request(op, req, strategy), strategy))
            except PtoCostError:  # not on these tiles (another size may take it): no work, contained in nothing
                return ()
        return self._works[key]

    def floors(self, plan: Plan) -> tuple[tuple[float, str, bool], ...]:
        """Return (formula cycles, name, whether that price is extrapolated) of each measured op that is no anchor of
        the plan — its own rows do not price the plan's dtype, its family's or body's do — and whose per-chunk work
        the plan's contains, on the plan's tiles and loop form: the op is never priced below what this tool says such
        an op costs either (TSUBRELU f16 holds TSUB f16's work, priced by TSUB f32's rows, and sat 1 cycle below
        it)."""
        req, strategy = plan.request, plan.strategy
        if req.family in REDUCE_FAMILIES:
            return ()
        own = chunk_work(plan)
        ops = tuple(n for n in _measured_ops(self.table) if n != req.op and n not in self.anchors
                    and contains_work(own, self._anchor_work(n, req, strategy)))
        if not ops:
            return ()
        key = (self._key(req, strategy), ops)
        if key not in self._floors:
            if len(self._floors) >= CORRECTIONS_KEPT:
                self._floors.clear()
            self._floors[key] = tuple((self.formula.cost(p)[0], a.op, formula_beyond(self.table, a, p))
                                      for a, p, _ in anchor_plans(req, strategy, self.table, ops=ops, own=False))
        return self._floors[key]

    def cost(self, plan: Plan) -> tuple[float, tuple[tuple[str, float], ...]]:
        """Return (cycles, breakdown): the pipeline's parts plus the anchors' correction (and the lift to the
        containing anchors' floor where it binds)."""
        cycles, parts = self.pipeline.cost(plan)
        total, extra = self._correct(plan, cycles)
        return total, parts + extra

    def cycles(self, plan: Plan) -> float:
        """Return `cost`'s cycles alone (the pipeline's fast path, see PipelineModel.cycles)."""
        return self._correct(plan, self.pipeline.cycles(plan))[0]

    @property
    def provenance(self) -> dict:
        """The pipeline parameters' provenance, and the formula table's where anchors corrected the last plan."""
        out = dict(self.pipeline.provenance)
        if self.anchors:
            out["anchors"] = provenance.table(self.table.path, rows="the formula rows of " + ", ".join(self.anchors))
        return out

    def _correct(self, plan: Plan, cycles: float) -> tuple[float, tuple[tuple[str, float], ...]]:
        """The plan's cycles from the pipeline's `cycles` and its anchors, with the breakdown parts the anchors add,
        naming the model and its source accordingly."""
        if not any(isinstance(p, VfProgram) for p in plan.body):  # an early return (an empty reduction) issues nothing
            self.name, self.source, self.source_note, self.group_note, self.anchors = "anchored", "", "", "", ()
            return cycles, ()
        corr, self.anchors, prices, far = self.correction(plan)
        if self.anchors:
            self.name, self.source = "anchored", "anchors"
            self.source_note, self.group_note = self._anchored_notes(plan.request, corr, far)
            total, extra = cycles + corr, ((CORRECTION, corr),)
        else:
            self.name, self.source = self.pipeline.name, ""
            self.source_note = self.group_note = (
                f"the pipeline simulation alone: no op measured on {plan.request.dtype.name} takes these tiles in "
                "this loop form to anchor it" if _measured_ops(self.table) else
                "the pipeline simulation alone: the formula table in use has no A5 op rows to anchor it (a table "
                "fitted on A2/A3 traces only, or cut short?)")
            total, extra = cycles, ()
        inside = [(p, n) for p, n, c in zip(prices, self.anchors, self.contained(plan, self.anchors)) if c]
        floors = self.floors(plan)
        inside += [(p, n) for p, n, _ in floors]
        if inside:
            floor, by = max(inside)
            floor_note = (f"; never below the formula price of {', '.join(n for _, n in inside)}, whose per-chunk "
                          "work it contains")
            self.group_note += floor_note
            self.source_note += floor_note
            if floor > total:
                far = set(far) | {n for _, n, beyond in floors if beyond}
                self.source_note += (f" (raised to {by}'s {floor:.1f}" +
                                     (f", itself a formula price beyond {by}'s measured rows)" if by in far else ")"))
                total, extra = floor, extra + ((FLOOR, floor - total),)
        return total, extra

    def _anchored_notes(self, req: Request, corr: float, far: tuple[str, ...]) -> tuple[str, str]:
        """Return (the request's note, its group's) on the correction `corr` by the anchors: which, on what, and
        which of them (`far`) are priced beyond where they were measured."""
        where = "the same tiles"
        if req.family in REDUCE_FAMILIES:
            rows, valid = anchor_rows(req), anchor_tile(req).valid_rows
            where = ("the source tile" if rows >= anchor_tile(req).rows else
                     f"the first {rows} rows of the source tile (three tiles of it fit the unified buffer), scaled "
                     f"to its {valid} valid rows")
        what = (f"the mean formula - pipeline difference of the measured {', '.join(self.anchors)} in this loop form "
                "on {}")
        who = ("every one of them runs beyond its" if len(far) == len(self.anchors) > 1 else
               f"{far[0]} runs beyond its" if len(far) == 1 else f"{', '.join(far)} run beyond their") if far else ""
        beyond = f"; {who} measured rows here, so the correction rests on extrapolated formula prices" if far else ""
        return (f"the pipeline simulation corrected by {corr:+.1f} cycles, {what.format(where)}{beyond}",
                "the pipeline simulation corrected by measured_op_correction, " +
                what.format("the source tile, or the rows of it that fit" if req.family in REDUCE_FAMILIES else where)
                + beyond)
