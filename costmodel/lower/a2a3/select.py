"""A2/A3 lowering of TSEL: vsel through the packed mask tile, in counter mode (isa.md §4.5; sequence inferred).

The A2/A3 NPU restarts the mask at mask row i for dst row i (isa.md §4.5), so the natural walk is one vsel per
row under a counter of vc elements (`2LCount`), each call reading its row of dst, src0, src1 and mask; a vsel
reads one mask bit per element, LSB first (the packing vcmpv writes, data/a2a3_intrinsics.csv). When all three
data tiles are one contiguous run and the mask's rows are exactly vc bits, the whole region is one call
(`1LCount`). vsel is priced by its costmodel.md §5 stub class like any intrinsic.
"""
from __future__ import annotations

from ...errors import NotModelledError
from ...plan import Plan
from ...request import Request
from ..alloc import allocate
from . import modes
from .broadcast import stream
from .part_expand_table import steps_for
from .steps import build

DATA = ("dst", "src0", "src1")


def lowers(op: str) -> bool:
    """Whether this module lowers `op` (TSEL only of its family)."""
    return op == "TSEL"


def _check(req: Request) -> None:
    if not lowers(req.op):
        raise NotModelledError(f"{req.op} ({req.family}) has no A2/A3 lowering yet; modelled in compare_select: TSEL")


def strategies(req: Request) -> tuple[str, dict[str, str | None]]:
    """Return (default strategy, {strategy: None if legal else why not})."""
    _check(req)
    vr, vc = req.dst.valid
    contiguous = all(req.tile(n).valid_cols == req.tile(n).cols or vr <= 1 for n in DATA)
    mask = req.tile("mask")
    whole_rows = vr <= 1 or mask.cols * 8 == vc
    why = None
    if not contiguous:
        why = "needs dst, src0 and src1 to be one contiguous run (full rows, or one row)"
    elif not whole_rows:
        why = f"needs mask rows of exactly vc = {vc} bits (mask rows hold {mask.cols * 8})"
    default = "1LCount" if why is None else "2LCount"
    return default, {"1LCount": why, "2LCount": None}


def step(req: Request):
    """Return the vsel step of the request and the allocated buffers."""
    _check(req)
    buffers = allocate("a2a3", list(req.tiles))
    streams = {b.name: stream(b) for b in buffers}
    return build(steps_for(req.op, "select"), streams, None)[0], buffers


def lower(req: Request, strategy: str) -> Plan:
    """Return the TSEL plan in `strategy` (see module docstring)."""
    vsel, buffers = step(req)
    vr, vc = req.dst.valid
    notes = ("mask bits restart at mask row i for dst row i (A2/A3 NPU, isa.md §4.5)",)
    return Plan("a2a3", req.op, strategy, req, buffers, tuple(modes.emit(strategy, vsel, vr, vc)), notes)
