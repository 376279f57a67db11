"""A2/A3 lowering of the data-movement family: TLOAD and TSTORE of ND Vec tiles here, TMOV in `tmov`.

TLOAD issues one `copy_gm_to_ubuf_align` per index of the GM tensor's outer dims (shape0 x shape1 x shape2),
each moving shape3 rows of shape4 elements as one multi-burst copy (costmodel.md §4, our own finding on the
910B3 data). A burst lands at the start of its tile row and fills ceil(bytes/32) blocks; with a pad value
other than Null the bytes after the burst up to the block boundary get the pad value (inferred). If the
tile has rows or columns the bursts cannot reach, the whole tile is first filled with `vector_dup` in
counter mode and a PIPE_ALL barrier orders the fill before the copies (inferred). TSTORE mirrors TLOAD with
`copy_ubuf_to_gm_align`, writing only the valid region.
"""
from __future__ import annotations

from ...arch import constants
from ...errors import NotModelledError
from ...isa_a2a3 import Addr, CopyGmToUb, CopyUbToGm, PipeBarrier, VecOp
from ...padding import pad_value
from ...plan import Buffer, Plan
from ...request import Request
from ..alloc import allocate
from .emitter import Emitter

_A = constants("a2a3")
BLOCK = _A.block_bytes


MODELLED = ("TLOAD", "TSTORE", "TMOV")


def lowers(op: str) -> bool:
    """Whether this module lowers `op` (TLOAD, TSTORE and TMOV of their family)."""
    return op in MODELLED


def strategies(req: Request) -> tuple[str, dict[str, str | None]]:
    """Return (default, {strategy: None or why illegal}) for TLOAD / TSTORE / TMOV."""
    if not lowers(req.op):
        raise NotModelledError(f"{req.op} has no A2/A3 lowering; modelled data movement: {', '.join(MODELLED)}")
    if req.op == "TMOV":
        from .tmov import strategies as tmov_strategies

        return tmov_strategies(req)
    return "MultiBurst", {"MultiBurst": None}


def place(req: Request) -> tuple[Buffer, ...]:
    """Allocate the UB tiles and put GM tensors after the UB in the emulator image (Buffer.space 'gm')."""
    ub = [(n, t) for n, t in req.tiles if t.loc != "gm"]
    out = list(allocate("a2a3", ub))
    addr = _A.ub_bytes
    for name, tile in req.tiles:
        if tile.loc == "gm":
            out.append(Buffer(name, tile, addr, space="gm"))
            addr += -(-tile.nbytes // BLOCK) * BLOCK
    order = [n for n, _ in req.tiles]
    return tuple(sorted(out, key=lambda b: order.index(b.name)))


def _geometry(req: Request, tile_name: str):
    tile = req.tile(tile_name)
    s0, s1, s2, s3, s4 = req.param("gm_shape")
    esize = tile.dtype.bits // 8
    row_bytes = tile.cols * esize
    burst = s4 * esize
    padded = -(-burst // BLOCK) * BLOCK
    return tile, s0 * s1 * s2, s3, burst, padded, row_bytes, esize


def _tload(req: Request) -> list:
    tile, outer, rows, burst, padded, row_bytes, esize = _geometry(req, "dst")
    pad = req.param("pad", "null")
    value = None if pad == "null" else pad_value(pad, tile.dtype).item()
    em = Emitter()
    if value is not None and (tile.valid_rows < tile.rows or padded < row_bytes):
        em.count(tile.rows * tile.cols).add(VecOp("vector_dup", tile.dtype.name, Addr("dst"), (), 0, value))
        em.mask(None).add(PipeBarrier("ALL"))
    right_pad = (padded - burst) // esize if value is not None else 0
    for o in range(outer):
        em.add(CopyGmToUb(tile.dtype.name, Addr("dst", o * rows * row_bytes), Addr("src", o * rows * burst), rows, burst,
                          0, (row_bytes - padded) // BLOCK, right_pad, value))
    return em.finish()


def _tstore(req: Request) -> list:
    tile, outer, rows, burst, padded, row_bytes, _ = _geometry(req, "src")
    return [CopyUbToGm(tile.dtype.name, Addr("dst", o * rows * burst), Addr("src", o * rows * row_bytes), rows, burst,
                       (row_bytes - padded) // BLOCK, 0) for o in range(outer)]


def lower(req: Request, strategy: str) -> Plan:
    """Return the TLOAD / TSTORE / TMOV plan."""
    strategies(req)
    if req.op == "TMOV":
        from .tmov import lower as tmov_lower

        return tmov_lower(req, strategy)
    body = _tload(req) if req.op == "TLOAD" else _tstore(req)
    return Plan("a2a3", req.op, strategy, req, place(req), tuple(body))
