"""Ascend C BlockReduceMax/Min/Sum semantics (isa.md §5): one result per 32-byte datablock."""
from __future__ import annotations

import numpy as np

from .kernels import identity

F16_MAX = 65504.0  # BlockReduceSum on half saturates partial sums at the f16 maximum (isa.md §5)


def _saturating_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        s = a.astype(np.float32) + b.astype(np.float32)
    if a.dtype == np.float16:
        s = np.clip(s, -F16_MAX, F16_MAX)
    return s.astype(a.dtype)


def reduce_blocks(kernel: str, vals: np.ndarray, active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reduce the last axis of `vals` over `active` lanes; returns (results, block-has-an-active-lane).

    `add` is a pairwise binary tree with inactive lanes contributing 0; `max`/`min` ignore inactive lanes.
    """
    any_active = active.any(axis=-1)
    if kernel == "add":
        x = np.where(active, vals, np.zeros((), vals.dtype))
        while x.shape[-1] > 1:
            x = _saturating_add(x[..., 0::2], x[..., 1::2])
        return x[..., 0], any_active
    fill = identity(kernel, vals.dtype)
    x = np.where(active, vals.astype(np.float64) if not np.issubdtype(vals.dtype, np.integer) else vals, fill)
    res = x.max(axis=-1) if kernel == "max" else x.min(axis=-1)
    return res.astype(vals.dtype), any_active


def block_reduce(kernel: str, src: np.ndarray, *, repeat: int, mask: tuple[int, int], dst_rep_stride: int = 1,
                 src_blk_stride: int = 1, src_rep_stride: int = 8, out: np.ndarray | None = None) -> np.ndarray:
    """Return the flat dst of BlockReduce<kernel>(dst, src, repeat, mask, dstRepStride, srcBlkStride, srcRepStride).

    `src` is read as a flat element stream; `mask` is (hi, lo) bit form (32-bit types use lo only). Results of
    repeat r, block b go to dst element r*dst_rep_stride*8 + b; a block whose lanes are all masked off is left
    as it was in `out` (zeros by default).
    """
    flat = np.asarray(src).reshape(-1)
    esize = flat.dtype.itemsize
    epb = 32 // esize
    epr = 8 * epb
    bits = mask[1] | ((mask[0] << 64) if epr > 64 else 0)
    lane_on = np.array([(bits >> p) & 1 for p in range(epr)], dtype=bool).reshape(8, epb)
    n_out = (repeat - 1) * dst_rep_stride * 8 + 8 if repeat else 0
    dst = np.zeros(max(n_out, 0), dtype=flat.dtype) if out is None else np.array(out, copy=True).reshape(-1)
    for r in range(repeat):
        blocks = []
        for b in range(8):
            start = (r * src_rep_stride + b * src_blk_stride) * epb
            blocks.append(flat[start:start + epb])
        vals = np.stack(blocks)
        res, any_on = reduce_blocks(kernel, vals, lane_on)
        for b in range(8):
            if any_on[b]:
                dst[r * dst_rep_stride * 8 + b] = res[b]
    return dst
