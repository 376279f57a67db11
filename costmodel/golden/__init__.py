"""Golden semantics: what each instruction computes, on numpy arrays, independent of any plan (isa.md §4).

`golden(op, *operands, valid=None, **params)` takes the source tiles at their static shapes and returns the
destination at its static shape; elements outside the destination's valid region are 0 (or copied from
`out=` when given), like the tests' pre-zeroed GM.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..catalog import ELEMENTWISE_SOURCES, instruction
from ..errors import NotModelledError, ParamError, PtoCostError, ShapeError
from ..tiles import parse_shape
from ..wording import counted
from .kernels import apply

Region = tuple[int, int]


def _region(valid: Any, shape: tuple[int, int]) -> Region:
    if valid is None:
        return shape
    vr, vc = parse_shape(valid, what="valid region", allow_zero=True)
    if not (0 <= vr <= shape[0] and 0 <= vc <= shape[1]):
        raise ShapeError(f"valid region {vr}x{vc} does not fit the {shape[0]}x{shape[1]} tile; accepted: 0..{shape[0]} "
                         f"x 0..{shape[1]}")
    return vr, vc


def _valid_arg(valid: Any) -> Any:
    """`valid` as the families read it: "RxC" text (as estimate takes it) as (rows, cols), and each region of a
    sequence of regions (destination first) likewise."""
    if isinstance(valid, np.ndarray):
        valid = valid.tolist()
    if isinstance(valid, str):
        return parse_shape(valid, what="valid region", allow_zero=True)
    if isinstance(valid, (tuple, list)) and valid and all(isinstance(v, (str, tuple, list, np.ndarray)) for v in valid):
        return [_valid_arg(v) for v in valid]
    return valid


def _blank(shape: tuple[int, ...], dtype: np.dtype, out: np.ndarray | None) -> np.ndarray:
    return np.zeros(shape, dtype=dtype) if out is None else np.array(out, dtype=dtype, copy=True)


def _scalar(params: dict[str, Any], dtype: np.dtype, op: str) -> np.ndarray:
    if params.get("scalar") is None:
        raise ParamError(f"{op} needs a scalar (scalar=...)")
    return np.asarray(params["scalar"]).astype(dtype)




def _elementwise(inst, operands: Sequence[np.ndarray], valid, out, params) -> np.ndarray:
    want = len(ELEMENTWISE_SOURCES[inst.family])
    if len(operands) != want:
        raise ParamError(f"{inst.name} takes {counted(want, 'source tile')}, got {len(operands)}")
    if not want:  # TEXPANDS: dst's tile (out=) gives the shape and type
        if out is None:
            raise ParamError(f"{inst.name} has no source tile: pass out= (dst before the op) for its shape and type")
        dst = np.array(out, copy=True)
        if dst.ndim != 2:
            raise ShapeError(f"{inst.name} takes a 2-D tile, got an array of shape {dst.shape}")
        vr, vc = _region(valid, dst.shape)
        dst[:vr, :vc] = _scalar(params, dst.dtype, inst.name)
        return dst
    if any(np.ndim(a) != 2 for a in operands):
        raise ShapeError(f"{inst.name} takes 2-D tiles, got arrays of shapes {', '.join(str(np.shape(a)) for a in operands)}")
    if len({np.shape(a) for a in operands}) > 1:
        raise ShapeError(f"{inst.name} sources must have one shape, got {' and '.join(str(np.shape(a)) for a in operands)}")
    first = np.asarray(operands[0])
    vr, vc = _region(valid, first.shape)
    region = tuple(np.asarray(a)[:vr, :vc] for a in operands)
    if inst.family == "binary_scalar":
        s = np.broadcast_to(_scalar(params, first.dtype, inst.name), region[0].shape)
        args = (s, region[0]) if params.get("order") == "scalar_tile" else (region[0], s)
    elif inst.family in ("tile_scalar_tile", "fused_scalar"):  # (src0, s, src1) and (dst before the op, src0, s)
        s = np.broadcast_to(_scalar(params, first.dtype, inst.name), region[0].shape)
        args = (region[0], s, region[1]) if inst.family == "tile_scalar_tile" else (region[0], region[1], s)
    else:
        args = region
    dst = _blank(first.shape, first.dtype, out)
    dst[:vr, :vc] = apply(inst.kernel, *args)
    return dst


_FAMILIES = {family: _elementwise for family in ELEMENTWISE_SOURCES}


def register(family: str):
    """Decorator: register the golden function of a family (signature (inst, operands, valid, out, params))."""
    def deco(fn):
        _FAMILIES[family] = fn
        return fn
    return deco


# what golden reads besides the request parameters: a conversion's target, tile shapes a source does not give, the
# TSEL mask's bit layout and width (select.py), the index tile of arg ops
GOLDEN_PARAMS = ("dst_dtype", "dst_shape", "dst_cols", "tile_shape", "mask_layout", "mask_valid_cols", "out_idx")


def golden(op: str, *operands: np.ndarray, valid: Any = None, out: np.ndarray | None = None, **params: Any) -> np.ndarray:
    """Return the destination tile that `op` computes from `operands` (static shapes) over the valid region.

    `valid` is the destination's valid (rows, cols) — sources are read at the same (i, j) — or, for ops whose
    operands have their own regions (TPART*, TROWEXPAND*), a sequence of regions: destination first, then each
    source. TPARTARGMAX/ARGMIN take (src0, src1, src0_idx, src1_idx) and return (values, indices). Ops whose dst
    shape differs from every source (TCOLEXPAND, TROWEXPAND) take `dst_shape=(rows, cols)` or `out=`. The ternary
    ops take (dst before the op, src0, src1), TAXPY (dst before the op, src0) and `scalar=`; TADDSC/TSUBSC take
    (src0, src1) and `scalar=`; TEXPANDS takes no source, `scalar=` and `out=` (dst before the op).
    """
    inst = instruction(op)
    fn = _FAMILIES.get(inst.family)
    if fn is None or not inst.kernel:
        raise NotModelledError(f"no golden semantics for {inst.name} ({inst.family})")
    if not operands and ELEMENTWISE_SOURCES.get(inst.family) != ():
        raise ParamError(f"{inst.name} needs its source tiles as numpy arrays")
    from ..operands import check_param_names

    check_param_names(params, (*GOLDEN_PARAMS, "valid", "out"))  # the two named ones, for a misspelling's hint
    try:
        return fn(inst, operands, _valid_arg(valid), out, params)
    except PtoCostError:
        raise
    except (TypeError, ValueError, IndexError) as exc:  # numpy's own complaint about operands that do not fit
        raise ParamError(f"{inst.name}: operands do not fit its semantics ({str(exc).splitlines()[0]})") from None


from . import families as _families  # noqa: E402,F401  (registers the remaining families)
from . import convert as _convert, datamove as _datamove, reduce as _reduce, select as _select  # noqa: E402,F401
