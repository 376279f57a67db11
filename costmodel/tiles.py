"""Tiles: static shape, valid region, layout and location of one operand (isa.md §1)."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from .dtypes import DType, dtype as as_dtype
from .errors import ShapeError
from .layouts import ALL as LAYOUTS, BOXED, alignment_problem

_SHAPE_RE = re.compile(r"^\s*(\d+)\s*[xX×,]\s*(\d+)\s*$")


def _whole(v) -> bool:
    """Whether `v` is a whole number (an int, a numpy integer, or a float such as 8.0 from a numeric column)."""
    try:
        return float(v).is_integer()
    except (TypeError, ValueError):
        return False


def parse_shape(text: str | tuple[int, int], *, what: str = "shape", allow_zero: bool = False) -> tuple[int, int]:
    """Return (rows, cols) from `RxC` text (or a pair: a tuple, list or numpy array); zero dims only where `allow_zero`
    (valid regions)."""
    if isinstance(text, np.ndarray):
        text = text.tolist()
    if isinstance(text, (tuple, list)):
        if len(text) != 2:
            raise ShapeError(f"malformed {what} {text!r}: expected two dimensions (rows, cols)")
        if any(isinstance(v, bool) or not _whole(v) for v in text):
            raise ShapeError(f"malformed {what} {tuple(text)!r}: rows and cols must be whole numbers")
        rows, cols = (int(v) for v in text)
    else:
        m = _SHAPE_RE.match(str(text))
        if not m:
            kind = "non-negative" if allow_zero else "positive"
            raise ShapeError(f"malformed {what} {text!r}: expected RxC with {kind} integers, e.g. 64x64")
        rows, cols = int(m.group(1)), int(m.group(2))
    low = 0 if allow_zero else 1
    if rows < low or cols < low:
        bound = "≥ 0" if allow_zero else "≥ 1"
        raise ShapeError(f"{what} {rows}x{cols} is not allowed: rows and cols must be {bound}")
    return rows, cols


def valid_too_large(name: str, vr: int, vc: int, rows: int, cols: int) -> str:
    """Return the error of a valid region larger than its tile."""
    return (f"{name} valid region {vr}x{vc} is larger than the tile {rows}x{cols}; accepted: at most "
            f"{rows}x{cols}")


def unaligned(name: str, layout: str, rows: int, cols: int, dt: DType) -> str | None:
    """Return the error of a NoneBox tile whose row-major row (col-major column) is not a whole number of 32-byte
    blocks (isa.md §1.1), or None when it is."""
    run, count, what, dim = ((cols, "row", "cols", "row-major") if layout == "row_major"
                             else (rows, "column", "rows", "col-major"))
    bits = run * dt.bits
    if not bits % 256:
        return None
    need = 256 // math.gcd(256, dt.bits)
    return (f"{name} {rows}x{cols} {dt}: a {dim} {count} is {bits / 8:g} B, not a multiple of 32 B; {what} must be "
            f"a multiple of {need} for {dt}")


@dataclass(frozen=True)
class Tile:
    """One tile operand. Offsets and strides are in elements; `static_valid` marks a compile-time valid shape."""

    rows: int
    cols: int
    dtype: DType
    valid_rows: int
    valid_cols: int
    layout: str = "row_major"
    loc: str = "vec"
    static_valid: bool = False

    @classmethod
    def make(cls, shape, dtype, valid=None, *, layout: str = "row_major", static_valid: bool = False, name: str = "tile") -> "Tile":
        """Build and check a tile from `RxC` texts or pairs; the valid region defaults to the whole tile."""
        rows, cols = parse_shape(shape, what=f"{name} shape")
        vr, vc = (rows, cols) if valid is None else parse_shape(valid, what=f"{name} valid region", allow_zero=True)
        tile = cls(rows, cols, as_dtype(dtype), vr, vc, layout, "vec", static_valid)
        tile.check(name)
        return tile

    @property
    def row_stride(self) -> int:
        return self.cols if self.layout == "row_major" else 1

    @property
    def col_stride(self) -> int:
        return 1 if self.layout == "row_major" else self.rows

    @property
    def numel(self) -> int:
        return self.rows * self.cols

    @property
    def nbytes(self) -> int:
        return (self.numel * self.dtype.bits + 7) // 8

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.cols)

    @property
    def valid(self) -> tuple[int, int]:
        return (self.valid_rows, self.valid_cols)

    @property
    def contiguous(self) -> bool:
        """True when the valid region is one contiguous run of elements (full rows, or a single row)."""
        return self.valid_cols == self.cols or self.rows == 1 or self.valid_rows <= 1

    def check(self, name: str = "tile") -> None:
        """Raise ShapeError unless the valid region fits and the layout's 32-byte alignment rule holds (isa.md §1.1)."""
        if self.layout not in LAYOUTS:
            raise ShapeError(f"{name}: unknown layout {self.layout!r}; accepted: {', '.join(LAYOUTS)}")
        if self.valid_rows > self.rows or self.valid_cols > self.cols:
            raise ShapeError(valid_too_large(name, self.valid_rows, self.valid_cols, self.rows, self.cols))
        if self.layout in BOXED:
            problem = alignment_problem(self.layout, self.rows, self.cols, self.dtype.bits)
            if problem:
                raise ShapeError(f"{name} {self.rows}x{self.cols} {self.dtype}: {problem}")
        else:
            problem = unaligned(name, self.layout, self.rows, self.cols, self.dtype)
            if problem:
                raise ShapeError(problem)

    def describe(self) -> str:
        """Return e.g. `64x64 f16 (valid 60x60, dynamic)`."""
        valid = "" if self.valid == self.shape else f" valid {self.valid_rows}x{self.valid_cols}"
        kind = "static" if self.static_valid else "dynamic"
        lay = {"row_major": "", "col_major": " col-major"}.get(self.layout, f" {self.layout}")
        if self.loc == "gm":
            return f"GM {self.rows}x{self.cols} {self.dtype}{valid}"
        return f"{self.rows}x{self.cols} {self.dtype}{lay}{valid} ({kind} valid)"

