"""Accuracy metrics of predictions against measurements: MAPE, median/worst APE, share within 5 %, Kendall tau, and
how well the predictions choose between strategies measured on the same request (order, regret)."""
from __future__ import annotations

import numpy as np
import pandas as pd


def ape(pred: np.ndarray, meas: np.ndarray) -> np.ndarray:
    """Absolute percentage error (in %) of each prediction."""
    pred = np.asarray(pred, dtype=float)
    meas = np.asarray(meas, dtype=float)
    return np.abs(pred - meas) / np.abs(meas) * 100.0


def summary(pred: np.ndarray, meas: np.ndarray) -> dict[str, float]:
    """Return n, mape, median_ape, worst_ape, within_5 (share in %), within_10 and kendall_tau (NaN-free rows only)."""
    from scipy.stats import kendalltau

    pred = np.asarray(pred, dtype=float)
    meas = np.asarray(meas, dtype=float)
    ok = np.isfinite(pred) & np.isfinite(meas)
    p, m = pred[ok], meas[ok]
    if not len(p):
        return {"n": 0, "mape": np.nan, "median_ape": np.nan, "worst_ape": np.nan, "within_5": np.nan,
                "within_10": np.nan, "kendall_tau": np.nan}
    e = ape(p, m)
    tau = kendalltau(p, m, variant="b").statistic if len(p) > 1 and np.ptp(p) > 0 and np.ptp(m) > 0 else np.nan
    return {"n": int(len(p)), "mape": float(e.mean()), "median_ape": float(np.median(e)), "worst_ape": float(e.max()),
            "within_5": float((e <= 5.0).mean() * 100), "within_10": float((e <= 10.0).mean() * 100),
            "kendall_tau": float(tau)}


def grouped(df: pd.DataFrame, by: list[str], pred: str = "predicted_cycles", meas: str = "measured_cycles") -> pd.DataFrame:
    """Return one summary row per group of `by` (columns as in `summary`)."""
    rows = []
    for key, g in df.groupby(by, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, key)), **summary(g[pred].to_numpy(), g[meas].to_numpy())})
    return pd.DataFrame(rows)


def strategy_order_tau(df: pd.DataFrame, shape_cols: list[str], pred: str = "predicted_cycles",
                       meas: str = "measured_cycles") -> float:
    """Kendall tau between predicted and measured order of strategies measured on the same shape (pooled pairs)."""
    concordant = discordant = 0
    for _, g in df.groupby(shape_cols, dropna=False):
        if len(g) < 2:
            continue
        p = g[pred].to_numpy(float)
        m = g[meas].to_numpy(float)
        for i in range(len(g)):
            for j in range(i + 1, len(g)):
                s = np.sign(p[i] - p[j]) * np.sign(m[i] - m[j])
                concordant += s > 0
                discordant += s < 0
    total = concordant + discordant
    return float((concordant - discordant) / total) if total else float("nan")


# the columns that make two trace rows the same request measured in different strategies (vf_impl_kind / strategy)
REQUEST_KEY = ("arch", "op", "dtype", "dst_dtype", "rows", "cols", "valid_rows", "valid_cols", "op_params",
               "round_mode", "saturation_mode", "extra")


def strategy_choice(df: pd.DataFrame, pred: str = "predicted_cycles", meas: str = "measured_cycles",
                    by: list[str] | None = None) -> dict:
    """How well the predictions choose among strategies measured on the same request (rows equal on `by`, else on
    REQUEST_KEY): `requests` with two or more measured strategies, `pairs` of them ordered, `order_tau` (Kendall tau
    over the pooled pairs), `picked_fastest` (% of requests whose predicted fastest is a measured fastest) and the
    regret of taking the predicted fastest — its measured cycles over the measured fastest's, minus 1, in % — as
    `regret_mean`, `regret_p95` and `regret_max` (NaN where no request has two strategies). Strategies tied at the
    predicted minimum are each taken in turn: a request's pick and regret are their means over the tie."""
    key = list(by) if by else [c for c in REQUEST_KEY if c in df]
    ok = df[pred].notna() & df[meas].notna()
    regrets, picked, pairs = [], [], 0
    multi = []
    for _, g in df[ok].groupby(key, dropna=False, sort=False):
        if "strategy" in g and g["strategy"].nunique() < len(g):  # repeated runs of one strategy: their mean
            first = g.iloc[0]
            g = g.groupby("strategy", as_index=False, sort=False)[[pred, meas]].mean().assign(**{c: first[c] for c in key})
        if len(g) < 2:
            continue
        multi.append(g)
        p, m = g[pred].to_numpy(float), g[meas].to_numpy(float)
        chosen = m[p == p.min()]
        regrets.append(float(np.mean(chosen / m.min() - 1)) * 100)
        picked.append(float(np.mean(chosen == m.min())))
        pairs += len(g) * (len(g) - 1) // 2
    if not multi:
        nan = float("nan")
        return {"requests": 0, "pairs": 0, "order_tau": nan, "picked_fastest": nan, "regret_mean": nan,
                "regret_p95": nan, "regret_max": nan}
    r = np.asarray(regrets)
    return {"requests": len(multi), "pairs": pairs, "order_tau": strategy_order_tau(pd.concat(multi), key, pred, meas),
            "picked_fastest": float(np.mean(picked) * 100), "regret_mean": float(r.mean()),
            "regret_p95": float(np.percentile(r, 95)), "regret_max": float(r.max())}
