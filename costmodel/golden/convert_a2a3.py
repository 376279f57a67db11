"""A2/A3 conversion numerics (isa.md §4.4): one `vconv` step, and the TCVT semantics built on the same rules.

* Round modes apply to integer *and* float targets (the NPU honours them for f32->f16/bf16/f32; the CPU
  reference ignores them for float targets, isa.md §9 item 6). `odd` is round-to-nearest with exact ties
  going to the odd neighbour, as the CPU reference defines it (whether the hardware uses sticky round-to-odd
  is unknown). A float -> f32 conversion of an f32 value rounds to an integral value (inferred).
* Saturation ON clamps the value into the target's finite range before rounding; OFF keeps the low bits of
  the rounded integer (300.0 -> i8 gives 44). A float source saturates at the int32 range on the way
  (the NPU's f16/f32 ->(sat) s32 -> wrap path).
"""
from __future__ import annotations

import numpy as np

from ..dtypes import DType


def round_integral(x: np.ndarray, mode: str) -> np.ndarray:
    """Round float64 values to integral float64 values with a PTO round mode (`none` truncates like a C cast)."""
    x = np.asarray(x, dtype=np.float64)
    t = np.trunc(x)
    frac = np.abs(x - t)
    away = t + np.sign(x)
    if mode == "rint":
        return np.rint(x)
    if mode == "round":
        return np.where(frac >= 0.5, away, t)
    if mode == "floor":
        return np.floor(x)
    if mode == "ceil":
        return np.ceil(x)
    if mode in ("trunc", "none"):
        return t
    if mode == "odd":
        lo = np.floor(x)
        tie_pick = np.where(np.mod(lo, 2) == 1, lo, lo + 1)
        return np.where(frac == 0.5, tie_pick, np.rint(x))
    raise ValueError(f"unknown round mode {mode!r}")


def _bits_view(y: np.ndarray) -> tuple[np.ndarray, int]:
    width = y.dtype.itemsize * 8
    return y.view(f"u{y.dtype.itemsize}").astype(np.int64), width


def _step(y: np.ndarray, up: bool) -> np.ndarray:
    """Return the next representable value of y's float type toward +inf (`up`) or -inf."""
    u, width = _bits_view(np.ascontiguousarray(y))
    sign = np.int64(1) << (width - 1)
    negative = (u & sign) != 0
    magnitude = u & (sign - 1)
    grow = negative != up  # moving away from zero
    out = np.where(grow, u + 1, u - 1)
    at_zero = magnitude == 0
    out = np.where(at_zero, np.where(up, 1, sign | 1), out)
    return out.astype(f"u{y.dtype.itemsize}").view(y.dtype)


def round_float(x: np.ndarray, to: np.dtype, mode: str) -> np.ndarray:
    """Round float64 values to the float type `to` with a PTO round mode (rint = nearest even)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        y = x.astype(to)
    if mode in ("rint", "none"):
        return y
    yv = y.astype(np.float64)
    lo = np.where(yv > x, _step(y, up=False), y)
    hi = np.where(yv < x, _step(y, up=True), y)
    if mode == "floor":
        return lo
    if mode == "ceil":
        return hi
    if mode == "trunc":
        return np.where(x >= 0, lo, hi)
    lo64, hi64 = lo.astype(np.float64), hi.astype(np.float64)
    with np.errstate(all="ignore"):
        tie = (lo64 != hi64) & (x - lo64 == hi64 - x)
    if mode == "round":
        return np.where(tie, np.where(x > 0, hi, lo), y)
    if mode == "odd":
        odd_lo = (_bits_view(np.ascontiguousarray(lo))[0] & 1) == 1
        return np.where(tie, np.where(odd_lo, lo, hi), y)
    raise ValueError(f"unknown round mode {mode!r}")


def _max_finite(dt: np.dtype) -> float:
    import ml_dtypes

    try:
        return float(np.finfo(dt).max)
    except ValueError:
        return float(ml_dtypes.finfo(dt).max)


def _wrap(r: np.ndarray, to: np.dtype) -> np.ndarray:
    return r.astype(np.int64).astype(to)


def _int_bounds(bits: int, signed: bool = True) -> tuple[float, float]:
    """The integer range as float64 values that convert to int64 without overflow."""
    if not signed:
        return 0.0, float(min(2 ** bits - 1, np.nextafter(2.0 ** 63, 0)))
    return -(2.0 ** (bits - 1)), float(min(2 ** (bits - 1) - 1, np.nextafter(2.0 ** 63, 0)))


def vconv(values: np.ndarray, src: DType, dst: DType, mode: str, saturate: bool) -> np.ndarray:
    """Return one A2/A3 `vconv` step: `values` (of type `src`) converted to `dst` (see the module notes)."""
    to = dst.np
    if src.is_integer:
        wide = np.asarray(values).astype(np.int64)
        if dst.is_integer:
            if saturate:
                info = np.iinfo(to)
                return np.clip(wide, int(info.min), int(info.max)).astype(to)
            return _wrap(wide, to)
        return round_float(wide.astype(np.float64), to, mode)
    x = np.asarray(values).astype(np.float64)
    if dst.is_integer:
        r = round_integral(np.nan_to_num(x, nan=0.0), mode)
        if saturate:
            return np.clip(r, *_int_bounds(dst.bits, dst.kind == "int")).astype(np.int64).astype(to)
        return _wrap(np.clip(r, *_int_bounds(64 if dst.bits > 32 else 32)), to)
    if saturate:
        top = _max_finite(to)
        x = np.clip(x, -top, top)
    if dst.name == src.name:
        return round_integral(x, mode).astype(to)
    return round_float(x, to, mode)


def tcvt(src: np.ndarray, src_dt: DType, dst_dt: DType, mode: str, saturate: bool) -> np.ndarray:
    """Return TCVT's result on A2/A3: `src` converted to `dst_dt` with an explicit round mode and saturation.

    Integer targets without saturation take the low bits of the rounded value; a float source is clamped to
    the int32 range first (int64 for 64-bit targets), as the NPU's f16/f32 ->(sat) s32 -> wrap path does
    (isa.md §4.4).
    """
    return vconv(src, src_dt, dst_dt, mode, saturate)


def tcvt_golden(inst, operands, valid, out, params):
    """Golden function of the convert family on A2/A3: params `dst_dtype` (required), `round_mode` and
    `saturation` (the pair's isa.md §4.4 defaults when absent); `valid` is the shared valid region."""
    from ..conversions import resolve
    from ..dtypes import dtype as as_dtype, from_numpy
    from ..errors import NotModelledError, ParamError
    from . import _blank, _region

    if params.get("arch", "a2a3") != "a2a3":
        raise NotModelledError(f"no {params['arch']} TCVT golden here (this module has the A2/A3 numerics)")
    if not params.get("dst_dtype"):
        raise ParamError("TCVT needs dst_dtype=...")
    src = np.asarray(operands[0])
    src_dt, dst_dt = from_numpy(src.dtype), as_dtype(params["dst_dtype"])
    _, mode, sat = resolve(src_dt.name, dst_dt.name, params.get("round_mode"), params.get("saturation"))
    vr, vc = _region(valid, src.shape)
    dst = _blank(src.shape, dst_dt.np, out)
    dst[:vr, :vc] = tcvt(src[:vr, :vc], src_dt, dst_dt, mode, sat)
    return dst
