"""A2/A3 lowering of elementwise families (tile-scalar, tile-tile, unary): mode choice per costmodel.md §6.

A request's base row (data/a2a3_lowering.csv) gives the emission modes it can be issued in, or the scalar loop;
named alternative rows add strategies of their own (e.g. integer TDIVS `ViaFloat`). Every step of a sequence is
issued over the valid region in the chosen mode, with a PIPE_V barrier between steps.
"""
from __future__ import annotations

import math

from ...arch import constants
from ...errors import PtoCostError
from ...plan import Plan
from ...request import Request
from ...tiles import Tile
from . import sequence
from .sequence import scratch_dtype
from .table import LoweringRow, alternatives, lowering_row

_A = constants("a2a3")
SMALL_RPT = _A.small_repeat_threshold


def epr_of(req: Request, row: LoweringRow) -> int:
    """Return the elements per repeat the mode rules use: 256 B over the widest type of the tiles and scratch."""
    widest = max([t.dtype.bits for _, t in req.tiles] + [scratch_dtype(req, d).bits for _, d in row.scratch])
    return _A.repeat_bytes * 8 // widest


def _static_contiguous(t: Tile) -> bool:
    return (t.static_valid and t.valid_cols == t.cols) or t.rows == 1


def _runtime_contiguous(t: Tile) -> bool:
    return t.valid_cols == t.cols or t.valid_rows <= 1


def _two_level_choice(tiles: list[Tile], vc: int, epr: int) -> str:
    """The non-contiguous (2-level) rule shared by binary-scalar, binary and unary ops."""
    if all(t.cols // epr > 1 and t.rows * (t.cols // epr) < SMALL_RPT for t in tiles):
        return "2LCount"
    if all(t.rows < t.cols // epr + 1 for t in tiles):
        return "2LCount" if vc % epr else "2LNormColVLAlign"
    return "2LNormRowRpt"


def default_mode(rule: str, req: Request, epr: int) -> str:
    """Return the mode the A2/A3 PTO implementation picks for this request (costmodel.md §6)."""
    tiles = [t for _, t in req.tiles]
    d = req.dst
    vr, vc = d.valid_rows, d.valid_cols
    same_shape = len({t.shape for t in tiles}) == 1
    if rule == "rows_count":
        return "2LCount"
    if rule == "binary":
        if d.rows <= _A.max_repeat and d.cols < epr:
            return "1LNormSmall"
        if not same_shape:
            return "2LNormRowRpt"
    if all(_static_contiguous(t) for t in tiles):
        total = math.ceil(d.rows * d.cols / epr)
        non_vl = d.cols % epr != 0 and d.cols > epr and rule != "unary"
        return "1LCount" if non_vl or total > _A.max_repeat else "1LNorm"
    if rule in ("binary", "unary") and same_shape and all(_runtime_contiguous(t) for t in tiles):
        total = math.ceil(vr * vc / epr)
        non_vl = vc > epr and vc % epr != 0 and rule == "binary"
        return "1LCount" if non_vl or total > _A.max_repeat else "1LNorm"
    return _two_level_choice(tiles, vc, epr)


def legal_modes(rule: str, req: Request, epr: int) -> dict[str, str | None]:
    """Return every mode with None if it is legal for the request, else the reason it is not."""
    tiles = [t for _, t in req.tiles]
    vc = req.dst.valid_cols
    contiguous = all(_runtime_contiguous(t) for t in tiles)
    out: dict[str, str | None] = {
        "1LCount": None if contiguous else "needs contiguous data (valid cols == cols, or one row)",
        "1LNorm": None if contiguous else "needs contiguous data (valid cols == cols, or one row)",
        "2LCount": None,
        "2LNormColVLAlign": None if vc % epr == 0 else f"needs valid cols ({vc}) to be a multiple of {epr} elements per repeat",
        "2LNormRowRpt": None,
    }
    if rule == "binary":
        small_ok = vc <= epr and all(t.cols * t.dtype.bits // 256 <= _A.max_repeat_stride for t in tiles)
        out["1LNormSmall"] = None if small_ok else f"needs valid cols ({vc}) <= {epr} elements per repeat"
    return out


SCALAR_LOOP = "ScalarLoop"


def strategies(req: Request) -> tuple[str, dict[str, str | None]]:
    """Return (default strategy, {strategy: None or reason it is illegal})."""
    row = lowering_row(req)
    sequence.check(req, row)
    if row.rule == "scalar_loop":
        default, table = SCALAR_LOOP, {SCALAR_LOOP: None}
    else:
        epr = epr_of(req, row)
        default, table = default_mode(row.rule, req, epr), legal_modes(row.rule, req, epr)
    for name, alt in alternatives(req).items():
        try:
            sequence.check(req, alt)
            table[name] = None
        except PtoCostError as exc:  # e.g. its scratch does not fit the UB beside the tiles
            table[name] = str(exc)
    return default, table


def lower(req: Request, strategy: str) -> Plan:
    """Return the plan of an elementwise request in the given (legal) strategy."""
    named = alternatives(req)
    row = named[strategy] if strategy in named else lowering_row(req)
    mode = default_mode(row.rule, req, epr_of(req, row)) if strategy in named else strategy
    buffers, body, fallback = sequence.issue(req, row, mode)
    notes = []
    if strategy in named:
        notes.append(f"{strategy}: the sequence of data/a2a3_lowering.csv ({row.source}) issued in mode {mode}")
    if fallback:
        notes.append("row-repeat fallback: more than 255 rows or a row stride above 255 blocks")
    return Plan("a2a3", req.op, strategy, req, buffers, tuple(body), tuple(notes))
