"""A2/A3 unary, binary and binary-scalar groups in closed form: formula-model features over arrays of shapes.

For every emission mode of lower/a2a3/modes.py this module counts what `plan_features`
(models/a2a3_intrinsic.py) would count on the plan of each row — per step a head and a tail of its intrinsic class,
the repeats its calls walk (counter mode: ceil(count / lanes)), binary-ALU calls under a counter or partial mask
(`count_floor`), mask and mode writes; a PIPE_V barrier between steps — and prices them in the order the plan path
adds them, so the cycles are the same floats. The default mode and each mode's legality (costmodel.md §6, as
lower/a2a3/elementwise.py decides them per request) are numpy masks.

Read from the lowering code on the group's representative request (one source of truth): the lowering row and its
named alternatives, their mode-rule EPR (`elementwise.epr_of`), the built steps (intrinsic, compute dtype, EPR,
`as=` lane ratio, operand buffers and row strides), the buffers the allocator places, the arch constants. What this
module restates are the per-mode counts and decision rules over arrays; tests/test_sweep_vector.py compares them
with the plan path under hypothesis.

Not covered (None: the sweep lowers each request): scalar-loop rows, `@hook` sequences, unknown modes or steps.
Rows marked for the fallback: requests `make_request` may reject, buffers beyond the UB, valid columns that are not
a whole number of `as=` lanes, and rows where a legal mode would issue nothing for a step.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..arch import constants
from ..errors import PtoCostError
from ..isa_a2a3 import FULL_MASK, Addr, continuous_mask
from ..lower.a2a3 import elementwise, modes, sequence
from ..lower.a2a3.steps import LoopStep, build_one, lane_ratio
from ..lower.a2a3.table import LoweringRow, alternatives, lowering_row
from ..models.a2a3_intrinsic import BINARY_ALU, IntrinsicModel, cost_class, feature_key, param_value
from ..models.params import shipped
from ..request import Request
from . import Block, Shapes, request_ok, ub_need

_A = constants("a2a3")
MAX_REPEAT = modes.MAX_REPEAT
MAX_STRIDE = modes.MAX_STRIDE
SMALL_RPT = elementwise.SMALL_RPT
COUNT_BITS = _A.repeat_bytes * 8  # a counter-mode call walks ceil(count / (COUNT_BITS // bits)) repeats
FULL_LANES = next(k for k in range(1, 1024) if continuous_mask(k) == FULL_MASK)  # a mask this wide is the full mask
MODES = modes.MODES


@dataclass(frozen=True)
class StepForm:
    """One vector step of a lowering row, as the closed forms need it."""

    cls: str                    # parameter class of the intrinsic
    dtype: str                  # compute dtype of the call (after an `as=` view)
    epr: int                    # elements per repeat of the step
    lanes: int                  # elements per walked repeat in counter mode
    alu: bool                   # a binary ALU intrinsic (pays count_floor under a counter or partial mask)
    ratio: Fraction             # step lanes per element of the region (`as=` views)
    block: int                  # > 0: writes the 32-byte block scratch, issuing `block` elements once
    row_bits: tuple[int, ...]   # per operand stream: bits per element of its buffer (row bytes = cols*bits/8) ...
    row_const: tuple[int, ...]  # ... or, where row_bits is 0, a constant row size in bytes


@dataclass(frozen=True)
class RowForm:
    """A lowering row (base or named alternative) of the group."""

    rule: str
    epr: int                             # EPR of the mode rules (elementwise.epr_of)
    steps: tuple[StepForm, ...]
    buffers: tuple[tuple[int, int], ...]  # allocated buffers for ub_need
    lane_den: int                        # valid cols must be a multiple of this (`as=` views)
    startup: float                       # head and tail terms (one segment per step), summed as the plan path does
    rep_keys: tuple[tuple[float, tuple[int, ...]], ...]  # (per_repeat parameter, steps sharing the key), in order
    p_floor: float
    p_mode: float
    p_mask: float
    p_barrier: float


def _step_form(rep: Request, spec, streams, bufs, blocks) -> StepForm | None:
    step = build_one(spec, streams, rep.param("scalar"))
    if isinstance(step, LoopStep) or isinstance(step.scalar, Addr):
        return None
    by_name = {b.name: b for b in bufs}
    row_bits, row_const = [], []
    for s in step.streams:
        tile = by_name[s.buf].tile
        if s.buf in blocks:
            row_bits.append(0)
            row_const.append(s.row_bytes)
        elif tile.cols == rep.dst.cols and s.row_bytes == tile.cols * tile.dtype.bits // 8 and not s.broadcast:
            row_bits.append(tile.dtype.bits)
            row_const.append(0)
        else:
            return None
    bits = max(step.dtype.bits, step.dst_dtype.bits if step.dst_dtype else 0)
    cls = cost_class(step.intrinsic)
    block = _A.block_bytes // step.dst.esize if step.dst.buf in blocks else 0
    return StepForm(cls, step.dtype.name, step.epr, COUNT_BITS // bits, cls in BINARY_ALU, lane_ratio(spec, streams),
                    block, tuple(row_bits), tuple(row_const))


def _row_form(rep: Request, row: LoweringRow, table) -> RowForm | None:
    if row.rule == "scalar_loop" or row.hook:
        return None
    specs, bufs, streams = sequence.check(rep, row)
    blocks = {name for name, spec in row.scratch if spec == sequence.BLOCK_SCRATCH}
    steps = []
    for sp in specs:
        st = _step_form(rep, sp, streams, bufs, blocks)
        if st is None:
            return None
        steps.append(st)
    buffers, seen = [], set()
    for b in bufs:
        if b.offset in seen:  # in place: src shares dst's buffer
            continue
        seen.add(b.offset)
        if b.name in blocks:
            buffers.append((0, b.nbytes))
        elif b.tile.shape == rep.dst.shape:
            buffers.append((b.tile.dtype.bits, 0))
        else:
            return None
    rep_shapes = Shapes(*(np.array([v]) for v in (rep.dst.rows, rep.dst.cols, rep.dst.valid_rows, rep.dst.valid_cols)))
    end = max(b.offset + -(-b.nbytes // _A.ub_align_bytes) * _A.ub_align_bytes for b in bufs)
    if int(ub_need(buffers, rep_shapes, _A.ub_align_bytes)[0]) != end:  # the placement is not the one assumed
        return None
    # parameters, in the order plan_features first meets each key: per step its head, then its tail at the barrier
    startup_keys: dict[str, int] = {}
    rep_keys: dict[str, list[int]] = {}
    for i, st in enumerate(steps):
        for kind in ("head", "tail"):
            key = feature_key(kind, st.cls, st.dtype)
            startup_keys[key] = startup_keys.get(key, 0) + 1
        rep_keys.setdefault(feature_key("rep", st.cls, st.dtype), []).append(i)
    price = (lambda key: param_value(table, key)) if table is not None else (lambda key: 0.0)
    startup = 0.0
    for key, count in startup_keys.items():
        startup += float(count) * price(key)
    den = math.lcm(*(st.ratio.denominator for st in steps)) if steps else 1
    return RowForm(row.rule, elementwise.epr_of(rep, row), tuple(steps), tuple(buffers), den, startup,
                   tuple((price(k), tuple(v)) for k, v in rep_keys.items()),
                   price("count_floor"), price("set_mode"), price("set_mask"), price("barrier"))


# ---------------------------------------------------------------------------------------------------------------
# mode decision and legality over arrays (elementwise.default_mode / legal_modes)

def default_modes(rule: str, sh: Shapes, static_valid: bool, epr: int) -> np.ndarray:
    """Index into MODES of the mode the implementation picks, per row (tiles of one shape)."""
    R, C, vr, vc = sh
    code = {m: i for i, m in enumerate(MODES)}
    if rule == "rows_count":
        return np.full(len(R), code["2LCount"])
    ncr = C // epr
    out = np.where((ncr > 1) & (R * ncr < SMALL_RPT), code["2LCount"],
                   np.where(R < ncr + 1, np.where(vc % epr != 0, code["2LCount"], code["2LNormColVLAlign"]),
                            code["2LNormRowRpt"]))
    if rule in ("binary", "unary"):
        runtime = (vc == C) | (vr <= 1)
        non_vl = (vc > epr) & (vc % epr != 0) & (rule == "binary")
        one = np.where(non_vl | (-(-(vr * vc) // epr) > MAX_REPEAT), code["1LCount"], code["1LNorm"])
        out = np.where(runtime, one, out)
    static = ((vc == C) & static_valid) | (R == 1)
    non_vl = (C % epr != 0) & (C > epr) & (rule != "unary")
    one = np.where(non_vl | (-(-(R * C) // epr) > MAX_REPEAT), code["1LCount"], code["1LNorm"])
    out = np.where(static, one, out)
    if rule == "binary":
        out = np.where((R <= MAX_REPEAT) & (C < epr), code["1LNormSmall"], out)
    return out


def legal_modes(rule: str, sh: Shapes, epr: int, tile_bits: tuple[int, ...]) -> dict[str, np.ndarray]:
    """Per mode, the rows where it is legal."""
    R, C, vr, vc = sh
    contiguous = (vc == C) | (vr <= 1)
    yes = np.ones(len(R), dtype=bool)
    out = {"1LCount": contiguous, "1LNorm": contiguous, "2LCount": yes, "2LNormColVLAlign": vc % epr == 0,
           "2LNormRowRpt": yes}
    if rule == "binary":
        small = vc <= epr
        for bits in tile_bits:
            small = small & (C * bits // 256 <= MAX_STRIDE)
        out["1LNormSmall"] = small
    return out


# ---------------------------------------------------------------------------------------------------------------
# per-step counts of one mode (modes.py emitters, as plan_features counts them)

def _ceil(a, b):
    return -(-a // b)


def step_counts(mode: str, st: StepForm, vr: np.ndarray, w: np.ndarray, cols: np.ndarray):
    """Return (issues a call, walked repeats, count_floor calls, mode writes, mask writes) of one step over a vr x w
    region (w: valid cols in the step's lanes); arrays or scalars broadcasting against vr."""
    if st.block:  # the block scratch: one counter-mode call of `block` elements, whatever the mode
        return True, _ceil(st.block, st.lanes), int(st.alu), 2, 2
    alu = int(st.alu)
    if mode == "1LCount":
        return True, _ceil(vr * w, st.lanes), alu, 2, 2
    if mode == "2LCount":
        return True, vr * _ceil(w, st.lanes), alu * vr, 2, 2
    if mode == "1LNorm":
        full, rem = np.divmod(vr * w, st.epr)
        part = rem > 0
        return True, full + part, alu * (part & (rem < FULL_LANES)), 0, 2 * part
    if mode == "2LNormColVLAlign":
        q = w // st.epr
        return q > 0, vr * q, 0, 0, 0
    if mode == "2LNormRowRpt":
        n_full, tail = np.divmod(w, st.epr)
        stride_ok = True
        for bits, const in zip(st.row_bits, st.row_const):
            row_bytes = cols * bits // 8 if bits else const
            stride_ok = stride_ok & (row_bytes // _A.block_bytes <= MAX_STRIDE)
        has_tail = tail > 0
        tail_calls = np.where(stride_ok, _ceil(vr, MAX_REPEAT), vr)
        return True, vr * n_full + vr * has_tail, alu * (has_tail & (tail < FULL_LANES)) * tail_calls, 0, 2 * has_tail
    if mode == "1LNormSmall":
        return True, vr, alu * (w < FULL_LANES) * _ceil(vr, MAX_REPEAT), 0, 2
    raise ValueError(mode)


def row_cycles(form: RowForm, mode: str, sh: Shapes) -> tuple[np.ndarray, np.ndarray]:
    """Return (cycles, every step issues a call) of a lowering row issued in one mode, per row of `sh`."""
    n = len(sh.vr)
    reps, floor, n_mode, n_mask = [], 0, 0, 0
    issues = np.ones(n, dtype=bool)
    for st in form.steps:
        w = sh.vc * st.ratio.numerator // st.ratio.denominator
        has, r, f, m, k = step_counts(mode, st, sh.vr, w, sh.cols)
        issues &= has
        reps.append(r)
        floor, n_mode, n_mask = floor + f, n_mode + m, n_mask + k
    repeats = 0.0
    for p, idx in form.rep_keys:
        count = 0
        for i in idx:
            count = count + reps[i]
        repeats = repeats + np.asarray(count, dtype=np.float64) * p
    mask_mode = 0.0 + np.asarray(n_mode, dtype=np.float64) * form.p_mode + np.asarray(n_mask, dtype=np.float64) * form.p_mask
    barrier = float(len(form.steps) - 1) * form.p_barrier
    total = 0 + form.startup + repeats + np.asarray(floor, dtype=np.float64) * form.p_floor + mask_mode + barrier
    return np.broadcast_to(total, (n,)), issues


# ---------------------------------------------------------------------------------------------------------------

def group_block(rep: Request, make, shapes: Shapes, models) -> Block | None:
    """The Block of an A2/A3 elementwise group (None: no closed form for it)."""
    try:
        m = models.get("a2a3")
    except PtoCostError as exc:  # e.g. no such model on a2a3: every request that lowers gets this note
        m, note = None, str(exc)
    else:
        if not isinstance(m, IntrinsicModel):
            return None
        note = ""
    table = (m.table or shipped()) if m is not None else None
    try:
        default_name, strat_table = elementwise.strategies(rep)
        base = lowering_row(rep)
        alts = alternatives(rep)
        base_form = _row_form(rep, base, table)
        if base_form is None:
            return None
        alt_forms = {}
        for name, row in alts.items():
            if strat_table.get(name) is not None:  # illegal for the representative: illegal for every shape
                alt_forms[name] = None
                continue
            form = _row_form(rep, row, table)
            if form is None:
                return None
            alt_forms[name] = form
    except (PtoCostError, KeyError):
        return None
    names = tuple(strat_table)
    base_modes = tuple(n for n in names if n not in alts)
    if any(n not in MODES for n in base_modes):
        return None
    n = len(shapes.rows)
    sv = rep.dst.static_valid
    tile_bits = tuple(t.dtype.bits for _, t in rep.tiles)
    ok = request_ok(rep, shapes)
    ok &= ub_need(list(base_form.buffers), shapes, _A.ub_align_bytes) <= _A.ub_bytes
    ok &= shapes.vc % base_form.lane_den == 0
    if note:
        return Block((), np.empty((n, 0)), np.empty((n, 0), dtype=bool), np.zeros(n, dtype=np.int64), (), ~ok, note)
    # evaluate only the covered rows
    idx = np.flatnonzero(ok)
    sh = shapes.take(idx)
    cycles = np.full((n, len(names)), np.nan)
    legal = np.zeros((n, len(names)), dtype=bool)
    issues = np.ones(len(idx), dtype=bool)
    legal_base = legal_modes(base_form.rule, sh, base_form.epr, tile_bits)
    for j, name in enumerate(names):
        if name in base_modes:
            lg = legal_base[name]
            cyc, iss = row_cycles(base_form, name, sh)
        else:
            form = alt_forms[name]
            if form is None:
                continue
            lg = (ub_need(list(form.buffers), sh, _A.ub_align_bytes) <= _A.ub_bytes) & (sh.vc % form.lane_den == 0)
            mode = default_modes(form.rule, sh, sv, form.epr)
            cyc = np.empty(len(idx))
            iss = np.ones(len(idx), dtype=bool)
            for code in np.unique(mode).tolist():
                sel = np.flatnonzero(mode == code)
                c, i = row_cycles(form, MODES[code], sh.take(sel))
                cyc[sel] = c
                iss[sel] = i
        legal[idx, j] = lg
        cycles[idx, j] = np.where(lg, cyc, np.nan)
        issues &= ~lg | iss
    code = {m: names.index(m) for m in base_modes}
    dmode = default_modes(base_form.rule, sh, sv, base_form.epr)
    default = np.zeros(n, dtype=np.int64)
    default[idx] = np.array([code.get(m, -1) for m in MODES])[dmode]
    fallback = ~ok
    fallback[idx] |= ~issues | (default[idx] < 0) | ~legal[idx, np.maximum(default[idx], 0)]
    return Block(names, cycles, legal, default, (m.name,) * len(names), fallback)

