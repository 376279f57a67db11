"""TSEL semantics (isa.md §4.5): dst = src0 where the mask bit is 1, else src1, over the dst valid region (TSELS: the
scalar in place of src1); TCMP and TCMPS, which write such a mask (`_compare`); and the TGATHER index form (§4.7,
`_gather`).

`golden("TSEL", src0, src1, mask, valid=...)`, `golden("TSELS", src, mask, scalar=..., valid=...)`: the operands in
request order (the mask tile last). TSELS's CPU reference reads bit c % B of mask element (r, c / B) for a mask type
of B bits (isa.md §4.5): the `row` layout below for a u8 mask, the one modelled.

The mask is a u8 tile read LSB first. Two bit layouts:
* `row` (default; A2/A3 NPU and our A5 model): dst row i uses mask row i, element j uses bit j % 8 of byte j // 8;
* `stream` (CPU reference): one continuous bit stream over the dst valid elements in row-major order, moving
  to the next mask row after `mask_valid_cols` bytes (default ceil(vc / 8)).
Both agree when vc % 8 == 0 and the mask valid cols are vc / 8.
"""
from __future__ import annotations

import math

import numpy as np

from ..catalog import COMPARES
from ..errors import NotModelledError, ParamError
from . import _blank, _region, register
from .kernels import PREDICATES


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


CPU_EQ_TOLERANCE = 1e-9  # the CPU TCMPS's EQ: |a - b| < 1e-9 in double (isa.md §4)


def _compare(inst, operands, valid, out, params):
    """TCMP(src0, src1) / TCMPS(src0, scalar=): the packed mask, row r = the bits of src row r over the valid region
    (bit j % 8 of byte j // 8, LSB first), the rest of dst 0 (the CPU zero-fills it first, isa.md §1.3, §4.5).

    `cmp_mode` eq ne lt le gt ge (default eq). TCMP compares exactly (NaN: EQ false, NE true); TCMPS's EQ is the
    CPU's |a - b| < 1e-9 and NE its negation. dst's shape comes from `out=` or `dst_shape=`, else ceil(cols / 8)
    bytes per row.
    """
    want = 2 if inst.name == "TCMP" else 1
    if len(operands) != want:
        raise ParamError(f"{inst.name} takes {want} source tile{'s' if want > 1 else ''}, got {len(operands)}")
    src0 = np.asarray(operands[0])
    vr, vc = _region(valid, src0.shape)
    mode = str(params.get("cmp_mode", "eq")).lower()
    if mode not in PREDICATES:
        raise ParamError(f"unknown cmp_mode {mode!r}; accepted: {', '.join(PREDICATES)}")
    a = src0[:vr, :vc]
    with np.errstate(invalid="ignore"):
        if inst.name == "TCMP":
            bits = PREDICATES[mode](a, np.asarray(operands[1])[:vr, :vc])
        else:
            s = np.asarray(_scalar_of(params)).astype(src0.dtype)  # the scalar is of the tile's type T
            if mode in ("eq", "ne"):
                eq = np.abs(a.astype(np.float64) - s.astype(np.float64)) < CPU_EQ_TOLERANCE
                bits = eq if mode == "eq" else ~eq
            else:
                bits = PREDICATES[mode](a, s)
    shape = np.shape(out) if out is not None else params.get("dst_shape") or (src0.shape[0], math.ceil(src0.shape[1] / 8))
    dst = np.zeros(tuple(shape), dtype=np.uint8)
    packed = np.packbits(bits, axis=1, bitorder="little")[:, :dst.shape[1]]
    dst[:vr, :packed.shape[1]] = packed
    return dst


def _scalar_of(params, op: str = "TCMPS"):
    if params.get("scalar") is None:
        raise ParamError(f"{op} needs a scalar (scalar=...)")
    return params["scalar"]


@register("compare_select")
def _select(inst, operands, valid, out, params):
    if inst.name in COMPARES:
        return _compare(inst, operands, valid, out, params)
    if inst.name == "TSELS":  # (src, mask), scalar=: the scalar where the bit is 0
        src0, mask = (np.asarray(a) for a in operands)
        src1 = np.full(src0.shape, _scalar_of(params, inst.name), dtype=src0.dtype)
    elif inst.name == "TSEL":
        src0, src1, mask = (np.asarray(a) for a in operands)
    else:
        raise NotModelledError(f"no golden semantics for {inst.name} yet")
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
