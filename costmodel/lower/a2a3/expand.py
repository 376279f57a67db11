"""A2/A3 lowering of TCOLEXPAND and TCOLEXPAND<op> (isa.md §4.2; costmodel.md §6).

TCOLEXPAND: the reference issues one copy_ubuf_to_ubuf per row with lenBurst = ceil(vc·size/32) blocks
(`copy`). That copy writes whole 32-byte blocks, so it is offered only when vc·size is a multiple of 32;
otherwise it would overwrite dst padding columns. The always-exact alternative is a vector copy whose
source re-reads row 0 for every row, in the emission modes of costmodel.md §6 (inferred). 8-bit data moves
as 16-bit pairs, which needs an even vc.

TCOLEXPAND<op>: the binary intrinsic with src1 re-reading row 0: `2LNormRowRpt` = one call per column chunk
repeating over the rows with src1 repeat stride 0; `2LCount` = per-row counter-mode calls with src1 at the
same address each row. The default follows the TBinOp rule (tiles of different shapes -> row repeat).
"""
from __future__ import annotations

import math

from ...errors import NotModelledError
from ...isa_a2a3 import Addr, CopyUB
from ...plan import Plan
from ...request import Request
from ...tiles import Tile
from ..alloc import allocate
from . import modes
from .broadcast import BLOCK, binary_modes, bit_view, stream
from .part_expand_table import steps_for
from .steps import build

COPY = "copy"
ROW0 = {"col_expand": "src", "col_expand_binary": "src1"}  # the operand whose row 0 every dst row reads


def _copy_exact(req: Request) -> str | None:
    """None if a 32-byte-granular row copy writes exactly the valid columns, else why not."""
    t = req.dst
    row_bytes = t.valid_cols * t.dtype.bits // 8
    if row_bytes % BLOCK == 0:
        return None
    return (f"copy_ubuf_to_ubuf moves whole 32-byte blocks: {t.valid_cols} valid cols of {t.dtype} are {row_bytes} B, "
            f"so it would overwrite dst padding")


def _vector_plan_parts(req: Request):
    """Return (steps, rule tiles, vc in the copy's element type), or a reason string when no vector form is exact."""
    dt = req.dtype
    view = bit_view(dt) if req.family == "col_expand" else dt
    vr, vc = req.dst.valid
    if (vc * dt.bits) % view.bits:
        return f"8-bit data is copied as 16-bit pairs; {vc} valid cols is odd, so the last pair would overwrite padding"
    vcv = vc * dt.bits // view.bits
    row0 = ROW0[req.family]
    streams = {b.name: stream(b, broadcast=b.name == row0, dt=view) for b in allocate("a2a3", list(req.tiles))}
    steps = build(steps_for(req.op, "vector"), streams, None)
    tiles = [Tile(t.rows, t.cols * dt.bits // view.bits, view, t.valid_rows, t.valid_cols * dt.bits // view.bits)
             for _, t in req.tiles]
    return steps, tiles, vcv


def strategies(req: Request) -> tuple[str, dict[str, str | None]]:
    """Return (default strategy, {strategy: None if legal else why not})."""
    parts = _vector_plan_parts(req)
    table: dict[str, str | None] = {}
    if req.family == "col_expand":
        table[COPY] = _copy_exact(req)
    if isinstance(parts, str):
        table.update({m: parts for m in ("2LNormRowRpt", "2LCount")})
        default = COPY
    else:
        steps, tiles, _ = parts
        default, legal = binary_modes(tiles, steps[0].epr, rereads_rows=True)
        table.update(legal)
        if req.family == "col_expand" and table[COPY] is None:
            default = COPY
    if all(v is not None for v in table.values()):
        raise NotModelledError(f"{req.op} {req.dtype} with valid {req.dst.valid_rows}x{req.dst.valid_cols} has no exact "
                               f"A2/A3 sequence: {'; '.join(dict.fromkeys(v for v in table.values()))}")
    return default, table


def _copy_rows(req: Request) -> list:
    """One copy_ubuf_to_ubuf per dst row from src row 0, ceil(vc*size/32) blocks (costmodel.md §6)."""
    t = req.dst
    row_bytes = t.row_stride * t.dtype.bits // 8
    blocks = math.ceil(t.valid_cols * t.dtype.bits // 8 / BLOCK)
    return [CopyUB(Addr("dst", r * row_bytes), Addr("src", 0), 1, blocks) for r in range(t.valid_rows)]


def lower(req: Request, strategy: str) -> Plan:
    """Return the plan of a col-expand request in `strategy` (`copy` or an emission mode)."""
    buffers = allocate("a2a3", list(req.tiles))
    vr, vc = req.dst.valid
    if vr == 0 or vc == 0:
        return Plan("a2a3", req.op, strategy, req, buffers, (), ("empty dst valid region: nothing is issued",))
    if strategy == COPY:
        return Plan("a2a3", req.op, strategy, req, buffers, tuple(_copy_rows(req)),
                    ("one copy_ubuf_to_ubuf per row from src row 0",))
    steps, _, vcv = _vector_plan_parts(req)
    body = modes.emit_steps(strategy, steps, vr, vcv)
    note = f"{steps[0].srcs[-1].buf} row 0 re-read for every row"
    if steps[0].dtype != req.dtype:
        note += f"; {req.dtype} moved as {steps[0].dtype} pairs"
    return Plan("a2a3", req.op, strategy, req, buffers, tuple(body), (note,))
