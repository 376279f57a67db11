"""A2/A3 lowering of TROWEXPAND and TROWEXPAND<op> (isa.md §4.2, §1.2; costmodel.md §2, §5; sequences inferred).

The expanded operand gives one value per row. Mode 2 (row-major R x 32/sizeof) already holds one 32-byte
block per row, so the binary intrinsic reads it with block stride 0 and repeat stride 1 block (element j
uses lane j mod the block width). Mode 1 (col-major R x 1 scalars) is first broadcast with `vbrcb` into one
block per row in the hidden 8 KiB UB window at 184 KiB (no tmp operand is passed), at most 256 rows at a
time, then read the same way. Strategies are the emission modes of that pass (TBinOp rule, costmodel.md §6).

Plain TROWEXPAND defaults to `RowDup`: per row the scalar unit loads src[i, 0] and one `vector_dup` fills
the row in counter mode (one call per row, matching the measured ~14-15 cycles per row of costmodel.md §2).
With a mode-1 source the vbrcb + vcopy form is offered in the emission modes as well.
8-bit data is not modelled: the vector unit handles b8 as b16 pairs, which cannot broadcast one byte.
"""
from __future__ import annotations

import math
from dataclasses import replace

from ...arch import constants
from ...errors import NotModelledError
from ...isa_a2a3 import Addr, PipeBarrier, VecOp
from ...plan import Plan
from ...request import Request
from ...tiles import Tile
from ..alloc import allocate
from . import modes
from .broadcast import BLOCK, BlockStream, UBScalar, binary_modes, stream, window_buffer, zero_block_stride
from .modes import Step
from .part_expand_table import steps_for
from .steps import build

ROW_DUP = "RowDup"
_A = constants("a2a3")
WINDOW_ROWS = _A.tmp_ub_bytes // BLOCK  # rows one vbrcb pass can hold in the 8 KiB window


def _expanded(req: Request) -> str:
    return "src" if req.family == "row_expand" else req.param("expanded", "src1")


def _mode(req: Request) -> int:
    return int(req.param("expand_mode", 2))


def _block_tile(req: Request) -> Tile:
    """The per-row 32-byte blocks the vector pass reads (the mode-2 tile itself, or the vbrcb output)."""
    dt = req.dtype
    epb = BLOCK * 8 // dt.bits
    return Tile(req.dst.rows, epb, dt, req.dst.valid_rows, epb)


def _check_dtype(req: Request) -> None:
    if req.dtype.bits == 8:
        raise NotModelledError(f"{req.op} on {req.dtype} is not modelled on a2a3: the vector unit moves 8-bit data as "
                               f"16-bit pairs, which cannot broadcast a single byte; modelled: 16- and 32-bit types")


def strategies(req: Request) -> tuple[str, dict[str, str | None]]:
    """Return (default strategy, {strategy: None if legal else why not})."""
    _check_dtype(req)
    names = ("dst",) if req.family == "row_expand" else ("dst", "src1" if _expanded(req) == "src0" else "src0")
    tiles = [req.tile(n) for n in names] + [_block_tile(req)]
    epr = 256 * 8 // req.dtype.bits
    default, legal = binary_modes(tiles, epr, rereads_rows=True)
    if req.family == "row_expand_binary":
        return default, legal
    why = None if _mode(req) == 1 else "needs expand mode 1: vbrcb broadcasts consecutive per-row scalars"
    return ROW_DUP, {ROW_DUP: None, **{m: (why or r) for m, r in legal.items()}}


def _row_dup(req: Request, buffers) -> list:
    """Per row: a counter-mode vector_dup of vc elements whose scalar is src[i, 0], loaded from UB."""
    src = req.tile("src")
    spec = steps_for(req.op, "dup")[0]
    dst = stream(buffers[0])
    body = modes.emit("2LCount", Step(spec.intrinsic, req.dtype, dst, ()), *req.dst.valid)
    row = iter(range(req.dst.valid_rows))
    esize = src.dtype.bits // 8
    return [replace(ins, scalar=UBScalar("src", next(row) * src.row_stride * esize)) if isinstance(ins, VecOp) else ins
            for ins in body]


def _vector_pass(req: Request, strategy: str, buffers, rows: tuple[int, int], block_buf: str) -> list:
    """The binary (or copy) intrinsic over dst rows [r0, r0+n), reading one 32-byte block per row from `block_buf`."""
    r0, n = rows
    streams = {b.name: stream(b, offset=r0 * b.tile.cols * b.tile.dtype.bits // 8) for b in buffers
               if b.tile.layout == "row_major" and b.name != "tmp"}
    block_offset = 0 if block_buf == "tmp" else r0 * BLOCK
    streams[_expanded(req)] = BlockStream(block_buf, req.dtype, BLOCK, block_offset)
    steps = build(steps_for(req.op, "vector"), streams, None)
    return zero_block_stride(modes.emit_steps(strategy, steps, n, req.dst.valid_cols), {block_buf})


def _chunks(vr: int) -> list[tuple[int, int]]:
    return [(r0, min(WINDOW_ROWS, vr - r0)) for r0 in range(0, vr, WINDOW_ROWS)]


def _mode1_passes(req: Request, strategy: str, buffers) -> list:
    """vbrcb up to 256 rows of scalars into the window, barrier, vector pass; repeat per chunk of rows."""
    spec = steps_for(req.op, "broadcast")[0]
    esize = req.dtype.bits // 8
    body: list = []
    for r0, n in _chunks(req.dst.valid_rows):
        if body:
            body.append(PipeBarrier("V"))
        body.append(VecOp(spec.intrinsic, req.dtype.name, Addr("tmp", 0, 1, 8), (Addr(_expanded(req), r0 * esize, 1, 0),),
                          math.ceil(n / 8)))
        body.append(PipeBarrier("V"))
        body += _vector_pass(req, strategy, buffers, (r0, n), "tmp")
    return body


def lower(req: Request, strategy: str) -> Plan:
    """Return the plan of a row-expand request in `strategy` (`RowDup` or an emission mode)."""
    _check_dtype(req)
    vr, vc = req.dst.valid
    uses_window = strategy != ROW_DUP and _mode(req) == 1 and vr and vc
    buffers = allocate("a2a3", list(req.tiles), reserve_tmp_window=bool(uses_window))
    if vr == 0 or vc == 0:
        return Plan("a2a3", req.op, strategy, req, buffers, (), ("empty dst valid region: nothing is issued",))
    if strategy == ROW_DUP:
        return Plan("a2a3", req.op, strategy, req, buffers, tuple(_row_dup(req, buffers)),
                    ("per row: scalar unit loads src[i,0], one counter-mode vector_dup fills the row",))
    if _mode(req) == 2:
        body = _vector_pass(req, strategy, buffers, (0, vr), _expanded(req))
        note = f"mode 2: {_expanded(req)} read with block stride 0 and repeat stride 1 block per row"
    else:
        rows = min(vr, WINDOW_ROWS)
        tmp = Tile(math.ceil(rows / 8) * 8, _block_tile(req).cols, req.dtype, rows, _block_tile(req).cols)
        buffers = buffers + (window_buffer("tmp", tmp),)
        body = _mode1_passes(req, strategy, buffers)
        note = f"mode 1: vbrcb into the 8 KiB window at 184 KiB, {len(_chunks(vr))} pass(es) of <= {WINDOW_ROWS} rows"
    return Plan("a2a3", req.op, strategy, req, buffers, tuple(body), (note,))
