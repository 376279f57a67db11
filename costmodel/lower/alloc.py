"""Place a plan's buffers in the unified buffer (32-byte aligned, in operand order) and check capacity."""
from __future__ import annotations

from ..arch import constants
from ..errors import ShapeError
from ..plan import Buffer
from ..tiles import Tile


def allocate(arch: str, tiles: list[tuple[str, Tile]], scratch: list[tuple[str, Tile]] = (), *, reserve_tmp_window: bool = False) -> tuple[Buffer, ...]:
    """Return buffers at consecutive 32-byte aligned UB addresses; raise ShapeError if they do not fit."""
    c = constants(arch)
    align = c.ub_align_bytes
    limit = c.ub_bytes
    if reserve_tmp_window and arch == "a2a3":
        limit = c.tmp_ub_offset  # 184 KiB..192 KiB is the implicit scratch window (isa.md §1.2)
    out: list[Buffer] = []
    addr = 0
    for name, tile in list(tiles) + list(scratch):
        out.append(Buffer(name, tile, addr, scratch=(name, tile) in list(scratch)))
        addr += -(-tile.nbytes // align) * align
    if addr > limit:
        raise ShapeError(overflow_message(arch, [(b.name, b.nbytes) for b in out], addr, limit))
    return tuple(out)


def overflow_message(arch: str, used: list[tuple[str, int]], need: int, limit: int) -> str:
    """The error of buffers (name, bytes) that need `need` bytes of a `limit`-byte unified buffer."""
    listed = ", ".join(f"{name} {nbytes} B" for name, nbytes in used)
    return f"operands need {need} B of unified buffer but {arch} has {limit} B ({listed})"
