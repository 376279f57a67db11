"""Emulate A2/A3 data movement and control: GM<->UB copies, scalar-unit layout moves, the saturation bit.

GM buffers live in the same byte image as the UB, after it (Plan buffers with space "gm").
"""
from __future__ import annotations

import numpy as np

from ..dtypes import dtype as as_dtype
from ..isa_a2a3 import CopyGmToUb, CopyUbToGm, ScalarMove, SetSaturation, TransposeMove
from ..layouts import element_offsets
from .a2a3 import BLOCK, HANDLERS, VectorState
from .ub import UnifiedBuffer


def _blocks(n_bytes: int) -> int:
    return -(-n_bytes // BLOCK)


def _burst_index(start: int, n_burst: int, step: int, length: int) -> np.ndarray:
    return start + np.arange(n_burst, dtype=np.int64)[:, None] * step + np.arange(length, dtype=np.int64)[None, :]


def copy_gm_to_ub(ub: UnifiedBuffer, bases: dict[str, int], op: CopyGmToUb, state: VectorState) -> None:
    """Execute copy_gm_to_ubuf_align: bursts land block-aligned in UB; the pad value fills each burst's tail."""
    ub_step = (_blocks(op.len_burst) + op.dst_gap) * BLOCK
    src = _burst_index(bases[op.src.buf] + op.src.offset, op.n_burst, op.len_burst + op.src_gap, op.len_burst)
    dst = _burst_index(bases[op.dst.buf] + op.dst.offset, op.n_burst, ub_step, op.len_burst)
    ub.bytes[dst] = ub.bytes[src]
    if op.pad_value is not None and op.right_pad:
        dt = as_dtype(op.dtype)
        size = dt.bits // 8
        first = bases[op.dst.buf] + op.dst.offset + op.len_burst
        pads = _burst_index(first, op.n_burst, ub_step, op.right_pad * size)[:, ::size]
        ub.write(pads, np.full(pads.shape, op.pad_value), dt)


def copy_ub_to_gm(ub: UnifiedBuffer, bases: dict[str, int], op: CopyUbToGm, state: VectorState) -> None:
    """Execute copy_ubuf_to_gm_align: block-aligned UB bursts written to GM `len_burst + dst_gap` bytes apart."""
    ub_step = (_blocks(op.len_burst) + op.src_gap) * BLOCK
    src = _burst_index(bases[op.src.buf] + op.src.offset, op.n_burst, ub_step, op.len_burst)
    dst = _burst_index(bases[op.dst.buf] + op.dst.offset, op.n_burst, op.len_burst + op.dst_gap, op.len_burst)
    ub.bytes[dst] = ub.bytes[src]


def scalar_move(ub: UnifiedBuffer, bases: dict[str, int], op: ScalarMove, state: VectorState) -> None:
    """Execute a scalar-unit element move between two layouts over the rows x cols region."""
    dt = as_dtype(op.dtype)
    size = dt.bits // 8
    src_off = element_offsets(op.src_layout, *op.src_shape, size)[:op.rows, :op.cols]
    dst_off = element_offsets(op.dst_layout, *op.dst_shape, size)[:op.rows, :op.cols]
    vals = ub.read(bases[op.src.buf] + op.src.offset + src_off * size, dt)
    ub.write(bases[op.dst.buf] + op.dst.offset + dst_off * size, vals, dt)


def set_saturation(ub: UnifiedBuffer, bases: dict[str, int], op: SetSaturation, state: VectorState) -> None:
    state.saturate = op.on


HANDLERS.update({CopyGmToUb: copy_gm_to_ub, CopyUbToGm: copy_ub_to_gm, ScalarMove: scalar_move, TransposeMove: scalar_move,
                 SetSaturation: set_saturation})
