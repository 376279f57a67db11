"""Element type conversion with PTO round modes (isa.md §4.4)."""
from __future__ import annotations

import numpy as np

from ..dtypes import DType

ROUND_MODES = ("none", "rint", "round", "floor", "ceil", "trunc", "odd")


def _round(x: np.ndarray, mode: str) -> np.ndarray:
    if mode in ("rint", "r"):
        return np.rint(x)
    if mode in ("round", "a"):
        return np.trunc(x + np.copysign(0.5, x))
    if mode in ("floor", "f"):
        return np.floor(x)
    if mode in ("ceil", "c"):
        return np.ceil(x)
    if mode in ("trunc", "z", "none"):
        return np.trunc(x)
    if mode in ("odd", "o"):
        r = np.rint(x)
        tie = np.abs(x - np.trunc(x)) == 0.5
        odd = np.where(np.mod(np.floor(x), 2) == 1, np.floor(x), np.ceil(x))
        return np.where(tie, odd, r)
    raise ValueError(f"unknown round mode {mode!r}; accepted: {', '.join(ROUND_MODES)}")


def convert(values: np.ndarray, to: DType, mode: str = "rint", saturate: bool = True) -> np.ndarray:
    """Return `values` converted to `to`: float targets round to nearest (host cast); integer targets apply `mode`."""
    x = np.asarray(values).astype(np.float64)
    if to.is_integer:
        info = np.iinfo(to.np)
        y = _round(x, mode)
        if saturate:
            y = np.clip(np.nan_to_num(y), info.min, info.max)
            return y.astype(to.np)
        return np.nan_to_num(y).astype(np.int64).astype(to.np)
    return x.astype(to.np)


def to_integral(values: np.ndarray, mode: str) -> np.ndarray:
    """Return `values` rounded to integral values in their own float type (vconv_f322f32<mode>, isa.md §4)."""
    x = np.asarray(values)
    with np.errstate(all="ignore"):
        return _round(x.astype(np.float64), mode).astype(x.dtype)
