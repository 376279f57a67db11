"""A2/A3 lowering of the mask ops TSEL, TSELS, TCMP and TCMPS, in counter mode (isa.md §4.5; sequences inferred).

All four walk the packed mask tile, one bit per element, LSB first (the packing vcmpv writes,
data/a2a3_intrinsics.csv), and the A2/A3 NPU restarts the mask at mask row i for data row i (isa.md §4.5): TSEL
and TSELS read it (vsel; TSELS first broadcasts its scalar into a scratch tile, the `tmp` of its operand list),
TCMP and TCMPS write it as their dst (vcmpv_<mode>, vcmpvs_<mode>). The natural walk is one call per row under a
counter of vc elements (`2LCount`), each call on its row of every operand. When the data tiles are one contiguous
run and the mask's rows are exactly vc bits, the whole region is one call (`1LCount`).

The steps of each op come from data/a2a3_lowering_part_expand.csv: the `select` path of TSEL and TSELS, TCMP's and
TCMPS's path named by the compare mode; consecutive steps are separated by a PIPE_V barrier. A step that reads and
writes only the mask (TCMPS NE: NOT over the packed EQ bits, isa.md §4) walks the mask's words instead of the
elements. Every call is priced by its costmodel.md §5 stub class.
"""
from __future__ import annotations

import math

from ...errors import NotModelledError, ParamError
from ...isa_a2a3 import PipeBarrier
from ...plan import Plan
from ...request import Request
from ..alloc import allocate
from . import modes
from .broadcast import stream
from .part_expand_table import steps_for
from .steps import build

# per op: its packed mask operand (TSEL and TSELS read it, the compares write it) and the operand whose valid region
# the calls walk
MASK = {"TSEL": "mask", "TSELS": "mask", "TCMP": "dst", "TCMPS": "dst"}
REGION = {"TSEL": "dst", "TSELS": "dst", "TCMP": "src0", "TCMPS": "src0"}
SCRATCH = {"TSELS": "tmp"}  # a scratch tile of dst's shape and type
# A2/A3 TCMPS compares i16/u16 as if their bits were f16 (isa.md §4), which the golden does not: not modelled
BITS_AS_F16 = ("i16", "u16")
# A2/A3 i32 compares support EQ only; the NPU turns any other mode into EQ (isa.md §3 rows 22-23, §4)
I32_MODES = ("eq",)


def lowers(op: str) -> bool:
    """Whether this module lowers `op` (TSEL, TSELS, TCMP, TCMPS of its family)."""
    return op in MASK


def _check(req: Request) -> None:
    if not lowers(req.op):
        raise NotModelledError(f"{req.op} ({req.family}) has no A2/A3 lowering yet; modelled in compare_select: "
                               f"{', '.join(MASK)}")
    if req.op == "TCMPS" and req.dtype.name in BITS_AS_F16:
        raise NotModelledError(f"TCMPS {req.dtype} on a2a3 is not modelled: the NPU compares i16/u16 bits as if they "
                               "were f16 (isa.md §4); modelled: f32 f16 i32")
    mode = req.param("cmp_mode")
    if req.dtype.name == "i32" and mode is not None and mode not in I32_MODES:
        why = (f"the NPU silently turns {mode.upper()} into EQ, isa.md §4" if req.op == "TCMPS" else
               "isa.md §3 row 22")
        raise ParamError(f"{req.op} i32 on a2a3 compares only EQ ({why}); accepted: --cmp-mode eq")


def _region(req: Request) -> tuple[int, int]:
    """The element region every call walks: the data tiles' valid region."""
    return req.tile(REGION[req.op]).valid


def strategies(req: Request) -> tuple[str, dict[str, str | None]]:
    """Return (default strategy, {strategy: None if legal else why not})."""
    _check(req)
    vr, vc = _region(req)
    data = [n for n, _ in req.tiles if n != MASK[req.op]]
    contiguous = all(req.tile(n).valid_cols == req.tile(n).cols or vr <= 1 for n in data)
    mask = req.tile(MASK[req.op])
    whole_rows = vr <= 1 or mask.cols * 8 == vc
    why = None
    if not contiguous:
        why = f"needs {', '.join(data)} to be one contiguous run (full rows, or one row)"
    elif not whole_rows:
        why = f"needs mask rows of exactly vc = {vc} bits (mask rows hold {mask.cols * 8})"
    default = "1LCount" if why is None else "2LCount"
    return default, {"1LCount": why, "2LCount": None}


def steps(req: Request):
    """Return the request's steps (from the lowering table) and the allocated buffers."""
    _check(req)
    scratch = [(SCRATCH[req.op], req.dst)] if req.op in SCRATCH else []
    buffers = allocate("a2a3", list(req.tiles), scratch)
    streams = {b.name: stream(b) for b in buffers}
    path = req.param("cmp_mode") or "select"
    return build(steps_for(req.op, path), streams, req.param("scalar")), buffers


def on_mask_alone(step, mask: str) -> bool:
    """Whether a step reads and writes the packed mask alone (TCMPS NE's NOT): it walks mask words, not elements."""
    return all(s.buf == mask for s in step.streams)


def _cols(step, mask: str, vc: int) -> int:
    """Columns a step walks per row: vc elements, or the mask words holding vc bits for a step on the mask alone."""
    return math.ceil(vc / step.dtype.bits) if on_mask_alone(step, mask) else vc


def lower(req: Request, strategy: str) -> Plan:
    """Return the plan of TSEL, TSELS, TCMP or TCMPS in `strategy` (see module docstring)."""
    built, buffers = steps(req)
    vr, vc = _region(req)
    body: list = []
    for i, step in enumerate(built):
        if i:
            body.append(PipeBarrier("V"))
        body += modes.emit(strategy, step, vr, _cols(step, MASK[req.op], vc))
    default, table = strategies(req)
    why = ("the data and the mask are each one contiguous run: one call" if default == "1LCount" else
           f"one call per row: 1LCount {table['1LCount']}")
    chose = f"{default} by default: {why}" if strategy == default else f"{strategy} as asked; the default would be {default}"
    notes = (chose, "mask row i holds the bits of data row i (A2/A3 NPU, isa.md §4.5)")
    return Plan("a2a3", req.op, strategy, req, buffers, tuple(body), notes)
