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


def _two_level_choice(tiles: list[Tile], vc: int, epr: int) -> tuple[str, str]:
    """The non-contiguous (2-level) rule shared by binary-scalar, binary and unary ops: (mode, why)."""
    ncr = ", ".join(sorted({f"{t.cols // epr}" for t in tiles}))
    if all(t.cols // epr > 1 and t.rows * (t.cols // epr) < SMALL_RPT for t in tiles):
        return "2LCount", f"ncr = Cols/EPR = {ncr} > 1 and Rows·ncr < {SMALL_RPT}"
    if all(t.rows < t.cols // epr + 1 for t in tiles):
        if vc % epr:
            return "2LCount", f"Rows < ncr + 1 (ncr = {ncr}) and valid cols {vc} leave a tail of {vc % epr}"
        return "2LNormColVLAlign", f"Rows < ncr + 1 (ncr = {ncr}) and valid cols {vc} are whole repeats"
    return "2LNormRowRpt", f"ncr = Cols/EPR = {ncr}, Rows >= ncr + 1: one call per column chunk over the rows"


def default_mode(rule: str, req: Request, epr: int) -> str:
    """Return the mode the A2/A3 PTO implementation picks for this request (costmodel.md §6)."""
    return default_choice(rule, req, epr)[0]


def default_choice(rule: str, req: Request, epr: int) -> tuple[str, str]:
    """Return (the mode the A2/A3 PTO implementation picks for this request, why: the rule of costmodel.md §6 that
    picks it, and where a dynamic valid shape costs a faster mode, the mode a static one gives)."""
    tiles = [t for _, t in req.tiles]
    d = req.dst
    vr, vc = d.valid_rows, d.valid_cols
    same_shape = len({t.shape for t in tiles}) == 1
    if rule == "rows_count":
        return "2LCount", "this sequence runs its rows in count mode"
    if rule == "binary":
        if d.rows <= _A.max_repeat and d.cols < epr:
            return "1LNormSmall", (f"Rows {d.rows} <= {_A.max_repeat} and Cols {d.cols} < EPR {epr}: the small-shape "
                                   "case")
        if not same_shape:
            return "2LNormRowRpt", "tiles of different shapes go straight to RowRpt"
    if all(_static_contiguous(t) for t in tiles):
        mode, why = _one_level(rule, d.rows * d.cols, d.cols, epr)
        return mode, f"static-continuous tiles: {why}"
    if rule in ("binary", "unary") and same_shape and all(_runtime_contiguous(t) for t in tiles):
        mode, why = _one_level(rule, vr * vc, vc, epr)
        return mode, f"contiguous at run time (valid cols == cols, or one row): {why}"
    mode, why = _two_level_choice(tiles, vc, epr)
    why = f"not static-continuous: {why}"
    if vr == d.rows and vc == d.cols and not d.static_valid:
        static = _one_level(rule, d.rows * d.cols, d.cols, epr)[0]
        if static != mode:
            why += (f"; the valid region is the whole tile but declared dynamic: with a static valid shape the kernel "
                    f"emits {static}")
    return mode, why


def _one_level(rule: str, n: int, width: int, epr: int) -> tuple[str, str]:
    """The count/norm choice over one contiguous run of n elements, `width` a row (unary ops skip the non-VL test)."""
    total = math.ceil(n / epr)
    non_vl = width % epr != 0 and width > epr and rule != "unary"
    if total > _A.max_repeat:
        return "1LCount", f"{total} repeats > {_A.max_repeat}"
    if non_vl:
        return "1LCount", f"a row of {width} is not whole repeats of {epr}"
    whole = f", rows of whole repeats of {epr}" if width > epr and rule != "unary" else ""
    return "1LNorm", f"{total} repeats <= {_A.max_repeat}{whole}"


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


def mode_note(rule: str, req: Request, epr: int, strategy: str) -> str:
    """Return the note on why the §6 rule `rule` picks the request's default mode, and that `strategy` was forced if
    it is not that mode."""
    default, why = default_choice(rule, req, epr)
    why = f"{default} by costmodel.md §6: {why}"
    return why if strategy == default else f"{strategy} as asked; the default would be {why}"


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
    if strategy not in named and row.rule != "scalar_loop":  # why the default (costmodel.md §6), as A5 plans say
        notes.append(mode_note(row.rule, req, epr_of(req, row), strategy))
    if strategy in named:
        notes.append(f"{strategy}: the sequence of data/a2a3_lowering.csv ({row.source}) issued in mode {mode}")
    if fallback:
        notes.append("row-repeat fallback: more than 255 rows or a row stride above 255 blocks")
    return Plan("a2a3", req.op, strategy, req, buffers, tuple(body), tuple(notes))
