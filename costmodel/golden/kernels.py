"""Elementwise math with the C++ semantics of the PTO CPU reference (isa.md §4), on numpy arrays.

Every kernel takes arrays already in the element type T (scalars are converted to T first) and returns
an array of T. Integers wrap; integer division truncates toward zero; transcendentals are computed in
double and rounded to T once.
"""
from __future__ import annotations

from typing import Callable

import numpy as np


def _is_int(a: np.ndarray) -> bool:
    return np.issubdtype(a.dtype, np.integer)


def _via_double(fn: Callable[..., np.ndarray], *arrays: np.ndarray) -> np.ndarray:
    out_dtype = arrays[0].dtype
    with np.errstate(all="ignore"):
        res = fn(*(np.asarray(a, dtype=np.float64) for a in arrays))
    if np.issubdtype(out_dtype, np.integer):
        info = np.iinfo(out_dtype)
        res = np.where(np.isfinite(res), res, 0)
        return np.trunc(res).astype(np.int64 if info.min < 0 else np.uint64).astype(out_dtype)
    return res.astype(out_dtype)


def _arith(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    def kernel(*arrays: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(fn(*arrays)).astype(arrays[0].dtype)

    return kernel


def _once_in_float(fn: Callable[..., np.ndarray], *arrays: np.ndarray) -> np.ndarray:
    """Return fn over the arrays in T, each operation rounded (or wrapped) in T, except for half: computed in float
    and rounded once (isa.md §4: a numpy reference computes a C++ expression on half in float32)."""
    if arrays[0].dtype == np.float16:
        with np.errstate(all="ignore"):
            return np.asarray(fn(*(a.astype(np.float32) for a in arrays))).astype(np.float16)
    return _arith(fn)(*arrays)


def trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return a / b in T: IEEE for floats, truncation toward zero for integers (C++ `/`)."""
    if not _is_int(a):
        return _arith(np.divide)(a, b)
    with np.errstate(all="ignore"):
        wide = np.int64 if np.issubdtype(a.dtype, np.signedinteger) else np.uint64
        aw, bw = a.astype(wide), b.astype(wide)
        safe = np.where(bw == 0, 1, bw)
        q = aw // safe
        fix = (aw % safe != 0) & ((aw < 0) != (safe < 0))
        q = np.where(fix, q + 1, q)
        return np.where(bw == 0, 0, q).astype(a.dtype)


def floor_rem(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return TREM: remainder with the sign of the divisor (C `%`/fmod, then add b when the signs differ)."""
    if _is_int(a):
        with np.errstate(all="ignore"):
            wide = np.int64 if np.issubdtype(a.dtype, np.signedinteger) else np.uint64
            aw, bw = a.astype(wide), b.astype(wide)
            safe = np.where(bw == 0, 1, bw)
            r = np.fmod(aw, safe)
            r = np.where((r != 0) & ((aw >= 0) != (bw >= 0)), r + bw, r)
            return np.where(bw == 0, 0, r).astype(a.dtype)

    def rem(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        r = np.fmod(x, y)
        return np.where((r != 0) & ((x >= 0) != (y >= 0)), r + y, r)

    return _via_double(rem, a, b)


def c_fmod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return TFMOD: C fmod, remainder with the sign of the dividend (integers: C `%`)."""
    if _is_int(a):
        with np.errstate(all="ignore"):
            safe = np.where(b == 0, 1, b)
            return np.where(b == 0, 0, np.fmod(a, safe)).astype(a.dtype)
    return _via_double(np.fmod, a, b)


def c_max(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """std::max(a, b): returns a unless a < b (so a NaN in a is kept, a NaN in b is not)."""
    return np.where(a < b, b, a).astype(a.dtype)


def c_min(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """std::min(a, b): returns b only when b < a."""
    return np.where(b < a, b, a).astype(a.dtype)


def c_abs(a: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.where(a < 0, -a, a).astype(a.dtype)


def c_relu(a: np.ndarray) -> np.ndarray:
    zero = np.zeros((), dtype=a.dtype)
    return np.where(a < zero, zero, a).astype(a.dtype)


def lrelu(a: np.ndarray, slope: np.ndarray) -> np.ndarray:
    """x > 0 ? x : x * slope, computed in T."""
    with np.errstate(all="ignore"):
        return np.where(a > 0, a, (a * slope).astype(a.dtype)).astype(a.dtype)


def c_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """pow(double, double) rounded to T (CPU reference)."""
    return _via_double(np.power, a, b)


def int_pow(a: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Return a**e in the integer type T by repeated squaring (products wrap like C integer multiplication).

    A negative exponent gives the truncated 1 / a**|e|: ±1 for a = ±1, else 0.
    """
    a = np.asarray(a)
    e = np.asarray(e).astype(np.int64)
    with np.errstate(all="ignore"):
        result = np.ones_like(a)
        base = a.copy()
        k = np.abs(e)
        odd_exponent = k % 2 == 1
        while np.any(k):
            result = np.where(k % 2 == 1, result * base, result).astype(a.dtype)
            base = (base * base).astype(a.dtype)
            k = k >> 1
        recip = np.where(a == 1, 1, 0)  # 1 / a**|e| truncates to 0 unless |a| == 1
        if np.issubdtype(a.dtype, np.signedinteger):
            recip = np.where(a == -1, np.where(odd_exponent, -1, 1), recip)
    return np.where(e < 0, recip, result).astype(a.dtype)


def shift_left(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.left_shift(a, b.astype(a.dtype)).astype(a.dtype)


def shift_right(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.right_shift(a, b.astype(a.dtype)).astype(a.dtype)


def _exp(a: np.ndarray) -> np.ndarray:
    if a.dtype == np.float16:  # the CPU reference uses expf for half
        with np.errstate(all="ignore"):
            return np.exp(a.astype(np.float32)).astype(np.float16)
    return _via_double(np.exp, a)


def expdif(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """exp(double(a - b)) with the subtraction done in T first (TCOLEXPANDEXPDIF, isa.md §4.2)."""
    with np.errstate(all="ignore"):
        diff = (a - b).astype(a.dtype)
    return _via_double(np.exp, diff)


# the CmpMode predicates (isa.md §3 row 22), IEEE on floats (NaN: only NE holds): the golden compares and both
# emulators' compare instructions read this one table
PREDICATES: dict[str, Callable[..., np.ndarray]] = {"eq": np.equal, "ne": np.not_equal, "lt": np.less,
                                                    "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}

KERNELS: dict[str, Callable[..., np.ndarray]] = {
    "add": _arith(np.add),
    "sub": _arith(np.subtract),
    "mul": _arith(np.multiply),
    "div": trunc_div,
    "max": c_max,
    "min": c_min,
    "rem": floor_rem,
    "fmod": c_fmod,
    "pow": c_pow,
    "ipow": int_pow,
    "and": _arith(np.bitwise_and),
    "or": _arith(np.bitwise_or),
    "xor": _arith(np.bitwise_xor),
    "shl": shift_left,
    "shr": shift_right,
    "abs": c_abs,
    "neg": _arith(np.negative),
    "not": _arith(np.invert),
    "relu": c_relu,
    "subrelu": lambda a, b: c_relu(_arith(np.subtract)(a, b)),  # the difference rounded to T, then relu
    # the ternary ops read dst (their first operand) and round the product before the sum (isa.md §4)
    "muladddst": lambda d, a, b: _arith(np.add)(_arith(np.multiply)(a, b), d),
    "fusedmuladdrelu": lambda d, a, b: c_relu(_arith(np.add)(_arith(np.multiply)(a, d), b)),
    # TAXPY: dst + round(src0 * s), the product rounded in T first (isa.md §4)
    "axpy": lambda d, a, s: _arith(np.add)(d, _arith(np.multiply)(a, s)),
    # tile-scalar-tile: C++ evaluates src0 +/- scalar first, each sum rounded (or wrapped) in T; half once
    "addsc": lambda a, s, b: _once_in_float(lambda x, y, z: (x + y) + z, a, s, b),
    "subsc": lambda a, s, b: _once_in_float(lambda x, y, z: (x - y) + z, a, s, b),
    "lrelu": lrelu,
    "exp": _exp,
    "log": lambda a: _via_double(np.log, a),
    "sqrt": lambda a: _via_double(np.sqrt, a),
    "rsqrt": lambda a: _via_double(lambda x: 1.0 / np.sqrt(x), a),
    "recip": lambda a: _via_double(lambda x: 1.0 / x, a) if not _is_int(a) else trunc_div(np.ones_like(a), a),
    "copy": lambda a: a.copy(),
    "expdif": expdif,
}

def apply(kernel: str, *arrays: np.ndarray) -> np.ndarray:
    """Apply a named kernel to arrays of one element type; returns an array of that type."""
    return KERNELS[kernel](*arrays)


def identity(kernel: str, dtype) -> int | float:
    """Return the value that leaves any element unchanged under `kernel` (add, max or min) in numpy type `dtype`:
    0, the type's lowest (max) or highest (min) value, -inf / +inf for a float type."""
    if kernel == "add":
        return 0
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return int(info.min if kernel == "max" else info.max)
    return -np.inf if kernel == "max" else np.inf
