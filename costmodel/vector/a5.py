"""A5 unary, binary and binary-scalar groups in closed form: VF trip counts per loop form over arrays of shapes.

An elementwise VF program (lower/a5/vf.py, forms.py; costmodel.md §7) executes, for valid region vr x vc and EPR
elements per register,

* 1D forms: C = ceil(vr·vc / EPR) chunks in one loop, R = 1;
* 2D forms: R = vr rows of ceil(vc / EPR) chunks, C = R·ceil(vc / EPR) (post-update: floor(vc / EPR) full
  chunks plus one tail chunk per row).

A 1D form needs the valid region to be one contiguous run (vc == cols or a single valid row); the default form is
the dispatch table's answer for a static-contiguous or a strided request (data/a5_dispatch.csv). Both answers,
the legality of each form in both cases, the EPR and the lowered programs come from the lowering code run on
representative requests of the group.

Pricing per form: the A5 formula model (`a5_formula.cycles`, already vectorised) where the parameter table has
the key; otherwise (model `auto` or `pipeline`) the pipeline model's `cycles_for` on the program of a
representative row with the same loop structure (2D post-update programs differ in whether they have a full-chunk
loop, a tail chunk and a pointer adjustment at the row end).
"""
from __future__ import annotations

import numpy as np

from ..arch import constants
from ..errors import PtoCostError
from ..isa_a5 import VfProgram
from ..lower import lower as lower_request
from ..lower.a5 import dispatch, vf
from ..models.a5_formula import A5FormulaModel, cycles as formula_cycles, key_of, lookup
from ..models.a5_pipeline import PipelineModel
from ..models.auto import FormulaThenPipeline
from ..models.params import shipped
from ..request import Request
from . import Block, Shapes, request_ok, ub_need

_A = constants("a5")
MAX_TRIP = _A.max_trip_count
SHAPE_ROLES = ("rows", "chunks", "elements")


def _models(m) -> tuple[A5FormulaModel | None, PipelineModel | None] | None:
    if isinstance(m, FormulaThenPipeline):
        return m.formula, m.pipeline
    if isinstance(m, A5FormulaModel):
        return m, None
    if isinstance(m, PipelineModel):
        return None, m
    return None


def trips(strategy: str, epr: int, sh: Shapes) -> dict[str, np.ndarray]:
    """Trip counts per loop role of the elementwise program in `strategy` (forms.py)."""
    if strategy.startswith("1d"):
        return {"elements": -(-(sh.vr * sh.vc) // epr)}
    chunks = sh.vc // epr if strategy == "2d-post-update" else -(-sh.vc // epr)
    return {"rows": sh.vr, "chunks": chunks}


def chunks_rows(strategy: str, epr: int, sh: Shapes) -> tuple[np.ndarray, np.ndarray]:
    """(C, R) of the A5 formula (models/a5_features.py) per row."""
    if strategy.startswith("1d"):
        return -(-(sh.vr * sh.vc) // epr), np.ones_like(sh.vr)
    return sh.vr * -(-sh.vc // epr), sh.vr


def structure(strategy: str, epr: int, sh: Shapes) -> np.ndarray:
    """A code per row that is equal for rows whose programs differ only in trip counts."""
    if strategy != "2d-post-update":
        return np.zeros(len(sh.vr), dtype=np.int64)
    full, tail = np.divmod(sh.vc, epr)
    delta = sh.cols - -(-sh.vc // epr) * epr  # pointer adjustment at the row end (omitted when zero)
    return (full > 0) + 2 * (tail > 0) + 4 * (delta != 0)


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
        plan = lower_request(make(*(int(a[first]) for a in sh)), strategy)
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


def group_block(rep: Request, make, shapes: Shapes, models) -> Block | None:
    """The Block of an A5 elementwise group (None: no closed form for it)."""
    try:
        m = models.get("a5")
        note = ""
    except PtoCostError as exc:
        m, note = None, str(exc)
    pair = _models(m) if m is not None else (None, None)
    if pair is None:
        return None
    formula, pipe = pair
    try:
        # a static-contiguous (one row) and a strided request of the group
        a = make(1, 256, 1, 256)
        b = make(2, 512, 2, 256)
        cases = []
        for req in (a, b):
            default, legal = vf.strategies(req)
            cases.append((default, legal))
        plan_a = lower_request(a, cases[0][0])
    except PtoCostError:
        return None
    if not (dispatch.static_contiguous(a) and dispatch.one_d_reason(a) is None and not dispatch.static_contiguous(b)
            and dispatch.one_d_reason(b) is not None and tuple(cases[0][1]) == tuple(cases[1][1])):
        return None
    names = tuple(cases[0][1])
    n = len(shapes.rows)
    ok = request_ok(rep, shapes)
    buffers = [(t.dtype.bits, 0) for _, t in a.tiles]
    a_sh = Shapes(*(np.array([v]) for v in (1, 256, 1, 256)))
    end = max(buf.offset + -(-buf.nbytes // _A.ub_align_bytes) * _A.ub_align_bytes for buf in plan_a.buffers)
    if len(plan_a.buffers) != len(a.tiles) or int(ub_need(buffers, a_sh, _A.ub_align_bytes)[0]) != end:
        return None
    ok &= ub_need(buffers, shapes, _A.ub_align_bytes) <= _A.ub_bytes
    if note:
        return Block((), np.empty((n, 0)), np.empty((n, 0), dtype=bool), np.zeros(n, dtype=np.int64), (), ~ok, note)
    idx = np.flatnonzero(ok)
    sh = shapes.take(idx)
    runtime = (sh.vc == sh.cols) | (sh.vr <= 1)
    static = ((sh.vc == sh.cols) & a.dst.static_valid) | (sh.rows == 1)
    cycles = np.full((n, len(names)), np.nan)
    legal = np.zeros((n, len(names)), dtype=bool)
    covered = np.ones(len(idx), dtype=bool)
    model_names = []
    table = (formula.table or shipped()) if formula is not None else None
    for j, s in enumerate(names):
        la, lb = cases[0][1][s] is None, cases[1][1][s] is None
        lg = np.where(runtime, la, lb)
        legal[idx, j] = lg
        if not (la or lb):
            model_names.append("")
            continue
        src = a if la else b
        epr = lower_request(src, s).body[0].epr
        tr = trips(s, epr, sh)
        covered &= ~lg | np.all([v <= MAX_TRIP for v in tr.values()], axis=0)
        found = lookup(table, key_of(src, s)) if table is not None else None
        if found is not None:
            p, d, _ = found
            C, R = chunks_rows(s, epr, sh)
            cyc = formula_cycles(p, d, C, R, s[:2])[0]
            model_names.append(formula.name)
        elif pipe is not None:
            cyc = np.full(len(idx), np.nan)
            sel = np.flatnonzero(lg & covered)
            if len(sel):
                c, cov = _pipeline(pipe, make, s, epr, sh.take(sel))
                cyc[sel] = c
                covered[sel] &= cov
            model_names.append(pipe.name)
        else:  # the formula model has no parameters for this form: the per-request path raises the error
            covered &= ~lg
            cyc = np.full(len(idx), np.nan)
            model_names.append(formula.name)
        cycles[idx, j] = np.where(lg, cyc, np.nan)
    code = {s: j for j, s in enumerate(names)}
    default = np.zeros(n, dtype=np.int64)
    default[idx] = np.where(static, code[cases[0][0]], code[cases[1][0]])
    fallback = ~ok
    fallback[idx] |= ~covered | ~legal[idx, default[idx]]
    return Block(names, cycles, legal, default, tuple(model_names), fallback)
