"""The A5 VF pipeline engine: schedules one VfProgram on an `A5Uarch` and stamps every dynamic instruction.

Machine (costmodel.md §8, restated; inferred parts marked in `A5Uarch`):

* front end: instructions dispatch in program order, `dispatch_width` per cycle, from `startup` on; entering a
  loop instance of >= 2 trips costs `loop_entry` (a 1-trip loop is flattened); iterations of an innermost loop
  start >= `iter_gap` apart, of an outer loop >= `outer_gap`; dispatch stalls while `window` dispatched
  instructions wait to issue;
* back end: an instruction issues once dispatched, its operands are ready (producer issue + producer class
  latency; vector registers are renamed, so only true dependencies count) and a port of its unit is free for
  its initiation interval (2 EXU ports — EXU0-only ops use port 0; as in VfSim the II spaces ops of the same
  functional unit, ALU or SFU, so an SFU op does not block ALU ops on its port —, 2 load ports, 1 store port, one scalar and
  one predicate port, one address unit for 2D explicit addresses). Ports are reservation tables: a younger
  instruction may fill an earlier gap (out-of-order issue);
* done = issue + latency (stores: `store_latency`); the VF ends `drain` cycles after the last done.

`simulate` returns the end time, and with `record=True` a `Trace` of stamps (dispatch, issue, done) and, per
stamp, the constraint that bound it and the instruction that caused it. Views and the critical-path breakdown
are post-processors of that trace (`a5_pipeline_views`). Nothing here prints.
"""
from __future__ import annotations

import functools
import heapq
from bisect import insort
from dataclasses import dataclass, field

from ..isa_a5 import Addr, Loop, Plds, Plt, PostAddr, PtrAdd, Vlds, Vsts
from .a5_pipeline_uarch import EXU0_ONLY, A5Uarch, vector_class

NEG = float("-inf")
UNITS = ("exu", "load", "store", "scalar", "pred", "agu")


@dataclass(frozen=True)
class SInstr:
    """Timing-relevant facts of one static instruction."""

    text: str
    unit: str                    # exu / load / store / scalar / pred
    cls: str                     # parameter class: a vector class, or load/store/scalar/pred
    srcs: tuple[int, ...]        # register ids read
    dsts: tuple[int, ...]        # register ids written with the class latency
    ptrs: tuple[int, ...]        # pointer registers advanced (POST_UPDATE), ready after ptr_latency
    exu0: bool = False           # EXU0-only (costmodel.md §8)
    agu: bool = False            # explicit address with a row term: needs the address unit
    pack: bool = False           # quarter-register packing store (4:1 narrowing)
    post: bool = False           # POST_UPDATE addressing

    def key(self) -> tuple:
        return (self.unit, self.cls, self.srcs, self.dsts, self.ptrs, self.exu0, self.agu, self.pack, self.post)


@dataclass(frozen=True)
class LoopInfo:
    id: int
    trip: int
    role: str
    innermost: bool


@dataclass(frozen=True)
class Template:
    """A compiled program: static instructions, loops and the nested body (('i', idx) | ('L', loop_id, body))."""

    instrs: tuple[SInstr, ...]
    loops: tuple[LoopInfo, ...]
    body: tuple
    n_regs: int

    @functools.cached_property
    def signature(self) -> tuple:
        """Timing-relevant structure without trip counts (programs that differ only in trips share it)."""
        return (tuple(i.key() for i in self.instrs), tuple((lp.role, lp.innermost) for lp in self.loops),
                _shape(self.body))

    @functools.cached_property
    def sig_key(self) -> tuple[int, int]:
        """A short cache key of the signature (hash and length; tuples do not cache their hash)."""
        sig = self.signature
        return hash(sig), len(sig[0])

    @property
    def trips(self) -> tuple[int, ...]:
        return tuple(lp.trip for lp in self.loops)


def _shape(body) -> tuple:
    return tuple(x if x[0] == "i" else ("L", x[1], _shape(x[2])) for x in body)


def _has_loop(body) -> bool:
    return any(isinstance(x, Loop) for x in body)


def compile_program(program) -> Template:
    """Compile a VfProgram into a Template (register names -> ids, instructions -> classes and units)."""
    regs: dict[str, int] = {}
    instrs: list[SInstr] = []
    loops: list[LoopInfo] = []

    def rid(name: str) -> int:
        return regs.setdefault(name, len(regs))

    def visit(body) -> tuple:
        out = []
        for ins in body:
            if isinstance(ins, Loop):
                lid = len(loops)
                loops.append(None)  # placeholder keeps depth-first numbering
                inner = visit(ins.body)
                loops[lid] = LoopInfo(lid, ins.trip, ins.role, not _has_loop(ins.body))
                out.append(("L", lid, inner))
            else:
                out.append(("i", len(instrs)))
                instrs.append(_static(ins, rid))
        return tuple(out)

    body = visit(program.body)
    return Template(tuple(instrs), tuple(loops), body, len(regs))


def _addr_facts(addr) -> tuple[bool, bool]:
    """(needs the address unit, post-update) of an address."""
    if isinstance(addr, PostAddr):
        return False, True
    if isinstance(addr, Addr):
        return len([t for t in addr.offset.terms if t[1]]) >= 2, False
    return False, False


def _static(ins, rid) -> SInstr:
    text = ins.listing()
    reads = tuple(rid(r) for r in ins.reads if r)
    if isinstance(ins, (Vlds, Plds)):
        agu, post = _addr_facts(ins.addr)
        data = (ins.dst,)
        ptrs = tuple(rid(r) for r in ins.addr.regs)
        return SInstr(text, "load", "load", reads, tuple(rid(r) for r in data), ptrs, agu=agu, post=post)
    if isinstance(ins, Vsts):
        agu, post = _addr_facts(ins.addr)
        ptrs = tuple(rid(r) for r in ins.addr.regs)
        return SInstr(text, "store", "store", reads, (), ptrs, agu=agu, post=post, pack=ins.dist.startswith("PK4"))
    if ins.unit == "vector":
        attrs = dict(getattr(ins, "attrs", ()) or ())
        cls = vector_class(ins.op, ins.dtype, attrs)
        return SInstr(text, "exu", cls, reads, tuple(rid(r) for r in ins.writes), (), exu0=ins.op in EXU0_ONLY)
    if ins.unit == "pred" or isinstance(ins, Plt):
        return SInstr(text, "pred", "pred", reads, tuple(rid(r) for r in ins.writes), ())
    if isinstance(ins, PtrAdd) or ins.unit == "scalar":
        return SInstr(text, "scalar", "scalar", reads, tuple(rid(r) for r in ins.writes), ())
    raise ValueError(f"the A5 pipeline engine has no unit for {type(ins).__name__} ({text})")


# ---------------------------------------------------------------------------------------------------------
# dynamic stream: instruction indices (>= 0) and loop markers (< 0)
ENTER, FIRST, NEXT = 0, 1, 2


def marker(loop_id: int, code: int) -> int:
    return -(1 + loop_id * 3 + code)


def unmark(m: int) -> tuple[int, int]:
    return divmod(-m - 1, 3)


def expand(tpl: Template, trips: tuple[int, ...]) -> list[int]:
    """Return the dynamic stream of `tpl` with loop trip counts `trips` (one per loop, depth-first order).

    Every iteration of a loop issues the same stream (trip counts do not vary per iteration), so a loop's stream
    is built once and repeated with list operations.
    """

    def run(body) -> list[int]:
        out: list[int] = []
        for item in body:
            if item[0] == "i":
                out.append(item[1])
                continue
            lid, inner = item[1], item[2]
            n = trips[lid]
            if n <= 0:
                continue
            once = run(inner)
            if n >= 2:
                out.append(marker(lid, ENTER))
            out.append(marker(lid, FIRST))
            out.extend(once)
            if n >= 2:
                out.extend(([marker(lid, NEXT)] + once) * (n - 1))
        return out

    return run(tpl.body)


# ---------------------------------------------------------------------------------------------------------
@dataclass
class Trace:
    """Per dynamic instruction stamps; `why_*` name the binding constraint, `by_*` the instruction behind it.

    `by_*` is the dynamic index of the causing instruction (-1: none) and `at_*` whether its dispatch ('d'), issue
    ('i') or address ('a') stamp is the predecessor on a critical path. `agu` is the time the address unit produced
    an explicit address (NaN for instructions without one); `by_agu`/`at_agu` say what bound it: the previous address
    ('a') or, running ahead, the instruction's own dispatch ('d'). `hold` is the part of done - issue a packing store
    spends on its partial-block hazard (A5Uarch.pack_store_pu_gap), beyond its latency.
    """

    static: list[int] = field(default_factory=list)
    iters: list[tuple[int, ...]] = field(default_factory=list)
    dispatch: list[float] = field(default_factory=list)
    issue: list[float] = field(default_factory=list)
    done: list[float] = field(default_factory=list)
    port: list[str] = field(default_factory=list)
    why_dispatch: list[str] = field(default_factory=list)
    by_dispatch: list[int] = field(default_factory=list)
    at_dispatch: list[str] = field(default_factory=list)
    why_issue: list[str] = field(default_factory=list)
    by_issue: list[int] = field(default_factory=list)
    at_issue: list[str] = field(default_factory=list)
    agu: list[float] = field(default_factory=list)
    by_agu: list[int] = field(default_factory=list)
    at_agu: list[str] = field(default_factory=list)
    hold: list[float] = field(default_factory=list)
    end: float = 0.0
    startup: float = 0.0
    drain: float = 0.0

    def __len__(self) -> int:
        return len(self.static)


class _Port:
    """A reservation table: busy intervals [start, end) with their owner, sorted by start."""

    __slots__ = ("busy",)

    def __init__(self):
        self.busy: list[tuple[float, float, int]] = []

    def prune(self, t: float) -> None:
        b = self.busy
        k = 0
        while k < len(b) and b[k][1] <= t:
            k += 1
        if k:
            del b[:k]


def simulate(tpl: Template, trips: tuple[int, ...], ua: A5Uarch, *, record: bool = False,
             latency_only: bool = False, prefixes: tuple[int, list[float]] | None = None) -> tuple[float, Trace | None]:
    """Schedule the program; return (VF cycles, trace or None).

    `latency_only` keeps only dependencies and store-order hazards (infinite width, ports and window): the
    dependency-chain bound.

    `prefixes = (loop id, out)` appends to `out`, at the start of every iteration k >= 1 of that loop, the end
    time of everything issued so far plus the drain: the cycles of the same program with the loop cut to k
    trips, *provided* nothing follows the loop in the stream and k >= 2 (with one trip the loop is flattened and
    pays no entry). Dispatch is in program order, so no later instruction changes an earlier one's stamps.
    """
    stream = expand(tpl, trips)
    instrs = tpl.instrs
    S = ua.startup
    inv_w = 0.0 if latency_only else 1.0 / ua.dispatch_width
    lat = {"load": ua.load_latency, "store": ua.store_latency, "scalar": ua.scalar_latency, "pred": ua.pred_latency}
    ii = {"load": ua.load_ii, "store": ua.store_ii, "scalar": ua.scalar_ii, "pred": ua.pred_ii}
    for ins in instrs:
        if ins.unit == "exu" and ins.cls not in lat:
            lat[ins.cls], ii[ins.cls] = ua.vector(ins.cls)
    ports = {"exu": [_Port() for _ in range(ua.exu_ports)], "sfu": [_Port() for _ in range(ua.exu_ports)], "load": [_Port() for _ in range(ua.load_ports)],
             "store": [_Port() for _ in range(ua.store_ports)], "scalar": [_Port()], "pred": [_Port()]}
    # per static instruction: latency, initiation interval, candidate ports, whether its pool has several ports
    lat_of = [lat[ins.cls] for ins in instrs]
    dur_of = [ii[ins.cls] for ins in instrs]
    pool_of = ["sfu" if ins.cls.startswith("sfu") else ins.unit for ins in instrs]
    cands_of = [ports[pool][:1] if ins.exu0 else ports[pool] for ins, pool in zip(instrs, pool_of)]
    multi_of = [len(ports[pool]) > 1 for pool in pool_of]
    all_ports = [p for plist in ports.values() for p in plist]
    innermost = [lp.innermost for lp in tpl.loops]
    iter_gap, outer_gap, loop_entry, agu_ii, ptr_latency = ua.iter_gap, ua.outer_gap, ua.loop_entry, ua.agu_ii, ua.ptr_latency
    agu_lead = ua.agu_lead
    agu_free, agu_by = S - agu_lead, -1
    ready = [S] * tpl.n_regs        # time a register's value is usable
    writer = [-1] * tpl.n_regs      # dynamic index of its producer
    window = max(1, int(ua.window))
    heap: list[float] = []          # the `window` largest issue times so far
    heap_full = False
    t_fe, fe_by, fe_why = S, -1, "start"
    n_loops = len(tpl.loops)
    iter_start = [S] * n_loops
    iter_first = [-1] * n_loops     # dynamic index of the first instruction of the current iteration
    pending_gap = [False] * n_loops
    iters = [0] * n_loops
    instance = [0] * n_loops
    # packing-store hazards
    pack_prev, pack_prev_by = NEG, -1       # max done of packing stores of earlier iterations
    pack_cur, pack_cur_by = NEG, -1         # ... of the current iteration
    chunk_loop = _chunk_loop_of(tpl)
    serial, pu_gap, row_gap = ua.pack_store_serial, ua.pack_store_pu_gap, ua.pack_store_row_gap
    tr = Trace(startup=S, drain=ua.drain) if record else None
    end = S
    n = 0
    gate_loops: list[int] = []
    for item in stream:
        if item < 0:
            lid, code = unmark(item)
            if prefixes is not None and code == NEXT and lid == prefixes[0]:
                prefixes[1].append(end + ua.drain)
            if code == ENTER:
                if not latency_only:
                    t_fe, fe_why, fe_by = t_fe + loop_entry, "loop_entry", n - 1
                instance[lid] += 1
                iters[lid] = 0
            else:
                iters[lid] = 0 if code == FIRST else iters[lid] + 1
                if code == NEXT and not latency_only:
                    pending_gap[lid] = True
                gate_loops.append(lid)
                if pack_cur > pack_prev:
                    pack_prev, pack_prev_by = pack_cur, pack_cur_by
                pack_cur, pack_cur_by = NEG, -1
            continue
        ins = instrs[item]
        # ---- dispatch
        d, why, by, at = t_fe, fe_why, fe_by, "d"
        for lid in gate_loops:
            if pending_gap[lid]:
                gap = iter_gap if innermost[lid] else outer_gap
                g = iter_start[lid] + gap
                if g > d:
                    d, why, by, at = g, "iter_gap", iter_first[lid], "d"
                pending_gap[lid] = False
        if not latency_only and heap_full and heap[0] > d:
            d, why = heap[0], "window"
            by, at = -1, "i"
        if gate_loops:
            for lid in gate_loops:
                iter_start[lid] = d
                iter_first[lid] = n
            gate_loops.clear()
        # ---- operands
        t, iwhy, iby, iat = d, "dispatched", n, "d"
        for r in ins.srcs:
            if ready[r] > t:
                t, iwhy, iby, iat = ready[r], "operand", writer[r], "i"
        # ---- store-order hazards: a packing store waits for the earlier ones; in a post-update loop of several
        # chunks each takes pu_gap longer to complete, and a row's first waits row_gap more after the row before
        hold = 0.0
        if ins.pack:
            lp, fewest, inside = chunk_loop[item]
            if lp >= 0 and not inside and pack_cur > pack_prev:  # a row's tail step follows its last full chunk
                pack_prev, pack_prev_by, pack_cur, pack_cur_by = pack_cur, pack_cur_by, NEG, -1
            chunked = ins.post and lp >= 0 and trips[lp] >= fewest
            row_first = chunked and inside and iters[lp] == 0 and instance[lp] > 1
            h = pack_prev + serial + (row_gap if row_first else 0.0)
            if h > t:
                t, iwhy, iby, iat = h, "pack_store", pack_prev_by, "i"
            hold = pu_gap if chunked else 0.0
        # ---- address unit: explicit 2D addresses are generated in program order, one per agu_ii
        a, aby, aat = float("nan"), -1, ""
        if ins.agu and not latency_only:
            a, aby, aat = (d - agu_lead, n, "d") if d - agu_lead >= agu_free else (agu_free, agu_by, "a")
            agu_free = a + agu_ii
            if a > t:
                t, iwhy, iby, iat = a, "agu", n, "a"
            agu_by = n
        # ---- ports
        dur = dur_of[item]
        port_name = ""
        if not latency_only:
            cands = cands_of[item]
            best, bi, blk = None, -1, -1
            for k, p in enumerate(cands):
                s, b = t, -1  # the earliest start >= t with `dur` free cycles on this port, and who blocked it
                for bs, be, bo in p.busy:
                    if be <= s:
                        continue
                    if bs >= s + dur:
                        break
                    s, b = be, bo
                if best is None or s < best:
                    best, bi, blk = s, k, b
            if best > t:
                t, iwhy, iby, iat = best, ins.unit, blk, "i"
            insort(cands[bi].busy, (t, t + dur, n))  # reserve [t, t + dur) on the chosen port
            if record:
                port_name = f"{ins.unit}{bi if multi_of[item] else ''}"
        # ---- results
        done = t + lat_of[item] + hold
        for r in ins.dsts:
            ready[r] = done
            writer[r] = n
        for r in ins.ptrs:
            ready[r] = t + ptr_latency
            writer[r] = n
        if ins.pack and done > pack_cur:
            pack_cur, pack_cur_by = done, n
        if done > end:
            end = done
        if not latency_only:
            if not heap_full:
                heapq.heappush(heap, t)
                heap_full = len(heap) >= window
            elif t > heap[0]:
                heapq.heapreplace(heap, t)
            t_fe, fe_why, fe_by = d + inv_w, "dispatch", n
            if n % 64 == 63:
                for p in all_ports:
                    p.prune(d)
        if record:
            tr.static.append(item)
            tr.iters.append(tuple(iters))
            tr.dispatch.append(d)
            tr.issue.append(t)
            tr.done.append(done)
            tr.port.append(port_name)
            tr.why_dispatch.append(why)
            tr.by_dispatch.append(by)
            tr.at_dispatch.append(at)
            tr.why_issue.append(iwhy)
            tr.by_issue.append(iby)
            tr.at_issue.append(iat)
            tr.agu.append(a)
            tr.by_agu.append(aby)
            tr.at_agu.append(aat)
            tr.hold.append(hold)
        n += 1
    total = end + ua.drain
    if record:
        tr.end = total
        _fix_window_links(tr, window)
    return total, tr


def _chunk_loop_of(tpl: Template) -> list[tuple[int, int, bool]]:
    """Per static instruction, (loop id, fewest trips, inside it): the instruction runs in a row of several chunks
    when that chunk loop (1D elements or 2D chunks) makes at least `fewest` trips. A 2D post-update row runs its full
    chunks in a loop and then its tail step in the row loop itself, so where a row has a tail packing store, one full
    chunk already makes two, for the stores in the loop and for the tail store after it. (-1, 0, False) for an
    instruction that never does (a row of one tail chunk only, or no loop)."""
    out = [(-1, 0, False)] * len(tpl.instrs)
    roles = {lp.id: lp.role for lp in tpl.loops}

    def visit(body, lid, fewest):
        loops = [item[1] for item in body if item[0] == "L" and roles[item[1]] in ("chunks", "elements")]
        tail = any(item[0] == "i" and tpl.instrs[item[1]].pack for item in body)
        for item in body:
            if item[0] == "L":
                visit(item[2], item[1], 1 if tail else 2)
            elif lid >= 0 and roles[lid] in ("chunks", "elements"):
                out[item[1]] = (lid, fewest, True)
            elif lid >= 0 and roles[lid] == "rows" and loops:
                out[item[1]] = (loops[0], 1, False)

    visit(tpl.body, -1, 2)
    return out


def _fix_window_links(tr: Trace, window: int) -> None:
    """Name the instruction behind each window stall: an earlier one whose issue time is the gate."""
    for k, why in enumerate(tr.why_dispatch):
        if why == "window" and tr.by_dispatch[k] < 0:
            gate = tr.dispatch[k]
            for j in range(k - 1, -1, -1):
                if tr.issue[j] == gate:
                    tr.by_dispatch[k] = j
                    break
