"""Build a Request from user-level arguments: the operand tiles each family takes, and the legality rules.

Every violation raises a PtoCostError subclass whose one-line message names the problem and what is accepted.
"""
from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from .arch import check_arch
from .catalog import COMPARES, ELEMENTWISE, ELEMENTWISE_SOURCES, READS_DST, SCALAR_FAMILIES, Instruction, instruction
from .dtypes import DType, dtype as as_dtype
from .emulate.data import default_scalar, float_info
from .errors import NotModelledError, ParamError, ShapeError, StrategyError, UnsupportedDtypeError
from .flags import flag, shown, truthy
from .request import Request
from .tiles import Tile, parse_shape

DIVIDING = ("div", "rem", "fmod")


# scalars an arch's algorithm bounds: A2/A3 TREMS on i32 goes through f32, so values and scalar stay within ±2^24
# (isa.md §3 row 112, §4)
SCALAR_LIMITS = {("a2a3", "TREMS", "i32"): 2 ** 24}


def _number(value: Any) -> int | float:
    """Parse a scalar: integers exactly (also beyond 2^53), decimals and `inf`/`nan` as floats; ParamError otherwise
    (a decimal too large for a double is not silently infinite)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (str, int, float, np.integer, np.floating)):
        raise ParamError(f"scalar {shown(value)} is not a number; accepted: an int, a float or their text (2, 0.5, "
                         "-inf, 0x10)")
    if not isinstance(value, str):
        return value.item() if isinstance(value, np.generic) else value
    text = value.strip()
    try:
        return int(text, 0)
    except ValueError:
        if re.fullmatch(r"[+-]?0+\d+", text.replace("_", "")):  # C would read it as octal, Python refuses it
            raise ParamError(f"--scalar {value!r} has a leading zero: write it in decimal without one, or as 0o.. "
                             "(octal) or 0x.. (hex)") from None
    try:
        number = float(text)
    except ValueError:
        raise ParamError(f"--scalar {value!r} is not a number") from None
    if math.isinf(number) and "inf" not in text.lower():
        raise ParamError(f"--scalar {value!r} is too large for a double (write inf for an infinite scalar)")
    return number


def _scalar(inst: Instruction, arch: str, dt: DType, value: Any, order: str = "") -> int | float:
    """Return the checked scalar of a tile-scalar op (`order` as `choice` canonicalised it; scalar_tile: TDIVS
    divides the scalar, so it may be 0)."""
    if value is None:
        return default_scalar(dt, inst.domain, inst.kernel)
    value = _number(value)
    divides = inst.kernel in DIVIDING and order != "scalar_tile"
    if dt.is_integer:
        if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
            raise ParamError(f"{inst.name} on {dt} needs an integer scalar; got {float(value)!r}")
        info = np.iinfo(dt.np)
        if not info.min <= int(value) <= info.max:
            raise ParamError(f"scalar {value} does not fit {dt} (accepted range {info.min}..{info.max})")
        value = int(value)
        limit = SCALAR_LIMITS.get((arch, inst.name, dt.name))
        if limit is not None and abs(value) > limit:
            raise ParamError(f"{inst.name} on {arch} {dt} computes through f32: the scalar must be within ±{limit}; "
                             f"got {value}")
    else:
        try:
            value = float(value)
        except OverflowError:
            raise ParamError(f"--scalar {str(value)[:20]}... is too large for a double") from None
        with np.errstate(over="ignore"):
            stored = float(np.asarray(value).astype(dt.np)) if dt.emulatable else value
        if math.isfinite(value) and not math.isfinite(stored):
            raise ParamError(f"scalar {value:g} overflows {dt} (largest {float_info(dt)[0]:g})")
        if divides and value != 0 and stored == 0:
            raise ParamError(f"{inst.name} scalar {value:g} rounds to 0 in {dt} and divides by zero; pass a larger "
                             "--scalar")
        value = stored  # the scalar is of the tile's type (isa.md §3, e.g. TADDS, TMINS): 1.0001 is 1 in f16
    if divides and value == 0:
        raise ParamError(f"{inst.name} with scalar 0 divides by zero (target-defined on the NPU); pass a non-zero --scalar")
    if inst.kernel in ("shl", "shr") and not 0 <= value < dt.bits:
        raise ParamError(f"{inst.name} shift amount must be in 0..{dt.bits - 1} for {dt}; got {value}")
    return value


def count(value: Any, what: str) -> int:
    """Return an integer parameter (2, "2", 2.0 and "2.0" alike); ParamError naming `what` for anything else."""
    text = str(value).strip()
    try:
        return int(text)  # exactly, however long
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        raise ParamError(f"{what} {shown(value)}: expected a whole number") from None
    if not number.is_integer():
        raise ParamError(f"{what} {shown(value)}: expected a whole number")
    return int(number)


def choice(value: Any, accepted: tuple[str, ...], what: str) -> str:
    """Return the accepted name `value` spells in any letter case (surrounding blanks ignored); ParamError naming
    what is accepted for anything else."""
    key = str(value).strip().lower()
    if key not in accepted:
        raise ParamError(f"{what} {shown(value)} is not accepted; accepted: {', '.join(accepted)}")
    return key


def _tile(shape, dt, valid, *, layout="row_major", static_valid=False, name="tile") -> Tile:
    return Tile.make(shape, dt, valid, layout=layout, static_valid=static_valid, name=name)


def make_request(op: str, shape: Any = None, dtype: Any = "f16", *, arch: str = "a2a3", valid: Any = None,
                 dst_dtype: Any = None, src0_valid: Any = None, src1_valid: Any = None, static_valid: bool = False,
                 strategy: str | None = None, **params: Any) -> Request:
    """Return a checked Request for `op` over tiles of `shape` (RxC) and element type `dtype`.

    Raises a PtoCostError subclass (one-line message) for an unknown op, an unsupported dtype on the arch,
    a malformed shape, a valid region outside the tile, or an illegal parameter. A `strategy` of `default` (any
    letter case) or blank, as a sweep reads it, is the implementation's choice, as is none.
    """
    inst = instruction(op)
    arch = check_arch(arch)
    if isinstance(strategy, float) and math.isnan(strategy):  # a frame's missing cell: no strategy named
        strategy = None
    if strategy is not None and not isinstance(strategy, str):
        raise StrategyError(f"strategy {shown(strategy)} is not a name; give a strategy name, or None or 'default' "
                            "for the default")
    if strategy is not None and strategy.strip().lower() in ("", "default"):
        strategy = None
    dt = as_dtype(dtype)
    dst_dt = as_dtype(dst_dtype) if dst_dtype else None
    if inst.family == "data_movement" and dst_dt is not None and dst_dt != dt:
        from .operands_move import check_same_type

        check_same_type(inst, arch, dt, dst_dt)
    if inst.name in COMPARES and dst_dt is not None:  # dst is the packed mask, of the arch's mask type
        if dst_dt.name != COMPARE_MASK_DTYPE[arch]:
            raise UnsupportedDtypeError(f"{inst.name} writes a {COMPARE_MASK_DTYPE[arch]} mask on {arch}; --dst-dtype "
                                        f"{dst_dt.name} is not accepted (give {COMPARE_MASK_DTYPE[arch]} or none)")
        dst_dt = None
    inst.check_dtype(arch, dt, dst_dt)
    params = {k: v for k, v in params.items() if v is not None}
    check_param_names(params)
    # canonical before the scalar check reads it; an op that takes no order is refused by _arch_rules
    if "order" in params and inst.name in PARAM_OPS["order"]:
        params["order"] = choice(params["order"], ("tile_scalar", "scalar_tile"), "--order")
    fam = inst.family
    given = [n for n, v in (("src0_valid", src0_valid), ("src1_valid", src1_valid)) if v is not None and v != ""]
    if given and fam != "partial":
        raise ParamError(f"{'/'.join(given)} applies to the partial ops (TPART*), not {inst.name} ({fam})")
    if "in_place" in params:
        if flag(params.pop("in_place"), "in_place"):
            if ELEMENTWISE_SOURCES.get(fam) == ():
                raise ParamError(f"{inst.name} reads no source tile, so it has no in-place form; drop --in-place")
            params["in_place"] = True  # not in place is the default: the same request as without the parameter
        elif fam in READS_DST:
            raise ParamError(f"{inst.name} reads and overwrites dst, so it is always in place; in_place=False is not "
                             "accepted")
    sv = flag(static_valid, "static_valid")
    if fam == "block_reduce":
        # a raw-buffer API (isa.md §5): what it reads is --repeat, --mask and the strides; a valid region would be
        # echoed and ignored (QA 53)
        region = parse_shape(valid, what="valid", allow_zero=True) if valid is not None and valid != "" else None
        if sv or (region is not None and (shape is None or region != parse_shape(shape))):
            raise ParamError(f"{inst.name} reads a raw buffer through --repeat, --mask and the strides: it has no valid "
                             "region; drop --valid and --static-valid")
        tiles, params = _block_reduce_tiles(inst, dt, shape, params)
    elif fam in ("row_reduce", "col_reduce", "convert", "data_movement"):
        tiles, params = _reduce_convert_move_tiles(inst, arch, dt, dst_dt, shape, valid, sv, params)
    else:
        if shape is None:
            raise ShapeError(f"{inst.name} needs --shape RxC")
        rows, cols = parse_shape(shape)
        # a compare's dst is its mask: the tile of the request's shape and type is its first source
        dst = _tile((rows, cols), dst_dt or dt, valid, static_valid=sv, name="src0" if inst.name in COMPARES else "dst")
        vr, vc = dst.valid
        if fam in ELEMENTWISE:
            if fam in READS_DST and dst_dt is not None and dst_dt != dt:
                raise NotModelledError(f"{inst.name} {dt} -> {dst_dt} (a read-modify-write of a wider dst) is not "
                                       f"modelled; accepted: src0 and dst of one dtype ({dt} -> {dt})")
            if vr == 0 or vc == 0:
                raise ShapeError(f"valid region {vr}x{vc} is empty; {inst.name} needs at least 1x1")
            if fam in SCALAR_FAMILIES:
                params["scalar"] = _scalar(inst, arch, dt, params.get("scalar"), params.get("order", ""))
            tiles = [("dst", dst)] + [(n, _tile((rows, cols), dt, (vr, vc), static_valid=sv, name=n))
                                      for n in ELEMENTWISE_SOURCES[fam]]
            if fam in READS_DST:  # dst_in shares dst's buffer
                params["in_place"] = True
        elif fam == "partial":
            tiles = _partial_tiles(inst, arch, dt, (rows, cols), dst, src0_valid, src1_valid, sv, params)
        elif fam in ("col_expand", "col_expand_binary"):
            src1 = _tile((1, cols), dt, (1, vc), static_valid=sv, name="src1")
            if fam == "col_expand":
                tiles = [("dst", dst), ("src", _tile((1, cols), dt, (1, vc), static_valid=sv, name="src"))]
            else:
                tiles = [("dst", dst), ("src0", _tile((rows, cols), dt, (vr, vc), static_valid=sv, name="src0")), ("src1", src1)]
        elif fam in ("row_expand", "row_expand_binary"):
            tiles, params = _row_expand_tiles(inst, dt, (rows, cols), dst, sv, params)
        elif inst.name in (*COMPARES, "TSELS"):
            tiles, params = _mask_op_tiles(inst, arch, dt, (rows, cols), dst, sv, params)
        else:
            tiles, params = _other_tiles(inst, dt, (rows, cols), dst, sv, params)
    tiles, params = _arch_rules(inst, arch, dt, tiles, params)
    return Request(inst.name, arch, tuple(tiles), tuple(sorted(params.items())), strategy, fam)


def _reduce_convert_move_tiles(inst, arch, dt, dst_dt, shape, valid, sv, params):
    """Row/col reductions, TCVT and TLOAD/TSTORE/TMOV: builders in their own modules."""
    if inst.family == "row_reduce":
        from .operands_reduce import row_reduce_tiles

        return row_reduce_tiles(inst, dt, shape, valid, sv, params)
    if inst.family == "col_reduce":
        from .operands_reduce import col_reduce_tiles

        return col_reduce_tiles(inst, dt, shape, valid, sv, params)
    if inst.family == "convert":
        from .operands_convert import convert_tiles

        return convert_tiles(inst, arch, dt, dst_dt, shape, valid, sv, params)
    from .operands_move import data_movement_tiles

    return data_movement_tiles(inst, dt, dst_dt, shape, valid, sv, params)


def _partial_tiles(inst, arch, dt, shape, dst, src0_valid, src1_valid, sv, params):
    """TPART*: one source's valid region equals dst's, the other fits inside it (isa.md §4.1). Index types of the
    value-and-index ops per isa.md §3: A2/A3 pairs f32 values with 32-bit indices only; A5 takes any of the four."""
    v0 = parse_shape(src0_valid, what="src0 valid region", allow_zero=True) if src0_valid else dst.valid
    v1 = parse_shape(src1_valid, what="src1 valid region", allow_zero=True) if src1_valid else dst.valid
    s0 = _tile(shape, dt, v0, static_valid=sv, name="src0")
    s1 = _tile(shape, dt, v1, static_valid=sv, name="src1")
    for name, v in (("src0", v0), ("src1", v1)):
        if v[0] > dst.valid_rows or v[1] > dst.valid_cols:
            raise ShapeError(f"{inst.name}: {name} valid {v[0]}x{v[1]} does not fit inside dst valid {dst.valid_rows}x{dst.valid_cols}")
    if v0 != dst.valid and v1 != dst.valid:
        raise ShapeError(f"{inst.name}: one source's valid region must equal dst valid {dst.valid_rows}x{dst.valid_cols}; "
                         f"got src0 {v0[0]}x{v0[1]}, src1 {v1[0]}x{v1[1]}")
    tiles = [("dst", dst), ("src0", s0), ("src1", s1)]
    if inst.kernel in ("argmax", "argmin"):
        idx = as_dtype(params.pop("idx_dtype", "i32"))
        accepted = ("i16", "u16", "i32", "u32") if dt.name == "f16" or arch == "a5" else ("i32", "u32")
        if idx.name not in accepted:
            raise ParamError(f"{inst.name} on {dt} takes index dtype {'/'.join(accepted)} on {arch}; got {idx}")
        params["idx_dtype"] = idx.name
        tiles += [("dst_idx", _tile(shape, idx, dst.valid, static_valid=sv, name="dst_idx")),
                  ("src0_idx", _tile(shape, idx, v0, static_valid=sv, name="src0_idx")),
                  ("src1_idx", _tile(shape, idx, v1, static_valid=sv, name="src1_idx"))]
    return tiles


def _row_expand_tiles(inst, dt, shape, dst, sv, params):
    """TROWEXPAND*: the expanded operand is col-major Rx1 (mode 1) or row-major R x (32/sizeof) (mode 2)."""
    rows, cols = shape
    vr = dst.valid_rows
    epb = 256 // dt.bits
    mode = count(params.pop("expand_mode", 1 if inst.family == "row_expand_binary" else 2), "expand_mode")
    if mode not in (1, 2):
        raise ParamError(f"--expand-mode must be 1 (col-major Rx1 scalars) or 2 (row-major one 32-byte block per row); got {mode}")
    if mode == 1:
        if (rows * dt.bits) % 256:
            raise ShapeError(f"{inst.name} expand mode 1 needs a col-major {rows}x1 tile: rows must be a multiple of {epb} for {dt}; use --expand-mode 2")
        exp_tile = _tile((rows, 1), dt, (vr, 1), layout="col_major", static_valid=sv, name="expanded")
    else:
        exp_tile = _tile((rows, epb), dt, (vr, 1 if inst.family == "row_expand" else epb), static_valid=sv, name="expanded")
    params["expand_mode"] = mode
    if inst.family == "row_expand":
        return [("dst", dst), ("src", exp_tile)], params
    expanded = choice(params.pop("expanded", "src1"), ("src0", "src1"), "--expanded")
    params["expanded"] = expanded
    full = _tile(shape, dt, dst.valid, static_valid=sv, name="full")
    pair = [("src0", exp_tile), ("src1", full)] if expanded == "src0" else [("src0", full), ("src1", exp_tile)]
    return [("dst", dst)] + pair, params


def _parse_mask(text: Any, lanes: int) -> tuple[int, int]:
    """Return (hi, lo) from `N` (first N lanes, continuous form) or `HI:LO` (bit form, hex or decimal)."""
    from .isa_a2a3 import continuous_mask

    if text is None:
        return continuous_mask(lanes)
    if isinstance(text, (tuple, list)):
        return int(text[0]), int(text[1])
    s = str(text).strip()
    if ":" in s:
        try:
            hi, lo = (int(p, 0) for p in s.split(":", 1))
        except ValueError:
            raise ParamError(f"malformed mask {s!r}: expected HI:LO with two integers (hex 0x... or decimal)") from None
        if not hi and not lo:
            raise ParamError(f"mask {s!r} enables no lane; give at least one set bit")
        if hi >> 64 or lo >> 64 or hi < 0 or lo < 0:
            raise ParamError(f"mask {s!r}: each half must be a 64-bit unsigned value")
        if lanes <= 64 and hi:
            raise ParamError(f"mask {s!r}: 32-bit types use only the low 64 bits; the high half must be 0")
        return hi, lo
    try:
        n = int(s, 0)
    except ValueError:
        try:
            n = count(s, "mask")  # 64.0 from a float column with gaps
        except ParamError:
            raise ParamError(f"malformed mask {s!r}: expected N (first N lanes) or HI:LO bit form") from None
    if not 1 <= n <= lanes:
        bits = f"; a bit mask is written HI:LO (e.g. 0:{s})" if s.lower().startswith("0x") else ""
        raise ParamError(f"continuous mask {s} (the first {n} lanes) is out of range: 1..{lanes} lanes for this dtype"
                         f"{bits}")
    return continuous_mask(n)


def _block_reduce_tiles(inst, dt, shape, params):
    """BlockReduce*: the source is a row-major tile; repeat/mask/strides are the API's (isa.md §5)."""
    epb = 256 // dt.bits
    epr = 8 * epb
    if shape is not None:
        rows, cols = parse_shape(shape)
        src = _tile((rows, cols), dt, None, name="src")
        default_repeat = max(1, src.numel // epr)
    else:
        src = None
        default_repeat = 1
    repeat = count(params.get("repeat", default_repeat), "repeat")
    if not 1 <= repeat <= 255:
        why = "" if "repeat" in params else (f" (the {src.rows}x{src.cols} src holds {repeat} repeats of {epr} "
                                             "elements; give --repeat, or a smaller --shape)")
        raise ParamError(f"repeat {repeat} is out of range: BlockReduce takes 1..255 repeats{why}")
    dst_rep = count(params.get("dst_rep_stride", 1), "dst_rep_stride")
    blk = count(params.get("src_blk_stride", 1), "src_blk_stride")
    rep = count(params.get("src_rep_stride", 8), "src_rep_stride")
    for name, v in (("dst_rep_stride", dst_rep), ("src_blk_stride", blk), ("src_rep_stride", rep)):
        if not 0 <= v <= 255:
            raise ParamError(f"{name} {v} is out of range 0..255")
    mask = _parse_mask(params.get("mask"), epr)
    need_src = ((repeat - 1) * rep + 7 * blk + 1) * epb
    if src is None:
        cols = epr
        rows = math.ceil(need_src / cols)
        src = _tile((rows, cols), dt, None, name="src")
    elif need_src > src.numel:
        raise ShapeError(f"{inst.name}: repeat {repeat} with strides blk {blk} rep {rep} reads {need_src} elements "
                         f"but the src tile {src.rows}x{src.cols} holds {src.numel}")
    need_dst = (repeat - 1) * dst_rep * 8 + 8
    dst_cols = math.ceil(need_dst / epb) * epb
    dst = _tile((1, dst_cols), dt, (1, need_dst), name="dst")
    out = {"repeat": repeat, "mask": mask, "dst_rep_stride": dst_rep, "src_blk_stride": blk, "src_rep_stride": rep}
    return [("dst", dst), ("src", src)], out


def _other_tiles(inst, dt, shape, dst, sv, params):
    """TSEL (dst, src0, src1, mask); TGATHER index form (dst, src0, idx); any other family: dst only."""
    if inst.name == "TSEL":  # the mask last, so that the first source carries the compute type
        if 0 in dst.valid:  # as every elementwise op: nothing to select is no instruction to price
            raise ShapeError(f"valid region {dst.valid[0]}x{dst.valid[1]} is empty; TSEL needs at least 1x1")
        return [("dst", dst), ("src0", _tile(shape, dt, dst.valid, static_valid=sv, name="src0")),
                ("src1", _tile(shape, dt, dst.valid, static_valid=sv, name="src1")),
                ("mask", _mask_tile(shape, dst.valid, sv))], params
    if inst.name == "TGATHER":  # index form: src0 of dst's shape, 4-byte indices (isa.md §4.7)
        idx = as_dtype(params.pop("idx_dtype", "i32"))
        if idx.name not in ("i32", "u32"):
            raise ParamError(f"TGATHER takes index dtype i32/u32 (the index form needs 4-byte indices); got {idx}")
        params["idx_dtype"] = idx.name
        return [("dst", dst), ("src0", _tile(shape, dt, dst.valid, static_valid=sv, name="src0")),
                ("idx", _tile(shape, idx, dst.valid, static_valid=sv, name="idx"))], params
    return [("dst", dst)], params


CMP_MODES = ("eq", "ne", "lt", "le", "gt", "ge")  # CmpMode (isa.md §3 row 22)
COMPARE_MASK_DTYPE = {"a2a3": "u8", "a5": "u32"}  # TCMP's dst type per arch (isa.md §3 row 22)


def _mask_op_tiles(inst, arch, dt, shape, dst, sv, params):
    """TCMP (dst mask, src0, src1) and TCMPS (dst mask, src0; scalar form), which write a packed mask as TSEL reads
    it, one bit per element of the src0 valid region (isa.md §4.5), in compare mode EQ unless --cmp-mode says
    otherwise; TSELS (dst, src, mask; scalar), which reads one."""
    if 0 in dst.valid:
        raise ShapeError(f"valid region {dst.valid[0]}x{dst.valid[1]} is empty; {inst.name} needs at least 1x1")
    if inst.name in SCALAR_MASK_OPS:
        params["scalar"] = _scalar(inst, arch, dt, params.get("scalar"))
    if inst.name == "TSELS":
        return [("dst", dst), ("src", _tile(shape, dt, dst.valid, static_valid=sv, name="src")),
                ("mask", _mask_tile(shape, dst.valid, sv))], params
    params["cmp_mode"] = choice(params.get("cmp_mode", "eq"), CMP_MODES, "--cmp-mode")
    sources = ("src0", "src1") if inst.name == "TCMP" else ("src0",)
    return [("dst", _mask_tile(shape, dst.valid, sv, name="dst"))] + [
        (n, _tile(shape, dt, dst.valid, static_valid=sv, name=n)) for n in sources], params


def _mask_tile(shape, valid, sv, name: str = "mask") -> Tile:
    """The packed mask TSEL and TSELS read and TCMP/TCMPS write: u8, one bit per element, row i of the data is mask row i
    (bit j%8 of byte j//8, LSB first).

    The A5 bit layout is target-defined (isa.md §4.5); we model the per-row layout, which equals the CPU's
    continuous stream when valid cols are a multiple of 8 and mask rows hold exactly cols bits (inferred).
    Mask rows are padded to 32 bytes (isa.md §1.1 row alignment).
    """
    rows, cols = shape
    mcols = -(-math.ceil(cols / 8) // 32) * 32
    return _tile((rows, mcols), "u8", (valid[0], math.ceil(valid[1] / 8)), static_valid=sv, name=name)


VF_IMPL_KINDS = ("VFIMPL_DEFAULT", "VFIMPL_1D_NO_POST_UPDATE", "VFIMPL_2D_NO_POST_UPDATE", "VFIMPL_1D_POST_UPDATE",
                 "VFIMPL_2D_POST_UPDATE")  # enum values 0..4 (costmodel.md §3 step 5)
PRECISIONS = {"TRECIP": ("default", "high_precision")}  # A5 algorithm variants that are lowered (isa.md §3)


def vf_impl_kind(value: Any) -> str:
    """Return the canonical VFImplKind for a name (with or without `VFIMPL_`) or its enum value 0..4."""
    key = str(value).strip().upper()
    if key.isdigit() and int(key) < len(VF_IMPL_KINDS):
        return VF_IMPL_KINDS[int(key)]
    key = key if key.startswith("VFIMPL_") else f"VFIMPL_{key}"
    if key not in VF_IMPL_KINDS:
        raise ParamError(f"unknown vf_impl_kind {value!r}; accepted: {', '.join(VF_IMPL_KINDS)} (or 0..4)")
    return key


# op parameters and the families that read them (a parameter given to another family's op would be ignored)
PARAM_FAMILIES = {
    "round_mode": ("convert",), "saturation": ("convert",),
    "binary": ("col_reduce",), "dst_layout": ("row_reduce", "data_movement"), "src_layout": ("data_movement",),
    "gm_shape": ("data_movement",), "pad": ("data_movement",),
    "expand_mode": ("row_expand", "row_expand_binary"), "expanded": ("row_expand_binary",),
    "idx_dtype": ("partial", "gather_scatter"),
    "scalar": (*SCALAR_FAMILIES, "compare_select"),
    **dict.fromkeys(("layout", "gm_dynamic", "src_loc", "dst_loc"), ("data_movement",)),
    **dict.fromkeys(("repeat", "mask", "dst_rep_stride", "src_blk_stride", "src_rep_stride"), ("block_reduce",)),
}


# parameters several families read, each checking them itself
SHARED_PARAMS = ("in_place", "vf_impl_kind", "precision", "src_valid")
# parameters only some ops of a family honour: the plan of another would ignore them (TSUBS scalar_tile would still
# compute src - s while its golden computes s - src)
PARAM_OPS = {"order": ("TDIVS",), "cmp_mode": COMPARES}
SCALAR_MASK_OPS = ("TCMPS", "TSELS")  # the compare_select ops that take a scalar


def check_param_names(params: dict, extra: tuple[str, ...] = ()) -> None:
    """Raise ParamError on a keyword no op reads, nor any of `extra` (a typo would otherwise be silently ignored)."""
    import difflib

    known = (*SHARED_PARAMS, *PARAM_FAMILIES, *PARAM_OPS, *extra)
    for key in params:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            raise ParamError(f"unknown parameter {key!r}; {hint}accepted: {', '.join(sorted(known))}")


def _arch_rules(inst, arch, dt, tiles, params):
    """Check the parameters that only some families or arches take, and the A5 tile relations (isa.md §3
    constraints)."""
    for key, families in PARAM_FAMILIES.items():
        if key in params and inst.family not in families:
            raise ParamError(f"{key} applies to {', '.join(families)} ops, not {inst.name} ({inst.family})")
    for key, ops in PARAM_OPS.items():
        if key in params and inst.name not in ops:
            raise ParamError(f"{key} applies to {', '.join(ops)} only, not {inst.name}")
    if "scalar" in params and inst.family == "compare_select" and inst.name not in SCALAR_MASK_OPS:
        raise ParamError(f"scalar applies to {', '.join(SCALAR_MASK_OPS)} in {inst.family}, not {inst.name}")
    # on A2/A3 only the elementwise sequences place dst over a source (lower/a2a3/sequence.py); other families' plans
    # would keep their own buffers
    if arch == "a2a3" and truthy(params.get("in_place", False)) and inst.family not in ELEMENTWISE:
        raise ParamError(f"in_place is modelled on a2a3 for elementwise ops only ({', '.join(ELEMENTWISE)}), not "
                         f"{inst.name} ({inst.family})")
    if "vf_impl_kind" in params:
        params["vf_impl_kind"] = vf_impl_kind(params["vf_impl_kind"])
        # VFIMPL_DEFAULT asks for nothing: a profiler writing one file for both arches fills it on every row
        if arch != "a5" and params.pop("vf_impl_kind") != "VFIMPL_DEFAULT":
            raise ParamError(f"vf_impl_kind selects the A5 VF loop form; {arch} has no VF (use --strategy; "
                             "VFIMPL_DEFAULT or 0 is accepted there as no request)")
    precision = str(params.get("precision", "default")).strip().lower()
    if precision not in ("default", ""):
        accepted = PRECISIONS.get(inst.name, ()) if arch == "a5" else ()
        if precision not in accepted:
            where = f"{inst.name} on {arch}"
            raise ParamError(f"precision {params['precision']!r} is not modelled for {where}; "
                             f"accepted: {', '.join(accepted) or 'default'}")
        if not dt.is_float:
            raise ParamError(f"{inst.name} high_precision is a float algorithm; {dt} takes precision=default")
    if "precision" in params or (arch == "a5" and inst.name in PRECISIONS):  # the variant is part of the A5 key
        params["precision"] = precision or "default"
    if "src_valid" in params:
        tiles = _src_valid(inst, arch, tiles, params.pop("src_valid"))
    return tiles, params


def _src_valid(inst, arch, tiles, text):
    """A source valid region differing from dst: A5 tile-scalar/unary ops need equal valid cols only (isa.md §3)."""
    names = [n for n, _ in tiles]
    if inst.family not in ("binary_scalar", "unary") or "src" not in names:
        raise ParamError(f"--src-valid applies to unary and binary_scalar ops; {inst.name} is {inst.family}")
    dst = tiles[0][1]
    vr, vc = parse_shape(text, what="src valid region", allow_zero=True)
    if vc != dst.valid_cols or (arch != "a5" and vr != dst.valid_rows):
        rule = "valid cols equal (A5)" if arch == "a5" else "valid rows and cols equal (A2/A3)"
        raise ShapeError(f"{inst.name} on {arch} needs src and dst {rule}; got src {vr}x{vc}, dst {dst.valid_rows}x{dst.valid_cols}")
    src = dict(tiles)["src"]
    new = Tile(src.rows, src.cols, src.dtype, vr, vc, src.layout, src.loc, src.static_valid)
    new.check("src")
    return [(n, new if n == "src" else t) for n, t in tiles]
