"""Figures over predictions: predicted-vs-measured and residuals (matplotlib, imported lazily, Agg backend)."""
from __future__ import annotations

import numpy as np
import pandas as pd


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def validation_figure(df: pd.DataFrame, title: str = ""):
    """Return a figure: predicted vs measured (log-log, y = x and ±5 % bands) and APE per row, coloured by op."""
    plt = _pyplot()
    ok = df[np.isfinite(df["predicted_cycles"]) & np.isfinite(df["measured_cycles"])]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5.5))
    ops = sorted(ok["op"].unique())
    cmap = plt.get_cmap("tab20", max(len(ops), 1))
    for i, op in enumerate(ops):
        g = ok[ok["op"] == op]
        ax1.scatter(g["measured_cycles"], g["predicted_cycles"], s=14, color=cmap(i), label=op)
        err = (g["predicted_cycles"] - g["measured_cycles"]) / g["measured_cycles"] * 100
        ax2.scatter(g["measured_cycles"], err, s=14, color=cmap(i))
    if len(ok):
        lo = float(min(ok["measured_cycles"].min(), ok["predicted_cycles"].min())) * 0.8
        hi = float(max(ok["measured_cycles"].max(), ok["predicted_cycles"].max())) * 1.25
        xs = np.geomspace(lo, hi, 50)
        ax1.plot(xs, xs, "k-", lw=1, label="predicted = measured")
        ax1.fill_between(xs, xs * 0.95, xs * 1.05, color="grey", alpha=0.2, label="±5 %")
    ax1.set_xscale("log")
    ax1.set_yscale("log")
    ax1.set_xlabel("measured cycles")
    ax1.set_ylabel("predicted cycles")
    ax1.set_title("predicted vs measured")
    ax1.legend(fontsize=7, ncol=2)
    ax2.axhspan(-5, 5, color="grey", alpha=0.2)
    ax2.axhline(0, color="k", lw=1)
    ax2.set_xscale("log")
    ax2.set_xlabel("measured cycles")
    ax2.set_ylabel("error (predicted − measured) / measured [%]")
    ax2.set_title("residuals")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
