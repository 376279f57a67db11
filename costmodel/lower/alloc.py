"""Place a plan's buffers in the unified buffer (32-byte aligned, in operand order) and check capacity."""
from __future__ import annotations

from ..arch import constants
from ..errors import ParamError, ShapeError
from ..plan import Buffer
from ..tiles import Tile


# targets whose every op may run in place (lower/a5/vf.py `lower`); on A2/A3 only the in-place sequences can
IN_PLACE_ANY_OP = frozenset({"a5"})


def in_place_possible(arch: str, family: str) -> bool:
    """Whether an op of `family` may write dst over its first source on `arch` (on A2/A3: the elementwise
    sequences, lower/a2a3/sequence.py)."""
    from ..catalog import ELEMENTWISE

    return arch in IN_PLACE_ANY_OP or family in ELEMENTWISE


def allocate(arch: str, tiles: list[tuple[str, Tile]], scratch: list[tuple[str, Tile]] = (), *,
             reserve_tmp_window: bool = False, alias: str | None = None, in_place: bool | None = None
             ) -> tuple[Buffer, ...]:
    """Return buffers at consecutive 32-byte aligned UB addresses (the source named `alias`, if any, at the first
    tile's address: an in-place op); raise ShapeError if they do not fit (saying when --in-place would fit, where the
    op may run in place: `in_place`, by default every op of an IN_PLACE_ANY_OP arch)."""
    c = constants(arch)
    align = c.ub_align_bytes
    limit = c.ub_bytes
    if reserve_tmp_window and arch == "a2a3":
        limit = c.tmp_ub_offset  # 184 KiB..192 KiB is the implicit scratch window (isa.md §1.2)
    out: list[Buffer] = []
    addr = 0
    for name, tile in list(tiles) + list(scratch):
        if out and name == alias:
            out.append(Buffer(name, tile, out[0].offset))
            continue
        out.append(Buffer(name, tile, addr, scratch=(name, tile) in list(scratch)))
        addr += aligned(tile.nbytes, align)
    if addr > limit:
        try:
            same_first = alias is None and bool(alias_source(list(tiles)))
        except ParamError:
            same_first = False
        raise ShapeError(overflow_message(arch, [(b.name, b.nbytes) for b in out if b.name != alias], addr, limit,
                                          same_first, in_place))
    return tuple(out)


def ub_need(arch: str, tiles: list[tuple[str, Tile]]) -> int:
    """Return the unified-buffer bytes the tiles take side by side (each rounded up to the UB alignment)."""
    align = constants(arch).ub_align_bytes
    return sum(aligned(t.nbytes, align) for _, t in tiles)


def aligned(nbytes: int, align: int) -> int:
    """Return `nbytes` rounded up to a multiple of `align` (the space a buffer takes in the unified buffer)."""
    return -(-nbytes // align) * align


def buffers_end(buffers: tuple[Buffer, ...] | list[Buffer], align: int) -> int:
    """Return the unified-buffer address just past the last of the placed buffers (each rounded up to `align`)."""
    return max(b.offset + aligned(b.nbytes, align) for b in buffers)


def overflow_message(arch: str, used: list[tuple[str, int]], need: int, limit: int, same_first: bool = False,
                     in_place: bool | None = None) -> str:
    """The error of buffers (name, bytes; dst first) that need `need` bytes of a `limit`-byte unified buffer; where
    the op may write dst over its first source (`in_place`; by default where every op may, IN_PLACE_ANY_OP) it says
    so when that would fit. `same_first`: the first source has dst's tile shape and element width (`alias_source`)."""
    listed = ", ".join(f"{name} {nbytes} B" for name, nbytes in used)
    message = f"operands need {need} B of unified buffer but {arch} has {limit} B ({listed})"
    if (arch in IN_PLACE_ANY_OP if in_place is None else in_place) and same_first and len(used) > 1:
        if need - aligned(used[0][1], constants(arch).ub_align_bytes) <= limit:
            message += f"; with --in-place (dst over {used[1][0]}) it would fit"
    return message


def alias_source(tiles: list[tuple[str, Tile]]) -> str:
    """Return the source an in-place op overwrites: the first one (`src` or `src0`) if it has the destination's shape
    and element width; raise ParamError otherwise."""
    (_, dst), *sources = tiles
    if sources:
        name, src = sources[0]
        if (src.rows, src.cols, src.dtype.bits) == (dst.rows, dst.cols, dst.dtype.bits):
            return name
    raise ParamError("an in-place op overwrites its first source, which needs dst's tile shape and element width")
