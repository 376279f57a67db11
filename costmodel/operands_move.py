"""Operand tiles and legality of TLOAD, TSTORE and Vec->Vec TMOV (isa.md §1.5, §4.8, catalogue constraints).

A GM tensor is a compact 5-D ND tensor [shape0..shape4]; it is held as a 2-D `gm` tile of
(shape0*shape1*shape2*shape3) x shape4 elements (with compact strides the §1.5 mapping is exactly that).
"""
from __future__ import annotations

import re
from typing import Any

from .catalog import Instruction
from .dtypes import DType
from .errors import ParamError, ShapeError
from .flags import flag
from .layouts import ALL, from_enums
from .padding import pad_name
from .tiles import Tile, parse_shape

MAX_VEC_ROWS = 4095  # catalogue: TLOAD Vec Rows in [1, 4095]
_LAYOUT_ALIASES = {"nd": "row_major", "dn": "col_major", "rowmajor": "row_major", "colmajor": "col_major",
                   **{name: name for name in ALL}}


def layout_name(value: Any) -> str:
    """Return our layout name for nd/dn/nz/zn/zz, row_major/col_major, or a `BLayout/SLayout` enum pair."""
    text = str(value).strip()
    if "/" in text:
        found = from_enums(*text.split("/", 1))
        if found:
            return found
    key = text.lower().replace("_", "").replace("-", "")
    key = {"rowmajor": "row_major", "colmajor": "col_major"}.get(key, key)
    if key in _LAYOUT_ALIASES:
        return _LAYOUT_ALIASES[key]
    raise ParamError(f"unknown tile layout {value!r}; accepted: nd, dn, nz, zn, zz (or BLayout/SLayout, e.g. ColMajor/RowMajor)")


def parse_gm_shape(value: Any) -> tuple[int, int, int, int, int]:
    """Return (shape0..shape4) from `1x1x2x64x128`, `1,1,2,64,128`, `(1, 1, 2, 64, 128)` (a sweep's CSV) or a
    sequence of five integers."""
    parts = list(value) if isinstance(value, (tuple, list)) else re.split(r"[x,×\s]+", str(value).strip(" ()[]"))
    try:
        dims = tuple(int(p) for p in parts if str(p) != "")
    except ValueError:
        raise ParamError(f"malformed GM shape {value!r}: expected five integers, e.g. 1x1x1x64x128") from None
    if len(dims) != 5 or min(dims) < 1:
        raise ParamError(f"GM shape {value!r}: expected five positive integers shape0..shape4 (isa.md §1.5)")
    return dims  # type: ignore[return-value]


def _gm_tile(dt: DType, dims: tuple[int, ...]) -> Tile:
    rows = dims[0] * dims[1] * dims[2] * dims[3]
    return Tile(rows, dims[4], dt, rows, dims[4], "row_major", "gm", False)


def _transfer_tiles(inst: Instruction, dt: DType, shape: Any, valid: Any, sv: bool, params: dict):
    if shape is None:
        raise ShapeError(f"{inst.name} needs --shape RxC (the UB tile)")
    rows, cols = parse_shape(shape)
    if rows > MAX_VEC_ROWS:
        raise ShapeError(f"{inst.name}: a Vec tile has at most {MAX_VEC_ROWS} rows; got {rows}")
    layout = layout_name(params.pop("layout", "nd"))
    if layout != "row_major":
        raise ParamError(f"{inst.name}: only ND (row-major) Vec tiles are modelled; got {layout}")
    tile = Tile.make((rows, cols), dt, valid, static_valid=sv, name="tile")
    vr, vc = tile.valid
    dims = parse_gm_shape(params.pop("gm_shape")) if params.get("gm_shape") is not None else (1, 1, 1, vr, vc)
    if vr != dims[0] * dims[1] * dims[2] * dims[3] or vc != dims[4]:
        raise ShapeError(f"{inst.name}: tile valid {vr}x{vc} must be (shape0*shape1*shape2*shape3) x shape4 = "
                         f"{dims[0] * dims[1] * dims[2] * dims[3]}x{dims[4]} for an ND GM tensor (isa.md §1.5)")
    if vr == 0 or vc == 0:
        raise ShapeError(f"{inst.name}: valid region {vr}x{vc} is empty")
    params["gm_shape"] = dims
    return tile, _gm_tile(dt, dims), params


def check_same_type(inst: Instruction, arch: str, dt: DType, dst_dt: DType) -> None:
    """Raise ParamError for a converting data movement: the modelled paths move a Vec tile, which keeps its element
    type (isa.md §3: TLOAD/TSTORE need sizeof tile T == sizeof GM T; TMOV Vec->Vec copies), while the catalogue's
    conversions are paths of Acc and Mat tiles, not modelled."""
    where = {"TLOAD": "from GM into a Vec tile", "TSTORE": "from a Vec tile to GM"}.get(inst.name, "between Vec tiles")
    pairs = [t for t in inst.dtypes_on(arch) if ">" in t and t.partition(">")[0] != t.partition(">")[2]]
    listed = ", ".join(p.replace(">", "->") for p in pairs)
    acc = (f"; the only conversions the catalogue lists for {inst.name} ({listed}) run on Acc/Mat-tile paths, not "
           "modelled" if pairs else "")
    raise ParamError(f"{inst.name} {where} keeps the element type{acc}; got {dt}->{dst_dt}")


# the data-movement parameters each modelled op reads (operands.PARAM_FAMILIES admits them for the whole family): a
# DN source given to TLOAD would be echoed and priced as ND (QA 53)
MOVE_PARAMS = {"TLOAD": ("gm_shape", "pad", "gm_dynamic", "layout"), "TSTORE": ("gm_shape", "layout"),
               "TMOV": ("src_layout", "dst_layout", "src_loc", "dst_loc")}


def data_movement_tiles(inst: Instruction, dt: DType, dst_dt: DType | None, shape: Any, valid: Any, sv: bool,
                        params: dict):
    """Return ([dst, src], params) for TLOAD (dst UB tile, src GM), TSTORE (dst GM, src UB tile) or TMOV (a
    converting move was refused by make_request's `check_same_type`)."""
    if inst.name in MOVE_PARAMS:
        for key in sorted(set(params) & {k for keys in MOVE_PARAMS.values() for k in keys}):
            if key not in MOVE_PARAMS[inst.name]:
                readers = [op for op, keys in MOVE_PARAMS.items() if key in keys]
                raise ParamError(f"{key} is read by {', '.join(readers)} among the data movement ops, not {inst.name}")
    if inst.name == "TLOAD":
        tile, gm, params = _transfer_tiles(inst, dt, shape, valid, sv, params)
        params["pad"] = pad_name(params.get("pad"))
        if "gm_dynamic" in params:
            params["gm_dynamic"] = flag(params["gm_dynamic"], "gm_dynamic")
        return [("dst", tile), ("src", gm)], params
    if inst.name == "TSTORE":
        tile, gm, params = _transfer_tiles(inst, dt, shape, valid, sv, params)
        return [("dst", gm), ("src", tile)], params
    if inst.name == "TMOV":
        return _tmov_tiles(inst, dt, shape, valid, sv, params)
    from .errors import NotModelledError
    from .lower.a2a3.datamove import MODELLED

    raise NotModelledError(f"{inst.name} ({inst.family}) is not modelled yet; modelled data movement: "
                           f"{', '.join(MODELLED)}")


def _tmov_tiles(inst: Instruction, dt: DType, shape: Any, valid: Any, sv: bool, params: dict):
    """TMOV Vec->Vec: same static shape (A2/A3 requires equal Rows and Cols); layouts from src/dst_layout."""
    for key in ("src_loc", "dst_loc"):
        loc = str(params.pop(key, "vec")).lower()
        if loc != "vec":
            raise ParamError(f"TMOV {key}={loc!r}: only Vec->Vec moves are modelled")
    if shape is None:
        raise ShapeError("TMOV needs --shape RxC")
    rows, cols = parse_shape(shape)
    src_layout = layout_name(params.get("src_layout", "nd"))
    dst_layout = layout_name(params.get("dst_layout", "nd"))
    dst = Tile.make((rows, cols), dt, valid, layout=dst_layout, static_valid=sv, name="dst")
    src = Tile.make((rows, cols), dt, dst.valid, layout=src_layout, static_valid=sv, name="src")
    params["src_layout"], params["dst_layout"] = src_layout, dst_layout
    return [("dst", dst), ("src", src)], params
