"""Golden functions of the partial, expand and block-reduce families (registered into `golden`).

Each function follows the CPU reference semantics of isa.md §4.1 (part ops), §4.2 (expand ops) and the
Ascend C BlockReduce description of §5. They read only numpy operands and regions, never a plan.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import ParamError
from . import _blank, register
from .blockreduce import block_reduce
from .kernels import apply

Region = tuple[int, int]


def _regions(valid: Any, shapes: Sequence[tuple[int, int]]) -> list[Region]:
    """Return one region per operand (dst first): None -> each static shape; (r, c) -> that for all; else a list."""
    if valid is None:
        return [tuple(s) for s in shapes]
    if len(valid) == 2 and np.ndim(valid[0]) == 0:
        return [(int(valid[0]), int(valid[1]))] * len(shapes)
    if len(valid) != len(shapes):
        raise ParamError(f"valid needs {len(shapes)} regions (dst first, then each source); got {len(valid)}")
    return [(int(r), int(c)) for r, c in valid]


def _dst_shape(out: np.ndarray | None, params: dict[str, Any], default: tuple[int, int]) -> tuple[int, int]:
    if out is not None:
        return tuple(np.shape(out))
    if params.get("dst_shape") is not None:
        return tuple(int(v) for v in params["dst_shape"])
    return default


def _inside(shape: tuple[int, int], region: Region) -> np.ndarray:
    rows = np.arange(shape[0])[:, None] < region[0]
    cols = np.arange(shape[1])[None, :] < region[1]
    return rows & cols


@register("partial")
def _partial(inst, operands, valid, out, params):
    """TPART*: returns dst; for TPARTARGMAX/MIN (operands src0, src1, src0_idx, src1_idx) returns (values, indices).

    Over the dst valid region: both sources valid -> op (arg ops: src0's pair iff v0 > v1, resp. v0 < v1, ties to
    src1); one valid -> copy it; neither -> 0 (isa.md §4.1, CPU rule).
    """
    s0, s1 = np.asarray(operands[0]), np.asarray(operands[1])
    shape = s0.shape
    dst_r, r0, r1 = _regions(valid, [shape, shape, s1.shape])
    in_dst = _inside(shape, dst_r)
    in0 = in_dst & _inside(shape, r0)
    in1 = in_dst & _inside(shape, r1)
    both = in0 & in1
    if inst.kernel in ("argmax", "argmin"):
        if len(operands) != 4:
            raise ParamError(f"{inst.name} takes src0, src1, src0_idx, src1_idx")
        i0, i1 = np.asarray(operands[2]), np.asarray(operands[3])
        with np.errstate(invalid="ignore"):
            wins = s0 > s1 if inst.kernel == "argmax" else s0 < s1
        take0 = (in0 & ~in1) | (both & wins)
        take1 = (in1 & ~in0) | (both & ~wins)
        vals = _blank(shape, s0.dtype, out)
        idx = _blank(i0.shape, i0.dtype, params.get("out_idx"))
        vals[in_dst] = 0
        idx[in_dst] = 0
        vals[take0], idx[take0] = s0[take0], i0[take0]
        vals[take1], idx[take1] = s1[take1], i1[take1]
        return vals, idx
    dst = _blank(shape, s0.dtype, out)
    dst[in_dst] = 0
    dst[in0 & ~in1] = s0[in0 & ~in1]
    dst[in1 & ~in0] = s1[in1 & ~in0]
    dst[both] = apply(inst.kernel, s0[both], s1[both])
    return dst


@register("col_expand")
def _col_expand(inst, operands, valid, out, params):
    """TCOLEXPAND: dst[i, j] = src[0, j] over the dst valid region; dst shape from `out`, `dst_shape` or the region."""
    src = np.asarray(operands[0])
    vr, vc = _regions(valid, [src.shape])[0]
    dst = _blank(_dst_shape(out, params, (vr, src.shape[1])), src.dtype, out)
    dst[:vr, :vc] = src[0, :vc][None, :]
    return dst


@register("col_expand_binary")
def _col_expand_binary(inst, operands, valid, out, params):
    """TCOLEXPAND<op>: dst[i, j] = op(src0[i, j], src1[0, j]) over the dst valid region (isa.md §4.2)."""
    s0, s1 = np.asarray(operands[0]), np.asarray(operands[1])
    vr, vc = _regions(valid, [s0.shape])[0]
    dst = _blank(s0.shape, s0.dtype, out)
    row = np.ascontiguousarray(np.broadcast_to(s1[0, :vc], (vr, vc)))
    dst[:vr, :vc] = apply(inst.kernel, s0[:vr, :vc], row)
    return dst


@register("row_expand")
def _row_expand(inst, operands, valid, out, params):
    """TROWEXPAND: dst[i, j] = src[i, 0] over the dst valid region (`valid` = dst region or [dst, src])."""
    src = np.asarray(operands[0])
    regions = _regions(valid, [src.shape, src.shape])
    vr, vc = regions[0]
    dst = _blank(_dst_shape(out, params, (vr, vc)), src.dtype, out)
    dst[:vr, :vc] = src[:vr, :1]
    return dst


@register("row_expand_binary")
def _row_expand_binary(inst, operands, valid, out, params):
    """TROWEXPAND<op>: dst[i, j] = op(src0[i, j mod c0], src1[i, j mod c1]) with c_k each source's valid cols.

    The expanded operand has one valid column (Mode 1) or one 32-byte block (Mode 2); argument order is kept, so
    TROWEXPANDDIV with src0 expanded is s_i / src1[i, j] (isa.md §4.2). With a single region, a source's valid
    cols default to min(its static cols, dst valid cols).
    """
    s0, s1 = np.asarray(operands[0]), np.asarray(operands[1])
    wide = s0 if s0.shape[1] >= s1.shape[1] else s1
    if valid is not None and len(valid) == 3 and np.ndim(valid[0]) != 0:
        (vr, vc), (_, c0), (_, c1) = _regions(valid, [wide.shape, s0.shape, s1.shape])
    else:
        vr, vc = _regions(valid, [wide.shape])[0]
        c0, c1 = min(s0.shape[1], vc), min(s1.shape[1], vc)
    dst = _blank(_dst_shape(out, params, wide.shape), wide.dtype, out)
    if vr and vc:
        if not (c0 and c1):
            raise ParamError(f"{inst.name}: a source with 0 valid columns cannot fill {vr}x{vc}")
        j = np.arange(vc)
        dst[:vr, :vc] = apply(inst.kernel, s0[:vr][:, j % c0], s1[:vr][:, j % c1])
    return dst


@register("block_reduce")
def _block_reduce(inst, operands, valid, out, params):
    """BlockReduceMax/Min/Sum: the flat dst (see `blockreduce.block_reduce`)."""
    mask = params.get("mask")
    return block_reduce(inst.kernel, operands[0], repeat=int(params["repeat"]), mask=mask,
                        dst_rep_stride=int(params.get("dst_rep_stride", 1)),
                        src_blk_stride=int(params.get("src_blk_stride", 1)),
                        src_rep_stride=int(params.get("src_rep_stride", 8)), out=out)
