"""Helpers shared by the A2/A3 part, expand and block-reduce lowerings: operand streams that re-read data,
per-row scalar operands, mode choice over a sub-region, and scratch in the hidden UB window.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ...arch import constants
from ...dtypes import DType, dtype as as_dtype
from ...isa_a2a3 import Addr, VecOp
from ...plan import Buffer
from ...request import Request
from ...tiles import Tile
from . import elementwise
from .modes import Stream

_A = constants("a2a3")
BLOCK = _A.block_bytes
ONE_L = ("1LCount", "1LNorm")
MODE_ORDER = ("1LNormSmall", "1LNorm", "1LCount", "2LNormRowRpt", "2LNormColVLAlign", "2LCount")


@dataclass(frozen=True)
class BlockStream(Stream):
    """A 32-byte block per row re-read across the whole row (row-expand mode 2, or the vbrcb output).

    The column never advances the address (element j reads lane j mod block width); rows advance by
    `row_bytes`. Emitted calls still carry block stride 1: `zero_block_stride` sets it to 0.
    """

    @property
    def esize(self) -> int:
        return 0


@dataclass(frozen=True)
class UBScalar(Addr):
    """A scalar operand that the scalar unit loads from one UB element before issuing the call."""

    def __repr__(self) -> str:
        return f"[{self.text()}]"


def stream(buf: Buffer, *, broadcast: bool = False, offset: int = 0, dt: DType | None = None) -> Stream:
    """Return the row-major stream of a buffer (optionally re-reading row 0, or viewed as another element type)."""
    t = buf.tile
    return Stream(buf.name, dt or t.dtype, t.row_stride * t.dtype.bits // 8, offset, broadcast)


def zero_block_stride(body: list, bufs: set[str]) -> list:
    """Return `body` with block stride 0 on every source operand in `bufs` (all 8 blocks read the same block)."""
    out = []
    for ins in body:
        if isinstance(ins, VecOp) and any(s.buf in bufs for s in ins.srcs):
            srcs = tuple(replace(s, blk_stride=0) if s.buf in bufs else s for s in ins.srcs)
            ins = replace(ins, srcs=srcs)
        out.append(ins)
    return out


def in_region(tile: Tile, region: tuple[int, int]) -> Tile:
    """Return the tile with its valid region replaced."""
    return replace(tile, valid_rows=region[0], valid_cols=region[1])


def bit_view(dt: DType) -> DType:
    """Return the element type vector copies use: 8-bit data moves as 16-bit pairs (costmodel.md §6, b8 as b16)."""
    return as_dtype("u16") if dt.bits == 8 else dt


def binary_modes(tiles: list[Tile], epr: int, *, rereads_rows: bool) -> tuple[str, dict[str, str | None]]:
    """Return (default, {mode: None or why illegal}) of the TBinOp rule (costmodel.md §6) over `tiles`, dst first.

    With `rereads_rows` an operand re-reads one row or block for every dst row, so the 1-level modes (one
    contiguous run) are illegal unless the region has a single row.
    """
    probe = Request("", "a2a3", tuple((f"t{i}", t) for i, t in enumerate(tiles)))
    legal = elementwise.legal_modes("binary", probe, epr)
    if rereads_rows and tiles[0].valid_rows > 1:
        for m in ONE_L:
            legal[m] = "an operand re-reads one row (or block) for every dst row, so the region is not one contiguous run"
    default = elementwise.default_mode("binary", probe, epr)
    return pick(default, legal), legal


def unary_mode(tiles: list[Tile], epr: int) -> str:
    """Return the TUnaryOp mode (costmodel.md §6) for a same-shape copy over `tiles`, dst first."""
    probe = Request("", "a2a3", tuple((f"t{i}", t) for i, t in enumerate(tiles)))
    return pick(elementwise.default_mode("unary", probe, epr), elementwise.legal_modes("unary", probe, epr))


def pick(default: str, legal: dict[str, str | None]) -> str:
    """Return `default` if legal, else the first legal mode in MODE_ORDER."""
    if legal.get(default, "unknown") is None:
        return default
    return next(m for m in MODE_ORDER if legal.get(m, "unknown") is None)


def window_buffer(name: str, tile: Tile) -> Buffer:
    """Return a scratch buffer in the hidden 8 KiB UB window at 184 KiB that A2/A3 code uses without a tmp (isa.md §1.2)."""
    if tile.nbytes > _A.tmp_ub_bytes:
        raise ValueError(f"{name} needs {tile.nbytes} B but the tmp window holds {_A.tmp_ub_bytes} B")
    return Buffer(name, tile, _A.tmp_ub_offset, scratch=True)
