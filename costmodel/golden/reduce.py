"""Golden semantics of the row and column reductions (isa.md §4.3), written as the CPU reference's loops.

For these ops `valid` is the *source* valid region (vr, vc): the reduction runs over it. Row reductions write
dst[i, 0] for i < vr into a dst of `dst_cols` columns (1 for a DN Rx1 tile); column reductions write
dst[0, j] for j < vc into a [1, C] dst.
"""
from __future__ import annotations

import numpy as np

from . import _blank, _region, register


def _accumulator(dst: np.dtype) -> np.dtype:
    """TROWSUM accumulates in float for 2-byte float destinations, else in the dst type (isa.md §4.3)."""
    return np.dtype(np.float32) if dst.kind == "f" and dst.itemsize == 2 else dst


def _fold(kernel: str, lines: np.ndarray, acc_type: np.dtype) -> np.ndarray:
    """Fold `lines[0], lines[1], ...` left to right with the kernel, computing in `acc_type`."""
    with np.errstate(all="ignore"):
        if kernel == "add":
            acc = np.zeros(lines.shape[1:], dtype=acc_type)
            for line in lines:
                acc = (acc + line.astype(acc_type)).astype(acc_type)
        elif kernel == "mul":
            acc = np.ones(lines.shape[1:], dtype=acc_type)
            for line in lines:
                acc = (acc * line.astype(acc_type)).astype(acc_type)
        else:
            acc = lines[0].astype(acc_type)
            for line in lines[1:]:
                take = line > acc if kernel == "max" else line < acc
                acc = np.where(take, line.astype(acc_type), acc)
    return acc


@register("row_reduce")
def _row_reduce(inst, operands, valid, out, params):
    src = np.asarray(operands[0])
    vr, vc = _region(valid, src.shape)
    dst_dtype = src.dtype
    dst = _blank((src.shape[0], int(params.get("dst_cols", 1))), dst_dtype, out)
    if vr and vc:
        acc_type = _accumulator(dst_dtype) if inst.kernel == "add" else dst_dtype
        dst[:vr, 0] = _fold(inst.kernel, src[:vr, :vc].T, acc_type).astype(dst_dtype)
    return dst


@register("col_reduce")
def _col_reduce(inst, operands, valid, out, params):
    src = np.asarray(operands[0])
    vr, vc = _region(valid, src.shape)
    dst = _blank((1, src.shape[1]), src.dtype, out)
    if vr and vc:
        dst[0, :vc] = _fold(inst.kernel, src[:vr, :vc], src.dtype)
    return dst
