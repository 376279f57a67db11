"""Seeded random operand data for emulator checks, drawn from each instruction's input domain."""
from __future__ import annotations

import numpy as np

from ..dtypes import DType


def _int_range(dt: DType, lo: int, hi: int) -> tuple[int, int]:
    info = np.iinfo(dt.np)
    return max(lo, int(info.min)), min(hi, int(info.max) + 1)


def sample(dt: DType, shape: tuple[int, ...], domain: str, rng: np.random.Generator, role: str = "value") -> np.ndarray:
    """Return an array of `dt` for an operand playing `role`.

    Roles: 'value', 'divisor' (never 0), 'shift', 'exponent', 'index' (a flat element index into a tile of the
    same shape: 0 .. size-1), and 'integral' / 'integral_divisor': integers in [-100, 100) even for float types,
    0 replaced by 1 for a divisor (the upstream tfmods data, isa.md §8).
    """
    if role == "index":
        return rng.integers(0, int(np.prod(shape)), size=shape, dtype=np.int64).astype(dt.np)
    if role.startswith("integral"):
        lo, hi = _int_range(dt, -100, 100) if dt.is_integer else (-100, 100)
        x = rng.integers(lo, hi, size=shape, dtype=np.int64)
        if role == "integral_divisor":
            x = np.where(x == 0, 1, x)
        return x.astype(dt.np)
    if dt.is_integer:
        bits = dt.bits
        if role == "shift":
            lo, hi = 0, bits
        elif role == "exponent":
            lo, hi = 0, 5
        elif domain == "pow":
            lo, hi = _int_range(dt, -4, 5)
        elif domain in ("positive", "positive_nonzero", "nonneg"):
            lo, hi = _int_range(dt, 1, 100)
        else:
            lo, hi = _int_range(dt, -100, 100)
        x = rng.integers(lo, hi, size=shape, dtype=np.int64)
        if role == "divisor":
            x = np.where(x == 0, 1, x)
        return x.astype(dt.np)
    if role == "divisor":
        x = rng.uniform(0.5, 50.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    elif role == "exponent":
        x = rng.uniform(-2.0, 3.0, size=shape)
    elif domain in ("positive", "positive_nonzero"):
        x = rng.uniform(0.1, 100.0, size=shape)
    elif domain == "nonneg":
        x = rng.uniform(0.0, 100.0, size=shape)
    elif domain == "pow":
        x = rng.uniform(0.5, 4.0, size=shape)
    elif domain in ("exp", "expdif"):
        x = rng.uniform(-5.0, 5.0, size=shape)
    else:
        x = rng.uniform(-13.033, 101.011, size=shape)
    return x.astype(dt.np)


def default_scalar(dt: DType, domain: str, kernel: str):
    """Return the scalar used when a request gives none: a small value valid for the op's domain."""
    if kernel in ("shl", "shr"):
        return 2
    if kernel == "lrelu":
        return 0.125
    if kernel == "pow":
        return 2
    return 3 if dt.is_integer else 1.5
