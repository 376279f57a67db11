"""Build A2/A3 instruction sequences with the mask state tracked, so mode and mask writes are issued only
when they change (PTO restores normal mode and the full mask at the end of a sequence, isa.md §7.1)."""
from __future__ import annotations

from ...isa_a2a3 import FULL_MASK, PipeBarrier, SetMaskMode, SetVectorMask, continuous_mask


class Emitter:
    """Accumulates instructions; `count(n)` / `mask(n)` switch the vector mask state before calls."""

    def __init__(self) -> None:
        self.body: list = []
        self._mode = "norm"
        self._mask = FULL_MASK

    def count(self, n: int) -> "Emitter":
        """Enter counter mode with element count `n`."""
        if self._mode != "count":
            self.body.append(SetMaskMode("count"))
            self._mode = "count"
            self._mask = None
        if self._mask != (0, n):
            self.body.append(SetVectorMask(0, n))
            self._mask = (0, n)
        return self

    def mask(self, lanes: int | None = None) -> "Emitter":
        """Enter normal mode with the first `lanes` lanes enabled (None: the full mask)."""
        want = FULL_MASK if lanes is None else continuous_mask(lanes)
        if self._mode != "norm":
            self.body.append(SetMaskMode("norm"))
            self._mode = "norm"
            self._mask = None
        if self._mask != want:
            self.body.append(SetVectorMask(*want))
            self._mask = want
        return self

    def add(self, *instrs, barrier: bool = False) -> "Emitter":
        """Append instructions, then a PIPE_V barrier if asked."""
        self.body.extend(instrs)
        if barrier:
            self.body.append(PipeBarrier("V"))
        return self

    def finish(self) -> list:
        """Restore normal mode and the full mask; return the instruction list."""
        self.mask(None)
        return self.body
