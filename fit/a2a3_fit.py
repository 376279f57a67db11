"""Fit the A2/A3 intrinsic model (models/a2a3_intrinsic.py) to measured traces.

Each measured row is lowered to its plan and reduced to cost features; the cost is linear in the parameters,
so the fit is a weighted (relative-error) least-squares problem with lower bounds at 0. Parameters are
organised in a hierarchy — (intrinsic class, dtype) → intrinsic class → cost family (data/a2a3_cost_families.csv)
— and deviations from the parent are shrunk, so a class with few observations borrows its family's value.
Roots are pulled toward the reference's constants (data/a2a3_priors.csv, costmodel.md §4–§5), scaled by the
trace's median ratio of measured to reference cycles (`prior_scale`), so the fit does not depend on how fast the
profiled hardware runs overall. A head and a
tail are only ever observed as a sum per segment, so each class fits one `start` value split into head and
tail in the reference's ratio. The shrink strength and whether dtypes get their own deviations are chosen by
cross-validation grouped by tile shape.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from costmodel._data import data_path, read_rows
from costmodel.models.a2a3_intrinsic import EXTENT_TERM, KINDS, plan_features, split_key
from costmodel.models.params import ParamRow, ParamTable, read_table

from .linear import fit_linear, grouped_folds, one_blas_thread
from .metrics import summary
from .traces import fitted_groups, row_where, trace_request, trace_wording

# dtype effects: "none", "shared" (one per-dtype adjustment common to every class), "class" (per class and dtype),
# "both" (per class and dtype, shrunk toward a per-dtype adjustment common to every class)
SELECTION_SEEDS = 3  # fold assignments a candidate's CV error is averaged over (one alone over-fits the choice)
CANDIDATES = [(shrink, dtypes) for shrink in (0.003, 0.01, 0.03, 0.1, 0.3) for dtypes in ("none", "shared", "class", "both")]
# fewer shape groups than this cannot choose among the candidates (two folds of a TMINS-only trace chose no dtype
# effects and dropped the table's per-dtype rows: TMINS i32 64x64 from 68.0 cycles, as measured, to 56.6); such a
# trace takes the choice the public file's cross-validation makes
MIN_SELECTION_GROUPS = 3
FALLBACK_CHOICE = (0.03, "both")


def priors() -> ParamTable:
    """Return the reference constants the fit starts from (data/a2a3_priors.csv)."""
    return read_table(data_path("a2a3_priors.csv"))


def families() -> dict[str, str]:
    """Return intrinsic class -> cost family."""
    return {r["class"]: r["family"] for r in read_rows("a2a3_cost_families.csv")}


def _prior(table: ParamTable, scope: str, name: str, term: str) -> float | None:
    row = table.lookup("a2a3", "intrinsic", scope, name, term)
    return None if row is None else row.value


def _start_split(table: ParamTable, cls: str) -> tuple[float, float]:
    h = _prior(table, "intrinsic", cls, "head")
    t = _prior(table, "intrinsic", cls, "tail")
    if h is None or t is None:
        h, t = _prior(table, "intrinsic", "default", "head"), _prior(table, "intrinsic", "default", "tail")
    total = (h or 0) + (t or 0)
    return ((h / total, t / total) if total else (1.0, 0.0))


def class_prior(table: ParamTable, cls: str, base: str) -> float | None:
    """Return a class's reference value for `start` (head + tail) or `rep` (per repeat); None if it has none."""
    if base == "start":
        h, t = _prior(table, "intrinsic", cls, "head"), _prior(table, "intrinsic", cls, "tail")
        return None if h is None and t is None else (h or 0.0) + (t or 0.0)
    return _prior(table, "intrinsic", cls, "per_repeat")


def family_prior(table: ParamTable, family: str, base: str) -> float:
    """Return the mean reference value of a cost family's members that have one (0 if none has)."""
    members = [c for c, f in families().items() if f == family] or ["default"]
    vals = [v for v in (class_prior(table, c, base) for c in members) if v is not None]
    return float(np.mean(vals)) if vals else 0.0


@dataclass(frozen=True)
class Column:
    """One parameter node of the fit: its name, parent, prior, scale and how it maps back to table rows."""

    name: str
    parent: str | None
    prior: float | None
    scale: float


def columns_of(key: str, dtypes: str) -> list[str]:
    """Map a plan feature to its parameter columns: head/tail fold into one `start` column per class, and a
    dtype effect adds a class-and-dtype column or a shared per-dtype column."""
    kind, cls, dt = split_key(key)
    if not cls:
        return [kind]
    base = "start" if kind in ("head", "tail") else kind
    if kind.startswith("xfer"):
        return [f"{base}:{cls}"]
    if dtypes == "class":
        return [f"{base}:{cls}:{dt}"]
    if dtypes == "both":
        return [f"{base}:{cls}:{dt}", f"{base}~{dt}"]
    if dtypes == "shared":
        return [f"{base}:{cls}", f"{base}~{dt}"]
    return [f"{base}:{cls}"]


def design(features: list[dict[str, float]], table: ParamTable, dtypes: str) -> tuple[np.ndarray, list[Column]]:
    """Return the feature matrix over parameter columns and the column hierarchy."""
    fam = families()
    cols: dict[str, Column] = {}
    values: list[dict[str, float]] = []

    def ensure(name: str) -> None:
        if name in cols:
            return
        if "~" in name:  # shared dtype adjustment, pulled toward no effect
            base = name.split("~")[0]
            cols[name] = Column(name, None, 0.0, 1.0 if base == "rep" else 5.0)
            return
        parts = name.split(":")
        base = parts[0]
        if len(parts) == 1:  # control parameter
            term = KINDS[base][2]
            p = _prior(table, "control", "*", term)
            cols[name] = Column(name, None, p, max(abs(p or 1.0), 1.0))
            return
        cls = parts[1]
        if len(parts) == 3:
            ensure(f"{base}:{cls}")
            parent = cols[f"{base}:{cls}"]
            cols[name] = Column(name, parent.name, None, parent.scale)
            return
        family = fam.get(cls, "default")
        if base in ("xfer_call", "xfer_byte"):
            term = KINDS[base][2]
            p = _prior(table, "intrinsic", cls, term)
            cols[name] = Column(name, None, p, max(abs(p or 1.0), 1e-3))
            return
        fname = f"{base}@{family}"
        if fname not in cols:
            p = family_prior(table, family, base)
            cols[fname] = Column(fname, None, p, max(abs(p), 1.0 if base == "rep" else 5.0))
        cols[name] = Column(name, fname, None, cols[fname].scale)

    for feats in features:
        row: dict[str, float] = {}
        for key, count in feats.items():
            kind, cls, _ = split_key(key)
            w = 1.0
            if kind in ("head", "tail"):
                h, t = _start_split(table, cls)
                w = h if kind == "head" else t
            for name in columns_of(key, dtypes):
                ensure(name)
                row[name] = row.get(name, 0.0) + w * count
        values.append(row)
    names = [n for n in cols if any(n in r for r in values)]
    X = np.array([[r.get(n, 0.0) for n in names] for r in values])
    return X, [cols[n] for n in names] + [c for n, c in cols.items() if n not in names]


def reference_cycles(features: list[dict[str, float]], table: ParamTable) -> np.ndarray:
    """Return the cycles the reference constants (`table`: the priors) give each row's features (NaN where they lack
    a parameter the row needs)."""
    from costmodel.errors import PtoCostError
    from costmodel.models.a2a3_intrinsic import param_value

    out = np.full(len(features), np.nan)
    for i, feats in enumerate(features):
        try:
            out[i] = sum(count * param_value(table, key) for key, count in feats.items())
        except PtoCostError:
            pass
    return out


def prior_scale(y: np.ndarray, reference: np.ndarray) -> float:
    """Return the median ratio of measured cycles to the reference constants' (`reference_cycles`): how much slower
    or faster than the reference the profiled hardware runs overall (1 where no row has a reference)."""
    ok = np.isfinite(reference) & (reference > 0)
    return float(np.median(y[ok] / reference[ok])) if ok.any() else 1.0


def scaled(table: ParamTable, r: float) -> ParamTable:
    """Return the priors with every value times `r` (`prior_scale`): the fit pulls toward the reference's constants
    as this hardware runs them, so a trace slower throughout fits as well as the original and moves every value
    alike (before, a 0.8x or 1.25x copy of the public A2/A3 file fitted at 11-12 % CV MAPE against 7.4 %)."""
    return ParamTable([replace(row, value=row.value * r) for row in table.rows], table.path)


def scaled_columns(columns: list[Column], r: float) -> list[Column]:
    """Return `design`'s columns as `design` on the `scaled` priors gives them, without rebuilding the feature
    matrix: every prior and every size times `r` (sizes too, so the penalties weigh the same relative deviations)."""
    return [replace(c, prior=None if c.prior is None else c.prior * r, scale=c.scale * r) for c in columns]


def _fit(X, y, columns: list[Column], shrink: float, stderr: bool = True):
    names = [c.name for c in columns][: X.shape[1]]
    parent = {c.name: c.parent for c in columns}
    prior = {c.name: c.prior for c in columns if c.parent is None and c.prior is not None}
    scale = {c.name: c.scale for c in columns}
    lower = {c.name: 0.0 for c in columns if c.parent is None and "~" not in c.name}
    return fit_linear(X, y, names, parent=parent, prior=prior, scale=scale, lower=lower, shrink=shrink, stderr=stderr)


@dataclass(frozen=True)
class A2A3Fit:
    """The chosen fit: parameter rows for the table, per-column report, CV predictions and the selection table."""

    rows: tuple[ParamRow, ...]
    report: pd.DataFrame
    cv_predictions: np.ndarray
    insample: np.ndarray
    selection: pd.DataFrame
    shrink: float
    dtypes: str
    prior_scale: float = 1.0  # the priors' scale the final fit used (`prior_scale`)
    chosen_by_cv: bool = True  # False: too few shape groups to choose (FALLBACK_CHOICE)


def lower_rows(trace: pd.DataFrame) -> tuple[list[dict[str, float]], list[int], list[str]]:
    """Return (features per plannable row, their positions in `trace`, notes per unplannable row)."""
    from costmodel import lower
    from costmodel.errors import PtoCostError

    feats, keep, notes = [], [], []
    multi = "trace" in trace and trace["trace"].nunique() > 1
    for i, row in enumerate(trace.to_dict("records")):
        try:
            req, _ = trace_request(row)
            feats.append(plan_features(lower.lower(req)))
            keep.append(i)
        except PtoCostError as exc:
            notes.append(f"{row_where(row, multi)}: {trace_wording(str(exc))}")
    return feats, keep, notes


@one_blas_thread
def fit_a2a3(trace: pd.DataFrame, *, k: int = 5, seed: int = 0, source: str = "",
             group_by: str = "shape") -> tuple[A2A3Fit, list[str]]:
    """Fit the A2/A3 parameters to the checked trace rows of arch a2a3; returns (fit, notes on skipped rows)."""
    table = priors()
    trace = trace[trace["arch"].str.lower() == "a2a3"].reset_index(drop=True)
    feats, keep, notes = lower_rows(trace)
    used = trace.iloc[keep].reset_index(drop=True)
    y = used["measured_cycles"].to_numpy(float)
    groups = fitted_groups("a2a3", used, notes, group_by)
    k = min(k, len(set(groups)))
    assignments = [grouped_folds(groups, k=k, seed=seed + i) for i in range(SELECTION_SEEDS)]
    reference = reference_cycles(feats, table)
    results = []
    best = None
    few = len(set(groups)) < MIN_SELECTION_GROUPS
    for shrink, dtypes in [FALLBACK_CHOICE] if few else CANDIDATES:
        X, columns = design(feats, table, dtypes)
        preds = []
        for folds in assignments:
            pred = np.full(len(y), np.nan)
            for f in np.unique(folds):
                tr, te = folds != f, folds == f
                r = prior_scale(y[tr], reference[tr])  # from the training rows alone
                pred[te] = _fit(X[tr], y[tr], scaled_columns(columns, r), shrink, stderr=False).predict(X[te])
            preds.append(pred)
        pred = preds[0]
        s = summary(pred, y)
        mean_mape = float(np.mean([summary(q, y)["mape"] for q in preds]))
        results.append({"shrink": shrink, "dtypes": dtypes, **s, "mape_over_assignments": mean_mape})
        key = (round(mean_mape, 6), -shrink, ("none", "shared", "class", "both").index(dtypes))
        if best is None or key < best[0]:
            best = (key, shrink, dtypes, pred)
    _, shrink, dtypes, cv_pred = best
    r = prior_scale(y, reference)
    X, columns = design(feats, table, dtypes)
    table, columns = scaled(table, r), scaled_columns(columns, r)
    fitted = _fit(X, y, columns, shrink)
    rows, report = _to_rows(fitted, columns, X, y, cv_pred, table, source, len(y))
    rows += extent_rows(feats, _source(source, len(y)))
    return (A2A3Fit(tuple(rows), report, cv_pred, fitted.predict(X), pd.DataFrame(results), shrink, dtypes, r,
                    not few), notes)


def label(name: str) -> str:
    """A fitted column's name as the parameter table spells it: `start:vsub:f32` -> `vsub f32 head+tail`,
    `rep~f16` -> `f16 shift per_repeat`, `copy_call` -> `copy_head`."""
    if "~" in name:
        base, dt = name.split("~")
        return f"{dt} shift {'per_repeat' if base == 'rep' else 'head+tail'}"
    kind, _, rest = name.partition(":")
    if kind in ("start", "rep"):
        return f"{rest.replace(':', ' ')} {'per_repeat' if kind == 'rep' else 'head+tail'}"
    if kind in ("xfer_call", "xfer_byte"):
        return f"{rest} {KINDS[kind][2]}"
    return KINDS[kind][2] if kind in KINDS else name


def _source(source: str, n_rows: int) -> str:
    """A written row's `source`: the fit and the trace rows it read."""
    return f"fit: {source} ({n_rows} rows)" if source else f"fit ({n_rows} rows)"


def extent_rows(features: list[dict[str, float]], src: str) -> list[ParamRow]:
    """The measured extent of each intrinsic class, per dtype and over its dtypes ('*'): the most repeats of it one
    measured plan walked (EXTENT_TERM, with the rows that used it as n); an estimate walking more says it
    extrapolates."""
    most: dict[tuple[str, str], tuple[float, int]] = {}
    for feats in features:
        for key, count in feats.items():
            kind, cls, dt = split_key(key)
            if kind == "rep" and count > 0:
                for k in ((cls, dt), (cls, "*")):
                    m, n = most.get(k, (0.0, 0))
                    most[k] = (max(m, count), n + 1)
    return [ParamRow("a2a3", "intrinsic", "intrinsic", cls, dt, "", "*", "", EXTENT_TERM, float(m), None, n, None,
                     f"{src}; measured extent") for (cls, dt), (m, n) in sorted(most.items())]


def _to_rows(fitted, columns: list[Column], X, y, cv_pred, table: ParamTable, source: str, n_rows: int):
    """Turn fitted columns into parameter-table rows (head/tail split back) and a report frame."""
    # every node's fitted value, the latent ones too (a class measured only through its dtype children, a family):
    # a class no row measures takes its family's fitted value, not the family's prior
    val = {**fitted.nodes, **dict(zip(fitted.names, fitted.values))}
    err = dict(zip(fitted.names, fitted.stderr))
    nobs = dict(zip(fitted.names, fitted.n_obs))
    ape = np.abs(cv_pred - y) / y * 100
    rows: list[ParamRow] = []
    report = []
    src = _source(source, n_rows)
    by_name = {c.name: c for c in columns}

    def effective(name: str) -> float:
        if name in val:
            return val[name]
        c = by_name[name]
        return effective(c.parent) if c.parent else (c.prior or 0.0)

    def cv_of(name: str) -> float | None:
        if name not in fitted.names:
            return None
        j = fitted.names.index(name)
        used = X[:, j] != 0
        return float(ape[used].mean()) if used.any() else None

    def add(scope, name, dtype, term, value, stderr, n, cv):
        rows.append(ParamRow("a2a3", "intrinsic", scope, name, dtype, "", "*", "", term, float(value),
                             None if stderr is None or not np.isfinite(stderr) else float(stderr), int(n),
                             cv, src if n else f"{src}; no observations: family or prior value"))

    classes = sorted({c.name.split(":")[1] for c in columns if ":" in c.name} |
                     {r.name for r in table.rows if r.scope == "intrinsic"} | set(families()))
    for cls in classes:
        if any(r.name == cls and r.term in ("per_call", "per_byte") for r in table.rows) or cls.startswith("copy_"):
            for base, term in (("xfer_call", "per_call"), ("xfer_byte", "per_byte")):
                name = f"{base}:{cls}"
                v = effective(name) if name in by_name else _prior(table, "intrinsic", cls, term)
                add("intrinsic", cls, "*", term, v, err.get(name), nobs.get(name, 0), cv_of(name))
                report.append({"parameter": name, "value": v, "stderr": err.get(name), "n_obs": nobs.get(name, 0),
                               "cv_mape": cv_of(name)})
            continue
        h, t = _start_split(table, cls)
        fam_cls = families().get(cls, "default")
        for base in ("start", "rep"):
            name = f"{base}:{cls}"
            root, own = f"{base}@{fam_cls}", class_prior(table, cls, base)
            # a class no row measures takes its family's fitted value; one with a reference value of its own keeps
            # its offset from the family's reference mean (costmodel.md §5: vcmpv_ge/ne 14/2/22 against vsel 13/2/14)
            measured = nobs.get(name, 0) or any(c.parent == name and nobs.get(c.name, 0) for c in columns)
            offset = own - family_prior(table, fam_cls, base) if own is not None and not measured else 0.0
            v = (max(0.0, effective(name) + offset) if name in by_name else
                 max(0.0, effective(root) + offset) if root in by_name else
                 own if own is not None else family_prior(table, fam_cls, base))
            n, e, cv = nobs.get(name, 0), err.get(name), cv_of(name)
            if base == "start":
                add("intrinsic", cls, "*", "head", v * h, None if e is None else e * h, n, cv)
                add("intrinsic", cls, "*", "tail", v * t, None if e is None else e * t, n, cv)
            else:
                add("intrinsic", cls, "*", "per_repeat", v, e, n, cv)
            report.append({"parameter": name, "value": v, "stderr": e, "n_obs": n, "cv_mape": cv})
            for c in columns:
                if c.parent == name and c.name in val and nobs.get(c.name, 0):
                    dt = c.name.split(":")[2]
                    dv = val[c.name] + val.get(f"{base}~{dt}", 0.0)  # a (class, dtype) row carries the shared shift
                    if base == "start":
                        e_dt = err.get(c.name)
                        add("intrinsic", cls, dt, "head", dv * h, None if e_dt is None else e_dt * h, nobs[c.name],
                            cv_of(c.name))
                        add("intrinsic", cls, dt, "tail", dv * t, None if e_dt is None else e_dt * t, nobs[c.name],
                            cv_of(c.name))
                    else:
                        add("intrinsic", cls, dt, "per_repeat", dv, err.get(c.name), nobs[c.name], cv_of(c.name))
                    report.append({"parameter": c.name, "value": dv, "stderr": err.get(c.name), "n_obs": nobs[c.name],
                                   "cv_mape": cv_of(c.name)})
    for c in columns:
        if "~" in c.name and c.name in val:
            base, dt = c.name.split("~")
            term = "per_repeat" if base == "rep" else None
            if term:
                add("dtype_delta", "*", dt, "per_repeat", val[c.name], err.get(c.name), nobs.get(c.name, 0), cv_of(c.name))
            else:
                e_dt = err.get(c.name)
                for part, w in (("head", 0.5), ("tail", 0.5)):
                    add("dtype_delta", "*", dt, part, val[c.name] * w, None if e_dt is None else e_dt * w,
                        nobs.get(c.name, 0), cv_of(c.name))
            report.append({"parameter": c.name, "value": val[c.name], "stderr": err.get(c.name),
                           "n_obs": nobs.get(c.name, 0), "cv_mape": cv_of(c.name)})
    for kind, (_, scope, term) in KINDS.items():
        if scope != "control":
            continue
        v = effective(kind) if kind in by_name else _prior(table, "control", "*", term)
        add("control", "*", "*", term, v, err.get(kind), nobs.get(kind, 0), cv_of(kind))
        report.append({"parameter": kind, "value": v, "stderr": err.get(kind), "n_obs": nobs.get(kind, 0),
                       "cv_mape": cv_of(kind)})
    frame = pd.DataFrame(report)
    if len(frame):
        frame["parameter"] = frame["parameter"].map(label)
    return rows, frame
