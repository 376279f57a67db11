"""`pto-cost fit`: check traces, fit every model the traces support, report, write parameters atomically."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from costmodel.errors import TraceError

from .traces import Problem, check_trace, read_trace


@dataclass
class FitRun:
    """What one fit command did: per arch/model the selection table, parameter report and CV summary."""

    problems: list[Problem]
    sections: list[dict] = field(default_factory=list)
    rows: list = field(default_factory=list)


def fit_traces(paths: list[str], *, k: int = 5, model: str = "formula", seed: int = 0) -> FitRun:
    """Fit the models of every arch present in the traces; returns the run (rows not yet written)."""
    from .metrics import summary

    frames, problems = [], []
    for path in paths:
        good, bad = check_trace(read_trace(path))
        good["trace"] = Path(path).name
        frames.append(good)
        problems += bad
    trace = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if trace.empty:
        raise TraceError("no usable trace rows: " + "; ".join(str(p) for p in problems[:3]))
    run = FitRun(problems)
    source = "+".join(sorted(trace["trace"].unique()))
    arches = set(trace["arch"].str.lower())
    if "a2a3" in arches and model in ("formula", "all"):
        from .a2a3_fit import fit_a2a3

        fit, notes = fit_a2a3(trace, k=k, seed=seed, source=source)
        y = trace[trace["arch"].str.lower() == "a2a3"]["measured_cycles"].to_numpy(float)
        run.rows += list(fit.rows)
        run.sections.append({"arch": "a2a3", "model": "formula", "selection": fit.selection,
                             "choice": f"shrink {fit.shrink}, dtype effects {fit.dtypes}", "report": fit.report,
                             "cv": summary(fit.cv_predictions, y[: len(fit.cv_predictions)]), "notes": notes})
    return run
