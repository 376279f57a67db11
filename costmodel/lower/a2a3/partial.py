"""A2/A3 lowering of the part ops TPARTADD/MAX/MIN/MUL and TPARTARGMAX/ARGMIN (isa.md §4.1; sequence inferred).

Legality (operands.py) makes one source's valid region equal dst's (the *full* source) and puts the other
inside it. The plan copies the full source into dst, waits on PIPE_V, then runs the op over the other
source's region (the *overlap*). When both regions equal dst it is a single pass; an empty overlap leaves
only the copy; an empty dst returns at once. Arg ops compare the values into a bit mask (vcmpv) and
select value and index through it (vsel), one bit per element in walk order.

Strategies are the emission modes of the overlap pass (costmodel.md §6, TBinOp rule); the copy pass uses
the TUnaryOp mode of its own region.
"""
from __future__ import annotations

import math

from ...dtypes import dtype as as_dtype
from ...isa_a2a3 import FULL_MASK, PipeBarrier, SetMaskMode, SetVectorMask, VecOp
from ...plan import Plan
from ...request import Request
from ...tiles import Tile
from ..alloc import allocate
from . import modes
from .broadcast import binary_modes, in_region, stream, unary_mode
from .modes import Stream
from .part_expand_table import steps_for
from .steps import build

COPY_ONLY = "CopyOnly"
ARG = ("TPARTARGMAX", "TPARTARGMIN")


def _layout(req: Request) -> tuple[str | None, tuple[int, int]]:
    """Return (the full source, 'src0'/'src1', or None when both regions equal dst; the overlap region)."""
    d, v0, v1 = req.dst.valid, req.tile("src0").valid, req.tile("src1").valid
    if v0 == d and v1 == d:
        return None, d
    return ("src0", v1) if v0 == d else ("src1", v0)


def _empty(region: tuple[int, int]) -> bool:
    return region[0] == 0 or region[1] == 0


def _overlap_tiles(req: Request, region: tuple[int, int], names: tuple[str, ...]) -> list[Tile]:
    return [in_region(req.tile(n), region) for n in names]


def _arg_modes(req: Request, region: tuple[int, int]) -> dict[str, str | None]:
    tiles = _overlap_tiles(req, region, ("dst", "src0", "src1", "dst_idx", "src0_idx", "src1_idx"))
    contiguous = all(t.valid_cols == t.cols or t.valid_rows <= 1 for t in tiles)
    return {"1LCount": None if contiguous else "needs the overlap to be one contiguous run (full rows, or one row)",
            "2LCount": None}


def strategies(req: Request) -> tuple[str, dict[str, str | None]]:
    """Return (default strategy, {strategy: None if legal else why not}) for the overlap pass."""
    _, region = _layout(req)
    if _empty(region) or _empty(req.dst.valid):
        return COPY_ONLY, {COPY_ONLY: None}
    if req.op in ARG:
        legal = _arg_modes(req, region)
        return ("1LCount" if legal["1LCount"] is None else "2LCount"), legal
    step = _overlap_steps(req, _streams(req))[0]
    return binary_modes(_overlap_tiles(req, region, ("dst", "src0", "src1")), step.epr, rereads_rows=False)


def _streams(req: Request, buffers=None) -> dict[str, Stream]:
    buffers = buffers or allocate("a2a3", list(req.tiles))
    out = {b.name: stream(b) for b in buffers if b.name != "tmp"}
    full, _ = _layout(req)
    if full:
        out["full"] = out[full]
        if f"{full}_idx" in out:
            out["full_idx"] = out[f"{full}_idx"]
    return out


def _overlap_steps(req: Request, streams: dict[str, Stream]):
    return build(steps_for(req.op, "overlap"), streams, None)


def _copy_pass(req: Request, streams: dict[str, Stream]) -> tuple[list, list[str]]:
    """Copy the full source (and its index tile) over the dst region, each copy in its TUnaryOp mode."""
    vr, vc = req.dst.valid
    body, notes = [], []
    for step in build(steps_for(req.op, "copy"), streams, None):
        names = (step.dst.buf, step.srcs[0].buf)
        mode = unary_mode([req.tile(n) for n in names], step.epr)
        body += modes.emit(mode, step, vr, vc)
        notes.append(f"copy pass: {step.intrinsic} {names[1]}->{names[0]} in {mode} over {vr}x{vc}")
    return body, notes


def _mask_slot_bytes(count: int) -> int:
    """Bytes of one mask row: one bit per element, rounded up to whole 32-byte blocks."""
    return math.ceil(count / 256) * 32


def _arg_pass(req: Request, strategy: str, streams: dict[str, Stream], region: tuple[int, int]) -> list:
    """Compare the value pairs into the mask, wait, then select values and indices through it in counter mode."""
    r, c = region
    count = r * c if strategy == "1LCount" else c
    slot = _mask_slot_bytes(count)
    streams = dict(streams, cmp=Stream("tmp", as_dtype("u8"), slot))
    compare = build(steps_for(req.op, "compare"), streams, None)
    select = build(steps_for(req.op, "select"), streams, None)

    def calls(steps):
        return [ins for s in steps for ins in modes.emit(strategy, s, r, c) if isinstance(ins, VecOp)]

    return ([SetMaskMode("count"), SetVectorMask(0, count)] + calls(compare) + [PipeBarrier("V")] + calls(select)
            + [SetMaskMode("norm"), SetVectorMask(*FULL_MASK)])


def _mask_tile(req: Request, strategy: str, region: tuple[int, int]) -> Tile:
    r, c = region
    nbytes = _mask_slot_bytes(r * c) if strategy == "1LCount" else r * _mask_slot_bytes(c)
    return Tile(1, nbytes, as_dtype("u8"), 1, nbytes)


def lower(req: Request, strategy: str) -> Plan:
    """Return the plan of a part op: copy pass, barrier, overlap pass in `strategy` (see module docstring)."""
    full, region = _layout(req)
    empty = _empty(region) or _empty(req.dst.valid)
    scratch = [] if empty or req.op not in ARG else [("tmp", _mask_tile(req, strategy, region))]
    buffers = allocate("a2a3", list(req.tiles), scratch)
    if _empty(req.dst.valid):
        return Plan("a2a3", req.op, strategy, req, buffers, (), ("empty dst valid region: nothing is issued",))
    streams = _streams(req, buffers)
    body, notes = ([], []) if full is None else _copy_pass(req, streams)
    if not empty:
        if body:
            body.append(PipeBarrier("V"))
        if req.op in ARG:
            body += _arg_pass(req, strategy, streams, region)
        else:
            body += modes.emit_steps(strategy, _overlap_steps(req, streams), *region)
        notes.append(f"overlap pass in {strategy} over {region[0]}x{region[1]}")
    else:
        notes.append(f"the other source's region {region[0]}x{region[1]} is empty: copy only")
    return Plan("a2a3", req.op, strategy, req, buffers, tuple(body), tuple(notes))
