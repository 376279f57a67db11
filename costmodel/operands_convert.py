"""Operand tiles and parameters of TCVT: same-shape src and dst tiles, round mode and saturation (isa.md §4.4)."""
from __future__ import annotations

from typing import Any

from .catalog import Instruction
from .conversions import modelled, resolve, round_mode_name
from .dtypes import DType
from .errors import ParamError, ShapeError
from .tiles import Tile, parse_shape


def convert_tiles(inst: Instruction, arch: str, dt: DType, dst_dt: DType | None, shape: Any, valid: Any, sv: bool,
                  params: dict):
    """Return ([dst, src], params) with `round_mode` and `saturation` resolved to the A2/A3 defaults."""
    if dst_dt is None:
        raise ParamError(f"{inst.name} needs a destination dtype (--dst-dtype)")
    if shape is None:
        raise ShapeError(f"{inst.name} needs --shape RxC")
    rows, cols = parse_shape(shape)
    dst = Tile.make((rows, cols), dst_dt, valid, static_valid=sv, name="dst")
    src = Tile.make((rows, cols), dt, dst.valid, static_valid=sv, name="src")
    if dst.valid_rows == 0 or dst.valid_cols == 0:
        raise ShapeError(f"valid region {dst.valid_rows}x{dst.valid_cols} is empty; {inst.name} needs at least 1x1")
    if arch == "a2a3" and modelled(dt.name, dst_dt.name):
        _, mode, sat = resolve(dt.name, dst_dt.name, params.get("round_mode"), params.get("saturation"))
        params["round_mode"] = mode
        params["saturation"] = "on" if sat else "off"
    elif params.get("round_mode") is not None:  # other arches and pairs: the same names (CAST_RINT, r -> rint)
        params["round_mode"] = round_mode_name(params["round_mode"])
    return [("dst", dst), ("src", src)], params
