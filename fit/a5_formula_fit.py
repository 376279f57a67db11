"""Fit the A5 formula model (models/a5_formula.py) to measured traces.

cycles = max(D, P) is fitted by alternating: with the dispatch bounds D fixed, the resource forms P are a
linear, hierarchically shrunk least-squares problem over the rows P binds (key → same key in any 1D/2D
strategy → family and form → family, deviations penalised relative to the family's size, so a sparse key
borrows its family's shape); with P fixed, each loop form's D is refitted on the rows it binds (one chunk per
cycle plus a start and a term for rows of several chunks). The shrink strength is chosen by cross-validation
grouped by tile shape; each op then takes this form or the smooth form (a5_smooth_fit.py), whichever has the
lower cross-validated error averaged over SELECTION_SEEDS fold assignments.
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import lsq_linear

from costmodel.lower.a5.reduce import REDUCE_FAMILIES
from costmodel.models import a5_formula as fm
from costmodel.models.a5_formula import NOT_ELEMENTWISE
from costmodel.models.params import ParamRow

from .a5_anchor import TableShared, anchor_values
from .a5_smooth_fit import OFFSET_PRIOR, SmoothFit, body_of, fit_smooth, predict_smooth, readable
from .linear import fit_linear, grouped_folds, one_blas_thread
from .params_io import op_group
from .metrics import summary
from .traces import fitted_groups, row_where, trace_request, trace_wording

# candidates: shrink strength × what the top of the hierarchy pools (the op family across 1D/2D, or all
# families of the same 1D/2D form)
CANDIDATES = [(shrink, pool) for shrink in (0.003, 0.01) for pool in ("family", "dimension")]
BASE_SCALE = {"p0": 20.0, "p1": 1.0, "p2": 3.0, "p3": 10.0, "p4": 10.0, "p5": 3.0}
D_START = {"2d-no-post-update": (50.0, 1.0, 5.0)}
# the start of a dispatch bound: at least the VF startup plus drain (23 + 12 cycles, costmodel.md §8)
D_START_BOUNDS = ((35.0, 80.0),)


# conversions between the same source and destination widths share one curve: costmodel.md §9 (fp8_e4m3,
# fp8_e5m2 and hif8 share one; so do fp4_e1m2 and fp4_e2m1), and the measured fp32->fp16 and fp32->bf16 rows
# (likewise bf16->fp32 and fp16->fp32) are identical shape for shape
SHARED_CURVE_OPS = ("TCVT",)
SHARED_CURVE_SCALE = 0.01  # relative size of a member's deviation from the curve (chosen by grouped CV: 7.4 -> 6.1 %)


@dataclass(frozen=True)
class Rows:
    """The measured rows as arrays: keys, family, form, chunks, rows, cycles."""

    k0: np.ndarray
    k1: np.ndarray
    fam: np.ndarray
    strategy: np.ndarray
    dim: np.ndarray
    C: np.ndarray
    R: np.ndarray
    y: np.ndarray
    keys: list[dict]


def lower_rows(trace: pd.DataFrame) -> tuple[Rows, list[int], list[str]]:
    """Lower every A5 row to its plan and return (trip features, kept row positions, notes on dropped rows)."""
    from costmodel import lower
    from costmodel.errors import PtoCostError
    from costmodel.models.a5_features import body_signature, vf_trips

    keys, keep, notes, C, R = [], [], [], [], []
    multi = "trace" in trace and trace["trace"].nunique() > 1
    for i, row in enumerate(trace.to_dict("records")):
        try:
            req, _ = trace_request(row)
            plan = lower.lower(req)
        except PtoCostError as exc:
            notes.append(f"{row_where(row, multi)}: {trace_wording(str(exc))}")
            continue
        if req.family in REDUCE_FAMILIES:
            notes.append(f"{row_where(row, multi)}: {NOT_ELEMENTWISE} (`fit --model pipeline` reads the row)")
            continue
        t = vf_trips(plan)
        keys.append({**fm.key_of(req, plan.strategy), "sig": body_signature(plan)})
        C.append(t.chunks)
        R.append(t.rows)
        keep.append(i)
    k0 = np.array(["|".join(k.values()) for k in keys], dtype=object)
    dim = np.array([k["strategy"][:2] for k in keys], dtype=object)
    k1 = np.array(["|".join([k["name"], k["dtype"], k["dst_dtype"], k["op_params"], k["strategy"][:2]]) for k in keys], dtype=object)
    fam = np.array([fm.family_of(k) for k in keys], dtype=object)
    y = trace.iloc[keep]["measured_cycles"].to_numpy(float)
    return Rows(k0, k1, fam, np.array([k["strategy"] for k in keys], dtype=object), dim,
                np.array(C, float), np.array(R, float), y, keys), keep, notes


def _family_scales(rows: Rows, idx: np.ndarray) -> dict[tuple[str, str], float]:
    """Size of each term per family (an unshrunk per-family fit), so deviations are penalised relatively."""
    feats = fm.features(rows.C[idx], rows.R[idx], rows.dim[idx])
    out = {}
    for fam in set(rows.fam[idx]):
        sel = rows.fam[idx] == fam
        X = np.column_stack([feats[t][sel] for t in fm.P_TERMS])
        w = 1 / rows.y[idx][sel]
        sol = np.linalg.lstsq(X * w[:, None], rows.y[idx][sel] * w, rcond=None)[0]
        for t, v in zip(fm.P_TERMS, sol):
            out[(fam, t)] = max(BASE_SCALE[t], 0.5 * abs(v))
    return out


def _fit_p(rows: Rows, idx: np.ndarray, shrink: float, scales, pool: str = "family") -> dict[str, float]:
    """Hierarchical fit of the P coefficients on rows `idx`; returns {term|node: value} for every node."""
    feats = fm.features(rows.C[idx], rows.R[idx], rows.dim[idx])
    names, cols, parent, scale = [], [], {}, {}
    for k0 in sorted(set(rows.k0[idx])):
        sel = rows.k0[idx] == k0
        j = int(np.flatnonzero(rows.k0 == k0)[0])
        fam, k1, dim = rows.fam[j], rows.k1[j], rows.dim[j]
        for t in fm.P_TERMS:
            n = f"{t}|{k0}"
            names.append(n)
            cols.append(np.where(sel, feats[t], 0.0))
            top = f"{t}|{fam}" if pool == "family" else f"{t}|*|{dim}"
            chain = [n, f"{t}|{k1}", f"{t}|{fam}|{dim}", top]
            for a, b in zip(chain, chain[1:]):
                parent[a] = b
            for c in chain:
                scale[c] = scales.get((fam, t), BASE_SCALE[t])
            if rows.keys[j]["name"] in SHARED_CURVE_OPS:  # key and key-in-any-form stay on the family curve
                scale[n] *= SHARED_CURVE_SCALE
                scale[f"{t}|{k1}"] *= SHARED_CURVE_SCALE
    prior = {}
    for strategy in sorted(set(rows.strategy[idx])):
        n = f"off|{strategy}"
        names.append(n)
        cols.append((rows.strategy[idx] == strategy).astype(float))
        prior[n], scale[n] = OFFSET_PRIOR.get(strategy, 0.0), 1.0
    fit = fit_linear(np.column_stack(cols), rows.y[idx], names, parent=parent, shrink=shrink, scale=scale,
                     prior=prior, stderr=False)
    out = dict(fit.nodes)  # every key, (key in any form) and family node, effective values
    # values for keys the fit never saw: the mean of the fitted keys of the same op/dtype/variant in the same
    # 1D/2D form (its other strategies), else of the family in that form
    for k0 in sorted(set(rows.k0[idx])):
        j = int(np.flatnonzero(rows.k0 == k0)[0])
        for t in fm.P_TERMS:
            out.setdefault(f"{t}|{rows.k1[j]}|members", []).append(out[f"{t}|{k0}"])
            out.setdefault(f"{t}|{rows.fam[j]}|{rows.dim[j]}|members", []).append(out[f"{t}|{k0}"])
    for k in [k for k in out if k.endswith("|members")]:
        out[k[: -len("|members")] + "|mean"] = float(np.mean(out.pop(k)))
    return out


def _p_value(coef: dict, rows: Rows, i: int) -> float:
    f = fm.features(rows.C[i], rows.R[i], rows.dim[i])
    total = 0.0
    for t in fm.P_TERMS:
        # the key; else the same op/dtype/variant in the same 1D/2D form; else the family mean in that form
        for node in (f"{t}|{rows.k0[i]}", f"{t}|{rows.k1[i]}|mean", f"{t}|{rows.fam[i]}|{rows.dim[i]}|mean"):
            c = coef.get(node)
            if c is not None:
                break
        else:
            return np.nan
        total += c * float(f[t])
    return total + coef.get(f"off|{rows.strategy[i]}", 0.0)


def _multi_rows(rows: Rows) -> np.ndarray:
    """Rows of two or more chunks per program row (the dispatch bound's row feature, fm.features' p3)."""
    return fm.features(rows.C, rows.R, rows.dim)["p3"]


def _d_values(D: dict, rows: Rows, idx: np.ndarray, multi: np.ndarray) -> np.ndarray:
    """Return the dispatch bound d0 + d1·C + d3·R·m of rows `idx` under per-strategy values D (`multi`:
    `_multi_rows(rows)`)."""
    d = np.array([D.get(s, (50.0, 1.0, 0.0)) for s in rows.strategy[idx]]).reshape(len(idx), 3)
    return d[:, 0] + d[:, 1] * rows.C[idx] + d[:, 2] * multi[idx]


def fit_max(rows: Rows, idx: np.ndarray, shrink: float, iterations: int = 10, pool: str = "family"):
    """Alternate P and D fits on rows `idx`; returns (P coefficients, D per strategy)."""
    scales = _family_scales(rows, idx)
    multi = _multi_rows(rows)
    D = {s: D_START.get(s, (50.0, 1.0, 1.0 if s.startswith("2d") else 0.0)) for s in set(rows.strategy)}
    res = idx
    coef: dict = {}
    for _ in range(iterations):
        coef = _fit_p(rows, res, shrink, scales, pool)
        P = np.array([_p_value(coef, rows, i) for i in idx])
        Dv = _d_values(D, rows, idx, multi)
        bound = idx[(Dv > P + 0.5) | np.isnan(P)]
        for s in set(rows.strategy[idx]):
            b = bound[rows.strategy[bound] == s]
            two = s.startswith("2d")
            # a loop form's dispatch bound is shared by every op: refit it only from several families' rows
            if len(b) >= (3 if two else 2) and len(set(rows.fam[b])) >= 2:
                X = np.column_stack([np.ones(len(b))] + ([multi[b]] if two else []))
                w = 1 / rows.y[b]
                lo, hi = [D_START_BOUNDS[0][0]] + ([0.0] if two else []), [D_START_BOUNDS[0][1]] + ([10.0] if two else [])
                sol = lsq_linear(X * w[:, None], (rows.y[b] - rows.C[b]) * w, bounds=(lo, hi)).x
                D[s] = (float(sol[0]), 1.0, float(sol[1]) if two else 0.0)
        new = np.setdiff1d(idx, bound)
        if not len(new) or np.array_equal(new, res):  # every row dispatch-bound: the P fit keeps its last rows
            break
        res = new
    return coef, D


def predict_rows(coef: dict, D: dict, rows: Rows, idx: np.ndarray) -> np.ndarray:
    """Return max(D, P) for rows `idx` (NaN where P has no key or family parameters)."""
    P = np.array([_p_value(coef, rows, i) for i in idx])
    return np.where(np.isfinite(P), np.maximum(P, _d_values(D, rows, idx, _multi_rows(rows))), np.nan)


@dataclass(frozen=True)
class A5FormulaFit:
    rows: tuple[ParamRow, ...]
    cv_predictions: np.ndarray
    insample: np.ndarray
    selection: pd.DataFrame
    shrink: float
    pool: str
    report: pd.DataFrame
    kept: np.ndarray
    smooth_ops: tuple[str, ...] = ()  # ops whose keys are written in the smooth form
    anchored: tuple[str, ...] = ()  # the shared smooth-form terms pulled toward the refined table's values, and why


SELECTION_SEEDS = 3  # fold assignments the per-op choice of form is averaged over (one alone flips near-ties)


def _cross_validate(rows: Rows, jobs: list[tuple[str, float | None, str | None, np.ndarray]],
                    anchor: dict[str, float] | None = None) -> list[np.ndarray]:
    """Return the out-of-fold predictions of each (form, shrink, pool, folds) job: form "smooth" (pulled toward
    `anchor`, as the fit it assesses is) or "max"."""
    allidx = np.arange(len(rows.y))
    out = []
    for form, shrink, pool, folds in jobs:
        pred = np.full(len(rows.y), np.nan)
        for f in np.unique(folds):
            train, test = allidx[folds != f], allidx[folds == f]
            if form == "smooth":
                pred[test] = predict_smooth(fit_smooth(rows, train, anchor=anchor), rows, test)
            else:
                pred[test] = predict_rows(*fit_max(rows, train, shrink, pool=pool), rows, test)
        out.append(pred)
    return out


@one_blas_thread
def fit_a5_formula(trace: pd.DataFrame, *, k: int = 5, seed: int = 0, source: str = "", group_by: str = "shape",
                   base: TableShared | None = None) -> tuple[A5FormulaFit, list[str]]:
    """Fit the A5 formula to the trace's a5 rows; returns (fit, notes on rows that could not be lowered). `base`: the
    shared values of the table the fit refines, toward which the shared terms this trace observed less are pulled
    (a5_anchor.py)."""
    trace = trace[trace["arch"].str.lower() == "a5"].reset_index(drop=True)
    rows, keep, notes = lower_rows(trace)
    addressed = sum(sum(fm.address_counts(key.get("sig", ""), key["strategy"])) > 0 for key in rows.keys)
    anchor, anchored = (anchor_values(base, rows.strategy, addressed, Counter(body_of(key) for key in rows.keys))
                        if base is not None else ({}, []))
    used = trace.iloc[keep].reset_index(drop=True)
    groups = fitted_groups("a5", used, notes, group_by)
    k = min(k, len(set(groups)))
    folds = grouped_folds(groups, k=k, seed=seed)
    extra = [grouped_folds(groups, k=k, seed=seed + 1 + i) for i in range(SELECTION_SEEDS - 1)]
    # the hard-max form's shrink and pooling, and the smooth form, on the reported folds; the smooth form also on
    # further fold assignments, where the chosen hard-max form joins it below
    preds = _cross_validate(rows, [("max", shrink, pool, folds) for shrink, pool in CANDIDATES]
                            + [("smooth", None, None, f) for f in [folds, *extra]], anchor)
    results, best = [], None
    for (shrink, pool), pred in zip(CANDIDATES, preds):
        s = summary(pred, rows.y)
        results.append({"shrink": shrink, "pool": pool, **s})
        if best is None or s["mape"] < best[0]:
            best = (s["mape"], shrink, pool, pred)
    _, shrink, pool, cv_pred = best
    allidx = np.arange(len(rows.y))
    smooth_preds = preds[len(CANDIDATES):]
    max_preds = [cv_pred, *_cross_validate(rows, [("max", shrink, pool, f) for f in extra])]
    # a body unseen in training falls back to the family values of the other form, as the written table does
    smooth_preds = [np.where(np.isnan(sp), mp, sp) for sp, mp in zip(smooth_preds, max_preds)]
    cv_smooth = smooth_preds[0]
    results.append({"shrink": None, "pool": "smooth form", **summary(cv_smooth, rows.y)})
    names = np.array([k["name"] for k in rows.keys], dtype=object)
    # an op whose shared body is anchored to the table keeps the form that carries it: the hard-max form would price
    # it from its own few rows alone (five TMAX rows of at most 30 chunks won the choice on their shapes, 1.2 against
    # 3.6 % CV MAPE, and priced 1x8192 at twice the table's body; the smooth form, 2.5-9.7 % above it)
    smooth_ops = _smooth_winners(names, max_preds, smooth_preds, rows.y) | {
        key["name"] for key in rows.keys if f"a|{body_of(key)}" in anchor}

    use = np.isin(names, list(smooth_ops))
    cv_pred = np.where(use, cv_smooth, cv_pred)
    coef, D = fit_max(rows, allidx, shrink, pool=pool)
    smooth = fit_smooth(rows, allidx, stderr=True, anchor=anchor)
    out_rows, report = _to_rows(coef, D, rows, cv_pred, source, smooth, smooth_ops)
    insample = np.where(use, predict_smooth(smooth, rows, allidx), predict_rows(coef, D, rows, allidx))
    return A5FormulaFit(tuple(out_rows), cv_pred, insample, pd.DataFrame(results), shrink, pool, report,
                        np.array(keep), tuple(sorted(smooth_ops)), tuple(anchored) if smooth_ops else ()), notes


def _smooth_winners(names: np.ndarray, cv_max: list[np.ndarray], cv_smooth: list[np.ndarray], y: np.ndarray) -> set[str]:
    """Return the ops that keep the smooth form: all but those whose per-key hard-max form has a cross-validated
    error (per row, averaged over the fold assignments) lower by more than one standard error of the paired
    difference. The smooth form is the default because its bodies are shared across loop forms, which is what
    predicts an (op, loop form) nobody measured; a near-tie on the measured shapes flips with the folds.
    Rows a form cannot predict count as 100 %."""
    def ape(preds: list[np.ndarray]) -> np.ndarray:
        return np.mean([np.nan_to_num(np.abs(p - y) / y, nan=1.0) for p in preds], axis=0)

    diff = ape(cv_smooth) - ape(cv_max)  # > 0 where the hard-max form is better
    keep = set()
    for op in set(names):
        d = diff[names == op]
        se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else np.inf
        if not d.mean() > se:
            keep.add(op)
    return keep


def _extent_rows(rows: Rows, idx, scope: str, name: str, dtype: str, dst: str, strategy: str, op_params: str,
                 source: str) -> list[ParamRow]:
    """The measured extent of a key's rows `idx` (of one shape of loop, 1D or 2D) as three rows: the most chunks one
    program ran (`max_chunks`), the most row-loop trips (`max_rows`, 1 for 1D programs) and the most chunks in one
    row (`max_row_chunks`); an estimate beyond them says it extrapolates. No rows: none (a key measured in the other
    shape only says so instead)."""
    if not len(idx):
        return []
    idx = np.asarray(idx)
    n = len(idx)
    return [ParamRow("a5", "vf", scope, name, dtype, dst, strategy, op_params, term, float(np.max(values[idx])), None,
                     n, None, f"{source}; measured extent")
            for term, values in (("max_chunks", rows.C), ("max_rows", rows.R), ("max_row_chunks", np.ceil(rows.C / rows.R)))]


def _to_rows(coef: dict, D: dict, rows: Rows, cv_pred: np.ndarray, source: str, smooth: SmoothFit | None = None,
             smooth_ops: set[str] = frozenset()):
    """Parameter-table rows: per key, per family/form fallback and per-strategy dispatch bounds."""
    ape = np.abs(cv_pred - rows.y) / rows.y * 100
    src = f"fit: {source} ({len(rows.y)} rows)" if source else f"fit ({len(rows.y)} rows)"
    out: list[ParamRow] = []
    report = []
    if smooth is not None and smooth_ops:
        out, report = _smooth_rows(smooth, rows, ape, src, smooth_ops)
    for k0 in sorted(set(rows.k0)):
        sel = rows.k0 == k0
        key = rows.keys[int(np.flatnonzero(sel)[0])]
        if key["name"] in smooth_ops:
            continue
        terms = fm.TERMS[key["strategy"][:2]]
        if any(f"{t}|{k0}" not in coef for t in terms):  # every row of it dispatch-bound: nothing prices its body
            continue
        cv = float(np.nanmean(ape[sel])) if np.isfinite(ape[sel]).any() else None
        n = int(sel.sum())
        offset = coef.get(f"off|{key['strategy']}", 0.0)
        for t in terms:
            value = float(coef[f"{t}|{k0}"]) + (offset if t == "p0" else 0.0)
            out.append(ParamRow("a5", "vf", "op", key["name"], key["dtype"], key["dst_dtype"], key["strategy"],
                                key["op_params"], t, value, None, n, cv, src))
        # its own copy of the dispatch bound it was fitted with (d0 + d1·C + d3·R·m, no row term: `_d_values`), as a
        # smooth key carries its own: the shared dispatch rows a partial trace's fit wrote replace the table's only
        # when it observed as many rows, and the key is priced as fitted either way
        d0, d1, d3 = D[key["strategy"]]
        out.extend(ParamRow("a5", "vf", "op", key["name"], key["dtype"], key["dst_dtype"], key["strategy"],
                            key["op_params"], t, float(v), None, n, cv, src)
                   for t, v in zip(fm.D_TERMS, (d0, d1, 0.0, d3)))
        out.extend(_extent_rows(rows, np.flatnonzero(sel), "op", key["name"], key["dtype"], key["dst_dtype"],
                                key["strategy"], key["op_params"], src))
        report.append({"parameter": f"{readable(k0)}:", "n_obs": n, "cv_mape": cv,
                       **{t: (float(coef[f"{t}|{k0}"]) if t in terms else 0.0) for t in fm.P_TERMS}})
    strategies = {"1d": ("1d-post-update", "1d-no-post-update"), "2d": ("2d-post-update", "2d-no-post-update")}
    smooth_fams = {f for f, k in zip(rows.fam, rows.keys) if k["name"] in smooth_ops}
    for fam in sorted(set(rows.fam) - smooth_fams):
        for dim in ("1d", "2d"):
            if f"p0|{fam}|{dim}|mean" not in coef:
                continue
            sel = (rows.fam == fam) & (rows.dim == dim)
            for strategy in strategies[dim]:
                offset = coef.get(f"off|{strategy}", OFFSET_PRIOR.get(strategy, 0.0))
                for t in fm.TERMS[dim]:
                    value = float(coef[f"{t}|{fam}|{dim}|mean"]) + (offset if t == "p0" else 0.0)
                    out.append(ParamRow("a5", "vf", "family", fam, "*", "", strategy, "", t, value, None,
                                        int(sel.sum()), None, f"{src}; mean of the family's fitted keys"))
    for s, (d0, d1, d3) in sorted(D.items()):
        n = int((rows.strategy == s).sum())
        for t, v in (("d0", d0), ("d1", d1), ("d3", d3)):  # single-chunk rows run as a flat loop: no row term
            out.append(ParamRow("a5", "vf", "dispatch", "*", "*", "", s, "", t, float(v), None, n, None,
                                f"{src}; d1 fixed at one chunk per cycle (costmodel.md §8 iteration dispatch)" if t == "d1" else src))
    return out, pd.DataFrame(report)


def _smooth_rows(smooth: SmoothFit, rows: Rows, ape: np.ndarray, src: str, ops: set[str]):
    """Key rows of the smooth-form ops: every measured body in every loop form of its 1D/2D shape (a body measured
    in one form predicts the others: a loop form only shifts the start, by an offset penalised toward its §7 prior,
    so a form measured in one op family alone still has a small offset), with its own d0..d3 and q."""
    from .a5_smooth_fit import PER_FORM_BODIES, body_dtype, body_of, member_of

    out: list[ParamRow] = []
    report = []
    forms = {"1d": ("1d-post-update", "1d-no-post-update"), "2d": ("2d-no-post-update", "2d-post-update")}

    def strategies_of(key: dict, measured: set[str]) -> list[str]:
        # a body shared by both shapes of loop predicts all four forms; a per-form body only its own shape's
        dims = {s[:2] for s in measured} if key["name"] in PER_FORM_BODIES else {"1d", "2d"}
        return [s for d in sorted(dims) for s in forms[d]]

    def write(scope: str, name: str, dtype: str, dst: str, op_params: str, key: dict, strategies: list[str], n: int,
              cv: float | None, note, idx: list[int] = (), follows: tuple | None = None) -> None:
        """Append the P, D and q rows `smooth.params` gives `key` in each strategy (`note(strategy)`: the source), and
        the measured extent of the rows `idx` it was fitted on; `follows`: the op key whose body they copy."""
        for strategy in strategies:  # the extent of the rows of the strategy's 1D or 2D shape of loop
            same_shape = [i for i in idx if rows.dim[i] == strategy[:2]]
            out.extend(dataclasses.replace(r, follows=follows)
                       for r in _extent_rows(rows, same_shape, scope, name, dtype, dst, strategy, op_params, note(strategy)))
            got = smooth.params({**key, "strategy": strategy})
            if got is None:
                continue
            values, se = {**got[0], **got[1]}, smooth.stderrs({**key, "strategy": strategy})
            # the address bound it was fitted with, as its own rows (a0, and ac per chunk for its loads and stores):
            # a later fit of other ops that moves the shared bound leaves this key's cycles as fitted
            own_bound = list(fm.OWN_ADDRESS_TERMS) if "ac" in values else []
            for t in list(fm.TERMS[strategy[:2]]) + list(fm.D_TERMS) + ["q"] + own_bound:
                out.append(ParamRow("a5", "vf", scope, name, dtype, dst, strategy, op_params, t, float(values[t]),
                                    se.get(t), n, cv, note(strategy), follows))

    member_rows: dict[str, list[int]] = {}
    seen = {}  # each measured key (any loop form of its body)
    for i, key in enumerate(rows.keys):
        if key["name"] in ops:
            member = member_of(key) + ("|" + key["strategy"][:2] if key["name"] in PER_FORM_BODIES else "")
            member_rows.setdefault(member, []).append(i)
            seen.setdefault(member, key)
    def group(key: dict) -> tuple:
        return op_group(key["name"], key["dtype"], key["dst_dtype"], key["op_params"])

    # the dtypes of one op that share a body (DTYPE_FREE_SIGS) take their curve from one fit of it: their rows go
    # with those of the dtype measured most (a TADD trace of narrow f32 rows, held, had rewritten f16's slope from
    # them, 1.08 -> 0.08 cycles a chunk)
    leader: dict[tuple, tuple[int, dict]] = {}
    for member, key in sorted(seen.items()):  # ties go to the first member by name, whatever the trace's row order
        shared = (key["name"], key["op_params"], body_of(key))
        if len(member_rows[member]) > leader.get(shared, (0, {}))[0]:
            leader[shared] = (len(member_rows[member]), key)
    for member, key in sorted(seen.items()):
        body = body_of(key)
        idx = member_rows[member]
        n, cv = len(idx), (float(np.nanmean(ape[idx])) if np.isfinite(ape[idx]).any() else None)
        measured = {rows.keys[i]["strategy"] for i in idx}
        lead = leader[(key["name"], key["op_params"], body)][1]
        write("op", key["name"], key["dtype"], key["dst_dtype"], key["op_params"], key, strategies_of(key, measured), n,
              cv, lambda s, m=measured: src if s in m else f"{src}; body measured in {', '.join(sorted(m))} only", idx,
              follows=None if lead is key else group(lead))
        label = readable(member, True) + ("" if body == member else f" (curve {readable(body)})")
        first = {**key, "strategy": sorted(measured)[0]}
        se = smooth.stderrs(first)
        report.append({"parameter": f"{label}, smooth, all forms:", "n_obs": n, "cv_mape": cv, "stderr": se["p1"],
                       **smooth.params(first)[0], **{f"se_{t}": se.get(t) for t in fm.P_TERMS},
                       **{f"bound_{t}": held for t, held in smooth.bounded(first).items() if t in fm.P_TERMS}})
    # an op nobody measured falls back to the body that measured ops doing the same work per chunk share (their
    # deviations left out): leave-one-op-out, such a body predicts each pooled op within 0.9-2.6 % MAPE
    bodies: dict[str, tuple[list[int], dict]] = {}
    for member, key in sorted(seen.items()):  # a body's rows name its first member by name
        if key["name"] not in PER_FORM_BODIES and key.get("sig"):
            idx, first = bodies.get(body_of(key), ([], key))
            bodies[body_of(key)] = (idx + member_rows[member], first)
    for body, (idx, key) in sorted(bodies.items()):  # with the extent its members were measured over, as a key's
        write("body", key["sig"], body_dtype(key), key["dst_dtype"], "", {**key, "name": ""}, forms["1d"] + forms["2d"],
              len(idx), None, lambda s: f"{src}; body shared by the measured ops of this work", sorted(idx))
    # the address bound (models/a5_formula.py), shared by every op: its start includes the loop form's offset like
    # every other start written here
    form, n_form = fm.ADDRESS_FORM, int((rows.strategy == fm.ADDRESS_FORM).sum())
    for t, v in smooth.address.items():
        start = t == "a0"
        out.append(ParamRow("a5", "vf", "dispatch", "*", "*", "", form, "", t,
                            float(v + (smooth.offset.get(form, 0.0) if start else 0.0)),
                            smooth.stderr({t: 1.0, **({f"off|{form}": 1.0} if start else {})}), n_form, None,
                            f"{src}; address bound of the smooth form (per explicit load / store and chunk)"))
    # a key nobody measured (another dtype of a measured op) falls back to its family: the op's body measured on
    # most rows, in every loop form — a 256-byte chunk is the same work whatever the element type (measured:
    # TADD f16 1x1280 and f32 1x640, ten chunks each, cost 67 cycles alike; so do TMINS f16 and f32, 64)
    # (per shape of loop where bodies are per form: a family's 1D forms copy its most measured 1D body, its 2D forms
    # its most measured 2D body; ties go to the first member by name, whatever the trace's row order)
    best: dict[tuple[str, str], tuple[int, dict]] = {}
    for member, key in sorted(seen.items()):
        n = len(member_rows[member])
        slot = (fm.family_of(key), key["strategy"][:2] if key["name"] in PER_FORM_BODIES else "")
        if n > best.get(slot, (0, {}))[0]:
            best[slot] = (n, key)
    for (fam, _), (n, key) in sorted(best.items()):
        write("family", fam, "*", "", "", key, strategies_of(key, {key["strategy"]}), n, None,
              lambda s, dt=key["dtype"]: fm.family_body_source(src, dt),
              follows=group(key))
    return out, report
