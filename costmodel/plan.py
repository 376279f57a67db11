"""Plans: the frozen, printable sequence an arch's PTO implementation issues for one request."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .arch import constants
from .request import Request
from .tiles import Tile


@dataclass(frozen=True)
class Buffer:
    """An on-chip buffer the plan touches: a request tile, or scratch (`tmp`) the implementation allocates."""

    name: str
    tile: Tile
    offset: int  # byte address in the emulator's memory image (UB first, then GM), 32-byte aligned
    scratch: bool = False
    space: str = "ub"  # "ub" (on-chip unified buffer) or "gm" (global memory, after the UB in the image)

    @property
    def nbytes(self) -> int:
        return self.tile.nbytes


@dataclass(frozen=True)
class Plan:
    """What is issued: `body` is a tuple of arch instructions (A2/A3 intrinsics or an A5 VF program)."""

    arch: str
    op: str
    strategy: str
    request: Request
    buffers: tuple[Buffer, ...]
    body: tuple[Any, ...]
    notes: tuple[str, ...] = ()

    def buffer(self, name: str) -> Buffer:
        """Return the buffer called `name`."""
        for buf in self.buffers:
            if buf.name == name:
                return buf
        raise KeyError(name)

    def listing(self) -> str:
        """Return the plan as a disassembly-like text listing."""
        lines = [f"; {self.op} on {self.arch}, strategy {self.strategy}"]
        width = max([5] + [len(b.name) for b in self.buffers])
        for buf in self.buffers:
            role = "scratch" if buf.scratch else "tile"
            base = constants(self.arch).ub_bytes if buf.space == "gm" else 0
            lines.append(f"; {buf.name:<{width}} @{buf.space.upper()}+{buf.offset - base:<6} {role} {buf.tile.describe()}")
        lines.extend(f"; note: {n}" for n in self.notes)
        from .isa_a2a3 import SetMaskMode, SetVectorMask

        counting = False  # an A2/A3 mask write is a count under counter mode
        for instr in self.body:
            if isinstance(instr, SetMaskMode):
                counting = instr.mode == "count"
            if isinstance(instr, SetVectorMask):
                lines.append(instr.listing(counting))
            else:
                lines.extend(instr.listing_lines() if hasattr(instr, "listing_lines") else [instr.listing()])
        return "\n".join(lines)

    def counts(self) -> dict[str, int]:
        """Return how many times each instruction kind is issued (A2/A3: top-level intrinsics; A5: dynamic VF op counts)."""
        out: dict[str, int] = {}
        for instr in self.body:
            if hasattr(instr, "counts"):  # an A5 VF program: dynamic issue counts per operation
                for key, n in instr.counts().items():
                    out[key] = out.get(key, 0) + n
                continue
            key = getattr(instr, "intrinsic", None) or _mnemonic(instr)
            out[key] = out.get(key, 0) + 1
        return out


def _mnemonic(instr) -> str:
    """The name an instruction is listed under (`pipe_barrier(PIPE_V)` -> `pipe_barrier`), for counts that match the
    listing."""
    import re

    text = instr.listing() if hasattr(instr, "listing") else type(instr).__name__
    m = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)", text)
    return m.group(1) if m else type(instr).__name__
