"""A2/A3 lowering of TCVT: `vconv_<src>2<dst><mode>` steps issued with the unary emission modes.

A conversion walks EPR = 256 B / sizeof(wider type) elements per repeat (isa.md §7.1) and picks its mode with
the unary-op rule (costmodel.md §6). Saturation OFF sets CTRL bit 59 around the conversion; for the pairs
whose OFF path goes through s32 (f32->i16, f16->i16, f16->i8, isa.md §4.4) the plan converts with
saturation into an s32 tmp, then narrows with the bit set (wrapping) through s16 when needed, each step
separated by a barrier (data/a2a3_convert.csv).
"""
from __future__ import annotations

from ...conversions import conversion, mode_notes, resolve
from ...dtypes import dtype as as_dtype
from ...isa_a2a3 import PipeBarrier, SetSaturation
from ...plan import Plan
from ...request import Request
from ...tiles import Tile
from ..alloc import allocate
from . import modes
from .elementwise import default_mode, legal_modes, mode_note
from .modes import Step, Stream

_SCRATCH_NAMES = ("tmp", "tmp2")


def _chain(req: Request) -> tuple[list[tuple[str, str, str, bool]], str]:
    """Return the conversion steps [(src type, dst type, intrinsic, saturate)] and the round mode."""
    src, dst = req.dtype.name, req.dst.dtype.name
    conv, mode, sat = resolve(src, dst, req.param("round_mode"), req.param("saturation"))
    if sat or not conv.via:
        return [(src, dst, conv.intrinsic_for(mode), sat)], mode
    types = [src, *conv.via, dst]
    steps = []
    for i, (a, b) in enumerate(zip(types, types[1:])):
        step = conversion(a, b)
        steps.append((a, b, step.intrinsic_for(mode), i == 0))
    return steps, mode


def chain(req: Request) -> tuple[list[tuple[Step, bool]], list[tuple[str, Tile]]]:
    """Return the conversion's vector steps [(step, saturating)] and its scratch tiles [(name, tile)]."""
    chain, mode = _chain(req)
    d = req.dst
    scratch = [(_SCRATCH_NAMES[i], Tile(d.rows, d.cols, as_dtype(b), d.valid_rows, d.valid_cols))
               for i, (_, b, _, _) in enumerate(chain[:-1])]
    names = ["src"] + [n for n, _ in scratch] + ["dst"]
    tiles = dict(req.tiles) | dict(scratch)
    streams = {n: Stream(n, tiles[n].dtype, tiles[n].cols * tiles[n].dtype.bits // 8) for n in names}
    steps = [(Step(intr, as_dtype(a), streams[names[i + 1]], (streams[names[i]],), None, as_dtype(b), mode), sat)
             for i, (a, b, intr, sat) in enumerate(chain)]
    return steps, scratch


def strategies(req: Request) -> tuple[str, dict[str, str | None]]:
    """Return (default, {strategy: None or why illegal}): the unary mode rule at the widest step's EPR."""
    steps, _ = chain(req)
    eprs = sorted({s.epr for s, _ in steps})
    table: dict[str, str | None] = {}
    for e in eprs:
        for name, why in legal_modes("unary", req, e).items():
            table[name] = table.get(name) or why
    return default_mode("unary", req, mode_epr(steps)), table


def mode_epr(steps) -> int:
    """Return the EPR the unary mode rule picks a conversion's default at: its widest step's (the fewest elements a
    repeat)."""
    return min(s.epr for s, _ in steps)


def lower(req: Request, strategy: str) -> Plan:
    """Return the TCVT plan in one of the unary emission modes."""
    steps, scratch = chain(req)
    vr, vc = req.dst.valid
    body: list = []
    saturating = True
    for i, (step, sat) in enumerate(steps):
        if i:
            body.append(PipeBarrier("V"))
        if sat != saturating:
            body.append(SetSaturation(sat))
            saturating = sat
        body += modes.emit(strategy, step, vr, vc)
    if not saturating:
        body.append(SetSaturation(True))
    buffers = allocate("a2a3", list(req.tiles), scratch)
    why = mode_note("unary", req, mode_epr(steps), strategy)
    notes = (why, *mode_notes("a2a3", req.dtype.name, req.dst.dtype.name, req.param("round_mode"),
                              req.param("saturation")))
    return Plan("a2a3", req.op, strategy, req, buffers, tuple(body), notes)
