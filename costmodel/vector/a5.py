"""A5 unary, binary, binary-scalar, conversion and TSEL groups in closed form: VF trip counts per loop form over
arrays of shapes.

An elementwise VF program (lower/a5/vf.py, forms.py; costmodel.md §7) executes, for valid region vr x vc and EPR
elements per register,

* 1D forms: C = ceil(vr·vc / EPR) chunks in one loop, R = 1;
* 2D forms: R = vr rows of ceil(vc / EPR) chunks, C = R·ceil(vc / EPR) (post-update: floor(vc / EPR) full
  chunks plus one tail chunk per row).

A conversion walks the same loops over its own EPR (costmodel.md §3 step 3: the source's elements per vector, with
overrides per type pair and 1D/2D form), which the lowering of the representative request gives per form.
TSEL walks the binary loops plus its mask of one bit per element, whose rows are padded to 32 bytes: a 1D form
needs those rows to hold exactly cols bits (cols a multiple of 256), the mask's pointer has its own row-end
adjustment in 2D post-update, and a 32-bit TSEL in 1D is priced by the formula of its even or odd program by the
parity of its trip count (costmodel.md §3 step 6).
A 1D form needs the valid region to be one contiguous run (vc == cols or a single valid row); the default form is
the dispatch table's answer for a static-contiguous or a strided request (data/a5_dispatch.csv). Both answers,
the legality of each form in both cases, the EPR and the lowered programs come from the lowering code run on
representative requests of the group.

Pricing per form: the A5 formula model (`a5_formula.cycles`, already vectorised) where the parameter table has
the key; otherwise (model `auto` or `pipeline`) the pipeline model's `cycles_for` on the program of a
representative row with the same loop structure (2D post-update programs differ in whether they have a full-chunk
loop and a tail chunk). The anchored model (`auto`'s second choice) adds, per
anchor, the anchor's formula minus its own `cycles_for`, each anchor's program built on the row's tiles.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..arch import constants
from ..errors import PtoCostError
from ..isa_a5 import VfProgram
from ..lower import lower as lower_request
from ..lower.a5 import dispatch, vf
from ..lower.a5.dispatch import SELECT_VARIANTS
from ..lower.a5.reduce import REDUCE_FAMILIES
from ..lower.alloc import buffers_end
from ..models.a5_anchored import AnchoredPipeline, anchor_plans, anchor_request, anchor_rows, rows_that_fit
from ..models.a5_features import body_signature, chunk_work, contains_work
from ..models.a5_formula import (A5FormulaModel, beyond_extent, extent_limits, key_of, lookup, measured_source,
                                 price_limits)
from ..models.a5_formula import cycles as formula_cycles
from ..models.a5_pipeline import PipelineModel
from ..models.auto import FormulaThenPipeline
from ..models.params import shipped
from ..request import Request
from . import (
    MASK_BUFFER,
    Block,
    Shapes,
    cdiv,
    fdiv,
    mask_row_bits,
    nan_unless,
    narrow_all,
    placed,
    screen,
    ub_need,
)

_A = constants("a5")
MAX_TRIP = _A.max_trip_count
SHAPE_ROLES = ("rows", "chunks", "elements")


def model_parts(m) -> tuple[A5FormulaModel | None, PipelineModel | None, AnchoredPipeline | None] | None:
    """(formula, pipeline, anchored) parts of an A5 model; None for a model the closed forms do not know."""
    if isinstance(m, FormulaThenPipeline):
        first, second = model_parts(m.formula), model_parts(m.pipeline)
        return None if first is None or second is None else (first[0], second[1], second[2])
    if isinstance(m, A5FormulaModel):
        return m, None, None
    if isinstance(m, PipelineModel):
        return None, m, None
    if isinstance(m, AnchoredPipeline):
        return None, m.pipeline, m
    return None


def trips(strategy: str, epr: int, sh: Shapes) -> dict[str, np.ndarray]:
    """Trip counts per loop role of the elementwise program in `strategy` (forms.py)."""
    if strategy.startswith("1d"):
        return {"elements": cdiv(sh.vr * sh.vc, epr)}
    chunks = fdiv(sh.vc, epr) if strategy == "2d-post-update" else cdiv(sh.vc, epr)
    return {"rows": sh.vr, "chunks": chunks}


def formula(p: dict, d: dict, strategy: str, epr: int, sh: Shapes, cache: dict | None = None) -> np.ndarray:
    """A5 formula cycles per row: `a5_formula.cycles` of the program's chunks C and rows R (models/a5_features.py:
    1D C = ceil(vr·vc / EPR), R = 1; 2D R = vr, C = R·ceil(vc / EPR); post-update rows of one full chunk and a tail
    are flat).

    Rows share few (C, R) values, so the formula is evaluated once per value and gathered: a 1D program's on a dense
    grid of chunk counts, a 2D program's on the (rows, chunks a row, flat) cells the rows use, filled in as chunks of
    a group meet them (a table kept in `cache` across chunks, remade when a chunk needs a larger one). Every value
    takes the same float operations either way.
    """
    dim = strategy[:2]
    if not len(sh.vr):
        return np.zeros(0)
    cache = {} if cache is None else cache
    if dim == "1d":
        C = cdiv(sh.vr * sh.vc, epr)
        top = int(C.max()) + 1
        hit = cache.get(strategy)
        if hit is None or hit[0] < top:
            if top > 4 * len(C) + 4096:  # too sparse for a table
                return formula_cycles(p, d, C, np.ones_like(C), dim)[0]
            grid = np.arange(top)
            hit = cache[strategy] = (top, formula_cycles(p, d, grid, np.ones(top, dtype=np.int64), dim)[0])
        return hit[1][C]
    R, per_row = sh.vr, cdiv(sh.vc, epr)
    # a post-update row of one full chunk and a tail runs its chunk loop once (a5_features.VfTrips.flat)
    flat = (fdiv(sh.vc, epr) <= 1) if strategy == "2d-post-update" else np.zeros(len(R), dtype=bool)
    rtop, itop = int(R.max()) + 1, int(per_row.max()) + 1
    hit = cache.get(strategy)
    if hit is None or hit[0] < rtop or hit[1] < itop:
        rtop, itop = max(rtop, hit[0] if hit else 0), max(itop, hit[1] if hit else 0)
        if rtop * itop > min(16 * len(R) + 65536, 1 << 21):  # a table too large to allocate for these rows
            return formula_cycles(p, d, R * per_row, R, dim, flat)[0]
        hit = cache[strategy] = (rtop, itop, np.full(rtop * itop * 2, np.nan))
    table = hit[2]
    at = (R * hit[1] + per_row) * 2 + flat  # below 2**31: the table is allocated
    used = np.zeros(len(table), dtype=bool)
    used[at] = True
    cells = np.flatnonzero(used & np.isnan(table))
    if len(cells):
        cell, ff = np.divmod(cells, 2)
        rr, ii = np.divmod(cell, hit[1])
        table[cells] = formula_cycles(p, d, rr * ii, rr, dim, ff.astype(bool))[0]
    return table[at]


def structure(strategy: str, epr: int, sh: Shapes) -> np.ndarray:
    """A code per row that is equal for rows whose programs differ only in trip counts (2D post-update: whether a
    row has a full-chunk loop and a tail chunk; every row ends with its pointer adjustments)."""
    if strategy != "2d-post-update":
        return np.zeros(len(sh.vr), dtype=np.int64)
    full, tail = np.divmod(sh.vc, epr)
    return (full > 0) + 2 * (tail > 0)


def _roles(prog: VfProgram) -> dict[str, int]:
    return {lp.role: lp.trip for lp in prog.loops() if lp.role in SHAPE_ROLES}


def _pipeline(pipe: PipelineModel, make, strategy: str, epr: int, sh: Shapes) -> tuple[np.ndarray, np.ndarray]:
    """(cycles, covered) of every row by `cycles_for` on one program per loop structure."""
    out = np.full(len(sh.vr), np.nan)
    covered = np.zeros(len(sh.vr), dtype=bool)
    code = structure(strategy, epr, sh)
    t = trips(strategy, epr, sh)
    for c in np.unique(code).tolist():
        sel = np.flatnonzero(code == c)
        first = int(sel[0])
        try:
            plan = lower_request(make(*(int(a[first]) for a in sh)), strategy)
        except PtoCostError:  # e.g. a tile width the dtype cannot have: the per-request path says so per row
            continue
        progs = [p for p in plan.body if isinstance(p, VfProgram)]
        if len(progs) != 1 or plan.strategy != strategy:
            continue
        roles = _roles(progs[0])
        if any(int(t[r][first]) != n for r, n in roles.items()):  # the trips assumed are not the program's
            continue
        if "chunks" in roles:
            inner, outer = t["chunks"][sel], t["rows"][sel]
        elif roles:
            (role,) = roles
            inner, outer = t[role][sel], None
        else:
            continue
        out[sel] = pipe.cycles_for(progs[0], inner=inner, outer=outer)
        covered[sel] = True
    return out, covered


@dataclass(frozen=True)
class Anchor:
    """A measured op whose formula-minus-pipeline difference corrects a pipeline-priced form (models/a5_anchored)."""

    op: str
    params: tuple                     # (P, D) of its own A5 formula key
    buffers: tuple[tuple[int, int], ...]
    epr: int                          # its own elements per chunk (a conversion's can differ, §3 step 3)
    contained: bool = False           # the op's chunk work contains the anchor's: the op is never priced below it
    corrects: bool = True             # False: a floor only (AnchoredPipeline.floors), not in the mean correction
    limits: tuple | None = None       # the extent its formula price holds within (`price_limits`), None: none


@dataclass
class Form:
    """One loop form of the group: legal for a contiguous / a strided request, EPR, how it is priced."""

    name: str
    legal_contiguous: bool
    legal_strided: bool
    epr: int = 0
    params: tuple | None = None   # (P, D) of the A5 formula, or None: the pipeline model (or not priceable)
    model: str = ""
    anchors: tuple[Anchor, ...] = ()
    parity: tuple | None = None   # (P, D) of the even and the odd 1D trip count (a 32-bit TSEL's two programs)
    extents: tuple = ()           # per formula program (as `params`, or `parity`'s two): its key's measured extent


@dataclass
class Prepared:
    """The constants of one A5 group; `evaluate` fills a Block for a chunk of its rows."""

    rep: Request
    make: object
    strategies: tuple[str, ...]
    models: tuple[str, ...]
    note: str
    forms: tuple[Form, ...]
    defaults: tuple[int, int]        # strategy index for a static-contiguous / any other request
    buffers: tuple[tuple[int, int], ...]
    static_valid: bool
    pipe: PipelineModel | None
    chunk: int | None = None
    mask: bool = False  # a TSEL mask among the tiles
    buffer_names: tuple[str, ...] = ()  # the tile each of `buffers` holds
    aliased: bool = False  # in place: a source shares dst's buffer (no "--in-place would fit" hint)
    messages: dict = field(default_factory=dict)  # UB overflow message per tile size, shared by the chunks
    tables: dict = field(default_factory=dict)  # dense formula tables per strategy, shared by the chunks

    @property
    def signs(self) -> bool:
        """Whether `evaluate` writes `Block.sig`: some form's rows may differ in note (an extent, a parity, an
        anchor priced beyond its extent)."""
        return any(f.parity is not None or any(x is not None for x in f.extents)
                   or any(a.limits is not None for a in f.anchors if a.corrects) for f in self.forms)

    def evaluate(self, shapes: Shapes, out: Block) -> None:
        """Write cycles, legality, default and fallback of the rows of `shapes` into `out` (views of the group's
        arrays)."""
        shapes = narrow_all(shapes)
        named = [(name, *b) for name, b in zip(self.buffer_names, self.buffers)]
        errors, idx, sh = screen("a5", self.rep, named, shapes, out, self.messages, self.note, aliased=self.aliased)
        if sh is None:
            return errors
        m = len(sh.rows)
        full_cols = static_cols = sh.vc == sh.cols
        if self.mask:
            # 1D walks the mask as one bit stream: its rows must hold exactly cols bits (dispatch.one_d_reason); the
            # kernel's static test asks only that the mask's valid bytes fill its padded row (dispatch._static)
            static_cols = full_cols & (cdiv(sh.vc, 8) * 8 == mask_row_bits(sh.cols))
            full_cols = full_cols & (mask_row_bits(sh.cols) == sh.cols)
        runtime = full_cols | (sh.vr <= 1)
        static = (static_cols & self.static_valid) | (sh.rows == 1)
        covered = np.ones(m, dtype=bool)
        big = int(sh.vr.max()) * int(sh.vc.max()) > MAX_TRIP  # some trip count could exceed 16 bits
        for j, f in enumerate(self.forms):
            la, lb = f.legal_contiguous, f.legal_strided
            lg = (runtime if la else ~runtime) if la != lb else la
            out.legal[j, idx] = lg
            if not (la or lb):
                out.cycles[j, idx] = np.nan
                continue
            if big:
                fits = np.all([v <= MAX_TRIP for v in trips(f.name, f.epr, sh).values()], axis=0)
                covered &= fits if lg is True else ~lg | fits
            if f.parity is not None:
                even = (cdiv(sh.vr * sh.vc, f.epr) & 1) == 0
                cyc = np.where(even, *(formula(*p, f.name, f.epr, sh, self.tables.setdefault(("parity", v), {}))
                                       for p, v in zip(f.parity, SELECT_VARIANTS)))
                out.sig[j, idx] = np.where(even, self._beyond(f, 0, sh), 2 + self._beyond(f, 1, sh))
            elif f.params is not None:
                cyc = formula(*f.params, f.name, f.epr, sh, self.tables)
                if out.sig is not None:
                    out.sig[j, idx] = self._beyond(f, 0, sh)
            elif self.pipe is not None:
                cyc = np.full(m, np.nan)
                sel = np.flatnonzero(covered if lg is True else lg & covered)
                if len(sel):
                    c, cov = _pipeline(self.pipe, self.make, f.name, f.epr, sh.take(sel))
                    if f.anchors:
                        corr, fit, prices = self._correction(f, sh.take(sel))
                        c, cov = c + corr, cov & fit
                        if out.sig is not None:
                            far = np.zeros(m, dtype=np.int16)
                            far[sel] = anchors_beyond(f.anchors, f.name, sh.take(sel))
                            out.sig[j, idx] = far
                        floors = [i for i, x in enumerate(f.anchors) if x.contained]
                        if floors:  # models/a5_anchored: never below an anchor whose chunk work the op's contains
                            c = np.fmax(c, np.fmax.reduce(prices[floors], axis=0))
                    cyc[sel] = c
                    covered[sel] &= cov
            else:  # the formula model has no parameters for this form: the per-request path raises the error
                covered &= False if lg is True else ~lg
                cyc = np.full(m, np.nan)
            if la != lb:
                nan_unless(lg, cyc)
            out.cycles[j, idx] = cyc
        da, db = self.defaults
        dflt = db + static.astype(np.int64) * (da - db)
        out.default[idx] = dflt
        bad = ~covered
        for j in {da, db}:
            bad |= (dflt == j) & ~out.legal[j, idx]
        out.fallback[idx] |= bad
        return errors

    @staticmethod
    def _beyond(f: Form, program: int, sh: Shapes):
        """Whether each row runs the form's formula program beyond its key's measured extent (its note says so)."""
        limits = f.extents[program] if program < len(f.extents) else None
        return 0 if limits is None else past_extent(limits, f.epr, f.name, sh).astype(np.int8)

    def _correction(self, f: Form, sh: Shapes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return anchor_correction(self.pipe, self.make, f.name, f.anchors, sh, self.tables)


def anchor_correction(pipe: PipelineModel, make, strategy: str, anchors: tuple[Anchor, ...], sh: Shapes,
                      tables: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean formula - pipeline cycles of the anchors in `strategy` on each row's tiles, rows where every anchor fits
    the unified buffer and was priced, each anchor's formula cycles (anchors, rows; NaN where not priced)); the
    per-request path leaves out an anchor that does not fit, so those rows go there. `make` builds the row's own
    request; `tables` keeps the anchors' dense formula tables."""
    total = np.zeros(len(sh.vr))
    ok = np.ones(len(sh.vr), dtype=bool)
    prices = np.full((len(anchors), len(sh.vr)), np.nan)
    for i, a in sorted(enumerate(anchors), key=lambda x: not x[1].corrects):  # floors price the rows left
        def make_anchor(r, c, vr, vc, op=a.op):
            return anchor_request(op, make(r, c, vr, vc), strategy)

        fits = ub_need(list(a.buffers), sh, _A.ub_align_bytes) <= _A.ub_bytes
        if a.corrects:
            ok &= fits
        fit = np.flatnonzero(ok & fits)  # a floor that does not fit is left out, as the per-request path does
        if not len(fit):
            continue
        priced = formula(*a.params, strategy, a.epr, sh.take(fit), tables.setdefault(("anchor", a.op), {}))
        if a.corrects:
            p, cov = _pipeline(pipe, make_anchor, strategy, a.epr, sh.take(fit))
            ok[fit] &= cov
            total[fit] += priced - p
        prices[i, fit] = priced
    return total / max(sum(a.corrects for a in anchors), 1), ok, prices


def anchors_beyond(anchors: tuple[Anchor, ...], strategy: str, sh: Shapes) -> np.ndarray:
    """Per row, a bit per correcting anchor (in their order) whose formula runs beyond its key's measured extent on
    the row's tiles (a5_formula.formula_beyond: the note names those anchors)."""
    bits = np.zeros(len(sh.vr), dtype=np.int16)
    for i, a in enumerate(x for x in anchors if x.corrects):
        if a.limits is not None:
            bits |= past_extent(a.limits, a.epr, strategy, sh).astype(np.int16) << i
    return bits


def past_extent(limits: tuple, epr: int, strategy: str, sh: Shapes) -> np.ndarray:
    """Per row, whether a program of `epr`-element chunks in `strategy` on the row's valid region runs beyond
    `limits` (a5_formula.beyond_extent, over the trip counts vf_trips gives the plan)."""
    dim = strategy[:2]
    chunks = cdiv(sh.vr * sh.vc, epr) if dim == "1d" else sh.vr * cdiv(sh.vc, epr)
    return beyond_extent(limits, chunks, sh.vr, dim)


def warm_anchored(make, sh: Shapes, models) -> None:
    """Price, in closed form, the anchor corrections the per-request path's anchored model will ask for on these rows
    (any op's rows: the anchors are measured elementwise ops on the row's tiles) and hand them to the model, which
    then simulates only the op's own program per strategy. Does nothing where the model has no anchored part or no
    anchor applies."""
    from ..lower.a5.forms import STRATEGIES

    try:
        parts = model_parts(models.get("a5"))
        a = make(1, 256, 1, 256)
    except PtoCostError:
        return
    anchored = parts[2] if parts is not None else None
    if anchored is None or not len(sh.rows):
        return
    sh = narrow_all(sh)
    shaped = (sh.vr >= 1) & (sh.vc >= 1) & (sh.vr <= sh.rows) & (sh.vc <= sh.cols)  # others: their request's error
    full = shaped & ((sh.vc == sh.cols) | (sh.vr <= 1))  # where the anchors' 1D forms are legal (one contiguous run)
    try:  # an op whose 1D forms need a single row (a broadcast operand changes per row) asks for no more
        if dispatch.one_d_reason(make(8, 256, 8, 256)) is not None:
            full &= sh.vr <= 1
    except PtoCostError:
        pass
    table = (parts[0].table or shipped()) if parts[0] is not None else None
    tables: dict = {}
    for s in STRATEGIES:
        try:
            if table is not None and all(x is not None for x in _formula_params(table, a, s)):
                continue  # the formula prices the op in this form: no anchor is asked for
            anchors = tuple(x for x in _anchors(a, s, anchored.table) if x.corrects)
        except PtoCostError:
            continue
        rows = np.flatnonzero(full if s.startswith("1d") else shaped)
        if not anchors or not len(rows):
            continue
        sub = at = sh.take(rows)
        scale = np.ones(len(rows))
        if a.family in REDUCE_FAMILIES:
            # a reduction's anchors walk its source tile (a5_anchored.anchor_tile), or where three tiles of it do not
            # fit the unified buffer its first rows, their correction scaled to its valid rows (`anchor_rows`)
            took = rows_that_fit(sub.rows, sub.cols * a.tile("src").dtype.bits // 8)
            at = Shapes(took, sub.cols, np.minimum(sub.vr, took), sub.vc)
            scale = np.where(sub.vr > 0, sub.vr / np.maximum(np.minimum(sub.vr, took), 1), 1.0)
        # per anchor: its difference where it fits the unified buffer (the per-request path leaves out one that
        # does not) and was priced; a row where a fitting anchor was not priced is left to the per-request path
        diffs, fits, prices, ok = [], [], [], np.ones(len(rows), dtype=bool)
        for x in anchors:
            fit = ub_need(list(x.buffers), at, _A.ub_align_bytes) <= _A.ub_bytes
            d, priced, price = anchor_correction(anchored.pipeline, make, s, (x,), at, tables)
            ok &= ~fit | priced
            diffs.append(d), fits.append(fit), prices.append(price[0])
        D, F, P = np.array(diffs), np.array(fits), np.array(prices)
        far = anchors_beyond(anchors, s, at)
        for i in np.flatnonzero(ok).tolist():
            taken = np.flatnonzero(F[:, i])
            hit = (float(scale[i] * D[taken, i].sum() / len(taken)), tuple(anchors[j].op for j in taken),
                   tuple(float(P[j, i]) for j in taken),
                   tuple(anchors[j].op for j in taken if far[i] >> j & 1)) if len(taken) else (0.0, (), (), ())
            try:
                req = make(*(int(v[i]) for v in sub))
            except PtoCostError:
                continue
            if a.family not in REDUCE_FAMILIES or anchor_rows(req) == int(at.rows[i]):  # as the per-request path took
                anchored.remember(req, s, hit)


def _formula_params(table, src: Request, strategy: str, extents: list | None = None) -> list:
    """Return what the formula table gives `src` in `strategy` (`lookup`: P, D and their source, or None), one entry
    per program the request may run: a 32-bit TSEL's even and odd 1D programs (by trip parity), else its own. The
    body is the form's own: a conversion's 2D chunk can hold more source vectors than its 1D one (§3 step 3). Each
    program's measured extent (`extent_limits`, None where its parameters are not its key's own) is appended to
    `extents` when given."""
    sig = body_signature(lower_request(src, strategy))
    key = key_of(src, strategy)
    variants = SELECT_VARIANTS if key["op_params"] in SELECT_VARIANTS else (key["op_params"],)
    found = [lookup(table, {**key, "op_params": v}, sig) for v in variants]
    if extents is not None:
        measured = [measured_source(table, {**key, "op_params": v}, sig, x[2]) if x is not None else None
                    for v, x in zip(variants, found)]
        extents += [extent_limits(table, m[0], sig, m[1]) if m is not None else None for m in measured]
    return found


def _anchors(rep: Request, strategy: str, table) -> tuple[Anchor, ...]:
    """The anchors the per-request path (AnchoredPipeline.correction) uses for `rep` in `strategy`: measured ops whose
    own formula key prices them there, marked where `rep`'s chunk work contains theirs (AnchoredPipeline.contained)."""
    found = anchor_plans(rep, strategy, table)
    own = chunk_work(lower_request(rep, strategy)) if rep.family not in REDUCE_FAMILIES else None
    floors = []
    if own is not None:  # AnchoredPipeline.floors: the measured ops whose own rows do not price them here
        floors = [x for x in anchor_plans(rep, strategy, table, own=False) if contains_work(own, chunk_work(x[1]))]
    return tuple(Anchor(a.op, params, tuple((t.dtype.bits, 0) for _, t in a.tiles), plan.body[0].epr,
                        own is not None and contains_work(own, chunk_work(plan)), corrects=i < len(found),
                        limits=price_limits(table, key_of(a, strategy), body_signature(plan), "key")
                        if i < len(found) else None)
                 for i, (a, plan, params) in enumerate(found + floors))


CHUNK = 32768  # rows per evaluation of a formula-priced group: the temporaries stay in cache


def prepare(rep: Request, make, models) -> Prepared | None:
    """The constants of an A5 elementwise group, from the lowering code on a static-contiguous and a strided
    representative request (None: no closed form for it)."""
    try:
        m = models.get("a5")
        note = ""
    except PtoCostError as exc:
        m, note = None, str(exc)
    pair = model_parts(m) if m is not None else (None, None, None)
    if pair is None:
        return None
    formula_model, pipe, anchored = pair
    try:
        a = make(1, 256, 1, 256)   # one row: static-contiguous, 1D legal
        b = make(2, 512, 2, 256)   # valid cols < cols: strided, 1D illegal
        (da, legal_a), (db, legal_b) = vf.strategies(a), vf.strategies(b)
        plan_a = lower_request(a, da)
    except PtoCostError:
        return None
    if not (dispatch.static_contiguous(a) and dispatch.one_d_reason(a) is None and not dispatch.static_contiguous(b)
            and dispatch.one_d_reason(b) is not None and tuple(legal_a) == tuple(legal_b)):
        return None
    names = tuple(legal_a)
    placed = _placed(plan_a.buffers)
    buffers = tuple(b for _, b in placed)
    a_sh = Shapes(*(np.array([v]) for v in (1, 256, 1, 256)))
    end = buffers_end(plan_a.buffers, _A.ub_align_bytes)
    if ({b.name for b in plan_a.buffers} != {n for n, _ in a.tiles}
            or int(ub_need(list(buffers), a_sh, _A.ub_align_bytes)[0]) != end):
        return None
    code = {s: j for j, s in enumerate(names)}
    placement = {"buffer_names": tuple(n for n, _ in placed), "aliased": len(placed) < len(plan_a.buffers)}
    if note:
        return Prepared(rep, make, (), (), note, (), (0, 0), buffers, a.dst.static_valid, None, **placement)
    table = (formula_model.table or shipped()) if formula_model is not None else None
    anchor_table = anchored.table if anchored is not None else None
    forms = []
    try:
        for s in names:
            f = Form(s, legal_a[s] is None, legal_b[s] is None)
            if f.legal_contiguous or f.legal_strided:
                src = a if f.legal_contiguous else b
                f.epr = vf.segments(src, s)[0].kernel.epr
                extents: list = []
                found = _formula_params(table, src, s, extents) if table is not None else [None]
                f.extents = tuple(extents)
                if len(found) > 1 and all(x is not None for x in found):
                    f.parity, f.model = tuple((x[0], x[1]) for x in found), formula_model.name
                elif any(x is not None for x in found) and len(found) > 1:
                    return None  # one parity priced by the formula, the other not: the per-request path
                elif found[0] is not None:
                    f.params, f.model = (found[0][0], found[0][1]), formula_model.name
                else:
                    if anchor_table is not None:
                        f.anchors = _anchors(src, s, anchor_table)
                    f.model = (("anchored" if any(x.corrects for x in f.anchors) else pipe.name) if pipe is not None
                               else formula_model.name)
            forms.append(f)
    except PtoCostError:
        return None
    uses_pipe = any(f.params is None and f.parity is None and (f.legal_contiguous or f.legal_strided) for f in forms)
    return Prepared(rep, make, names, tuple(f.model for f in forms), "", tuple(forms), (code[da], code[db]), buffers,
                    a.dst.static_valid, pipe, None if uses_pipe else CHUNK, MASK_BUFFER in buffers, **placement)


def _placed(buffers) -> list[tuple[str, tuple[int, int]]]:
    """(name, bits and bytes as in `ub_need`) of each buffer that takes unified buffer of its own (`placed`)."""
    return [(b.name, MASK_BUFFER if b.name == "mask" else (b.tile.dtype.bits, 0)) for b in placed(buffers)]
