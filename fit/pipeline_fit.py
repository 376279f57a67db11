"""Fit the A5 pipeline model's class parameters (`A5Uarch`) to a measured A5 trace.

`fit_pipeline(frame)` minimises the relative error (pred - measured) / measured with
`scipy.optimize.least_squares` (soft_l1 loss, bounds where physics demands: latencies and intervals > 0).
Parameters with a reference value (costmodel.md §8) get a weak prior residual so a parameter the data cannot
identify stays at the reference instead of drifting. The dispatch window is an integer: it is profiled over a
few values. Standard errors come from the Jacobian at the optimum (J^T J inverse scaled by the residual
variance). `write_params` writes data/a5_pipeline_params.csv atomically.

The finite-difference Jacobian only re-simulates the rows a parameter can touch (a class latency only moves
rows whose programs contain that class), which keeps a full fit to a couple of minutes.
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from costmodel.models.a5_pipeline import PipelineModel
from costmodel.wording import counted

from .io import atomic_path
from .linear import one_blas_thread
from costmodel.models.a5_pipeline_engine import Template
from costmodel.models.a5_pipeline_uarch import PARAMS_FILE, A5Uarch

# (name, lower, upper, reference prior or None, unit)
FREE: tuple[tuple[str, float, float, float | None, str], ...] = (
    ("startup", 5.0, 45.0, 23.0, "cycles"),
    ("dispatch_width", 1.0, 8.0, 5.0, "instructions/cycle"),
    ("loop_entry", 0.0, 20.0, None, "cycles"),
    ("outer_gap", 0.0, 10.0, None, "cycles"),
    ("ptr_latency", 0.2, 10.0, None, "cycles"),
    ("agu_ii", 0.0, 4.0, None, "cycles"),
    ("agu_lead", 0.0, 60.0, None, "cycles"),
    ("pack_store_serial", 0.0, 60.0, None, "cycles"),
    ("pack_store_pu_gap", 0.0, 300.0, None, "cycles"),
    ("pack_store_row_gap", 0.0, 300.0, None, "cycles"),
    ("pred_latency", 0.2, 10.0, 1.0, "cycles"),
    ("alu_latency", 1.0, 20.0, 5.0, "cycles"),
    ("mul_latency", 1.0, 20.0, 6.0, "cycles"),
    ("sfu32_latency", 1.0, 40.0, 14.0, "cycles"),
    ("sfu32_ii", 0.5, 16.0, 4.0, "cycles"),
    ("sfu16_latency", 1.0, 40.0, 19.0, "cycles"),
    ("sfu16_ii", 0.5, 16.0, 8.0, "cycles"),
    ("cvt1_latency", 1.0, 30.0, 7.0, "cycles"),
    ("cvt1_ii", 0.5, 16.0, 1.0, "cycles"),
    ("cvt_w2_latency", 1.0, 30.0, 7.0, "cycles"),
    ("cvt_w2_ii", 0.5, 16.0, 1.0, "cycles"),
    ("cvt_w4_latency", 1.0, 30.0, 7.0, "cycles"),
    ("cvt_w4_ii", 0.5, 16.0, 1.0, "cycles"),
    ("cvt_n2_latency", 1.0, 30.0, 7.0, "cycles"),
    ("cvt_n2_ii", 0.5, 16.0, 1.0, "cycles"),
    ("cvt_n4_latency", 1.0, 30.0, 7.0, "cycles"),
    ("cvt_n4_ii", 0.5, 16.0, 1.0, "cycles"),
)
WINDOWS = (8, 16, 24, 32, 48)
GLOBAL = ("startup", "dispatch_width", "loop_entry", "outer_gap", "window", "iter_gap", "drain")
FIXED_SOURCE = {
    "drain": "fixed: costmodel.md §8 vf_drain_cost 12",
    "load_latency": "fixed: costmodel.md §8 VLDS -> compute forwarding 6",
    "store_latency": "fixed: costmodel.md §8 data_store_cost 9",
    "iter_gap": "fixed: costmodel.md §8 innermost iterations dispatch 1 cycle apart",
    "load_ports": "fixed: costmodel.md §8 two load ports",
    "store_ports": "fixed: costmodel.md §8 one store port",
    # free, the port IIs traded off against the address unit's (both bound a 2D binary chunk) and fitted folds
    # landed in different minima: TADD's held-out shapes 10 % off in one shape-grouped fold, 1 % with these fixed
    "load_ii": "fixed: costmodel.md §8 missing II entries default to 1 (VLDS has no same-op II of its own)",
    "store_ii": "fixed: costmodel.md §8 missing II entries default to 1 (VSTS has no same-op II of its own)",
    "exu_ports": "fixed: costmodel.md §8 EXU0 and EXU1",
    "alu_ii": "fixed: costmodel.md §8 same-op II 1 for simple ALU ops",
    "mul_ii": "fixed: costmodel.md §8 same-op II 1 for VMUL",
    "scalar_latency": "fixed: one cycle (inferred)",
    "scalar_ii": "fixed: one per cycle (inferred)",
    "pred_ii": "fixed: one per cycle (inferred)",
    "reduce_latency": "fixed: costmodel.md §8 VCMAX/VCMIN latency 16 (fp32); no measured row",
    "reduce_ii": "fixed: costmodel.md §8 missing II entries default to 1",
    "reduce_sum_latency": "fixed: costmodel.md §8 VCADD latency 22 (fp32); no measured row",
    "reduce_sum_ii": "fixed: costmodel.md §8 missing II entries default to 1",
    "reduce16_latency": "fixed: costmodel.md §8 VCMAX/VCMIN latency 17 (fp16; 8-bit lanes alike); no measured row",
    "reduce16_ii": "fixed: costmodel.md §8 missing II entries default to 1",
    "reduce_sum16_latency": "fixed: costmodel.md §8 VCADD latency 24 (fp16; 8-bit lanes alike); no measured row",
    "reduce_sum16_ii": "fixed: costmodel.md §8 missing II entries default to 1",
}
PRIOR_WEIGHT = 0.01


@dataclass
class Cases:
    """The measured rows as programs: `frame` (one row per trace row) and the distinct programs to simulate."""

    frame: pd.DataFrame
    templates: list[Template]
    row_case: np.ndarray            # trace row -> distinct case index
    case_tpl: list[int]             # case -> template index
    case_trips: list[tuple[int, ...]]
    notes: dict[int, str] = field(default_factory=dict)


def program_for(req):
    """Return (VfProgram, note) of a request's default strategy; programs whose tiles exceed the unified buffer
    are still built (the VF program does not depend on buffer addresses) with a note saying so."""
    from costmodel import lower
    from costmodel.errors import ShapeError
    from costmodel.isa_a5 import VfProgram
    from costmodel.lower.a5 import dispatch, forms, vf

    try:
        return lower.lower(req).body[0], ""
    except ShapeError as exc:
        if "unified buffer" not in str(exc):
            raise
        strategy, _ = lower.pick_strategy(req, *dispatch.strategies(req))  # the UB check aside
        segs = vf.segments(req, strategy)
        return VfProgram(strategy, segs[0].kernel.epr, forms.emit(strategy, segs)), f"built without UB placement: {exc}"


def build_cases(frame: pd.DataFrame) -> Cases:
    """Lower every (checked) trace row of an A5 trace to its VF program; rows that fail get case -1."""
    from costmodel.models.a5_pipeline_engine import compile_program

    from .traces import trace_request, trace_wording

    templates: list[Template] = []
    sig_index: dict[tuple, int] = {}
    case_index: dict[tuple, int] = {}
    case_tpl: list[int] = []
    case_trips: list[tuple[int, ...]] = []
    row_case = np.full(len(frame), -1)
    notes: dict[int, str] = {}
    for k, (_, row) in enumerate(frame.iterrows()):
        try:
            req, in_place = trace_request(row)
            prog, note = program_for(req)
            note = "; ".join(n for n in (in_place, note) if n)
        except Exception as exc:  # a row that cannot be modelled is reported, never fatal
            notes[k] = f"{type(exc).__name__}: {trace_wording(str(exc))}"
            continue
        if note:
            notes[k] = note
        tpl = compile_program(prog)
        sig = tpl.signature
        if sig not in sig_index:
            sig_index[sig] = len(templates)
            templates.append(tpl)
        key = (sig_index[sig], tpl.trips)
        if key not in case_index:
            case_index[key] = len(case_tpl)
            case_tpl.append(key[0])
            case_trips.append(key[1])
        row_case[k] = case_index[key]
    return Cases(frame.reset_index(drop=True), templates, row_case, case_tpl, case_trips, notes)


def _depends(tpl: Template, loops_nested: bool) -> set[str]:
    """Parameter names that can change this template's cycles."""
    dep = set(GLOBAL)
    for ins in tpl.instrs:
        if ins.unit == "load":
            dep |= {"load_ii", "load_latency"}
        if ins.unit == "store":
            dep |= {"store_ii", "store_latency"}
        if ins.post:
            dep.add("ptr_latency")
        if ins.agu:
            dep |= {"agu_ii", "agu_lead"}
        if ins.pack:
            dep |= {"pack_store_serial", "pack_store_pu_gap", "pack_store_row_gap"}
        if ins.unit == "pred":
            dep |= {"pred_latency", "pred_ii"}
        if ins.unit == "scalar":
            dep |= {"scalar_latency", "scalar_ii"}
        if ins.unit == "exu":
            dep |= {f"{ins.cls}_latency", f"{ins.cls}_ii"}
    return dep


def own_parameters(cases: Cases) -> dict[str, list[str]]:
    """Return, per op of the trace, the free parameters that only its rows exercise: a fit without its rows
    (leave-one-op-out) leaves them at their starting values (the reference defaults)."""
    deps = [_depends(cases.templates[t], False) for t in cases.case_tpl]
    ops = cases.frame["op"].to_numpy()
    used: dict[str, set[str]] = {}
    for op, c in zip(ops, cases.row_case):
        if c >= 0:
            used.setdefault(op, set()).update(deps[c])
    users = Counter(n for names in used.values() for n in names)  # how many ops exercise each parameter
    return {op: [f[0] for f in FREE if f[0] in mine and users[f[0]] == 1] for op, mine in sorted(used.items())}


def predict_rows(cases: Cases, ua: A5Uarch) -> np.ndarray:
    """Cycles of every trace row of the cases (NaN for a row that could not be lowered)."""
    return np.where(cases.row_case >= 0, predict_cases(cases, ua)[cases.row_case], np.nan)


def predict_cases(cases: Cases, ua: A5Uarch, which: list[int] | None = None) -> np.ndarray:
    """Cycles of the distinct cases (all, or the listed ones; others NaN)."""
    model = PipelineModel(ua)
    out = np.full(len(cases.case_tpl), np.nan)
    for c in (range(len(cases.case_tpl)) if which is None else which):
        out[c] = model.program_cycles(cases.templates[cases.case_tpl[c]], cases.case_trips[c])
    return out


@dataclass
class PipelineFit:
    """A fitted parameter set with its statistics."""

    uarch: A5Uarch
    free: tuple[str, ...]
    stderr: dict[str, float]
    n_obs: dict[str, int]
    n_rows: int
    cost: float
    at_bound: tuple[str, ...]
    window_profile: dict[int, float]
    trace_name: str = ""
    report: str = ""
    kept_rows: dict = field(default_factory=dict)  # the table rows of parameters the trace does not move, by name
    kept_from: str = ""  # that table's file name

    @property
    def kept(self) -> tuple[str, ...]:
        """The parameters a previous fit moved that this trace does not: they keep that fit's value and source."""
        return tuple(n for n, r in self.kept_rows.items() if n not in self.free and n != "window"
                     and not str(r.get("source", "")).startswith("fixed"))

    def flags(self) -> dict[str, str]:
        """Return the free parameters the fit cannot vouch for: `at bound`, or `unidentified` (no finite standard
        error, or one over ten times the value)."""
        out = {}
        for n in self.free:
            se = self.stderr.get(n, float("nan"))
            if n in self.at_bound:
                out[n] = "at bound"
            elif not np.isfinite(se) or se > 10 * max(1, abs(getattr(self.uarch, n))):
                out[n] = "unidentified"
        return out

    def params(self) -> dict[str, float]:
        return {f.name: getattr(self.uarch, f.name) for f in fields(self.uarch)}


@one_blas_thread
def fit_pipeline(frame: pd.DataFrame, *, cases: Cases | None = None, rows: np.ndarray | None = None,
                 init: A5Uarch | None = None, windows: tuple[int, ...] = WINDOWS, loss: str = "soft_l1",
                 f_scale: float = 0.05, max_nfev: int = 60, exclude_mirrors: bool = True,
                 trace_name: str = "", kept: A5Uarch | None = None) -> PipelineFit:
    """Fit the free class parameters to the measured cycles of `frame` (a checked A5 trace).

    `rows` restricts the fit to those trace rows (cross-validation); `exclude_mirrors` drops rows flagged
    `tail_mirror_of_full` = 1 (repeated measurements) from the objective. The parameters no row's program depends on
    keep their values in `kept` (a table in use: a partial trace refines it), else their priors; the free ones start
    from `init`, else the priors.
    """
    from scipy.optimize import least_squares

    cases = cases or build_cases(frame)
    fr = cases.frame
    use = np.ones(len(fr), dtype=bool) if rows is None else np.isin(np.arange(len(fr)), rows)
    use &= cases.row_case >= 0
    if exclude_mirrors and "tail_mirror_of_full" in fr:
        use &= pd.to_numeric(fr["tail_mirror_of_full"], errors="coerce").fillna(0).to_numpy() != 1
    idx = np.flatnonzero(use)
    y = fr["measured_cycles"].to_numpy(float)[idx]
    rc = cases.row_case[idx]
    needed = sorted(set(rc.tolist()))
    deps = [_depends(cases.templates[cases.case_tpl[c]], False) for c in range(len(cases.case_tpl))]
    free = [f for f in FREE if any(f[0] in deps[c] for c in needed)]
    names = [f[0] for f in free]
    lo = np.array([f[1] for f in free])
    hi = np.array([f[2] for f in free])
    priors = [(k, f[3]) for k, f in enumerate(free) if f[3] is not None]
    start = init or A5Uarch()
    base = kept or start
    x0 = np.clip(np.array([getattr(start, n) for n in names], float), lo + 1e-9, hi - 1e-9)
    n_obs = {n: int(sum(1 for c in rc if n in deps[c])) for n in names}
    if len(idx) <= len(names):  # an exact fit: values that explain the rows, not estimates (and no error bars)
        from costmodel.errors import TraceError

        raise TraceError(f"the pipeline fit has {len(names)} free parameters for these rows' programs and the traces "
                         f"hold {counted(len(idx), 'usable a5 row')}; it needs at least "
                         f"{len(names) + 1} (measure more shapes or ops)")

    def residuals(pred_cases: np.ndarray, x: np.ndarray) -> np.ndarray:
        r = (pred_cases[rc] - y) / y
        pr = [PRIOR_WEIGHT * (x[k] - ref) / max(1.0, abs(ref)) for k, ref in priors]
        return np.concatenate([r, pr])

    def run(window: int):
        state: dict[str, Any] = {}

        def ua_of(x):
            return base.with_values({**dict(zip(names, x)), "window": window})

        def fun(x):
            key = x.tobytes()
            if state.get("key") != key:
                state["key"], state["pred"] = key, predict_cases(cases, ua_of(x), needed)
            return residuals(state["pred"], x)

        def jac(x):
            f0 = fun(x)
            p0 = state["pred"]
            J = np.zeros((len(f0), len(x)))
            for k, n in enumerate(names):
                h = 1e-3 * max(1.0, abs(x[k]))
                xk = x.copy()
                xk[k] = xk[k] + h if xk[k] + h <= hi[k] else xk[k] - h
                step = xk[k] - x[k]
                touched = [c for c in needed if n in deps[c]]
                pk = p0.copy()
                if touched:
                    pk[touched] = predict_cases(cases, ua_of(xk), touched)[touched]
                J[:, k] = (residuals(pk, xk) - f0) / step
            return J

        sol = least_squares(fun, x0, jac=jac, bounds=(lo, hi), loss=loss, f_scale=f_scale, max_nfev=max_nfev,
                            x_scale="jac")
        return sol

    profile: dict[int, float] = {}
    best = None
    for w in windows:
        sol = run(w)
        profile[w] = float(sol.cost)
        if best is None or sol.cost < best[1].cost:
            best = (w, sol)
    window, sol = best
    ua = base.with_values({**dict(zip(names, sol.x)), "window": window})
    # standard errors from the Jacobian at the optimum
    J = sol.jac[: len(idx)]
    res = sol.fun[: len(idx)]
    dof = max(1, len(idx) - len(names))
    s2 = float(res @ res) / dof
    stderr = {}
    try:
        cov = np.linalg.pinv(J.T @ J) * s2
        for k, n in enumerate(names):
            stderr[n] = float(np.sqrt(max(cov[k, k], 0.0))) if np.abs(J[:, k]).sum() > 0 else float("inf")
    except np.linalg.LinAlgError:
        stderr = {n: float("inf") for n in names}
    at_bound = tuple(n for k, n in enumerate(names) if sol.x[k] <= lo[k] + 1e-6 or sol.x[k] >= hi[k] - 1e-6)
    fit = PipelineFit(ua, tuple(names), stderr, n_obs, len(idx), float(sol.cost), at_bound, profile, trace_name)
    fit.report = fit_report(fit)
    return fit


def fit_report(fit: PipelineFit) -> str:
    """A text report: each free parameter ± stderr, n_obs, flags (at a bound, unidentified)."""
    lines = [f"A5 pipeline fit on {fit.n_rows} rows{f' of {fit.trace_name}' if fit.trace_name else ''}; "
             f"cost {fit.cost:.4f}; window profile {fit.window_profile} -> {fit.uarch.window}"]
    flags = fit.flags()
    for n in fit.free:
        v = getattr(fit.uarch, n)
        se = fit.stderr.get(n, float("nan"))
        flag = f" [{flags[n]}]" if n in flags else ""
        lines.append(f"  {n:<20}{v:>10.3f} ± {se:<9.3f} n={fit.n_obs.get(n, 0):<4}{flag}")
    return "\n".join(lines)


def write_params(fit: PipelineFit, path: str | os.PathLike | None = None, *, into: Path | None = None) -> Path:
    """Write every A5Uarch field (fitted ones with stderr and n_obs) as CSV, atomically (or into `into`, a temporary
    file the caller's `atomic_path` of `path` renames)."""
    from costmodel._data import data_path

    path = Path(path) if path else data_path(PARAMS_FILE)
    if into is None:
        with atomic_path(path) as tmp:
            return write_params(fit, path, into=tmp)
    _write_table(fit, into)
    return path


def _write_table(fit: PipelineFit, tmp: Path) -> None:
    import csv

    units = {f[0]: f[4] for f in FREE}
    with open(tmp, "w", newline="", encoding="utf-8") as fh:
        fh.write(f"# A5 VF pipeline parameters (costmodel/models/a5_pipeline_uarch.py); written by "
                 f"fit/pipeline_fit.py\n# trace={fit.trace_name or 'unknown'} n_obs={fit.n_rows} "
                 f"loss=soft_l1 on relative error; window profiled over {sorted(fit.window_profile)}\n")
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["name", "value", "stderr", "unit", "n_obs", "source"])
        for f in fields(A5Uarch):
            v = getattr(fit.uarch, f.name)
            if f.name in fit.free:
                se = fit.stderr.get(f.name, float("nan"))
                src = f"fitted on {fit.trace_name or 'trace'}" + (" (at bound)" if f.name in fit.at_bound else "")
                w.writerow([f.name, f"{v:.6g}", f"{se:.3g}", units.get(f.name, "cycles"), fit.n_obs.get(f.name, 0), src])
            elif f.name == "window":
                w.writerow([f.name, v, "", "instructions", fit.n_rows,
                            f"profiled over {sorted(fit.window_profile)} on {fit.trace_name or 'trace'}"])
            elif f.name in fit.kept:  # as the earlier fit wrote it
                r = fit.kept_rows[f.name]
                w.writerow([f.name, r["value"], r.get("stderr", ""), r.get("unit", ""), r.get("n_obs", 0), r["source"]])
            else:
                unit = "ports" if f.name.endswith("ports") else "cycles"
                w.writerow([f.name, f"{v:.6g}", "", unit, 0, FIXED_SOURCE.get(f.name, "fixed: no data moves it")])


def main(argv: list[str] | None = None) -> int:
    """`python -m fit.pipeline_fit TRACE.csv [-o data/a5_pipeline_params.csv]`."""
    import argparse

    from .traces import check_trace, read_trace

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("-o", "--output", default=None)
    args = ap.parse_args(argv)
    good, problems = check_trace(read_trace(args.trace))
    good = good[good["arch"].str.lower() == "a5"]
    fit = fit_pipeline(good, trace_name=Path(args.trace).name)
    print(fit.report)
    print(f"wrote {write_params(fit, args.output)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
