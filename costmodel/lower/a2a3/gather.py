"""A2/A3 lowering of TGATHER, index form (isa.md §4.7; sequence inferred from costmodel.md §5).

costmodel.md §5 records TGATHER at about 46.6 cycles per row, issued as one vgather call per row plus a vmuls
and a barrier. So per row, under a counter of vc elements: vmuls turns the row's element indices into byte
offsets (index x element size) in a scratch row, a PIPE_V barrier waits for them, and vgather reads each dst
element at src0's base plus its offset. The mask and compare forms of TGATHER are not modelled.
"""
from __future__ import annotations

from ...errors import NotModelledError
from ...isa_a2a3 import FULL_MASK, PipeBarrier, SetMaskMode, SetVectorMask
from ...plan import Plan
from ...request import Request
from ..alloc import allocate
from . import modes
from .broadcast import stream
from .part_expand_table import steps_for
from .steps import build

STRATEGY = "2LCount"


def lowers(op: str) -> bool:
    """Whether this module lowers `op` (TGATHER only of its family)."""
    return op == "TGATHER"


def _check(req: Request) -> None:
    if not lowers(req.op):
        raise NotModelledError(f"{req.op} ({req.family}) has no A2/A3 lowering yet; modelled in gather_scatter: "
                               f"TGATHER (index form)")


def strategies(req: Request) -> tuple[str, dict[str, str | None]]:
    """Return (default strategy, {strategy: None if legal else why not}): one walk, a call per row."""
    _check(req)
    return STRATEGY, {STRATEGY: None}


def lower(req: Request, strategy: str) -> Plan:
    """Return the TGATHER plan (see module docstring)."""
    _check(req)
    buffers = allocate("a2a3", list(req.tiles), [("tmp", req.tile("idx"))])  # byte offsets: a tile like idx
    streams = {b.name: stream(b, broadcast=b.name == "src0") for b in buffers}  # offsets count from src0's base
    to_bytes, gather = build(steps_for(req.op, "offsets") + steps_for(req.op, "gather"), streams,
                             req.dst.dtype.bits // 8)
    vr, vc = req.dst.valid
    body: list = []
    if vr and vc:
        body = [SetMaskMode("count"), SetVectorMask(0, vc)]
        for r in range(vr):
            body += [modes.count_call(to_bytes, r), PipeBarrier("V"), modes.count_call(gather, r)]
        body += [SetMaskMode("norm"), SetVectorMask(*FULL_MASK)]
    return Plan("a2a3", req.op, strategy, req, buffers, tuple(body), ("index form: byte offsets in tmp, one vgather per row",))
