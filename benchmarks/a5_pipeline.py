"""Accuracy and speed of the A5 pipeline model (run on demand: `python benchmarks/a5_pipeline.py`).

* (a) 5-fold cross-validation grouped by shape: all rows of one (rows, cols) are in the same fold;
* (b) leave-one-op-out: the op's rows are entirely out of the fit, then predicted;
* (c) the same with the anchored model `auto` uses for an op without formula parameters (models/a5_anchored.py);
* per op and overall: MAPE, share within 5 %, worst APE; rows the model cannot explain are listed;
* speed: estimates/s of the vectorised `cycles_for` path on a 100 000-point grid.

Every fit here starts from the reference defaults (`A5Uarch()`), not from the shipped parameters, so nothing
of a held-out row leaks in through the starting point; the integer dispatch window is taken from the shipped
fit (a hyper-parameter chosen on all rows: said so in the output). The 16 fits run `--jobs` at a time (default: one per
core; about 25 min on 2 cores). Skips cleanly when ../shared/measured is absent.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
MEASURED = ROOT.parent / "shared" / "measured" / "a5_vf_cycles.csv"

from fit.linear import grouped_folds  # noqa: E402

# Groups the model does not explain structurally (see the report at the end).
UNEXPLAINED = {
    "TSEL fp32": "fp32 TSEL: 1D cost depends on trip-count parity and 2D costs ~7 cycles/chunk (upstream keys "
                 "TSel_b32_even/odd); no class-level mechanism in our program explains it",
    "TCVT 1D widening, 1 iteration": "1D widening TCVT with one iteration measures more than with 5-10 "
                                      "iterations (81 vs 65 cycles): not monotone, no pipeline cause",
}


def _summ(df: pd.DataFrame, col: str) -> pd.DataFrame:
    from fit.metrics import summary

    rows = []
    for op, g in df.groupby("op"):
        s = summary(g[col].to_numpy(), g["measured_cycles"].to_numpy())
        rows.append({"op": op, **{k: s[k] for k in ("n", "mape", "within_5", "worst_ape")}})
    s = summary(df[col].to_numpy(), df["measured_cycles"].to_numpy())
    rows.append({"op": "ALL", **{k: s[k] for k in ("n", "mape", "within_5", "worst_ape")}})
    return pd.DataFrame(rows)


ANCHORED_TITLE = ("(c) leave-one-op-out, anchored model (what `auto` gives an op without formula parameters): the "
                  "pipeline of (b) plus the mean formula - pipeline difference of the other measured ops, formula "
                  "fitted without the op")

_STATE: dict = {}


def _load() -> None:
    """Build the measured cases once per process (workers start here)."""
    from costmodel.models.a5_pipeline_uarch import shipped
    from fit.pipeline_fit import build_cases
    from fit.traces import check_trace, read_trace

    good, _ = check_trace(read_trace(MEASURED))
    _STATE["cases"] = build_cases(good)
    _STATE["window"] = shipped().window


def _fit_and_predict(train: np.ndarray, max_nfev: int, held_out: str = "") -> tuple[np.ndarray, np.ndarray | None]:
    """Return every row's cycles under parameters fitted on rows `train` from the reference defaults, and, for a
    held-out op, its rows' cycles under the anchored model built from those parameters and a formula fit without it
    (NaN elsewhere)."""
    from costmodel.models.a5_pipeline_uarch import A5Uarch
    from fit.pipeline_fit import fit_pipeline, predict_rows

    cases = _STATE["cases"]
    fit = fit_pipeline(cases.frame, cases=cases, rows=train, init=A5Uarch(), windows=(_STATE["window"],),
                       max_nfev=max_nfev)
    return predict_rows(cases, fit.uarch), (_anchored(held_out, fit.uarch) if held_out else None)


def _anchored(op: str, uarch) -> np.ndarray:
    """Cycles of `op`'s rows by the anchored model (costmodel/models/a5_anchored.py) on pipeline parameters `uarch`
    and a formula table fitted without `op`'s rows: pipeline(op) + mean over the other measured ops of their
    formula - pipeline difference on the same tiles."""
    from costmodel import lower
    from costmodel.models.a5_anchored import AnchoredPipeline
    from costmodel.models.a5_pipeline import PipelineModel
    from costmodel.models.params import ParamTable
    from fit.a5_formula_fit import _smooth_rows, lower_rows
    from fit.a5_smooth_fit import fit_smooth
    from fit.traces import trace_request

    frame = _STATE["cases"].frame
    rows, _, _ = lower_rows(frame)
    names = np.array([k["name"] for k in rows.keys], dtype=object)
    train = np.flatnonzero(names != op)
    fit = fit_smooth(rows, train)
    table = ParamTable(_smooth_rows(fit, rows, np.zeros(len(rows.y)), "loo", set(names[train]))[0])
    model = AnchoredPipeline(table, PipelineModel(uarch))
    out = np.full(len(frame), np.nan)
    for i in np.flatnonzero((frame["op"] == op).to_numpy()):
        out[i] = model.cost(lower.lower(trace_request(frame.iloc[i])[0]))[0]
    return out


def accuracy(max_nfev: int, jobs: int = 1) -> pd.DataFrame:
    """Return the measured rows with `shipped`, `cv` (5-fold grouped by shape), `looo` (leave one op out) and
    `anchored` (leave one op out, anchored model) predictions; the 16 fits run on `jobs` processes."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from costmodel.models.a5_pipeline_uarch import shipped
    from fit.pipeline_fit import predict_rows

    _load()
    cases = _STATE["cases"]
    fr = cases.frame.copy()
    fr["shipped"] = predict_rows(cases, shipped())
    folds = grouped_folds((fr["rows"].astype(str) + "x" + fr["cols"].astype(str)).to_numpy(), 5, seed=0)
    tasks = [(f"fold {f}", "cv", folds == f, "") for f in range(5)]
    tasks += [(f"held out {op}", "looo", (fr["op"] == op).to_numpy(), op) for op in sorted(fr["op"].unique())]
    fr["cv"] = fr["looo"] = fr["anchored"] = np.nan
    t0 = time.time()
    with ProcessPoolExecutor(max_workers=jobs, initializer=_load) as pool:
        running = {pool.submit(_fit_and_predict, np.flatnonzero(~test), max_nfev, op): (label, col, test)
                   for label, col, test, op in tasks}
        for done in as_completed(running):
            label, col, test = running[done]
            pred, anchored = done.result()
            fr.loc[test, col] = pred[test]
            if anchored is not None:
                fr.loc[test, "anchored"] = anchored[test]
            print(f"  {label}: {int((~test).sum())} train rows, done at {time.time() - t0:.0f} s", flush=True)
    return fr


def tag_unexplained(fr: pd.DataFrame) -> pd.Series:
    tag = pd.Series("", index=fr.index)
    tag[(fr["op"] == "TSEL") & (fr["dtype"] == "fp32")] = "TSEL fp32"
    dst_bits = fr["dst_dtype"].map({"fp32": 32, "bf16": 16, "fp16": 16}).fillna(0)
    src_bits = fr["dtype"].map({"fp32": 32, "bf16": 16, "fp16": 16, "fp8_e4m3": 8, "fp8_e5m2": 8, "hif8": 8,
                                "fp4_e1m2": 4, "fp4_e2m1": 4}).fillna(0)
    one_d = fr["rows"].eq(1) | fr["valid_cols"].eq(fr["cols"])
    small = fr["valid_rows"] * fr["valid_cols"] <= 256
    tag[(fr["op"] == "TCVT") & (dst_bits > src_bits) & one_d & small] = "TCVT 1D widening, 1 iteration"
    return tag


def speed(n: int = 100_000) -> dict[str, float]:
    from costmodel import api
    from costmodel.models.a5_pipeline import PipelineModel, forget_simulations

    rng = np.random.default_rng(0)
    out = {}
    for label, op, shape, dt, kw in (("TADD f32 2d-no-post-update", "TADD", (10, 224), "f32", {"valid": (10, 192)}),
                                     ("TEXP f16 1d-post-update", "TEXP", (1, 1280), "f16", {})):
        prog = api.plan(op, shape, dt, "a5", **kw).body[0]
        forget_simulations()  # models of the shipped parameters share one cache per process
        m = PipelineModel()
        two_d = prog.form.startswith("2d")
        inner = rng.integers(1, 257 if two_d else 1025, n)
        outer = rng.integers(1, 65, n) if two_d else None
        t = time.perf_counter()
        c = m.cycles_for(prog, inner=inner, outer=outer)
        cold = time.perf_counter() - t
        t = time.perf_counter()
        m.cycles_for(prog, inner=inner, outer=outer)
        warm = time.perf_counter() - t
        assert np.isfinite(c).all()
        out[label] = (n / cold, n / warm)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-nfev", type=int, default=20, help="least-squares evaluations per fit")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="fits run in parallel (default: all cores)")
    ap.add_argument("--speed-only", action="store_true")
    args = ap.parse_args()
    print("vectorised path (cycles_for) on 100 000 random trip pairs:")
    for label, (cold, warm) in speed().items():
        print(f"  {label:<30} {cold:>12,.0f} estimates/s (cold cache)  {warm:>12,.0f} estimates/s (warm)")
    if args.speed_only:
        return 0
    if not MEASURED.exists():
        print(f"skipped accuracy: {MEASURED} is not present")
        return 0
    fr = accuracy(args.max_nfev, max(1, args.jobs))
    fr["unexplained"] = tag_unexplained(fr)
    pd.set_option("display.width", 200)
    fmt = {"mape": "{:.2f}".format, "within_5": "{:.0f}".format, "worst_ape": "{:.1f}".format}
    for col, title in (("shipped", "shipped parameters (fitted on all rows; in-sample)"),
                       ("cv", "(a) 5-fold CV grouped by shape (rows, cols)"),
                       ("looo", "(b) leave-one-op-out (each op predicted by a fit without its rows)"),
                       ("anchored", ANCHORED_TITLE)):
        print(f"\n{title}")
        print(_summ(fr, col).to_string(index=False, formatters=fmt))
        ok = fr[fr["unexplained"] == ""]
        s = _summ(ok, col).iloc[-1]
        print(f"  without the unexplained groups: n={s.n} MAPE {s.mape:.2f} % within 5 % {s.within_5:.0f} % worst {s.worst_ape:.1f} %")
        variants = fr[fr["op"].isin(["TRECIP", "TSEL"])]
        by = variants.assign(op=variants["op"] + " " + variants["op_params"].fillna("").replace("", "(none)")
                             + " " + variants["dtype"])
        print("  by variant: " + "; ".join(f"{r.op} {r.mape:.2f} % (n={r.n})" for r in _summ(by, col).iloc[:-1].itertuples()))
    from fit.pipeline_fit import own_parameters

    own = {op: names for op, names in own_parameters(_STATE["cases"]).items() if names}
    print("\nparameters only one op's rows exercise (leave-one-op-out leaves them at the reference defaults):")
    for op, names in own.items():
        print(f"  {op}: {', '.join(names)}")
    print("\nrows the model does not explain structurally:")
    for tag, why in UNEXPLAINED.items():
        g = fr[fr["unexplained"] == tag]
        print(f"  {tag} ({len(g)} rows): {why}")
    worst = fr.assign(ape=(fr["looo"] - fr["measured_cycles"]).abs() / fr["measured_cycles"] * 100)
    print("\nworst leave-one-op-out rows:")
    cols = ["op", "dtype", "dst_dtype", "rows", "cols", "valid_rows", "valid_cols", "op_params", "measured_cycles",
            "looo", "ape", "unexplained"]
    print(worst.sort_values("ape", ascending=False)[cols].head(15).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
