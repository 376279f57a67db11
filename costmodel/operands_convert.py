"""Operand tiles and parameters of TCVT: same-shape src and dst tiles, round mode and saturation (isa.md §4.4)."""
from __future__ import annotations

from typing import Any

from .catalog import Instruction
from .conversions import effective_modes, modelled, resolve
from .dtypes import DType
from .errors import ParamError, ShapeError
from .tiles import Tile, parse_shape


def convert_tiles(inst: Instruction, arch: str, dt: DType, dst_dt: DType | None, shape: Any, valid: Any, sv: bool,
                  params: dict):
    """Return ([dst, src], params) with `round_mode` (canonical, `none` replaced by the pair's default) and
    `saturation` (on/off, the pair's default when absent) resolved the same way on every arch (conversions.py);
    an A2/A3 pair of the conversion table also has its round mode checked against the table."""
    if dst_dt is None:
        accepted = f"; {inst.conversion_targets(arch, dt)}" if inst.destinations(arch, dt.name) else ""
        raise ParamError(f"{inst.name} needs a destination dtype (--dst-dtype){accepted}")
    if shape is None:
        raise ShapeError(f"{inst.name} needs --shape RxC")
    rows, cols = parse_shape(shape)
    dst = Tile.make((rows, cols), dst_dt, valid, static_valid=sv, name="dst")
    src = Tile.make((rows, cols), dt, dst.valid, static_valid=sv, name="src")
    if dst.valid_rows == 0 or dst.valid_cols == 0:
        raise ShapeError(f"valid region {dst.valid_rows}x{dst.valid_cols} is empty; {inst.name} needs at least 1x1")
    args = (dt.name, dst_dt.name, params.get("round_mode"), params.get("saturation"))
    mode, sat = resolve(*args)[1:] if arch == "a2a3" and modelled(dt.name, dst_dt.name) else effective_modes(*args)
    params["round_mode"], params["saturation"] = mode, "on" if sat else "off"
    return [("dst", dst), ("src", src)], params
