"""`pto-cost fit`: check traces, fit every model the traces support, report, write parameters atomically."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from costmodel.errors import TraceError
from costmodel.wording import counted

from .traces import (CONFLICTING, LINE, REPEAT_HINT, REPEAT_TOLERANCE, ROW_UNIT, Problem, average_repeats,
                     check_trace, conflicting_duplicates, cv_groups, key_text, lacks_measured, read_trace)


@dataclass
class FitRun:
    """What one fit command did: per arch/model the selection table, parameter report and CV summary."""

    problems: list[Problem]
    sections: list[dict] = field(default_factory=list)
    rows: list = field(default_factory=list)
    pipeline: object = None
    traces: tuple[str, ...] = ()  # the files read
    repeats: int = 0  # rows that repeated a case already in the traces, averaged into it
    skipped: list[str] = field(default_factory=list)  # an arch's fit that could not run while another's did: why


def outliers(frame: pd.DataFrame, predicted: np.ndarray, *, floor: float = 5.0) -> pd.DataFrame:
    """Rows whose in-sample error is far outside the fit's typical error: |APE| above 3 robust sigmas
    (1.4826 × median absolute deviation) and above `floor` %; returned with line, op, shape and errors."""
    meas = frame["measured_cycles"].to_numpy(float)
    err = (np.asarray(predicted, float) - meas) / meas * 100
    sigma = 1.4826 * np.nanmedian(np.abs(err - np.nanmedian(err)))
    bad = np.abs(err) > max(3 * sigma, floor)
    cols = [c for c in ("trace", LINE, ROW_UNIT, "op", "dtype", "dst_dtype", "rows", "cols", "valid_rows", "valid_cols",
                        "vf_impl_kind", "extra") if c in frame]
    out = frame.loc[bad, cols].rename(columns={LINE: "line", ROW_UNIT: "unit"})  # unit: line, or a Parquet row
    out["measured"] = meas[bad]
    out["predicted"] = np.round(np.asarray(predicted, float)[bad], 1)
    out["error_pct"] = np.round(err[bad], 1)
    return out.sort_values("error_pct", key=np.abs, ascending=False)


def _accuracy_label(rows: pd.DataFrame, k: int, group_by: str) -> str:
    """Return how the fit's error was cross-validated: the folds it used (at most one per group, so fewer than
    --cv asks where the rows hold fewer groups) and the grouping."""
    groups = len(set(cv_groups(rows, group_by)))
    used = min(k, groups)
    fewer = f"; --cv {k} asked, the rows hold {counted(groups, 'group')}" if used < k else ""
    return f"cross-validated ({used}-fold, grouped by {group_by}{fewer})"


def _a5_choice(fit, ops: list[str]) -> str:
    """The A5 fit's choice of form per op, as the report states it."""
    hard = f"the hard-max form (shrink {fit.shrink}, pooling by {fit.pool})"
    smooth = [op for op in ops if op in fit.smooth_ops]
    if len(smooth) == len(ops):
        return f"the smooth form for every op; {hard} for bodies the smooth fit did not see"
    rest = [op for op in ops if op not in fit.smooth_ops]
    return f"the smooth form for {', '.join(smooth) or 'no op'}; {hard} for {', '.join(rest)}"


def why_none(problems: list[Problem], tolerance: float | None) -> str:
    """Say why no trace row is left: the rows left out as conflicting duplicates (with what would accept them), and
    the rows otherwise refused (the first problems)."""
    if not problems:
        return "the traces hold a header and no data rows"
    clash = [p for p in problems if p.message.startswith(CONFLICTING)]
    other = [p for p in problems if not p.message.startswith(CONFLICTING)]
    said = []
    if clash:
        spread = REPEAT_TOLERANCE if tolerance is None else tolerance
        said.append(f"{len(clash)} rows measure a case another row measures more than {spread:g} cycles apart and were "
                    f"left out (first: {clash[0].where}, {clash[0].message}); {REPEAT_HINT}")
    if other:
        rows = len({(p.source, p.line) for p in other})
        by_problem: dict[tuple[str, str], list[Problem]] = {}  # the same problem on many rows is said once
        for p in other:
            by_problem.setdefault((p.column, p.message), []).append(p)
        said.append(f"{counted(rows, 'row')} refused: " + "; ".join(
            f"{at[0].where}{f' and {len(at) - 1} more' if len(at) > 1 else ''}: {column}: {message}"
            for (column, message), at in list(by_problem.items())[:3]))
    return "; ".join(said)


def fit_traces(paths: list[str], *, k: int = 5, model: str = "formula", seed: int = 0, group_by: str = "shape",
               pipeline_base: str | None = None, tolerance: float | None = None,
               formula_base: str | None = None) -> FitRun:
    """Fit the models of every arch present in the traces; returns the run (rows not yet written). The pipeline
    parameters the traces do not move keep their values in the table `pipeline_base` (the one the fit will
    replace), where it exists; the A5 formula's shared terms the traces observed less than the table `formula_base`
    did are pulled toward its values (fit/a5_anchor.py). `tolerance`: how far apart repeated runs of a case may read
    (cycles)."""
    from .metrics import summary

    frames, problems, unit = [], [], {}
    for path in paths:
        raw = read_trace(path)
        unit[Path(path).name] = raw.attrs.get("line_unit", "line")  # a Parquet file has rows, not lines
        if lacks_measured(raw):
            raise TraceError(f"{path}: no measured_cycles column; fit needs measured cycles (`pto-cost predict` "
                             "prices cases without them)")
        good, bad = check_trace(raw, tolerance=tolerance)
        good["trace"] = Path(path).name
        good[ROW_UNIT] = unit[Path(path).name]
        frames.append(good)
        problems += [replace(p, source=Path(path).name) for p in bad] if len(paths) > 1 else bad
    trace = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if len(paths) > 1 and not trace.empty:  # each file was checked on its own; the same case in two must agree too
        for idx in conflicting_duplicates(trace, tolerance):
            spots = [Problem(int(n), "measured_cycles", "", source=t, unit=unit[t])
                     for t, n in trace.loc[idx, ["trace", LINE]].itertuples(index=False)]
            said = ", ".join(f"{v:g}" for v in trace.loc[idx, "measured_cycles"])
            message = f"{CONFLICTING} across traces ({', '.join(p.where for p in spots)}) measured {said}"
            problems += [replace(p, message=message) for p in spots]
            trace = trace.drop(index=idx)
        trace = trace.reset_index(drop=True)
    # repeated runs of a case (within the noise) are one observation, at their mean
    trace, repeats = average_repeats(trace)
    if trace.empty:
        raise TraceError(f"no usable trace rows: {why_none(problems, tolerance)}")
    # one order of the cases whatever the trace's: a least-squares fit of ill-determined coefficients moves with it
    # (a shuffled A5 file moved TCVT bf16->fp4 p2 from 0.07 to 0.03)
    trace = trace.iloc[np.argsort(key_text(trace).to_numpy(), kind="stable")].reset_index(drop=True)
    run = FitRun(problems, traces=tuple(Path(p).name for p in paths), repeats=repeats)
    source = "+".join(sorted(trace["trace"].unique()))
    arches = set(trace["arch"].str.lower())
    if model == "pipeline" and "a5" not in arches:
        raise TraceError("the pipeline model is A5's (its VF programs): the traces have no usable a5 rows")
    def attempt(arch: str, fit_arch, **more):
        """Run one arch's formula fit; where its rows cannot be fitted (one tile shape, none lowered) while another
        arch's can, say so and go on with the others."""
        try:
            return fit_arch(trace, k=k, seed=seed, source=source, group_by=group_by, **more)
        except TraceError as exc:
            if arches <= {arch}:
                raise
            run.skipped.append(f"{arch} formula not fitted: {exc}")
            return None

    a2_fit = None
    if "a2a3" in arches and model in ("formula", "all"):
        from .a2a3_fit import fit_a2a3

        a2_fit = attempt("a2a3", fit_a2a3)
    if a2_fit is not None:
        fit, notes = a2_fit
        a2 = trace[trace["arch"].str.lower() == "a2a3"].reset_index(drop=True)
        from .a2a3_fit import lower_rows as lower_a2a3

        a2 = a2.iloc[lower_a2a3(a2)[1]].reset_index(drop=True)
        y = a2["measured_cycles"].to_numpy(float)
        run.rows += list(fit.rows)
        run.sections.append({"arch": "a2a3", "model": "formula", "selection": fit.selection,
                             "choice": f"shrink {fit.shrink}, dtype effects {fit.dtypes}"
                                       + ("" if fit.chosen_by_cv else " (too few tile shapes to choose by cross-"
                                          "validation: the public file's choice)")
                                       + f", the priors of its classes scaled by {fit.prior_scale:.3f} (the "
                                         "median measured / reference ratio of this trace's rows)",
                             "report": fit.report,
                             "cv": summary(fit.cv_predictions, y), "validation": "cross-validated",
                             "fitted_rows": len(y), "notes": notes,
                             "accuracy": _accuracy_label(a2, k, group_by),
                             "outliers": outliers(a2, fit.insample)})
    a5_fit = None
    if "a5" in arches and model in ("formula", "all"):
        from .a5_formula_fit import fit_a5_formula
        from .a5_anchor import table_shared

        base = None
        if formula_base and Path(formula_base).is_file():
            from costmodel.models.params import read_table

            base = table_shared(read_table(formula_base).rows, Path(formula_base).name)
        a5_fit = attempt("a5", fit_a5_formula, base=base)
    if a5_fit is not None:
        fit, notes = a5_fit
        a5 = trace[trace["arch"].str.lower() == "a5"].reset_index(drop=True).iloc[fit.kept].reset_index(drop=True)
        y = a5["measured_cycles"].to_numpy(float)
        run.rows += list(fit.rows)
        run.sections.append({"arch": "a5", "model": "formula", "selection": fit.selection,
                             "choice": _a5_choice(fit, sorted(set(a5["op"].str.upper()))), "report": _a5_report(fit.report),
                             "value_label": "p1 (per chunk)",
                             "legend": "coefficients: p0 per program, p1 per chunk, p2 per row of a 2D program whose "
                                       "rows hold one chunk, p3 per row and p4 per chunk of one whose rows hold more, "
                                       "p5 a one-chunk 1D program, each ± its standard error (! where it exceeds the "
                                       "value; - where none can be estimated: a fit left with less than one degree "
                                       "of freedom passes through its rows, and a value at a bound has none); the ± "
                                       "column is p1's; "
                                       "(at a bound): the coefficient, or a part of it, ended on a limit the fit sets "
                                       "(e.g. no negative per-chunk cost), so that value is the limit's, not the data's",
                             "cv": summary(fit.cv_predictions, y), "validation": "cross-validated",
                             "fitted_rows": len(y), "notes": notes,
                             "accuracy": _accuracy_label(a5, k, group_by),
                             "outliers": outliers(a5, fit.insample),
                             # shared terms pulled toward the table's values (fit/a5_anchor.py), and that table
                             "anchored": list(fit.anchored), "anchored_to": base.source if fit.anchored else None})
    if "a5" in arches and model in ("pipeline", "all"):
        from .pipeline_fit import build_cases, fit_pipeline, predict_rows

        a5 = trace[trace["arch"].str.lower() == "a5"].reset_index(drop=True)
        cases = build_cases(a5)
        kept, kept_rows = (None, {})
        if pipeline_base and Path(pipeline_base).is_file():
            from costmodel.models.a5_pipeline_uarch import read_params

            kept, kept_rows = read_params(pipeline_base)
        pfit = fit_pipeline(a5, cases=cases, trace_name=source, kept=kept)
        pfit.kept_rows, pfit.kept_from = kept_rows, Path(pipeline_base).name if kept is not None else ""
        run.pipeline = pfit
        pred = predict_rows(cases, pfit.uarch)
        flagged = [f"{n}: {why}" for n, why in pfit.flags().items()]
        profile = ", ".join(f"{w}: {c:.3f}" for w, c in sorted(pfit.window_profile.items()))
        run.sections.append({"arch": "a5", "model": "pipeline", "selection": pd.DataFrame(),
                             "choice": f"window {pfit.uarch.window} (loss by window {profile})",
                             "report": _pipeline_report(pfit),
                             "accuracy": "in-sample (its cross-validation is benchmarks/a5_pipeline.py: minutes per fold)",
                             "cv": summary(pred, a5["measured_cycles"].to_numpy(float)), "notes": flagged,
                             "note_label": "check", "outliers": outliers(a5, pred), "validation": "in-sample",
                             "kept": (f"{len(pfit.kept)} parameter(s) this trace does not move, as {pfit.kept_from} "
                                      f"fitted them: {', '.join(pfit.kept)}" if pfit.kept else "")})
    if not run.sections and run.skipped:  # every arch's fit failed: nothing was fitted
        raise TraceError("; ".join(run.skipped))
    return run


def _a5_report(report: pd.DataFrame) -> pd.DataFrame:
    """One report row per fitted key: its nonzero coefficients `p0..p5` in the parameter column, each ± its standard
    error where the fit gives one and marked where a parameter it sums ended on a bound of the fit (`SmoothFit.bounded`:
    the value is then the bound's, not the data's), p1 as the value."""
    from costmodel.models.a5_formula import P_TERMS

    def coeff(r: dict, t: str) -> str:
        se, bound = r.get(f"se_{t}"), r.get(f"bound_{t}")
        whole, what = bound if isinstance(bound, tuple) else (None, "")
        said = "" if whole or se is None or se != se else f"±{se:.2g}" + (" !" if abs(se) > abs(r.get(t, 0.0)) else "")
        if whole is not None:
            said += f" ({'at' if whole else 'partly at'} a bound: {what})"
        return f"{t}={r.get(t, 0.0):.3g}{said}"

    rows = []
    for r in report.to_dict("records"):
        coeffs = " ".join(coeff(r, t) for t in P_TERMS if abs(r.get(t, 0.0)) >= 5e-4)
        rows.append({"parameter": f"{r['parameter']}  {coeffs}", "value": r["p1"], "stderr": r.get("stderr"),
                     "n_obs": r["n_obs"], "cv_mape": r["cv_mape"]})
    return pd.DataFrame(rows)


def _pipeline_report(fit) -> pd.DataFrame:
    return pd.DataFrame([{"parameter": n, "value": getattr(fit.uarch, n), "stderr": fit.stderr.get(n),
                          "n_obs": fit.n_obs.get(n, 0), "cv_mape": None} for n in fit.free])
