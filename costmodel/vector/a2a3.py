"""A2/A3 unary, binary, binary-scalar, conversion and mask-op (TSEL, TSELS, TCMP, TCMPS) groups in closed form: formula-model features over arrays
of shapes.

For every emission mode of lower/a2a3/modes.py this module counts what `plan_features`
(models/a2a3_intrinsic.py) would count on the plan of each row — per step a head and a tail of its intrinsic class,
the repeats its calls walk (counter mode: ceil(count / lanes)), binary-ALU calls under a counter or partial mask
(`count_floor`), mask and mode writes; a PIPE_V barrier between steps — and prices them in the order the plan path
adds them, so the cycles are the same floats. The default mode and each mode's legality (costmodel.md §6, as
lower/a2a3/elementwise.py decides them per request) are numpy masks.

Read from the lowering code on the group's representative request (one source of truth): the lowering row and its
named alternatives, their mode-rule EPR (`elementwise.epr_of`); a conversion's chain of vconv steps, its CTRL
writes and the EPRs of its mode rules (lower/a2a3/convert.py); the mask ops' steps (lower/a2a3/select.py); the built
steps (intrinsic, compute dtype, EPR, `as=` lane ratio, operand buffers and row strides), the buffers the allocator
places, the arch constants. What this module restates are the per-mode counts and decision rules over arrays (TSEL's
one-call rule among them); tests/test_sweep_vector.py compares them with the plan path under hypothesis.

Not covered (None: the sweep lowers each request): scalar-loop rows, `@hook` sequences, unknown modes or steps.
Rows marked for the fallback: requests `make_request` may reject, buffers beyond the UB, valid columns that are not
a whole number of `as=` lanes, and rows where a legal mode would issue nothing for a step.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ..arch import constants
from ..errors import PtoCostError
from ..isa_a2a3 import FULL_MASK, Addr, SetSaturation, continuous_mask
from ..lower.a2a3 import convert, elementwise, modes, select, sequence
from ..lower.a2a3.steps import LoopStep, build_one, lane_ratio
from ..lower.a2a3.table import LoweringRow, alternatives, lowering_row
from ..lower.alloc import allocate, buffers_end
from ..models.a2a3_intrinsic import (
    BINARY_ALU,
    IntrinsicModel,
    cost_class,
    feature_key,
    param_value,
    repeat_limit,
)
from ..models.params import shipped
from ..request import Request
from . import (
    MASK_BUFFER,
    Block,
    Shapes,
    cdiv,
    data_tile,
    fdiv,
    fmod,
    mask_of,
    mask_row_bits,
    nan_unless,
    narrow_all,
    placed,
    screen,
    ub_need,
)

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
    buffer_names: tuple[str, ...]
    lane_den: int                        # valid cols must be a multiple of this (`as=` views)
    startup: float                       # head and tail terms (one segment per step), summed as the plan path does
    rep_keys: tuple[tuple[float, tuple[int, ...]], ...]  # (per_repeat parameter, steps sharing the key), in order
    p_floor: float
    p_mode: float
    p_mask: float
    p_barrier: float
    ctrl: float = 0.0                    # the CTRL writes (saturation off and back on), priced
    legal_eprs: tuple[int, ...] = ()     # the EPRs whose mode rules must all hold (a conversion's steps)
    rep_limits: tuple[float | None, ...] = ()  # per rep key: the most repeats measured (`repeat_limit`), or None


def _step_form(rep: Request, step, ratio: Fraction, bufs, blocks) -> StepForm | None:
    """The StepForm of a built vector step; None for a scalar loop, a scalar read from UB, a step on the packed mask
    alone (TCMPS NE's NOT over mask words), or an operand whose rows are not the data's (the mask excepted: its rows
    only matter to binary-ALU stride checks, which neither vsel nor the compares pay)."""
    if isinstance(step, LoopStep) or isinstance(step.scalar, Addr):
        return None
    by_name = {b.name: b for b in bufs}
    cls = cost_class(step.intrinsic)
    ref, mask = data_tile(rep), mask_of(rep)
    if select.on_mask_alone(step, mask):
        return None
    row_bits, row_const = [], []
    for s in step.streams:
        tile = by_name[s.buf].tile
        if s.buf in blocks:
            row_bits.append(0)
            row_const.append(s.row_bytes)
        elif s.buf == mask and cls not in BINARY_ALU:
            row_bits.append(0)
            row_const.append(0)
        elif tile.cols == ref.cols and s.row_bytes == tile.cols * tile.dtype.bits // 8 and not s.broadcast:
            row_bits.append(tile.dtype.bits)
            row_const.append(0)
        else:
            return None
    bits = max(step.dtype.bits, step.dst_dtype.bits if step.dst_dtype else 0)
    block = _A.block_bytes // step.dst.esize if step.dst.buf in blocks else 0
    return StepForm(cls, step.dtype.name, step.epr, COUNT_BITS // bits, cls in BINARY_ALU, ratio, block,
                    tuple(row_bits), tuple(row_const))


def _row_form(rep: Request, row: LoweringRow, table) -> RowForm | None:
    if row.rule == "scalar_loop" or row.hook:
        return None
    specs, bufs, streams = sequence.check(rep, row)
    blocks = {name for name, spec in row.scratch if spec == sequence.BLOCK_SCRATCH}
    steps = [(build_one(sp, streams, rep.param("scalar")), lane_ratio(sp, streams)) for sp in specs]
    return _form(rep, row.rule, elementwise.epr_of(rep, row), steps, bufs, blocks, table)


def _convert_form(rep: Request, table) -> RowForm | None:
    """A conversion: its chain of vconv steps issued in one unary mode (lower/a2a3/convert.py), CTRL writes around
    the non-saturating steps."""
    steps, scratch = convert.chain(rep)
    bufs = allocate("a2a3", list(rep.tiles), scratch)
    eprs = sorted({st.epr for st, _ in steps})
    plan = convert.lower(rep, convert.strategies(rep)[0])  # its CTRL writes do not depend on the mode or shape
    ctrl = sum(isinstance(ins, SetSaturation) for ins in plan.body)
    return _form(rep, "unary", convert.mode_epr(steps), [(st, Fraction(1)) for st, _ in steps], bufs, set(), table,
                 ctrl=ctrl, legal_eprs=tuple(eprs))


def _select_form(rep: Request, table) -> RowForm | None:
    """The mask ops (lower/a2a3/select.py): TSEL one vsel through the packed mask; TSELS the scalar's vector_dup into
    tmp, then that vsel; TCMP/TCMPS one compare into the mask as dst (TCMPS NE's NOT over the mask words has no
    closed form)."""
    steps, bufs = select.steps(rep)
    return _form(rep, "select", steps[-1].epr, [(s, Fraction(1)) for s in steps], bufs, set(), table)


def _form(rep: Request, rule: str, epr: int, built, bufs, blocks, table, *, ctrl: int = 0,
          legal_eprs: tuple[int, ...] = ()) -> RowForm | None:
    """The RowForm of built steps [(step, `as=` lane ratio)] over the allocated buffers; None where a step or a
    buffer is not one the closed forms count."""
    steps = []
    for step, ratio in built:
        st = _step_form(rep, step, ratio, bufs, blocks)
        if st is None:
            return None
        steps.append(st)
    buffers, names = [], []
    ref, mask = data_tile(rep), mask_of(rep)
    for b in placed(bufs):  # in place: src shares dst's buffer
        names.append(b.name)
        if b.name in blocks:
            buffers.append((0, b.nbytes))
        elif b.name == mask:
            buffers.append(MASK_BUFFER)
        elif b.tile.shape == ref.shape:
            buffers.append((b.tile.dtype.bits, 0))
        else:
            return None
    rep_shapes = Shapes(*(np.array([v]) for v in (ref.rows, ref.cols, ref.valid_rows, ref.valid_cols)))
    if int(ub_need(buffers, rep_shapes, _A.ub_align_bytes)[0]) != buffers_end(bufs, _A.ub_align_bytes):  # the placement is not the one assumed
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
    return RowForm(rule, epr, tuple(steps), tuple(buffers), tuple(names), den, startup,
                   tuple((price(k), tuple(v)) for k, v in rep_keys.items()),
                   price("count_floor"), price("set_mode"), price("set_mask"), price("barrier"),
                   ctrl * price("set_ctrl") if ctrl else 0.0, legal_eprs or (epr,),
                   tuple(repeat_limit(table, k) if table is not None else None for k in rep_keys))


# ---------------------------------------------------------------------------------------------------------------
# mode decision and legality over arrays (elementwise.default_mode / legal_modes)

def _pick(cond: np.ndarray, yes, no):
    """np.where(cond, yes, no) for small non-negative codes, as int8 arithmetic (several times faster)."""
    return no + cond.view(np.int8) * (yes - no)


def default_modes(rule: str, sh: Shapes, static_valid: bool, epr: int) -> np.ndarray:
    """Index into MODES (int8) of the mode the implementation picks, per row (tiles of one shape)."""
    R, C, vr, vc = sh
    code = {m: np.int8(i) for i, m in enumerate(MODES)}
    if rule == "rows_count":
        return np.full(len(R), code["2LCount"], dtype=np.int8)
    if rule == "select":
        return _pick(_select_whole(sh), code["1LCount"], code["2LCount"])
    ncr = fdiv(C, epr)
    vc_tail = fmod(vc, epr) != 0
    two = _pick(R <= ncr, _pick(vc_tail, code["2LCount"], code["2LNormColVLAlign"]), code["2LNormRowRpt"])
    out = _pick((ncr > 1) & (R * ncr < SMALL_RPT), code["2LCount"], two)
    full_cols = vc == C
    if rule in ("binary", "unary"):
        runtime = full_cols | (vr <= 1)
        count = cdiv(vr * vc, epr) > MAX_REPEAT
        if rule == "binary":
            count |= (vc > epr) & vc_tail
        out = _pick(runtime, _pick(count, code["1LCount"], code["1LNorm"]), out)
    static = (full_cols & static_valid) | (R == 1)
    count = cdiv(R * C, epr) > MAX_REPEAT
    if rule != "unary":
        count |= (fmod(C, epr) != 0) & (C > epr)
    out = _pick(static, _pick(count, code["1LCount"], code["1LNorm"]), out)
    if rule == "binary":
        out = _pick((R <= MAX_REPEAT) & (C < epr), code["1LNormSmall"], out)
    return out


def legal_modes(rule: str, sh: Shapes, epr: int, tile_bits: tuple[int, ...]) -> dict[str, np.ndarray | bool]:
    """Per mode, the rows where it is legal (True: every row)."""
    _, C, vr, vc = sh
    if rule == "select":
        return {"1LCount": _select_whole(sh), "2LCount": True}
    contiguous = (vc == C) | (vr <= 1)
    out = {"1LCount": contiguous, "1LNorm": contiguous, "2LCount": True, "2LNormColVLAlign": fmod(vc, epr) == 0,
           "2LNormRowRpt": True}
    if rule == "binary":
        small = vc <= epr
        for bits in set(tile_bits):
            small = small & (fdiv(C * bits, 256) <= MAX_STRIDE)
        out["1LNormSmall"] = small
    return out


def _select_whole(sh: Shapes) -> np.ndarray:
    """TSEL's one-call rule (lower/a2a3/select.py): data tiles one contiguous run, mask rows of exactly vc bits."""
    _, C, vr, vc = sh
    return ((vc == C) | (vr <= 1)) & ((vr <= 1) | (mask_row_bits(C) == vc))


# ---------------------------------------------------------------------------------------------------------------
# per-step counts of one mode (modes.py emitters, as plan_features counts them)

class Derived:
    """Arrays derived from one set of shapes, computed once and shared by the modes and steps that need them."""

    def __init__(self, sh: Shapes):
        self.sh = sh
        self._memo: dict = {}

    def get(self, key, fn):
        v = self._memo.get(key)
        if v is None:
            v = self._memo[key] = fn()
        return v

    def w(self, ratio: Fraction):
        """Valid cols in the step's lanes."""
        if ratio == 1:
            return self.sh.vc
        return self.get(("w", ratio), lambda: self.sh.vc * ratio.numerator // ratio.denominator)

    def n(self, ratio: Fraction):
        """Elements of the region in the step's lanes."""
        return self.get(("n", ratio), lambda: self.sh.vr * self.w(ratio))


def step_counts(mode: str, st: StepForm, d: Derived):
    """Return (issues a call, walked repeats, count_floor calls, mode writes, mask writes) of one step over the
    valid region; arrays, or scalars when they do not depend on the shape."""
    if st.block:  # the block scratch: one counter-mode call of `block` elements, whatever the mode
        return True, cdiv(st.block, st.lanes), int(st.alu), 2, 2
    alu = int(st.alu)
    vr = d.sh.vr
    w = d.w(st.ratio)
    if mode == "1LCount":
        return True, cdiv(d.n(st.ratio), st.lanes), alu, 2, 2
    if mode == "2LCount":
        return True, vr * cdiv(w, st.lanes), (vr if alu else 0), 2, 2
    if mode == "1LNorm":
        n = d.n(st.ratio)
        rem = fmod(n, st.epr)
        part = rem > 0
        return True, fdiv(n, st.epr) + part, ((part & (rem < FULL_LANES)) if alu else 0), 0, 2 * part
    if mode == "2LNormColVLAlign":
        q = fdiv(w, st.epr)
        return q > 0, vr * q, 0, 0, 0
    if mode == "2LNormRowRpt":
        tail = fmod(w, st.epr)
        has_tail = tail > 0
        reps = vr * (fdiv(w, st.epr) + has_tail)
        if not alu:
            return True, reps, 0, 0, 2 * has_tail
        key = tuple(sorted(set(zip(st.row_bits, st.row_const))))
        stride_ok = d.get(("stride", key), lambda: _stride_ok(key, d.sh.cols))
        chunks = d.get("rpt_chunks", lambda: cdiv(vr, MAX_REPEAT))
        tail_calls = vr if stride_ok is False else chunks if stride_ok is True else vr + stride_ok * (chunks - vr)
        return True, reps, (has_tail & (tail < FULL_LANES)) * tail_calls, 0, 2 * has_tail
    if mode == "1LNormSmall":
        floor = (w < FULL_LANES) * d.get("rpt_chunks", lambda: cdiv(vr, MAX_REPEAT)) if alu else 0
        return True, vr, floor, 0, 2
    raise ValueError(mode)


def _stride_ok(streams, cols):
    """Every operand's row stride is at most MAX_STRIDE blocks (row bytes = cols * bits / 8, or constant)."""
    ok = True
    for bits, const in streams:
        row_bytes = fdiv(cols * bits, 8) if bits else const
        ok = ok & (fdiv(row_bytes, _A.block_bytes) <= MAX_STRIDE)
    return ok


def row_cycles(form: RowForm, mode: str, d: Derived, out: np.ndarray, sig: np.ndarray | None = None
               ) -> np.ndarray | bool:
    """Write the cycles of a lowering row issued in one mode into `out` (one per row), and into `sig`, if given, a
    bit per rep key walked beyond its measured extent (the model's note names those keys); return whether every step
    issues a call (per row, or True).

    The terms are added in the order IntrinsicModel.cost adds them — ((((startup + repeats) + count_floor) +
    mask_mode) + barrier), each the sum of its features' count x parameter in the order plan_features meets them
    — so the floats are the plan path's, bit for bit.
    """
    reps, floor, n_mode, n_mask = [], 0, 0, 0
    issues = True
    for st in form.steps:
        has, r, f, m, k = step_counts(mode, st, d)
        if has is not True:
            issues = issues & has
        reps.append(r)
        floor, n_mode, n_mask = floor + f, n_mode + m, n_mask + k
    repeats = None
    if sig is not None:
        sig[:] = 0
    for bit, ((p, idx), limit) in enumerate(zip(form.rep_keys, form.rep_limits or (None,) * len(form.rep_keys))):
        count = reps[idx[0]]
        for i in idx[1:]:
            count = count + reps[i]
        term = count * p  # an int array times a float: float64, exact conversion
        repeats = term if repeats is None else repeats + term
        if sig is not None and limit is not None:
            sig |= (np.asarray(count) > limit).astype(np.int8) << bit
    np.add(repeats, form.startup, out=out)  # startup + repeats (addition commutes exactly)
    for term in (floor * form.p_floor, n_mode * form.p_mode + n_mask * form.p_mask + form.ctrl,
                 (len(form.steps) - 1) * form.p_barrier):
        if isinstance(term, np.ndarray) or term != 0.0:  # x + 0.0 == x
            np.add(out, term, out=out)
    return issues


# ---------------------------------------------------------------------------------------------------------------

@dataclass
class Prepared:
    """The constants of one A2/A3 group; `evaluate` fills a Block for a chunk of its rows."""

    rep: Request
    strategies: tuple[str, ...]
    models: tuple[str, ...]
    note: str
    base: RowForm
    alts: dict[str, RowForm | None]
    chunk: int | None = None
    messages: dict = field(default_factory=dict)  # UB overflow message per tile size, shared by the chunks

    @property
    def signs(self) -> bool:
        """Whether `evaluate` writes `Block.sig`: some class a form walks has a measured extent its rows may pass."""
        return any(x is not None for f in (self.base, *self.alts.values()) if f is not None for x in f.rep_limits)

    def evaluate(self, shapes: Shapes, out: Block) -> None:
        """Write cycles, legality, default and fallback of the rows of `shapes` into `out` (views of the group's
        arrays)."""
        rep, base, names = self.rep, self.base, self.strategies
        shapes = narrow_all(shapes)
        sv = rep.dst.static_valid
        named = [(n, *b) for n, b in zip(base.buffer_names, base.buffers)]
        lanes = (lambda: fmod(shapes.vc, base.lane_den) == 0) if base.lane_den > 1 else None
        errors, idx, sh = screen("a2a3", rep, named, shapes, out, self.messages, self.note, lanes,
                                 aliased=sequence.in_place(rep))
        if sh is None:
            return errors
        whole = isinstance(idx, slice)
        m = len(sh.rows)
        d = Derived(sh)
        issues = True
        tile_bits = tuple(t.dtype.bits for _, t in rep.tiles)
        legal_base = legal_modes(base.rule, sh, base.legal_eprs[0], tile_bits)
        for e in base.legal_eprs[1:]:  # a mode illegal at any step's EPR is illegal
            legal_base = {k: v & legal_modes(base.rule, sh, e, tile_bits)[k] for k, v in legal_base.items()}
        buf = None if whole else np.empty(m)
        sig = np.zeros(m, dtype=np.int8) if out.sig is not None else None
        for j, name in enumerate(names):
            row = out.cycles[j] if whole else buf
            form = self.alts.get(name, base)
            if form is None:  # an alternative illegal for every shape
                out.cycles[j] = np.nan
                out.legal[j] = False
                continue
            if form is base:
                lg = legal_base[name]
                iss = row_cycles(base, name, d, row, sig)
            else:
                lg = ub_need(list(form.buffers), sh, _A.ub_align_bytes) <= _A.ub_bytes
                if form.lane_den > 1:
                    lg &= fmod(sh.vc, form.lane_den) == 0
                mode = default_modes(form.rule, sh, sv, form.epr)
                iss = np.ones(m, dtype=bool)
                for code in np.unique(mode).tolist():
                    sel = np.flatnonzero(mode == code)
                    part = np.empty(len(sel))
                    bits = np.zeros(len(sel), dtype=np.int8) if sig is not None else None
                    i = row_cycles(form, MODES[code], Derived(sh.take(sel)), part, bits)
                    row[sel] = part
                    iss[sel] = i
                    if sig is not None:
                        sig[sel] = bits
            if sig is not None:
                out.sig[j, idx] = sig
            if lg is not True:
                nan_unless(lg, row)
            out.legal[j, idx] = lg
            if not whole:
                out.cycles[j, idx] = row
            if iss is not True:
                issues = issues & (~lg | iss)
        code = np.array([names.index(md) if md in names and md not in self.alts else -1 for md in MODES])
        dflt = code[default_modes(base.rule, sh, sv, base.epr)]
        out.default[idx] = dflt
        bad = (dflt < 0) if issues is True else (dflt < 0) | ~issues
        for j in range(len(names)):
            bad |= (dflt == j) & ~out.legal[j, idx]
        out.fallback[idx] |= bad
        return errors


CHUNK = 32768  # rows per evaluation: the temporaries stay in cache (several times faster than whole groups)


def prepare(rep: Request, make, models) -> Prepared | None:
    """The constants of an A2/A3 elementwise group, from the lowering code on its representative request (None: no
    closed form for it)."""
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
        if rep.family == "convert":
            _, strat_table = convert.strategies(rep)
            alts, base_form = {}, _convert_form(rep, table)
        elif rep.family == "compare_select":
            if not select.lowers(rep.op):
                return None
            _, strat_table = select.strategies(rep)
            alts, base_form = {}, _select_form(rep, table)
        else:
            _, strat_table = elementwise.strategies(rep)
            alts, base_form = alternatives(rep), _row_form(rep, lowering_row(rep), table)
        if base_form is None:
            return None
        alt_forms: dict[str, RowForm | None] = {}
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
    if any(n not in MODES for n in names if n not in alts):
        return None
    if note:
        return Prepared(rep, (), (), note, base_form, {}, CHUNK)
    return Prepared(rep, names, (m.name,) * len(names), "", base_form, alt_forms, CHUNK)
