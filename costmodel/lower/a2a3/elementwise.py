"""A2/A3 lowering of elementwise families (tile-scalar, tile-tile, unary): mode choice per costmodel.md §6.

A request's base row (data/a2a3_lowering.csv) gives the emission modes it can be issued in, or the scalar loop;
named alternative rows add strategies of their own (e.g. integer TDIVS `ViaFloat`). Every step of a sequence is
issued over the valid region in the chosen mode, with a PIPE_V barrier between steps.
"""
from __future__ import annotations

import math
from dataclasses import replace

from ...arch import constants
from ...dtypes import dtype as as_dtype
from ...errors import ParamError, StrategyError
from ...isa_a2a3 import Addr, PipeBarrier, ScalarLoop, VecOp
from ...plan import Buffer, Plan
from ...request import Request
from ...tiles import Tile
from ..alloc import allocate
from . import modes
from .modes import Stream
from .steps import LoopStep, StepSpec, build_one, scaled_cols
from .table import LoweringRow, alternatives, lowering_row

_A = constants("a2a3")
SMALL_RPT = _A.small_repeat_threshold


def epr_of(req: Request, row: LoweringRow) -> int:
    """Elements per repeat of the op's first step (256 B over the widest type it touches)."""
    widest = max([t.dtype.bits for _, t in req.tiles] + [_scratch_dtype(req, d).bits for _, d in row.scratch])
    return _A.repeat_bytes * 8 // widest


BLOCK_SCRATCH = "block"  # scratch spec: one 32-byte block of dst's type, read with block and repeat stride 0


def _scratch_dtype(req: Request, spec: str):
    return req.dst.dtype if spec in ("dst", BLOCK_SCRATCH) else as_dtype(spec)


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
    vr, vc = req.dst.valid_rows, req.dst.valid_cols
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


def _in_place(req: Request) -> bool:
    return str(req.param("in_place", "")).strip().lower() in ("1", "true", "yes")


def _alias_safe(specs: tuple[StepSpec, ...]) -> bool:
    """Whether dst may alias src: no step reads src after an earlier step has written dst."""
    written = False
    for sp in specs:
        if written and "src" in sp.srcs:
            return False
        written = written or sp.dst == "dst"
    return True


def _scratch_tiles(req: Request, row: LoweringRow) -> list[tuple[str, Tile]]:
    d = req.dst
    out = []
    for name, spec in row.scratch:
        dt = _scratch_dtype(req, spec)
        if spec == BLOCK_SCRATCH:
            epb = _A.block_bytes * 8 // dt.bits
            out.append((name, Tile(1, epb, dt, 1, epb)))
        else:
            out.append((name, Tile(d.rows, d.cols, dt, d.valid_rows, d.valid_cols)))
    return out


def _pin_blocks(calls: list, blocks: set[str]) -> list:
    """Read block scratch with block and repeat stride 0: every lane of every repeat sees the same 32 bytes."""
    out = []
    for c in calls:
        if isinstance(c, VecOp) and any(a.buf in blocks for a in c.srcs):
            c = replace(c, srcs=tuple(Addr(a.buf, 0, 0, 0) if a.buf in blocks else a for a in c.srcs))
        out.append(c)
    return out


def _buffers(req: Request, row: LoweringRow) -> tuple[Buffer, ...]:
    """Allocate the request tiles and the row's scratch; in place, `src` shares dst's address."""
    tiles = list(req.tiles)
    if not _in_place(req):
        return allocate("a2a3", tiles, _scratch_tiles(req, row))
    bufs = allocate("a2a3", [t for t in tiles if t[0] != "src"], _scratch_tiles(req, row))
    dst = bufs[0]
    return (dst, Buffer("src", req.tile("src"), dst.offset), *bufs[1:])


def _check(req: Request, row: LoweringRow) -> tuple[StepSpec, ...]:
    """Return the row's specs after checking in-place legality and that every step covers whole lanes."""
    specs = row.specs(req)
    if _in_place(req):
        names = [n for n, _ in req.tiles]
        if "src" not in names:
            raise ParamError(f"{req.op} has no in-place form: it has no single source to overwrite")
        if not _alias_safe(specs):
            raise ParamError(f"{req.op} on {req.dtype} has no in-place form on a2a3: its sequence writes dst before it "
                             f"has finished reading src")
    streams = _streams(_buffers(req, row))
    for sp in specs:
        scaled_cols(sp, streams, req.dst.valid_cols)
    return specs


def _fits(req: Request, row: LoweringRow) -> str | None:
    try:
        _buffers(req, row)
    except Exception as exc:  # ShapeError from allocate: the scratch does not fit the UB
        return str(exc)
    return None


def strategies(req: Request) -> tuple[str, dict[str, str | None]]:
    """Return (default strategy, {strategy: None or reason it is illegal})."""
    row = lowering_row(req)
    _check(req, row)
    if row.rule == "scalar_loop":
        default, table = SCALAR_LOOP, {SCALAR_LOOP: None}
    else:
        epr = epr_of(req, row)
        default, table = default_mode(row.rule, req, epr), legal_modes(row.rule, req, epr)
    for name, alt in alternatives(req).items():
        try:
            _check(req, alt)
            table[name] = _fits(req, alt)
        except (ParamError, StrategyError, ValueError) as exc:
            table[name] = str(exc)
    return default, table


def _streams(buffers: tuple[Buffer, ...]) -> dict[str, Stream]:
    return {b.name: Stream(b.name, b.tile.dtype, b.tile.cols * b.tile.dtype.bits // 8) for b in buffers}


def _loop(step: LoopStep, vr: int, vc: int) -> ScalarLoop:
    ops = (step.dst, *step.srcs)
    return ScalarLoop(step.kernel, step.dtype.name, Addr(step.dst.buf), tuple(Addr(s.buf) for s in step.srcs), vr, vc,
                      tuple(s.row_bytes for s in ops), step.scalar, step.reverse)


def lower(req: Request, strategy: str) -> Plan:
    """Return the plan of an elementwise request in the given (legal) strategy."""
    named = alternatives(req)
    row = named[strategy] if strategy in named else lowering_row(req)
    specs = _check(req, row)
    mode = default_mode(row.rule, req, epr_of(req, row)) if strategy in named else strategy
    buffers = _buffers(req, row)
    streams = _streams(buffers)
    vr, vc = req.dst.valid_rows, req.dst.valid_cols
    blocks = {name for name, spec in row.scratch if spec == BLOCK_SCRATCH}
    body: list = []
    first_vec = None
    for i, sp in enumerate(specs):
        if i:
            body.append(PipeBarrier("V"))
        step = build_one(sp, streams, req.param("scalar"))
        if isinstance(step, LoopStep):
            body.append(_loop(step, vr, vc))
        elif step.dst.buf in blocks:
            body += modes.one_level_count(step, _A.block_bytes // step.dst.esize)
        else:
            first_vec = first_vec or step
            body += _pin_blocks(modes.emit(mode, step, vr, scaled_cols(sp, streams, vc)), blocks)
    notes = []
    if strategy in named:
        notes.append(f"{strategy}: the sequence of data/a2a3_lowering.csv ({row.source}) issued in mode {mode}")
    if mode == "2LNormRowRpt" and first_vec and not modes.row_repeat_fits(first_vec, vr):
        notes.append("row-repeat fallback: more than 255 rows or a row stride above 255 blocks")
    return Plan("a2a3", req.op, strategy, req, buffers, tuple(body), tuple(notes))
