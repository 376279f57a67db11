"""How `verify` checks the reductions, TCVT and data movement: golden arguments, tolerances, regions.

* Sums: the hardware adds in a different order than the CPU reference, so TROWSUM is compared with eps
  1e-3 (4-byte) / 5e-3 (2-byte) (isa.md §8); TCOLSUM uses the same rule (inferred).
* Copies of whole 32-byte blocks may overwrite padding after the valid region inside the last block
  of a row (isa.md §1.3); those elements are `free`.
* TLOAD with a pad value defines the whole tile, so the whole tile is checked.
* TCMP/TCMPS write one bit per element: in a row's last mask byte only the bits of valid elements are compared
  (what the NPU leaves in the others is not documented; the CPU zeroes them).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..catalog import COMPARES
from ..golden import golden
from ..layouts import ROW_RUNS
from ..plan import Plan
from .verify import CheckSpec, check_spec, golden_args

_SUM_EPS = {4: 1e-3, 2: 5e-3}


def block_padding(shape: tuple[int, int], valid: tuple[int, int], layout: str, esize: int) -> np.ndarray:
    """Return the elements after the valid region that share a 32-byte block with a valid element."""
    per_block = 32 // esize
    free = np.zeros(shape, dtype=bool)
    vr, vc = valid
    if vr == 0 or vc == 0:
        return free
    if layout in ROW_RUNS:
        free[:vr, vc:-(-vc // per_block) * per_block] = True
    else:
        free[vr:-(-vr // per_block) * per_block, :vc] = True
    return free


def _sum_eps(plan: Plan, t, spec: CheckSpec) -> CheckSpec:
    if plan.request.op in ("TROWSUM", "TCOLSUM") and t.dtype.is_float:
        return replace(spec, eps=_SUM_EPS.get(t.dtype.bits // 8, spec.eps))
    return spec


@golden_args("row_reduce")
def _row_reduce_args(plan: Plan, inputs: dict) -> np.ndarray:
    req = plan.request
    src = req.tile("src")
    return golden(req.op, inputs["src"], valid=src.valid, dst_cols=req.dst.cols)


@check_spec("row_reduce")
def _row_reduce_spec(plan: Plan, buf, spec: CheckSpec) -> CheckSpec:
    return _sum_eps(plan, buf.tile, spec)


@golden_args("col_reduce")
def _col_reduce_args(plan: Plan, inputs: dict) -> np.ndarray:
    req = plan.request
    return golden(req.op, inputs["src"], valid=req.tile("src").valid)


@check_spec("col_reduce")
def _col_reduce_spec(plan: Plan, buf, spec: CheckSpec) -> CheckSpec:
    d = buf.tile
    if 0 in plan.request.tile("src").valid:  # nothing to reduce: the instruction returns at once
        return replace(spec, checked=np.zeros(d.shape, dtype=bool), note="empty source region: dst untouched")
    free = block_padding(d.shape, d.valid, d.layout, d.dtype.bits // 8)
    return replace(_sum_eps(plan, d, spec), free=free)


@golden_args("convert")
def _convert_args(plan: Plan, inputs: dict) -> np.ndarray:
    """TCVT on any arch: the destination type from the dst tile, round mode and saturation from the request."""
    req = plan.request
    return golden(req.op, inputs["src"], valid=req.dst.valid, **dict(req.params, dst_dtype=req.dst.dtype.name))


@golden_args("data_movement")
def _data_movement_args(plan: Plan, inputs: dict) -> np.ndarray:
    req = plan.request
    if req.op == "TLOAD":
        gm = inputs["src"].reshape(req.param("gm_shape"))
        return golden("TLOAD", gm, valid=req.dst.valid, tile_shape=req.dst.shape, pad=req.param("pad"))
    if req.op == "TSTORE":
        src = req.tile("src")
        gm = golden("TSTORE", inputs["src"], valid=src.valid, gm_shape=req.param("gm_shape"), out=inputs["dst"])
        return gm.reshape(req.dst.shape)
    return golden(req.op, inputs["src"], valid=req.dst.valid)


@check_spec("data_movement")
def _data_movement_spec(plan: Plan, buf, spec: CheckSpec) -> CheckSpec:
    req = plan.request
    d = buf.tile
    if req.op == "TLOAD" and req.param("pad") != "null":
        return replace(spec, checked=np.ones(d.shape, dtype=bool), note="the pad value fills the rest of the tile")
    if req.op == "TMOV" and plan.strategy == "UbCopy":
        return replace(spec, free=block_padding(d.shape, d.valid, d.layout, d.dtype.bits // 8))
    return spec


@golden_args("compare_select")
def _compare_select_args(plan: Plan, inputs: dict) -> np.ndarray:
    """TCMP/TCMPS: the element region is src0's (dst is the packed mask); TSEL as any op."""
    req = plan.request
    srcs = [inputs[name] for name, _ in req.sources]
    if req.op in COMPARES:
        return golden(req.op, *srcs, valid=req.tile("src0").valid, dst_shape=req.dst.shape, **dict(req.params))
    return golden(req.op, *srcs, valid=req.dst.valid, **dict(req.params))


@check_spec("compare_select")
def _compare_select_spec(plan: Plan, buf, spec: CheckSpec) -> CheckSpec:
    """A compare's mask: the bits past the last valid element of each row are not compared; TCMPS NE inverts whole
    mask words (isa.md §4), so padding inside the written 32-byte blocks may change."""
    req = plan.request
    if req.op not in COMPARES:
        return spec
    d = buf.tile
    vr, vc = req.tile("src0").valid
    bits = np.full(d.shape, 0xFF, dtype=np.uint8)
    if vc % 8:
        bits[:vr, vc // 8] = (1 << (vc % 8)) - 1
    free = block_padding(d.shape, d.valid, d.layout, 1) if req.op == "TCMPS" and req.param("cmp_mode") == "ne" \
        else spec.free
    note = f"bits of {vr}x{vc} elements" + (f"; the last {8 - vc % 8} bit(s) of each row's last byte are padding"
                                             if vc % 8 else "")
    return replace(spec, bits=bits, free=free, note=note)
