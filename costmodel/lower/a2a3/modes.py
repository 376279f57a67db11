"""A2/A3 emission modes (costmodel.md §6): how one vector step is issued over a valid region.

A *step* is one intrinsic applied elementwise over the region (dst and sources walk the same (row, col)
grid). Each mode below returns the instruction sequence PTO issues for it:

* `1LCount`   counter mode, one call for vr*vc contiguous elements
* `1LNorm`    full repeats (chunks of 255) plus one masked repeat for the remainder
* `2LCount`   counter mode with count vc, one call per row
* `2LNormColVLAlign`  one call per row of vc/EPR full repeats (vc a multiple of EPR)
* `2LNormRowRpt`      one call per EPR-column chunk repeating over rows (row stride as repeat stride), the
                      column tail under a contiguous mask; with > 255 rows or a row stride > 255 blocks it
                      falls back to per-row head calls and row-chunked (or per-row) tail calls
* `1LNormSmall`       binary ops with Cols < EPR: one masked call repeating over rows
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...arch import constants
from ...dtypes import DType
from ...isa_a2a3 import FULL_MASK, Addr, PipeBarrier, SetMaskMode, SetVectorMask, VecOp, continuous_mask

_A = constants("a2a3")
REPEAT_BYTES = _A.repeat_bytes
BLOCK = _A.block_bytes
MAX_REPEAT = _A.max_repeat
MAX_STRIDE = _A.max_repeat_stride

MODES = ("1LCount", "1LNorm", "1LNormSmall", "2LCount", "2LNormColVLAlign", "2LNormRowRpt")


@dataclass(frozen=True)
class Stream:
    """How one operand is walked: buffer, byte offset of element (0, 0), row stride in bytes, element type.

    `broadcast` streams re-read row 0 for every row (repeat stride 0), as col-expand sources do.
    """

    buf: str
    dtype: DType
    row_bytes: int
    offset: int = 0
    broadcast: bool = False

    @property
    def esize(self) -> int:
        return self.dtype.bits // 8

    def row_offset(self, r: int) -> int:
        return self.offset + (0 if self.broadcast else r * self.row_bytes)

    @property
    def row_blocks(self) -> int:
        return 0 if self.broadcast else self.row_bytes // BLOCK


@dataclass(frozen=True)
class Step:
    """One intrinsic applied over the region: `dst = intrinsic(srcs..., scalar)`."""

    intrinsic: str
    dtype: DType
    dst: Stream
    srcs: tuple[Stream, ...]
    scalar: Any = None
    dst_dtype: DType | None = None
    mode: str = ""

    @property
    def streams(self) -> tuple[Stream, ...]:
        return (self.dst, *self.srcs)

    @property
    def epr(self) -> int:
        """Elements per repeat: 256 B over the widest element type the step touches."""
        return REPEAT_BYTES // max(s.esize for s in self.streams)


def _dense_rep(stream: Stream, epr: int) -> int:
    return epr * stream.esize // BLOCK


def _call(step: Step, repeat: int, col: int, row: int, rep_strides: tuple[int, ...] | None = None) -> VecOp:
    """Build one call whose element (row, col) is at each stream's address."""
    epr = step.epr
    addrs = []
    for i, s in enumerate(step.streams):
        rep = _dense_rep(s, epr) if rep_strides is None else rep_strides[i]
        addrs.append(Addr(s.buf, s.row_offset(row) + col * s.esize, 1, rep))
    return VecOp(step.intrinsic, step.dtype.name, addrs[0], tuple(addrs[1:]), repeat, step.scalar,
                 step.dst_dtype.name if step.dst_dtype else None, step.mode)


def _chunks(total: int, size: int = MAX_REPEAT) -> list[tuple[int, int]]:
    """Split `total` repeats into (start, count) chunks of at most `size`."""
    return [(s, min(size, total - s)) for s in range(0, total, size)]


def one_level_count(step: Step, n: int) -> list:
    """Counter mode over n contiguous elements: one call, repeat argument 0."""
    return [SetMaskMode("count"), SetVectorMask(0, n), _call(step, 0, 0, 0), SetMaskMode("norm"), SetVectorMask(*FULL_MASK)]


def one_level_norm(step: Step, n: int) -> list:
    """Full repeats over n contiguous elements (a call is issued even for 0 repeats), then a masked remainder."""
    epr = step.epr
    full, rem = divmod(n, epr)
    out: list = [_call(step, cnt, start * epr, 0) for start, cnt in _chunks(full)] or [_call(step, 0, 0, 0)]
    if rem:
        out += [SetVectorMask(*continuous_mask(rem)), _call(step, 1, full * epr, 0), SetVectorMask(*FULL_MASK)]
    return out


def count_call(step: Step, row: int) -> VecOp:
    """One counter-mode call (repeat argument 0) over row `row` of every stream."""
    return _call(step, 0, 0, row)


def two_level_count(step: Step, vr: int, vc: int) -> list:
    """Counter mode with count vc, one call per row."""
    return ([SetMaskMode("count"), SetVectorMask(0, vc)] + [count_call(step, r) for r in range(vr)]
            + [SetMaskMode("norm"), SetVectorMask(*FULL_MASK)])


def two_level_col_aligned(step: Step, vr: int, vc: int) -> list:
    """One call per row with vc/EPR full repeats (vc must be a multiple of EPR)."""
    epr = step.epr
    return [_call(step, cnt, start * epr, r) for r in range(vr) for start, cnt in _chunks(vc // epr)]


def _row_strides(step: Step) -> tuple[int, ...]:
    return tuple(s.row_blocks for s in step.streams)


def row_repeat_fits(step: Step, vr: int) -> bool:
    """Whether the plain row-repeat form applies: <= 255 rows and every row stride <= 255 blocks."""
    return vr <= MAX_REPEAT and all(b <= MAX_STRIDE for b in _row_strides(step))


def two_level_row_repeat(step: Step, vr: int, vc: int) -> list:
    """Column chunks repeated over rows; the masked tail chunk likewise; falls back above 255 rows/stride."""
    epr = step.epr
    n_full, tail = divmod(vc, epr)
    strides = _row_strides(step)
    stride_ok = all(b <= MAX_STRIDE for b in strides)
    out: list = []
    if row_repeat_fits(step, vr):
        out += [_call(step, vr, c * epr, 0, strides) for c in range(n_full)]
    elif n_full:
        # Fallback head: each row's full repeats as contiguous calls (costmodel.md §6, RowRpt fallback).
        out += [_call(step, cnt, start * epr, r) for r in range(vr) for start, cnt in _chunks(n_full)]
    if tail:
        out.append(SetVectorMask(*continuous_mask(tail)))
        if stride_ok:
            out += [_call(step, cnt, n_full * epr, r0, strides) for r0, cnt in _chunks(vr)]
        else:
            out += [_call(step, 1, n_full * epr, r) for r in range(vr)]
        out.append(SetVectorMask(*FULL_MASK))
    return out


def one_level_small(step: Step, vr: int, vc: int) -> list:
    """Binary small-shape form: contiguous mask of vc lanes, one call repeating over the rows."""
    strides = _row_strides(step)
    return ([SetVectorMask(*continuous_mask(vc))] + [_call(step, cnt, 0, r0, strides) for r0, cnt in _chunks(vr)]
            + [SetVectorMask(*FULL_MASK)])


def emit(mode: str, step: Step, vr: int, vc: int) -> list:
    """Return the instructions of `mode` for one step over a vr x vc region."""
    if vr == 0 or vc == 0:
        return []
    if mode == "1LCount":
        return one_level_count(step, vr * vc)
    if mode == "1LNorm":
        return one_level_norm(step, vr * vc)
    if mode == "2LCount":
        return two_level_count(step, vr, vc)
    if mode == "2LNormColVLAlign":
        return two_level_col_aligned(step, vr, vc)
    if mode == "2LNormRowRpt":
        return two_level_row_repeat(step, vr, vc)
    if mode == "1LNormSmall":
        return one_level_small(step, vr, vc)
    raise ValueError(f"unknown mode {mode}")


def emit_steps(mode: str, steps: list[Step], vr: int, vc: int) -> list:
    """Emit several dependent steps in one mode, with a PIPE_V barrier between consecutive steps."""
    out: list = []
    for i, step in enumerate(steps):
        if i:
            out.append(PipeBarrier("V"))
        out += emit(mode, step, vr, vc)
    return out

