"""Emulate the A2/A3 whole-repeat reductions `vcadd`, `vcmax`, `vcmin` (isa.md §5).

Each repeat reduces its active lanes (normal-mode mask or counter mode, as for every vector call) to one
value written at dst + r * dstRepStride elements. Sums use a pairwise tree over the lane order with
inactive lanes contributing 0 and rounding to the element type at every level (the hardware's tree is
unknown, isa.md §4.3); max/min keep the value only (order ONLY_VALUE). A repeat with no active lane
writes nothing (inferred).
"""
from __future__ import annotations

import numpy as np

from ..dtypes import dtype as as_dtype
from ..isa_a2a3 import VecOp
from .a2a3 import BLOCK, KIND_HANDLERS, VectorState, _active, _addresses
from .ub import UnifiedBuffer


def reduce_lanes(kernel: str, vals: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Reduce the last axis of `vals` over its active lanes; returns one value per leading index."""
    if kernel == "add":
        x = np.where(active, vals, np.zeros((), vals.dtype))
        while x.shape[-1] > 1:
            with np.errstate(all="ignore"):
                x = (x[..., 0::2] + x[..., 1::2]).astype(vals.dtype)
        return x[..., 0]
    if np.issubdtype(vals.dtype, np.integer):
        info = np.iinfo(vals.dtype)
        fill = info.min if kernel == "max" else info.max
        x = np.where(active, vals, fill)
    else:
        fill = -np.inf if kernel == "max" else np.inf
        with np.errstate(all="ignore"):
            x = np.where(active, vals.astype(np.float64), fill)
    res = x.max(axis=-1) if kernel == "max" else x.min(axis=-1)
    with np.errstate(all="ignore"):
        return res.astype(vals.dtype)


def whole_reduce(ub: UnifiedBuffer, bases: dict[str, int], op: VecOp, state: VectorState, kernel: str) -> None:
    """Execute one vcadd/vcmax/vcmin call."""
    dt = as_dtype(op.dtype)
    esize = dt.bits // 8
    lanes = 8 * BLOCK // esize
    act = _active(state, lanes, op.repeat)
    if act.shape[0] == 0:
        return
    vals = ub.read(_addresses(bases[op.srcs[0].buf], op.srcs[0], esize, act.shape), dt)
    res = reduce_lanes(kernel, vals, act)
    written = act.any(axis=1)
    dst = bases[op.dst.buf] + op.dst.offset + np.arange(act.shape[0]) * op.dst.rep_stride * esize
    ub.write(dst[written], res[written], dt)


KIND_HANDLERS["whole_reduce"] = whole_reduce
