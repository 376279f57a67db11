"""Issue one row of data/a2a3_lowering.csv: place its buffers, then turn each step into A2/A3 instructions.

Vector steps are emitted over the valid region in the chosen mode (modes.py), with a PIPE_V barrier between
consecutive steps; scalar-loop steps become one ScalarLoop. Scratch named `block` is a single 32-byte block:
written once under a count mask, then read with block and repeat stride 0 (isa.md §7.1). In place, `src` sits
at dst's address.
"""
from __future__ import annotations

from dataclasses import replace

from ...arch import constants
from ...dtypes import DType, dtype as as_dtype
from ...errors import ParamError
from ...flags import truthy
from ...isa_a2a3 import Addr, PipeBarrier, ScalarLoop, VecOp
from ...plan import Buffer
from ...request import Request
from ...tiles import Tile
from ..alloc import alias_source, allocate
from . import modes
from .modes import Stream
from .steps import LoopStep, StepSpec, build_one, scaled_cols
from .table import LoweringRow

_A = constants("a2a3")
BLOCK_SCRATCH = "block"


def scratch_dtype(req: Request, spec: str) -> DType:
    """Return the element type of a scratch spec (`dst`, `block`: dst's type; else a dtype name)."""
    return req.dst.dtype if spec in ("dst", BLOCK_SCRATCH) else as_dtype(spec)


def in_place(req: Request) -> bool:
    """Whether the request asks for the in-place form (dst overwrites src)."""
    return truthy(req.param("in_place", ""))


def _alias_safe(specs: tuple[StepSpec, ...], source: str) -> bool:
    """Whether dst may alias `source`: no step reads it after an earlier step has written dst."""
    written = False
    for sp in specs:
        if written and source in sp.srcs:
            return False
        written = written or sp.dst == "dst"
    return True


def _scratch_tiles(req: Request, row: LoweringRow) -> list[tuple[str, Tile]]:
    d = req.dst
    out = []
    for name, spec in row.scratch:
        dt = scratch_dtype(req, spec)
        if spec == BLOCK_SCRATCH:
            epb = _A.block_bytes * 8 // dt.bits
            out.append((name, Tile(1, epb, dt, 1, epb)))
        else:
            out.append((name, Tile(d.rows, d.cols, dt, d.valid_rows, d.valid_cols)))
    return out


def buffers(req: Request, row: LoweringRow) -> tuple[Buffer, ...]:
    """Return the UB buffers of the request tiles and the row's scratch; raises ShapeError if they do not fit."""
    return allocate("a2a3", list(req.tiles), _scratch_tiles(req, row),
                    alias=alias_source(list(req.tiles)) if in_place(req) else None, in_place=True)


def _streams(bufs: tuple[Buffer, ...]) -> dict[str, Stream]:
    return {b.name: Stream(b.name, b.tile.dtype, b.tile.cols * b.tile.dtype.bits // 8) for b in bufs}


def check(req: Request, row: LoweringRow) -> tuple[tuple[StepSpec, ...], tuple[Buffer, ...], dict[str, Stream]]:
    """Return the row's (step specs, buffers, operand streams) after checking that the buffers fit the UB, that an
    in-place request is legal, and that every step covers whole lanes; raises a PtoCostError otherwise."""
    specs = row.specs(req)
    if in_place(req):
        source = alias_source(list(req.tiles))
        if not _alias_safe(specs, source):
            raise ParamError(f"{req.op} on {req.dtype} has no in-place form on a2a3: its sequence writes dst before it "
                             f"has finished reading {source}")
    bufs = buffers(req, row)
    streams = _streams(bufs)
    for sp in specs:
        scaled_cols(sp, streams, req.dst.valid_cols)
    return specs, bufs, streams


def _pin_blocks(calls: list, blocks: set[str]) -> list:
    """Return the calls with block scratch read at block and repeat stride 0."""
    out = []
    for c in calls:
        if isinstance(c, VecOp) and any(a.buf in blocks for a in c.srcs):
            c = replace(c, srcs=tuple(Addr(a.buf, 0, 0, 0) if a.buf in blocks else a for a in c.srcs))
        out.append(c)
    return out


def _loop(step: LoopStep, vr: int, vc: int) -> ScalarLoop:
    ops = (step.dst, *step.srcs)
    return ScalarLoop(step.kernel, step.dtype.name, Addr(step.dst.buf), tuple(Addr(s.buf) for s in step.srcs), vr, vc,
                      tuple(s.row_bytes for s in ops), step.scalar, step.reverse)


def issue(req: Request, row: LoweringRow, mode: str) -> tuple[tuple[Buffer, ...], list, bool]:
    """Return (buffers, instructions, row-repeat fallback used) for the row's steps issued in `mode`."""
    specs, bufs, streams = check(req, row)
    vr, vc = req.dst.valid_rows, req.dst.valid_cols
    blocks = {name for name, spec in row.scratch if spec == BLOCK_SCRATCH}
    body: list = []
    fallback = False
    for i, sp in enumerate(specs):
        if i:
            body.append(PipeBarrier("V"))
        step = build_one(sp, streams, req.param("scalar"))
        if isinstance(step, LoopStep):
            body.append(_loop(step, vr, vc))
        elif step.dst.buf in blocks:
            body += modes.one_level_count(step, _A.block_bytes // step.dst.esize)
        else:
            fallback = fallback or (mode == "2LNormRowRpt" and not modes.row_repeat_fits(step, vr))
            body += _pin_blocks(modes.emit(mode, step, vr, scaled_cols(sp, streams, vc)), blocks)
    return bufs, body, fallback
