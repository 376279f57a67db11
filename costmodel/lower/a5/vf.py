"""A5 VF lowering of the elementwise-shaped families: request -> chunk kernel(s) -> one VfProgram plan.

Families: unary, binary, binary_scalar, partial, col_expand(_binary), row_expand(_binary), convert (TCVT) and
compare_select (TSEL, TSELS). Per-op compute statements come from data/a5_ops.csv and TCVT recipes from
data/a5_convert.csv; this module decides how each operand is loaded (costmodel.md §7 bodies: binary
{vlds, vlds, vop, vsts}, scalar {vlds, vops, vsts}, unary {vlds, vop, vsts}).

A chunk is one 256-byte register of the compute type (isa.md §7.2). 64-bit integer types hold 32 elements
per register as pairs of 32-bit lanes, so their predicates are `plt_b32` over a counter of two units per
element (our choice: isa.md §2 gives 32 i64 lanes, §7.2 only b8/b16/b32 predicates).
"""
from __future__ import annotations

from ...arch import constants
from ...catalog import COMPARES
from ...dtypes import DType
from ...errors import NotModelledError, StrategyError
from ...flags import truthy
from ...isa_a5 import PLogic, VCmp, VfProgram, VOp, VSel
from ...plan import Plan
from ...request import Request
from ...tiles import Tile
from ..alloc import alias_source, allocate
from . import dispatch
from .forms import Counter, Gen, Kernel, Mem, Segment, Stream, emit
from .program import Regs, compile_block, compile_sequence
from .reduce import (
    REDUCE_FAMILIES,
    col_reduce_program,
    in_register_op,
    row_reduce_program,
)
from .table import convert_row, modelled_ops, op_row, sequence
from ...conversions import mode_notes

VL_BITS = constants("a5").vl_bytes * 8


def lane_bits(dt: DType) -> int:
    """Bits per register lane of an op computing in `dt`."""
    return max(dt.bits, 8)


def pred_bits(lane: int) -> int:
    """Predicate granularity for a lane width: b8/b16/b32 (64-bit lanes use b32, two units per element)."""
    return min(lane, 32)


def _counter(reg: str, lane: int, per_row: int) -> Counter:
    return Counter(reg, lane // pred_bits(lane), per_row)


def _stream(name: str, t: Tile, *, bits: int | None = None, row_stride: int | None = None) -> tuple[str, Stream]:
    return name, Stream(name, bits or t.dtype.bits, t.row_stride if row_stride is None else row_stride)


def operand_walks(req: Request) -> list[tuple[str, str, Stream]]:
    """Return (tile, walk, stream) per source: 'chunk' (same (i, j) as dst), 'col' (row 0 re-read every row),
    'row' (one element broadcast per row, BRC), 'rowblk' (one 32-byte block per row, BLK) or 'mask' (bits)."""
    fam = req.family
    expanded = req.param("expanded")
    out = []
    for name, t in req.sources:
        if name == "mask":
            out.append((name, "mask", _stream(name, t, bits=1, row_stride=t.cols * 8)[1]))
        elif fam in ("col_expand", "col_expand_binary") and name in ("src", "src1"):
            out.append((name, "col", _stream(name, t, row_stride=0)[1]))
        elif fam == "row_expand" or (fam == "row_expand_binary" and name == expanded):
            walk = "row" if (t.layout == "col_major" or t.valid_cols == 1) else "rowblk"
            out.append((name, walk, _stream(name, t)[1]))
        else:
            out.append((name, "chunk", _stream(name, t)[1]))
    return out


def _compute(req: Request, regs: Regs, dt: DType, pred: str) -> tuple[list, list]:
    """Return (prologue, body) instructions of the op's compute statements (data/a5_ops.csv)."""
    row = op_row(req)
    scalar = req.param("scalar")
    prologue = compile_block(row.prologue, regs, dt, None, scalar)
    if row.body.startswith("@"):
        seq_prologue, body = compile_sequence(sequence(row.body[1:]), regs, dt, pred, scalar)
        return prologue + seq_prologue, body
    return prologue, compile_block(row.body, regs, dt, pred, scalar)


def _predicates(req: Request, lane: int, inner: tuple[str, int] | None) -> tuple[list, list[Counter], str]:
    """Return (the chunk body's predicate generation, its counters, the predicate the op runs under): p0 over the
    dst row; with `inner` (full source, inner cols) also p2 over the inner columns, which the op then runs under."""
    pb = pred_bits(lane)
    body: list = [Gen("p0", pb, "s_n")]
    counters = [_counter("s_n", lane, req.dst.valid_cols)]
    if not inner:
        return body, counters, "p0"
    return body + [Gen("p2", pb, "s_in")], counters + [_counter("s_in", lane, inner[1])], "p2"


def elementwise_kernel(req: Request, inner: tuple[str, int] | None = None) -> Kernel:
    """The chunk kernel of an elementwise-shaped op.

    With `inner = (full source, inner cols)` (TPART with unequal regions) the op runs under a second predicate
    over the inner columns and `vsel` keeps the full source's value elsewhere (inferred, isa.md §4.1).
    """
    dt = req.dtype
    lane = lane_bits(dt)
    epr = VL_BITS // lane
    walks = operand_walks(req)
    data = [(name, walk, s) for name, walk, s in walks if walk != "mask"]
    regs = Regs({f"x{i}": f"v{i}" for i in range(len(data))} | {"qm": "p1"})
    body, counters, compute_pred = _predicates(req, lane, inner)
    if inner:
        regs.n["p"] = 3
    head: list = []
    streams = [_stream("dst", req.dst)] + [(name, s) for name, _, s in walks]
    body += [Mem("plds", "p1", name, 0, epr, bits=lane) for name, walk, _ in walks if walk == "mask"]
    for i, (name, walk, s) in enumerate(data):
        if walk in ("row", "rowblk"):
            head.append(Mem("vlds", f"v{i}", name, 0, s.row_stride, dt.name, f"BRC_B{lane}" if walk == "row" else "BLK"))
        else:
            body.append(Mem("vlds", f"v{i}", name, 0, epr, dt.name, "NORM"))
    prologue, compute = _compute(req, regs, dt, compute_pred)
    body += compute
    result = regs.map.get("y", "v0")
    if inner:
        full = [n for n, _, _ in data].index(inner[0])
        body.append(VSel(dt.name, regs.new("v"), result, f"v{full}", compute_pred))
        result = body[-1].dst
    body.append(Mem("vsts", result, "dst", 0, epr, dt.name, f"NORM_B{lane}", "p0"))
    return Kernel(epr, tuple(streams), tuple(counters), tuple(regs.set_scalars + prologue), tuple(head), tuple(body))


def copy_kernel(req: Request, src: str) -> Kernel:
    """dst = src over the region: {plt, vlds, vsts}."""
    dt = req.dtype
    lane = lane_bits(dt)
    epr = VL_BITS // lane
    body = (Gen("p0", pred_bits(lane), "s_n"), Mem("vlds", "v0", src, 0, epr, dt.name, "NORM"),
            Mem("vsts", "v0", "dst", 0, epr, dt.name, f"NORM_B{lane}", "p0"))
    streams = (_stream("dst", req.dst), _stream(src, req.tile(src)))
    return Kernel(epr, streams, (_counter("s_n", lane, req.dst.valid_cols),), (), (), body)


def lane_distribution(bits: int, lane: int) -> tuple[str, str]:
    """Return the (load, store) distributions of `bits`-wide elements held in `lane`-bit register lanes: plain where
    they fill the lane, else unpacked into the lanes and packed back (UNPK/PK, with the ratio where it is not 2:
    costmodel.md §3 step 3)."""
    if bits == lane:
        return "NORM", f"NORM_B{lane}"
    ratio = "" if lane // bits == 2 else str(lane // bits)
    return f"UNPK{ratio}_B{bits}", f"PK{ratio}_B{lane}"


def convert_kernel(req: Request, strategy: str) -> Kernel:
    """TCVT: per register part {plt, vlds (unpack), vcvt, vsts (pack)}; EPR per costmodel.md §3 step 3."""
    src, dst = req.dtype, req.dst.dtype
    recipe = convert_row(src.name, dst.name)
    epr = recipe.epr_1d if strategy.startswith("1d") else recipe.epr_2d
    lane = max(src.bits, dst.bits)
    lanes = VL_BITS // lane
    pb = pred_bits(lane)
    load, store = lane_distribution(src.bits, lane)[0], lane_distribution(dst.bits, lane)[1]
    attrs = (("to", dst.name), ("round", req.param("round_mode", "none")), ("sat", req.param("saturation", "on")),
             ("lane_bits", lane))
    body: list = []
    for k in range(epr // lanes):
        p, v, w = f"p{k}", f"v{2 * k}", f"v{2 * k + 1}"
        body += [Gen(p, pb, "s_n"), Mem("vlds", v, "src", k * lanes, lanes, src.name, load),
                 VOp(recipe.op, src.name, w, (v,), p, None, attrs),
                 Mem("vsts", w, "dst", k * lanes, lanes, dst.name, store, p)]
    streams = (_stream("dst", req.dst), _stream("src", req.tile("src")))
    return Kernel(epr, streams, (_counter("s_n", lane, req.dst.valid_cols),), (), (), tuple(body))


# TPARTARGMAX/MIN: which source's pair wins where `vcmp_gt` of the two values holds (src0's value strictly
# greater, or smaller; ties go to src1, isa.md §4.1)
ARG_COMPARE = {"TPARTARGMAX": ("v0", "v1"), "TPARTARGMIN": ("v1", "v0")}
ARG_SOURCES = ("src0", "src1", "src0_idx", "src1_idx")


def _arg_lanes(req: Request) -> tuple[int, dict[str, tuple[str, str]]]:
    """Return the lane width of a value-and-index chunk (the wider of the two types) and, per operand, its (load,
    store) distributions: a type narrower than the lane is unpacked into it and packed back (costmodel.md §3 step 3,
    as TCVT does; f16 values with 32-bit indices, or f32 values with 16-bit indices, run 64 pairs a chunk)."""
    dt, it = req.dtype, req.tile("dst_idx").dtype
    lane = max(lane_bits(dt), lane_bits(it))
    return lane, {"values": lane_distribution(dt.bits, lane), "indices": lane_distribution(it.bits, lane)}


def arg_kernel(req: Request, inner: tuple[str, int] | None = None) -> Kernel:
    """TPARTARGMAX/MIN chunk: {plt, four vlds, vcmp_gt, vsel of the values and of the indices, two vsts} (sequence
    inferred from isa.md §4.1 and the A2/A3 compare-then-select). With `inner = (full source, inner cols)` the compare
    runs under a second predicate over the inner columns and the full source's pair is kept outside them. Values
    narrower than the indices are compared after an exact conversion to f32 in their lanes; the pairs are selected
    as whole lanes."""
    dt, it = req.dtype, req.tile("dst_idx").dtype
    lane, dists = _arg_lanes(req)
    epr = VL_BITS // lane
    body, counters, compare_pred = _predicates(req, lane, inner)
    body += [Mem("vlds", f"v{i}", name, 0, epr, req.tile(name).dtype.name,
                 dists["indices" if name.endswith("_idx") else "values"][0]) for i, name in enumerate(ARG_SOURCES)]
    compared, cmp_type = ARG_COMPARE[req.op], dt.name
    if lane_bits(dt) < lane:
        wide = (("to", f"f{lane}"), ("round", "none"), ("sat", "on"), ("lane_bits", lane))
        body += [VOp("vcvt", dt.name, "v6", ("v0",), "p0", None, wide), VOp("vcvt", dt.name, "v7", ("v1",), "p0", None, wide)]
        compared, cmp_type = tuple({"v0": "v6", "v1": "v7"}[v] for v in compared), f"f{lane}"
    body.append(VCmp("vcmp_gt", cmp_type, "p1", compared, compare_pred))
    pick = "p1"  # src0's pair; outside the inner columns the compare is off, which picks src1's
    if inner and inner[0] == "src0":
        body += [PLogic("pnot", "p3", ("p2",)), PLogic("por", "p4", ("p1", "p3"))]
        pick = "p4"
    sel = {t.name: (t.name if lane_bits(t) == lane else f"u{lane}") for t in (dt, it)}
    body += [VSel(sel[dt.name], "v4", "v0", "v1", pick), VSel(sel[it.name], "v5", "v2", "v3", pick),
             Mem("vsts", "v4", "dst", 0, epr, dt.name, dists["values"][1], "p0"),
             Mem("vsts", "v5", "dst_idx", 0, epr, it.name, dists["indices"][1], "p0")]
    streams = tuple(_stream(n, req.tile(n)) for n in ("dst", "dst_idx", *ARG_SOURCES))
    return Kernel(epr, streams, tuple(counters), (), (), tuple(body))


def arg_copy_kernel(req: Request, src: str) -> Kernel:
    """dst, dst_idx = the full source's pair over the region: {plt, two vlds, two vsts}."""
    dt, it = req.dtype, req.tile("dst_idx").dtype
    lane, dists = _arg_lanes(req)
    epr = VL_BITS // lane
    body = (Gen("p0", pred_bits(lane), "s_n"), Mem("vlds", "v0", src, 0, epr, dt.name, dists["values"][0]),
            Mem("vlds", "v1", f"{src}_idx", 0, epr, it.name, dists["indices"][0]),
            Mem("vsts", "v0", "dst", 0, epr, dt.name, dists["values"][1], "p0"),
            Mem("vsts", "v1", "dst_idx", 0, epr, it.name, dists["indices"][1], "p0"))
    streams = tuple(_stream(n, req.tile(n)) for n in ("dst", "dst_idx", src, f"{src}_idx"))
    return Kernel(epr, streams, (_counter("s_n", lane, req.dst.valid_cols),), (), (), body)


def partial_segments(req: Request) -> list[Segment]:
    """TPART*: rows where both sources are valid run op-then-select; the remaining rows copy the full source."""
    vr, vc = req.dst.valid
    s0, s1 = req.tile("src0"), req.tile("src1")
    kernel, copy = (arg_kernel, arg_copy_kernel) if req.op in ARG_COMPARE else (elementwise_kernel, copy_kernel)
    if s0.valid == s1.valid == (vr, vc):
        return [Segment(kernel(req), 0, vr, vc)]
    full, part = ("src0", s1) if s0.valid == (vr, vc) else ("src1", s0)
    rin, cin = part.valid
    segs = []
    if rin and cin:
        segs.append(Segment(kernel(req, (full, cin)), 0, rin, vc))
    start = rin if (rin and cin) else 0
    segs.append(Segment(copy(req, full), start, vr - start, vc))
    return segs


def segments(req: Request, strategy: str) -> list[Segment]:
    """Return the kernel segments of a request (one, except TPART with unequal regions)."""
    vr, vc = req.dst.valid
    check_modelled(req)
    if req.family == "convert":
        return [Segment(convert_kernel(req, strategy), 0, vr, vc)]
    if req.family == "partial":
        return partial_segments(req)
    return [Segment(elementwise_kernel(req), 0, vr, vc)]


def lowers(op: str) -> bool:
    """Whether some A5 request of `op` has a lowering here (a body row in data/a5_ops.csv, or TCVT)."""
    return op in modelled_ops()


def check_modelled(req: Request) -> None:
    """Raise NotModelledError unless the request's op (and dtype / parameters) has an A5 lowering."""
    if req.family == "convert":
        convert_row(req.dtype.name, req.dst.dtype.name)
    elif req.op in ARG_COMPARE:
        return
    elif req.op == "TCOLSUM" and req.param("binary"):
        raise NotModelledError("TCOLSUM isBinary (the pairwise tree through tmp) has no A5 lowering; accepted on a5: "
                               "the linear chain (binary=False: the CPU reference's order, isa.md §4.3)")
    elif req.op in COMPARES:  # a predicate written to UB: isa.md §7.2 names no predicate store
        raise NotModelledError(f"{req.op} has no A5 VF lowering yet: isa.md §7.2 gives no way to store its predicate "
                               "(modelled on a2a3; on a5 in compare_select: TSEL, TSELS)")
    else:
        if req.family == "row_reduce":
            in_register_op(req)
        op_row(req)


def strategies(req: Request) -> tuple[str, dict[str, str | None]]:
    """Return (default strategy, {strategy: None or why illegal}) for a modelled request whose tiles fit the unified
    buffer (tiles that do not fail in every strategy: that error comes first)."""
    check_modelled(req)
    _buffers(req)
    return dispatch.strategies(req)


def _buffers(req: Request):
    """The request's buffers in the unified buffer (dst over its first source in place); raises where they overflow."""
    alias = alias_source(list(req.tiles)) if truthy(req.param("in_place", "")) else None
    return allocate("a5", list(req.tiles), alias=alias), alias


def lower(req: Request, strategy: str) -> Plan:
    """Return the A5 plan (one VF program) of the request in the given legal strategy."""
    buffers, alias = _buffers(req)  # first: tiles that do not fit fail in every strategy
    legal = dispatch.legal(req)
    if strategy not in legal or legal[strategy]:
        raise StrategyError(f"strategy {strategy} is illegal for this {req.op} request: {legal.get(strategy, 'unknown')}")
    if req.family in REDUCE_FAMILIES:
        check_modelled(req)
        lane = lane_bits(req.dtype)

        def fold(regs: Regs, pred: str) -> tuple[list, list]:
            return _compute(req, regs, req.dtype, pred)

        if req.family == "row_reduce":
            epr, body = row_reduce_program(req, fold, in_register_op(req), lane, pred_bits(lane))
        else:
            epr, body = col_reduce_program(req, fold, lane, pred_bits(lane))
    else:
        segs = segments(req, strategy)
        body = emit(strategy, segs)
        epr = segs[0].kernel.epr if segs else 0
    default, why = dispatch.resolve(req)
    notes = [why if strategy == default else f"{strategy} as asked; the default would be {default} ({why})"]
    if alias:
        notes.append(f"in place: dst overwrites {alias} (each chunk is loaded before it is stored)")
    if not body:
        notes.append("empty valid region: nothing is issued" + (" (the instruction returns before launching a VF)"
                                                                if req.family in REDUCE_FAMILIES else ""))
    if req.op in dispatch.SELECTS:
        differs = req.dst.valid_cols % 8 != 0
        notes.append("mask row i holds the bits of data row i (the A2/A3 NPU rule, isa.md §4.5; assumed on A5, "
                     "inferred)" + ("; the CPU reference reads the mask as one bit stream, which differs here: the "
                                    f"valid cols ({req.dst.valid_cols}) are not a multiple of 8" if differs else ""))
    if req.family == "convert":
        notes += mode_notes("a5", req.dtype.name, req.dst.dtype.name, req.param("round_mode"), req.param("saturation"))
    variant = dispatch.select_variant(req, strategy)
    if variant:
        notes.append(f"32-bit TSEL in 1D runs {variant} (by trip-count parity, "
                     "costmodel.md §3 step 6); the formula prices the even program like a TSel_b16_8 chunk, as measured")
    kind = f"{req.dtype}->{req.dst.dtype}" if req.family == "convert" else str(req.dtype)
    # a reduction of an empty region returns before any VF is launched (isa.md §3 TCOLMAX row: early return)
    progs = () if not body and req.family in REDUCE_FAMILIES else (VfProgram(strategy, epr, body, kind),)
    return Plan("a5", req.op, strategy, req, buffers, progs, tuple(notes))
