"""Accuracy metrics of predictions against measurements: MAPE, median/worst APE, share within 5 %, Kendall tau."""
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
