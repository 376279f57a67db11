"""Operand tiles and legality of the row and column reductions (isa.md §4.3, catalogue constraints)."""
from __future__ import annotations

from typing import Any

from .catalog import Instruction
from .dtypes import DType
from .errors import ParamError, ShapeError
from .flags import flag
from .tiles import Tile, parse_shape

DST_LAYOUTS = {"dn": "col_major", "col_major": "col_major", "nd": "row_major", "row_major": "row_major"}


def _src(shape: Any, dt: DType, valid: Any, sv: bool) -> Tile:
    if shape is None:
        raise ShapeError("reductions need --shape RxC (the source tile)")
    rows, cols = parse_shape(shape)
    return Tile.make((rows, cols), dt, valid, static_valid=sv, name="src")


def row_reduce_tiles(inst: Instruction, dt: DType, shape: Any, valid: Any, sv: bool, params: dict):
    """TROW*: src ND [R, C]; dst one value per row, DN [R, 1] or ND [R, 32/sizeof] with one valid column.

    `dst_layout` picks dn or nd (default dn when R*sizeof is a multiple of 32, else nd).
    """
    src = _src(shape, dt, valid, sv)
    vr, vc = src.valid
    if vr == 0 or vc == 0:
        raise ShapeError(f"{inst.name}: valid region {vr}x{vc} is empty; row reductions need at least 1x1")
    aligned = (src.rows * dt.bits) % 256 == 0
    key = str(params.pop("dst_layout", "dn" if aligned else "nd")).lower()
    if key not in DST_LAYOUTS:
        raise ParamError(f"--dst-layout {key!r} is not a row-reduce destination; accepted: dn, nd")
    layout = DST_LAYOUTS[key]
    if layout == "col_major":
        dst = Tile.make((src.rows, 1), dt, (vr, 1), layout="col_major", static_valid=sv, name="dst")
    else:
        dst = Tile.make((src.rows, 256 // dt.bits), dt, (vr, 1), static_valid=sv, name="dst")
    params["dst_layout"] = "dn" if layout == "col_major" else "nd"
    return [("dst", dst), ("src", src)], params


def col_reduce_tiles(inst: Instruction, dt: DType, shape: Any, valid: Any, sv: bool, params: dict):
    """TCOL*: src ND [R, C]; dst [1, C] with the same valid columns; TCOLSUM takes `binary` (isBinary)."""
    src = _src(shape, dt, valid, sv)
    dst = Tile.make((1, src.cols), dt, (1, src.valid_cols), static_valid=sv, name="dst")
    if inst.name == "TCOLSUM":
        params["binary"] = flag(params.get("binary", False), "binary (isBinary)")
    elif "binary" in params:
        raise ParamError(f"binary (isBinary) applies to TCOLSUM only, not {inst.name}")
    return [("dst", dst), ("src", src)], params
