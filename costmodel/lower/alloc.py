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
        used = ", ".join(f"{b.name} {b.nbytes} B" for b in out)
        raise ShapeError(f"operands need {addr} B of unified buffer but {arch} has {limit} B ({used})")
    return tuple(out)
