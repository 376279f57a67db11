"""Tile layouts: where element (r, c) of a tile sits in its buffer (isa.md §1.1 GetTileOffset).

Names: `row_major` (ND: BLayout RowMajor, SLayout NoneBox), `col_major` (DN: ColMajor, NoneBox) and the
512-byte fractal-box layouts `nz` (ColMajor outer, RowMajor inner), `zn` (RowMajor outer, ColMajor inner) and
`zz` (RowMajor outer, RowMajor inner). An inner row-major box is 16 x (32 / sizeof) elements, an inner
col-major box (32 / sizeof) x 16.
"""
from __future__ import annotations

import numpy as np

NONE_BOX = ("row_major", "col_major")
BOXED = ("nz", "zn", "zz")
ALL = NONE_BOX + BOXED
ROW_RUNS = ("row_major", "nz", "zz")  # a 32-byte block holds consecutive columns of one row
COL_RUNS = ("col_major", "zn")  # a 32-byte block holds consecutive rows of one column

# (BLayout, SLayout) of the PTO Tile template -> our layout name (isa.md §1.1 layout names)
_BY_ENUMS = {("RowMajor", "NoneBox"): "row_major", ("ColMajor", "NoneBox"): "col_major",
             ("ColMajor", "RowMajor"): "nz", ("RowMajor", "ColMajor"): "zn", ("RowMajor", "RowMajor"): "zz"}


def from_enums(b_layout: str, s_layout: str) -> str | None:
    """Return the layout name for a (BLayout, SLayout) pair such as ('ColMajor', 'RowMajor') -> 'nz'; None if unknown."""
    return _BY_ENUMS.get((b_layout.split("::")[-1], s_layout.split("::")[-1]))


def inner_box(layout: str, esize: int) -> tuple[int, int]:
    """Return (InnerRows, InnerCols) of a 512-byte box for elements of `esize` bytes (1 x 1 when not boxed)."""
    if layout in NONE_BOX:
        return 1, 1
    per_block = 32 // esize
    return (16, per_block) if layout in ("nz", "zz") else (per_block, 16)


def element_offsets(layout: str, rows: int, cols: int, esize: int) -> np.ndarray:
    """Return a (rows, cols) int64 array: the element offset of (r, c) inside a tile of that static shape."""
    r = np.arange(rows, dtype=np.int64)[:, None]
    c = np.arange(cols, dtype=np.int64)[None, :]
    if layout == "row_major":
        return r * cols + c
    if layout == "col_major":
        return r + c * rows
    ir_n, ic_n = inner_box(layout, esize)
    br, bc, ir, ic = r // ir_n, c // ic_n, r % ir_n, c % ic_n
    n_br, n_bc, inner = rows // ir_n, cols // ic_n, ir_n * ic_n
    if layout == "nz":
        return (n_br * bc + br) * inner + ir * ic_n + ic
    if layout == "zn":
        return (n_bc * br + bc) * inner + ic * ir_n + ir
    if layout == "zz":
        return (n_bc * br + bc) * inner + ir * ic_n + ic
    raise ValueError(f"unknown layout {layout!r}; accepted: {', '.join(ALL)}")


def alignment_problem(layout: str, rows: int, cols: int, bits: int) -> str | None:
    """Return why a Vec tile of this layout and shape breaks the §1.1 alignment rules, or None if it is legal.

    Boxed tiles must also hold whole boxes in both directions here (stricter than the Vec rule) so that
    every element has a box.
    """
    if bits % 8:
        return None if layout in NONE_BOX else f"boxed layouts need whole-byte elements, not {bits}-bit"
    esize = bits // 8
    if layout == "row_major":
        return None if (cols * bits) % 256 == 0 else f"a row-major row is {cols * bits / 8:g} B, not a multiple of 32 B"
    if layout == "col_major":
        return None if (rows * bits) % 256 == 0 else f"a col-major column is {rows * bits / 8:g} B, not a multiple of 32 B"
    ir_n, ic_n = inner_box(layout, esize)
    if cols % ic_n or rows % ir_n:
        return (f"{layout} boxes are {ir_n}x{ic_n} elements; rows must be a multiple of {ir_n} and cols of {ic_n} "
                "(modelled for whole boxes only: isa.md §1.1 lets a Vec tile's rows end inside a box, where its "
                "offset formula, with Rows/InnerRows boxes a column, does not place every element)")
    return None
