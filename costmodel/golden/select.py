"""TSEL semantics (isa.md §4.5): dst = src0 where the mask bit is 1, else src1, over the dst valid region; and
the TGATHER index form (§4.7, `_gather`).

`golden("TSEL", src0, src1, mask, valid=...)`: the operands in request order (the mask tile last).

The mask is a u8 tile read LSB first. Two bit layouts:
* `row` (default; A2/A3 NPU and our A5 model): dst row i uses mask row i, element j uses bit j % 8 of byte j // 8;
* `stream` (CPU reference): one continuous bit stream over the dst valid elements in row-major order, moving
  to the next mask row after `mask_valid_cols` bytes (default ceil(vc / 8)).
Both agree when vc % 8 == 0 and the mask valid cols are vc / 8.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import NotModelledError, ParamError
from . import _blank, _region, register


def mask_bits(mask: np.ndarray, vr: int, vc: int, layout: str = "row", mask_valid_cols: int | None = None) -> np.ndarray:
    """Return the (vr, vc) boolean selection the mask encodes in the given layout."""
    mask = np.asarray(mask, dtype=np.uint8)
    if layout == "row":
        return np.unpackbits(mask, axis=1, bitorder="little")[:vr, :vc].astype(bool)
    if layout != "stream":
        raise ParamError(f"unknown mask layout {layout!r}; accepted: row, stream")
    per_row = mask_valid_cols or math.ceil(vc / 8)
    stream = np.unpackbits(mask[:, :per_row].reshape(-1), bitorder="little")
    return stream[:vr * vc].reshape(vr, vc).astype(bool)


@register("compare_select")
def _select(inst, operands, valid, out, params):
    if inst.name != "TSEL":
        raise NotModelledError(f"no golden semantics for {inst.name} yet")
    src0, src1, mask = (np.asarray(a) for a in operands)
    vr, vc = _region(valid, src0.shape)
    pick = mask_bits(mask, vr, vc, params.get("mask_layout", "row"), params.get("mask_valid_cols"))
    dst = _blank(src0.shape, src0.dtype, out)
    dst[:vr, :vc] = np.where(pick, src0[:vr, :vc], src1[:vr, :vc])
    return dst


@register("gather_scatter")
def _gather(inst, operands, valid, out, params):
    """TGATHER index form (isa.md §4.7): dst[i, j] = src0_flat[idx[i, j]] (src0 flattened over its physical
    columns); an index outside src0 gives 0, as on the CPU (the NPU leaves it undefined)."""
    if inst.name != "TGATHER":
        raise NotModelledError(f"no golden semantics for {inst.name} yet")
    src0, idx = (np.asarray(a) for a in operands)
    vr, vc = _region(valid, idx.shape)
    flat = src0.reshape(-1)
    i = idx[:vr, :vc].astype(np.int64)
    inside = (i >= 0) & (i < flat.size)
    dst = _blank(idx.shape, src0.dtype, out)
    dst[:vr, :vc] = np.where(inside, flat[np.clip(i, 0, flat.size - 1)], np.zeros((), src0.dtype))
    return dst
