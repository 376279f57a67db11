"""TCVT semantics: element conversion with PTO round and saturation modes (isa.md §4.4), and the TCVT golden.

Per element, following the CPU reference:
1. saturation ON (and the source is not fp4): clamp the value into the intersection of the source and
   destination ranges; OFF: no clamp — narrowing to an integer keeps the low bits (wrap; a float source
   first saturates to s32, or s64 for 64-bit targets, as the NPU's OFF path does), a float target
   overflows as the host cast does (inf, or NaN for fp8 e4m3 which has no inf);
2. float -> integer applies the round mode (`none` = C cast = truncation); float -> fp4 rounds onto the fp4
   value grid with the round mode (`none` = nearest even, inferred); float -> other float types round to
   nearest even whatever the mode (the CPU ignores RoundMode there); f32 -> f32 with an explicit mode rounds
   to an integral value (the NPU honours RoundMode for f32 targets, isa.md §4.4/§9.6; `none` copies);
3. integer -> float is exact then cast (through double); integer -> integer clamps (ON) or wraps (OFF).
hif8 and fp4 e1m2 have no numpy implementation (isa.md §2): converting them raises NotModelledError.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import DType, dtype as as_dtype
from ..errors import NotModelledError, ParamError
from . import _blank, _region, register

ROUND_MODES = ("none", "rint", "round", "floor", "ceil", "trunc", "odd")
_LETTERS = {"r": "rint", "a": "round", "f": "floor", "c": "ceil", "z": "trunc", "o": "odd"}

# Pairs whose default SaturationMode is OFF (wrap) on A2/A3, isa.md §4.4; assumed the same on A5 (inferred).
DEFAULT_SAT_OFF = {("f16", "u8"), ("f16", "i8"), ("f32", "i16"), ("f16", "i16"), ("i64", "i32"), ("i32", "i16")}
ESTIMATE_ONLY = ("hif8", "fp4_e1m2")  # isa.md §2: no numpy implementation


def default_saturation(src: str, dst: str) -> str:
    """Return the saturation mode a TCVT uses when none is given ('on' or 'off')."""
    return "off" if (src, dst) in DEFAULT_SAT_OFF else "on"


def _canonical(mode: str) -> str:
    key = str(mode).strip().lower()
    key = key[5:] if key.startswith("cast_") else key
    key = _LETTERS.get(key, key)
    if key not in ROUND_MODES:
        raise ParamError(f"unknown round mode {mode!r}; accepted: {', '.join(ROUND_MODES)}")
    return key


def round_integral(x: np.ndarray, mode: str) -> np.ndarray:
    """Round float64 values to integral values: rint (ties even), round (ties away), floor, ceil, trunc,
    odd (nearest, exact .5 ties to the odd integer, per the CPU reference)."""
    mode = _canonical(mode)
    with np.errstate(invalid="ignore"):
        if mode == "rint":
            return np.rint(x)
        if mode in ("trunc", "none"):
            return np.trunc(x)
        if mode == "floor":
            return np.floor(x)
        if mode == "ceil":
            return np.ceil(x)
        t = np.trunc(x)
        frac = np.abs(x - t)
        if mode == "round":
            return np.where(frac >= 0.5, t + np.sign(x), t)
        nearest = np.where(frac > 0.5, t + np.sign(x), t)
        tie_odd = np.where(np.mod(t, 2) != 0, t, t + np.sign(x))
        return np.where(frac == 0.5, tie_odd, nearest)


def value_range(dt: DType) -> tuple[float, float]:
    """Return the finite (min, max) of a type."""
    if dt.is_integer:
        info = np.iinfo(dt.np)
        return float(info.min), float(info.max)
    import ml_dtypes

    top = float(ml_dtypes.finfo(dt.np).max)
    return -top, top


def _grid_round(x: np.ndarray, to: DType, mode: str) -> np.ndarray:
    """Round float64 values onto the finite value grid of a small float type (fp4) with a PTO round mode (inferred)."""
    grid = np.arange(1 << (to.bits - 1), dtype=np.uint8).view(to.np).astype(np.float64)
    mag = np.minimum(np.abs(np.nan_to_num(x)), grid[-1])
    neg = np.signbit(x)
    lo_i = np.clip(np.searchsorted(grid, mag, side="right") - 1, 0, len(grid) - 1)
    hi_i = np.minimum(lo_i + 1, len(grid) - 1)
    lo, hi = grid[lo_i], grid[hi_i]
    exact = mag == lo
    toward = {"floor": np.where(neg, "away", "zero"), "ceil": np.where(neg, "zero", "away")}
    if mode in toward:
        pick_hi = toward[mode] == "away"
    elif mode == "trunc":
        pick_hi = np.zeros(mag.shape, dtype=bool)
    else:
        below, above = mag - lo, hi - mag
        tie = below == above
        tie_rule = {"round": np.ones(mag.shape, dtype=bool), "odd": (hi_i & 1) == 1}.get(mode, (hi_i & 1) == 0)
        pick_hi = (above < below) | (tie & tie_rule)
    val = np.where(exact, lo, np.where(pick_hi, hi, lo))
    return np.where(neg, -val, val)


def convert(values: np.ndarray, to: DType, mode: str = "none", saturate: bool = True) -> np.ndarray:
    """Return `values` (a numpy array of the source type) converted to `to` under `mode` and saturation."""
    values = np.asarray(values)
    to = as_dtype(to)
    mode = _canonical(mode)
    if to.name in ESTIMATE_ONLY:
        raise NotModelledError(f"{to.name} has no numpy implementation (isa.md §2): TCVT to it is estimate-only")
    src_int = np.issubdtype(values.dtype, np.integer)
    if src_int and to.is_integer:
        wide = values.astype(np.int64)
        if saturate:
            lo, hi = value_range(to)
            wide = np.clip(wide, int(lo), int(hi))
        return wide.astype(to.np)
    with np.errstate(invalid="ignore"):
        x = values.astype(np.float64 if src_int else np.float32).astype(np.float64)
    lo, hi = value_range(to)
    if saturate and "float4" not in str(values.dtype):
        x = np.clip(x, lo, hi)  # the source range contains every source value, so the intersection is dst's
    if to.is_integer:
        y = np.nan_to_num(round_integral(x, "trunc" if mode == "none" else mode), nan=0.0)
        top = np.nextafter(2.0**63, 0)  # the largest double an int64 holds
        if not saturate:  # float ->(sat) s32 (s64 for 64-bit targets) -> keep the low bits (isa.md §4.4)
            wide = (-top, top) if to.bits > 32 else (-2.0**31, 2.0**31 - 1)
            return np.clip(y, *wide).astype(np.int64).astype(to.np)
        return np.clip(y, lo, min(hi, top)).astype(to.np)
    if to.bits == 4:
        return _grid_round(x, to, "rint" if mode == "none" else mode).astype(to.np)
    if not src_int and values.dtype == to.np and mode != "none":
        return round_integral(x, mode).astype(to.np)
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(np.float32).astype(to.np) if not src_int else x.astype(to.np)


@register("convert")
def _tcvt(inst, operands, valid, out, params):
    """TCVT golden: dst[:vr, :vc] = convert(src) with params dst_dtype, round_mode, saturation."""
    if not params.get("dst_dtype"):
        raise ParamError("TCVT needs dst_dtype=...")
    src = np.asarray(operands[0])
    to = as_dtype(params["dst_dtype"])
    vr, vc = _region(valid, src.shape)
    sat = params.get("saturation")
    on = (sat if sat is not None else default_saturation(_dtype_name(src.dtype), to.name)) in ("on", True)
    dst = _blank(src.shape, to.np, out)
    dst[:vr, :vc] = convert(src[:vr, :vc], to, params.get("round_mode", "none"), on)
    return dst


def _dtype_name(np_dtype: np.dtype) -> str:
    from ..dtypes import all_dtypes

    return next((d.name for d in all_dtypes() if d.numpy_name and d.np == np_dtype), "")
