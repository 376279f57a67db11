"""TCVT numerics as the NPU computes them (isa.md §4.4, §9 item 6), and the TCVT golden.

One element conversion, `convert`, serves the TCVT golden, the A2/A3 emulator's `vconv_*` steps and the A5
emulator's `vcvt`/`vtrc`. Per element, with a round mode (names of costmodel/conversions.py; `none` stands for
the NPU default: `trunc` for float -> integer, `rint` for everything else) and a saturation flag:

1. saturation ON (and the source is not fp4): clamp the value into the intersection of the source and
   destination ranges (the source's range holds every source value, so that is the destination's finite range);
2. float -> integer: round to an integral value with the mode; ON clamps, OFF keeps the low bits of the value
   saturated at s32 (s64 for 64-bit targets) — the NPU's f16/f32 ->(sat) s32 -> wrap path (300.0 -> i8 = 44);
3. float target: round to the target type with the mode. The NPU honours the mode here, the CPU reference
   does not (isa.md §9 item 6). A same-type conversion (f32 -> f32) rounds to an integral value; fp4 rounds
   on its value grid. With OFF an overflow gives what the cast gives (inf, NaN for fp8 e4m3 which has no inf).
   Integer sources go through double as in the CPU reference and take the mode too (inferred: the reference
   names NPU round modes for float sources only);
4. integer -> integer: ON clamps, OFF keeps the low bits.

`odd` is nearest with exact ties going to the odd neighbour, the CPU reference's definition (whether the
hardware uses sticky round-to-odd is unknown, isa.md §4.4). hif8 and fp4 e1m2 have no numpy implementation
(isa.md §2): converting to or from them raises NotModelledError.
"""
from __future__ import annotations

import numpy as np

from ..conversions import effective_modes, effective_round_mode
from ..dtypes import DType, dtype as as_dtype, from_numpy
from ..errors import NotModelledError, ParamError
from . import _blank, _region, register

_I64_TOP = float(np.nextafter(2.0**63, 0))  # the largest double an int64 holds


def round_integral(x: np.ndarray, mode: str) -> np.ndarray:
    """Round float64 values to integral float64 values with a canonical round mode (`none` truncates, a C cast)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore"):
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
    raise ParamError(f"unknown round mode {mode!r}")


def _bits_view(y: np.ndarray) -> np.ndarray:
    return y.view(f"u{y.dtype.itemsize}").astype(np.int64)


def _step(y: np.ndarray, up: bool) -> np.ndarray:
    """Return the next representable value of y's float type toward +inf (`up`) or -inf (8 bits or wider)."""
    y = np.ascontiguousarray(y)
    u = _bits_view(y)
    sign = np.int64(1) << (y.dtype.itemsize * 8 - 1)
    negative = (u & sign) != 0
    out = np.where(negative != up, u + 1, u - 1)  # away from zero: the magnitude grows
    out = np.where((u & (sign - 1)) == 0, np.where(up, 1, sign | 1), out)  # from ±0: the smallest subnormal
    return out.astype(f"u{y.dtype.itemsize}").view(y.dtype)


def round_float(x: np.ndarray, to: np.dtype, mode: str) -> np.ndarray:
    """Round float64 values to the float type `to` (8 bits or wider) with a canonical round mode.

    The cast gives the nearest-even neighbour; the other neighbour is one step away, and the mode picks.
    """
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
        odd_lo = (_bits_view(np.ascontiguousarray(lo)) & 1) == 1
        return np.where(tie, np.where(odd_lo, lo, hi), y)
    raise ParamError(f"unknown round mode {mode!r}")


def round_grid(x: np.ndarray, to: DType, mode: str) -> np.ndarray:
    """Round float64 values onto the finite value grid of a 4-bit float type (fp4 e2m1) with a canonical round
    mode; magnitudes beyond the grid take its largest value (inferred: the type has no inf or NaN)."""
    grid = np.arange(1 << (to.bits - 1), dtype=np.uint8).view(to.np).astype(np.float64)
    mag = np.minimum(np.abs(np.nan_to_num(x)), grid[-1])
    neg = np.signbit(x)
    lo_i = np.clip(np.searchsorted(grid, mag, side="right") - 1, 0, len(grid) - 1)
    hi_i = np.minimum(lo_i + 1, len(grid) - 1)
    lo, hi = grid[lo_i], grid[hi_i]
    if mode in ("floor", "ceil"):
        pick_hi = neg if mode == "floor" else ~neg  # away from zero when the mode points away
    elif mode == "trunc":
        pick_hi = np.zeros(mag.shape, dtype=bool)
    else:
        below, above = mag - lo, hi - mag
        tie_hi = {"round": np.ones(mag.shape, dtype=bool), "odd": (hi_i & 1) == 1}.get(mode, (hi_i & 1) == 0)
        pick_hi = (above < below) | ((below == above) & tie_hi)
    val = np.where((mag == lo) | ~pick_hi, lo, hi)
    return np.where(neg, -val, val).astype(to.np)


def finite_range(dt: DType) -> tuple[float, float]:
    """Return the finite (min, max) of a type as float64 values (integer bounds capped at what an int64 holds)."""
    if dt.is_integer:
        info = np.iinfo(dt.np)
        return max(float(info.min), -2.0**63), min(float(info.max), _I64_TOP)
    import ml_dtypes

    top = float(ml_dtypes.finfo(dt.np).max)
    return -top, top


def _numpy_form(src: DType, dst: DType) -> None:
    for t in (src, dst):
        if not t.numpy_name:
            raise NotModelledError(f"TCVT {src}->{dst}: {t} has no numpy implementation (isa.md §2); estimate only")


def convert(values: np.ndarray, src, dst, mode: str = "none", saturate: bool = True) -> np.ndarray:
    """Return `values` (a numpy array of type `src`) converted to `dst` under a round mode and saturation.

    Parameters
    ----------
    values : array of src's numpy type (any shape)
    src, dst : DType or dtype names
    mode : round mode name (rint, CAST_RINT, r, ...; `none` = the NPU default for the pair)
    saturate : saturation ON (clamp) or OFF (keep the low bits / overflow as the cast does)

    Returns
    -------
    array of dst's numpy type, same shape.
    """
    src, dst = as_dtype(src), as_dtype(dst)
    _numpy_form(src, dst)
    mode = effective_round_mode(src.name, dst.name, mode)
    values = np.asarray(values)
    if src.is_integer:
        wide = values.astype(np.int64)
        if dst.is_integer:
            lo, hi = finite_range(dst)
            return (np.clip(wide, int(lo), int(hi)) if saturate else wide).astype(dst.np)
        x = wide.astype(np.float64)
    else:
        with np.errstate(invalid="ignore", over="ignore"):
            x = values.astype(np.float64)
    lo, hi = finite_range(dst)
    if saturate and not (src.is_float and src.bits == 4):  # fp4 sources are not clamped (isa.md §4.4)
        x = np.clip(x, lo, hi)
    if dst.is_integer:
        r = round_integral(np.nan_to_num(x, nan=0.0), mode)
        bounds = (lo, hi) if saturate else finite_range(as_dtype("i64" if dst.bits > 32 else "i32"))
        return np.clip(r, *bounds).astype(np.int64).astype(dst.np)
    if dst.bits == 4:
        return round_grid(x, dst, mode)
    if dst.name == src.name:
        return round_integral(x, mode).astype(dst.np)
    return round_float(x, dst.np, mode)


@register("convert")
def tcvt_golden(inst, operands, valid, out, params):
    """TCVT golden: dst[:vr, :vc] = convert(src); params `dst_dtype` (required), `round_mode` and `saturation`
    (the pair's isa.md §4.4 defaults when absent, costmodel/conversions.py); `valid` is the shared valid region."""
    if not params.get("dst_dtype"):
        raise ParamError("TCVT needs dst_dtype=...")
    src = np.asarray(operands[0])
    src_dt, dst_dt = from_numpy(src.dtype), as_dtype(params["dst_dtype"])
    mode, sat = effective_modes(src_dt.name, dst_dt.name, params.get("round_mode"), params.get("saturation"))
    vr, vc = _region(valid, src.shape)
    dst = _blank(src.shape, dst_dt.np, out)
    dst[:vr, :vc] = convert(src[:vr, :vc], src_dt, dst_dt, mode, sat)
    return dst

