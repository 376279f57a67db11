"""Golden semantics of TLOAD, TSTORE and Vec->Vec TMOV (isa.md §4.8, §1.5 ND index mapping).

* TLOAD(gm): the whole tile of `tile_shape` is filled with the pad value (PadValue Null and Zero -> 0), then
  tile element (r, c) of the valid region takes GM element (i0, i1, i2, i3, c) where r = i3 + s3*(i2 + s2*(i1
  + s1*i0)) (r decomposed little-endian over shape3, shape2, shape1, shape0).
* TSTORE(src): the GM tensor of `gm_shape` (starting from `out`, else zeros) receives the src valid region by
  the same mapping; nothing else changes.
* TMOV(src): dst(r, c) = src(r, c) over the valid region, whatever the two tiles' layouts.
"""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from . import _blank, _region, register


def _gm_index(shape5: tuple[int, ...], vr: int, vc: int) -> tuple[np.ndarray, ...]:
    s0, s1, s2, s3, s4 = shape5
    if vr != s0 * s1 * s2 * s3 or vc != s4:
        raise ShapeError(f"ND TLOAD/TSTORE: valid {vr}x{vc} must be (shape0*shape1*shape2*shape3) x shape4 = "
                         f"{s0 * s1 * s2 * s3}x{s4} (isa.md §1.5)")
    r = np.arange(vr)[:, None]
    c = np.arange(vc)[None, :]
    i3, rest = r % s3, r // s3
    i2, rest = rest % s2, rest // s2
    i1, i0 = rest % s1, rest // s1
    return tuple(np.broadcast_arrays(i0, i1, i2, i3, c))


def tload(gm: np.ndarray, valid, tile_shape, pad: str = "null") -> np.ndarray:
    """Return the tile TLOAD produces from the 5-D GM tensor `gm` (a 2-D array is read as [1, 1, 1, R, C])."""
    from ..dtypes import from_numpy
    from ..padding import pad_value

    gm = np.asarray(gm)
    gm5 = gm.reshape((1, 1, 1) + gm.shape) if gm.ndim == 2 else gm
    vr, vc = _region(valid, tuple(tile_shape))
    tile = np.full(tuple(tile_shape), pad_value(pad, from_numpy(gm.dtype)), dtype=gm.dtype)
    tile[:vr, :vc] = gm5[_gm_index(gm5.shape, vr, vc)]
    return tile


def tstore(src: np.ndarray, valid, gm_shape, out: np.ndarray | None = None) -> np.ndarray:
    """Return the 5-D GM tensor after TSTORE writes the src valid region into it."""
    src = np.asarray(src)
    vr, vc = _region(valid, src.shape)
    gm = _blank(tuple(gm_shape), src.dtype, None if out is None else np.asarray(out).reshape(tuple(gm_shape)))
    gm[_gm_index(tuple(gm_shape), vr, vc)] = src[:vr, :vc]
    return gm


@register("data_movement")
def _data_movement(inst, operands, valid, out, params):
    src = np.asarray(operands[0])
    if inst.name == "TLOAD":
        return tload(src, valid, params.get("tile_shape", src.shape[-2:]), params.get("pad", "null"))
    if inst.name == "TSTORE":
        return tstore(src, valid, params.get("gm_shape", (1, 1, 1) + src.shape), out)
    if inst.name == "TMOV":
        vr, vc = _region(valid, src.shape)
        dst = _blank(src.shape, src.dtype, out)
        dst[:vr, :vc] = src[:vr, :vc]
        return dst
    from ..errors import NotModelledError

    raise NotModelledError(f"no golden semantics for {inst.name} (data movement) yet")
