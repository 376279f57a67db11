"""Figures over predictions: predicted-vs-measured and residuals (matplotlib, imported lazily, Agg backend)."""
from __future__ import annotations

import numpy as np
import pandas as pd


def _figure(**kw):
    """A matplotlib Figure of its own (no pyplot state, no backend chosen: the caller saves or displays it)."""
    from matplotlib.figure import Figure

    return Figure(**kw)


def _cmap(name: str, n: int):
    import matplotlib

    return matplotlib.colormaps[name].resampled(max(n, 1))


def validation_figure(df: pd.DataFrame, title: str = ""):
    """Return a figure: predicted vs measured (log-log, y = x and ±5 % bands) and APE per row, coloured by op."""
    ok = df[np.isfinite(df["predicted_cycles"]) & np.isfinite(df["measured_cycles"])]
    fig = _figure(figsize=(13, 5.5))
    ax1, ax2 = fig.subplots(1, 2)
    ops = sorted(ok["op"].unique())
    cmap = _cmap("tab20", len(ops))
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


def _series_label(keys: tuple, names: list[str]) -> str:
    return " ".join(str(k) for k in keys) if len(names) > 1 else str(keys[0])


def curves_figure(df: pd.DataFrame, x: str, series: list[str], title: str = "", measured: pd.DataFrame | None = None):
    """Return a figure of cycles vs `x` (rows or cols), one step-line per series, with default-strategy changes marked.

    Lines are drawn as steps between sampled shapes so repeat and 255-repeat boundaries stay visible; each step ends
    at its sample (a cost that grows with ceil(x / chunk) holds from just past one sample up to the next), so a
    measured row at a width between samples sits on the step of the sample above it.
    """
    fig = _figure(figsize=(11, 6))
    ax = fig.subplots()
    xs = np.sort(df[x].unique())
    for keys, g in df[df["cycles"].notna()].groupby(series, sort=False):  # unmodelled points: _mark_unmodelled
        keys = keys if isinstance(keys, tuple) else (keys,)
        g = g.groupby(x)["cycles"].first().reindex(xs)  # gaps where the strategy is illegal stay gaps
        ax.plot(g.index, g.to_numpy(), drawstyle="steps-pre", marker=".", ms=3, lw=1.3, label=_series_label(keys, series))
    defaults = df[df["default"]].sort_values(x) if "default" in df else df.iloc[:0]
    for dt, g in defaults.groupby("dtype", sort=False):
        change = g["strategy"].ne(g["strategy"].shift())
        first = True
        for xv, name in zip(g.loc[change, x], g.loc[change, "strategy"]):
            if first:
                first = False
                continue
            ax.axvline(xv, color="grey", ls=":", lw=1)
            ax.annotate(f"default → {name}" + (f" ({dt})" if df["dtype"].nunique() > 1 else ""), (xv, 1.0),
                        xycoords=("data", "axes fraction"), rotation=90, va="top", ha="right", fontsize=7, color="dimgrey")
    if measured is not None and len(measured):
        ax.scatter(measured[x], measured["measured_cycles"], marker="x", color="black", s=40, zorder=5,
                   label="measured (at its valid extent)")
    _mark_unmodelled(ax, df, x)
    _mark_series_ends(ax, df, x)
    ax.set_xlabel(f"{'columns' if x == 'cols' else 'rows'} (elements)")
    ax.set_ylabel("cycles")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _mark_unmodelled(ax, df: pd.DataFrame, x: str) -> None:
    """Shade the x values where no strategy could be modelled and say why (e.g. tiles beyond the unified buffer)."""
    if "note" not in df:
        return
    dead = df.groupby(x)["cycles"].apply(lambda c: c.isna().all())
    xs = dead.index[dead.to_numpy()]
    if not len(xs):
        return
    step = np.diff(np.sort(df[x].unique())).min() if df[x].nunique() > 1 else 1
    for lo, hi in _runs(np.sort(xs.to_numpy()), step):
        ax.axvspan(lo - step / 2, hi + step / 2, color="lightgrey", alpha=0.5, lw=0)
    notes = df[df[x].isin(xs) & df["note"].notna() & (df["note"].astype(str) != "")]["note"].astype(str)
    reason = notes.mode().iloc[0] if len(notes) else "not modelled"
    ax.annotate(f"not modelled from {x} = {xs.min()}:\n{reason}", (0.99, 0.02), xycoords="axes fraction", ha="right",
                va="bottom", fontsize=7, color="dimgrey", wrap=True)


def _mark_series_ends(ax, df: pd.DataFrame, x: str) -> None:
    """Where one dtype stops being modelled before the others (its tiles are larger), mark where and why."""
    if "note" not in df or df["dtype"].nunique() < 2:
        return
    dead_all = df.groupby(x)["cycles"].apply(lambda c: c.isna().all())
    for dt, g in df.groupby("dtype", sort=False):
        dead = g.groupby(x)["cycles"].apply(lambda c: c.isna().all())
        own = dead[dead.to_numpy() & ~dead_all.reindex(dead.index).to_numpy()]
        if not len(own):
            continue
        start = own.index.min()
        notes = g[(g[x] == start) & (g["note"].astype(str) != "")]["note"].astype(str)
        ax.axvline(start, color="grey", ls="--", lw=0.8)
        why = " (beyond the unified buffer)" if len(notes) and "unified buffer" in notes.iloc[0] else ""
        ax.annotate(f"{dt} not modelled from {x} = {start}{why}",
                    (start, 0.98), xycoords=("data", "axes fraction"), rotation=90, va="top", ha="left", fontsize=7,
                    color="dimgrey")


def _runs(values: np.ndarray, step: float) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for v in values:
        if out and v - out[-1][1] <= step:
            out[-1] = (out[-1][0], v)
        else:
            out.append((v, v))
    return out


def heatmap_figure(df: pd.DataFrame, title: str = ""):
    """Return heatmaps over rows × cols, one row of panels per dtype: default-strategy cycles, and the fastest
    strategy when several were evaluated."""
    dtypes = list(dict.fromkeys(df["dtype"]))
    panels = 2 if df["best"].nunique() > 1 else 1
    fig = _figure(figsize=(7 * panels, 5 * len(dtypes)))
    axes = fig.subplots(len(dtypes), panels, squeeze=False)
    for row, dt in enumerate(dtypes):
        sub = df[df["dtype"] == dt]
        d = sub[sub["default"]] if sub["default"].any() else sub
        grid = d.pivot_table(index="rows", columns="cols", values="cycles", aggfunc="first")
        extent = [grid.columns.min(), grid.columns.max(), grid.index.min(), grid.index.max()]
        ax = axes[row, 0]
        im = ax.imshow(grid.to_numpy(), origin="lower", aspect="auto", cmap="viridis", extent=extent)
        fig.colorbar(im, ax=ax, label="cycles (default strategy)")
        ax.set_xlabel("columns (elements)")
        ax.set_ylabel("rows")
        ax.set_title(f"{dt}: cycles")
        if panels == 2:
            best = d.pivot_table(index="rows", columns="cols", values="best", aggfunc="first")
            names = sorted(n for n in pd.unique(best.to_numpy().ravel()) if isinstance(n, str) and n)
            codes = best.apply(lambda c: c.map({n: i for i, n in enumerate(names)})).to_numpy(float)
            cmap = _cmap("tab10", len(names))
            axes[row, 1].imshow(codes, origin="lower", aspect="auto", cmap=cmap, vmin=-0.5, vmax=len(names) - 0.5,
                                extent=extent)
            from matplotlib.patches import Rectangle

            handles = [Rectangle((0, 0), 1, 1, color=cmap(i)) for i in range(len(names))]
            axes[row, 1].legend(handles, names, fontsize=7, loc="upper right")
            axes[row, 1].set_xlabel("columns (elements)")
            axes[row, 1].set_title(f"{dt}: fastest strategy")
    fig.suptitle(title)
    fig.tight_layout()
    return fig
