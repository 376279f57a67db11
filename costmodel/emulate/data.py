"""Seeded random operand data for emulator checks, drawn from each instruction's input domain.

Float data comes from `_FLOAT_ROLES` (an operand's role) or else `_FLOAT_DOMAINS` (the catalogue domain), else
uniform(-13.033, 101.011) as in the upstream tests (isa.md §8); integer data likewise from `_INT_ROLES`,
`_INT_DOMAINS`, else [-100, 100). Conversion sources have their own sampler, `conversion_source`.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import DType


def _int_range(dt: DType, lo: int, hi: int) -> tuple[int, int]:
    info = np.iinfo(dt.np)
    return max(lo, int(info.min)), min(hi, int(info.max) + 1)


def _uniform(lo: float, hi: float):
    return lambda rng, shape: rng.uniform(lo, hi, size=shape)


def _signed(lo: float, hi: float):
    """Magnitudes uniform in [lo, hi), each with a random sign."""
    return lambda rng, shape: rng.uniform(lo, hi, size=shape) * rng.choice([-1.0, 1.0], size=shape)


_FLOAT_ROLES = {
    "divisor": _signed(0.5, 50.0),
    "exponent": _uniform(-2.0, 3.0),
    # a long product of factors near ±1 stays finite and away from 0, where one of values up to 101 overflows: in
    # [0.9, 1.1) a factor's log magnitude has a spread of 0.06, so even 4096 of them (a 4 KiB f16 column of a 256 KiB
    # buffer) spread by about e^±4 and keep well above eps (in [0.5, 1.5), 200 f16 factors fell to 1e-4 and below)
    "factor": _signed(0.9, 1.1),
    # positive (a zero-mean sum cancels, so an f16 sum in another order misses the relative eps, isa.md §8) and
    # of mean 0.45: even a sum over the 128 Ki f16 elements of an A5 unified buffer (256 KiB, isa.md §1.2) comes
    # to about 59000, below the f16 max 65504
    "summand": _uniform(0.1, 0.8),
}
_FLOAT_DOMAINS = {
    "positive": _uniform(0.1, 100.0),
    "positive_nonzero": _uniform(0.1, 100.0),
    "nonneg": _uniform(0.0, 100.0),
    "pow": _uniform(0.5, 4.0),
    "exp": _uniform(-5.0, 5.0),
    "expdif": _uniform(-5.0, 5.0),
    "ties": lambda rng, shape: rng.integers(-4, 5, size=shape).astype(np.float64),  # compares: equal values are common
}
_INT_ROLES = {  # (lo, hi) of the integers drawn, given the type's width in bits
    "shift": lambda bits: (0, bits),
    # negative exponents too (clipped to 0 for unsigned types); base^11 with bases in the pow domain [-4, 5) stays
    # exact in the golden's double (isa.md §4: pow in double, cast to T) while it wraps 8- and 16-bit types
    "exponent": lambda bits: (-3, 12),
}
_INT_DOMAINS = {
    "pow": (-4, 5),
    "positive": (1, 100),
    "positive_nonzero": (1, 100),
    "nonneg": (1, 100),
    "ties": (-4, 5),
}


def sample(dt: DType, shape: tuple[int, ...], domain: str, rng: np.random.Generator, role: str = "value",
           to: DType | None = None) -> np.ndarray:
    """Return an array of `dt` for an operand playing `role`.

    Roles: 'value', 'divisor' (never 0), 'shift', 'exponent', 'index' (a flat element index into a tile of the
    same shape: 0 .. size-1), 'factor' (of a long product: magnitudes in [0.9, 1.1) with random signs; odd
    integers in [-5, 5], never 0 even after wrapping), 'summand' (of a long float sum: in [0.1, 0.8); integers keep
    the domain's range),
    'integral' / 'integral_divisor': integers in [-100, 100) even for float types, 0 replaced by 1 for a
    divisor (the upstream tfmods data, isa.md §8), and 'conversion': the source of a conversion to `to`
    (see `conversion_source`).
    """
    if role == "conversion":
        return conversion_source(dt, to, shape, rng)
    if role == "index":
        return rng.integers(0, int(np.prod(shape)), size=shape, dtype=np.int64).astype(dt.np)
    if role.startswith("integral"):
        lo, hi = _int_range(dt, -100, 100) if dt.is_integer else (-100, 100)
        x = rng.integers(lo, hi, size=shape, dtype=np.int64)
        if role == "integral_divisor":
            x = np.where(x == 0, 1, x)
        return x.astype(dt.np)
    if dt.is_integer:
        if role == "factor":
            return (2 * rng.integers(-3, 3, size=shape, dtype=np.int64) + 1).astype(dt.np)
        if role in _INT_ROLES:
            lo, hi = _int_range(dt, *_INT_ROLES[role](dt.bits))
        else:
            lo, hi = _int_range(dt, *_INT_DOMAINS.get(domain, (-100, 100)))
        x = rng.integers(lo, hi, size=shape, dtype=np.int64)
        if role == "divisor":
            x = np.where(x == 0, 1, x)
        return x.astype(dt.np)
    draw = _FLOAT_ROLES.get(role) or _FLOAT_DOMAINS.get(domain) or _uniform(-13.033, 101.011)
    return draw(rng, shape).astype(dt.np)


def float_info(dt: DType) -> tuple[float, bool, bool]:
    """Return (largest finite value, has inf, has NaN) of a float type."""
    import ml_dtypes

    with np.errstate(all="ignore"):
        special = np.array([np.inf, np.nan]).astype(dt.np).astype(np.float64)
    return float(ml_dtypes.finfo(dt.np).max), bool(np.isinf(special[0])), bool(np.isnan(special[1]))


def _midpoints(to: DType, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Return float64 midpoints between neighbouring values of float type `to`, of random sign, over its binades."""
    import ml_dtypes

    info = ml_dtypes.finfo(to.np)
    mags = np.minimum(np.exp2(rng.uniform(info.minexp, info.maxexp, size=shape)), float(info.max))
    y = mags.astype(to.np).astype(np.float64)
    exp = np.maximum(np.floor(np.log2(y)), info.minexp)
    return (y + np.exp2(exp - info.nmant) / 2) * rng.choice([-1.0, 1.0], size=shape)


def conversion_source(src: DType, to: DType, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Return source data of type `src` for a conversion to `to` that exercises rounding and saturation.

    About half the elements spread over the destination range widened by a half (by a quarter of its width on
    each side for an integer destination), as far as the source type reaches, so some lie beyond it: saturation
    ON clamps them, OFF wraps or overflows them (isa.md §4.4). The rest are small integers for an integer source;
    for a float source rounding ties: x.5, or the midpoints of neighbouring values for a float destination with
    fewer mantissa bits. A float source also gets a few ±inf (ON clamps them, isa.md §4.4 step 1; OFF follows the
    golden's overflow rule, costmodel/golden/convert.py), and NaN when the destination is a float type that holds
    it (NaN -> integer is not defined by isa.md §4.4). The first element is never one of the spread or specials, so
    a one-element valid region still converts a finite value.
    """
    if to.is_integer:
        info = np.iinfo(to.np)
        quarter = (int(info.max) - int(info.min)) // 4
        lo, hi = int(info.min) - quarter, int(info.max) + quarter
    else:
        top = float_info(to)[0]
        lo, hi = -1.5 * top, 1.5 * top
    kind = rng.random(shape)
    if kind.size:  # the first element (in every valid region) is a small value or a tie: never all beyond or inf
        kind.flat[0] = 0.75
    if src.is_integer:
        info = np.iinfo(src.np)
        lo, hi = max(int(lo), int(info.min)), min(int(hi), int(info.max))
        spread = rng.integers(lo, hi, size=shape, endpoint=True, dtype=np.int64)
        small = rng.integers(max(lo, -130), min(hi, 130), size=shape, endpoint=True, dtype=np.int64)
        return np.where(kind < 0.5, spread, small).astype(src.np)
    import ml_dtypes

    top_s, has_inf, has_nan = float_info(src)
    spread = rng.uniform(max(lo, -top_s), min(hi, top_s), size=shape)
    if to.is_float and to.name != src.name and ml_dtypes.finfo(to.np).nmant < ml_dtypes.finfo(src.np).nmant:
        ties = _midpoints(to, shape, rng)
    else:
        ties = rng.integers(-130, 130, size=shape) + 0.5
    x = np.clip(np.where(kind < 0.5, spread, ties), -top_s, top_s)
    specials = [v for v, ok in ((np.inf, has_inf), (-np.inf, has_inf),
                                (np.nan, has_nan and to.is_float and float_info(to)[2])) if ok]
    if specials:
        x = np.where(kind > 0.95, rng.choice(specials, size=shape), x)
    return x.astype(src.np)


def default_scalar(dt: DType, domain: str, kernel: str):
    """Return the scalar used when a request gives none: a small value valid for the op's domain."""
    if kernel in ("shl", "shr"):
        return 2
    if kernel == "lrelu":
        return 0.125
    if kernel in ("pow", "compare"):  # a compare's scalar among its small-integer data: EQ holds for some elements
        return 2
    return 3 if dt.is_integer else 1.5
