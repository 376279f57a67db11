"""Shared helpers for the A2/A3 reduce / convert / data-movement tests."""
from __future__ import annotations

import numpy as np

from costmodel.emulate import a2a3 as emu


def emulate(plan, inputs: dict[str, np.ndarray], seed: int = 0) -> np.ndarray:
    """Run `plan` with the given input tiles (others random) and return the dst buffer's final contents."""
    _, after = emu.run(plan, inputs, seed)
    buf = plan.buffer("dst")
    return after.tile(buf.offset, buf.tile)


def vec_ops(plan, name: str | None = None) -> list:
    """The plan's vector calls (optionally only one intrinsic)."""
    return [i for i in plan.body if hasattr(i, "repeat") and (name is None or i.intrinsic == name)]
