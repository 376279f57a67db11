"""Figures over predictions: predicted-vs-measured and residuals, shape-vs-cycle curves and heatmaps (matplotlib,
imported lazily; plain Figures, no backend chosen)."""
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


# line styles and markers cycled with the colours, so tied series (drawn over each other) and more series than a
# palette has colours stay distinguishable
LINE_STYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
RESIDUAL_LABELS = 12  # residual points outside ±5 % named by their op, worst first


def _style(i: int) -> dict:
    """Colour and marker of the i-th scatter series: tab20's twenty colours × MARKERS, no pair repeated."""
    import matplotlib

    return {"color": matplotlib.colormaps["tab20"](i % 20), "marker": MARKERS[(i // 20 + i) % len(MARKERS)]}


def validation_figure(df: pd.DataFrame, title: str = ""):
    """Return a figure: predicted vs measured (log-log, y = x and ±5 % bands) and the error per row, one colour and
    marker per op (per arch and op where the rows span both); the worst rows outside ±5 % are named on the residual
    panel."""
    ok = df[np.isfinite(df["predicted_cycles"]) & np.isfinite(df["measured_cycles"])]
    ok = ok.assign(err=(ok["predicted_cycles"] - ok["measured_cycles"]) / ok["measured_cycles"] * 100)
    op = ok["op"].astype(str).str.upper()
    if "arch" in ok and ok["arch"].str.lower().nunique() > 1:  # TCVT and the elementwise ops exist on both
        op = ok["arch"].str.lower() + " " + op
    ok = ok.assign(series=op)
    fig = _figure(figsize=(13, 5.5))
    ax1, ax2 = fig.subplots(1, 2)
    for i, name in enumerate(sorted(ok["series"].unique())):
        g = ok[ok["series"] == name]
        style = _style(i)
        ax1.scatter(g["measured_cycles"], g["predicted_cycles"], s=16, label=name, **style)
        ax2.scatter(g["measured_cycles"], g["err"], s=16, **style)
    worst = ok[ok["err"].abs() > 5].assign(a=lambda d: d["err"].abs(), at=lambda d: d["err"].round(1),
                                           label=lambda d: d["series"] + " " + d["dtype"].astype(str))
    # rows on the same point (TCVT fp8_e4m3 and fp8_e5m2 measure and predict alike) share one label
    spots = worst.groupby(["measured_cycles", "at"], sort=False).agg(
        a=("a", "max"), err=("err", "first"), label=("label", lambda v: " / ".join(dict.fromkeys(v))))
    # the panel's height: the ±5 % band is drawn whatever the errors
    span = float(max(ok["err"].max(), 5.0) - min(ok["err"].min(), -5.0)) if len(ok) else 10.0
    placed: list[tuple[float, float]] = []  # (log10 x, text y) of the labels drawn: nearby ones are pushed apart
    step = 0.04 * span
    logs = np.log10(ok["measured_cycles"].to_numpy(float)) if len(ok) else np.zeros(1)
    near = 0.12 * max(float(logs.max() - logs.min()), 0.05)  # about a label's width, in decades of this panel
    for (measured, _), r in spots.nlargest(RESIDUAL_LABELS, "a").sort_values("err").iterrows():
        x, y = float(np.log10(measured)), float(r["err"])
        clash = True
        while clash:  # up past every nearby label, including those a push lands on
            clash = False
            for px, py in placed:
                if abs(x - px) < near and abs(y - py) < 0.999 * step:  # (py + step) - py may round below step
                    y, clash = py + step, True
        placed.append((x, y))
        ax2.annotate(f" {r['label']}", (measured, r["err"]), xytext=(measured, y), fontsize=7, color="dimgrey",
                     va="center", arrowprops=None if y == r["err"] else {"arrowstyle": "-", "color": "lightgrey", "lw": 0.6})
    if len(ok):
        lo = float(min(ok["measured_cycles"].min(), ok["predicted_cycles"].min())) * 0.8
        hi = float(max(ok["measured_cycles"].max(), ok["predicted_cycles"].max())) * 1.25
        xs = np.geomspace(lo, hi, 50)
        ax1.plot(xs, xs, "k-", lw=1, label="predicted = measured")
        ax1.fill_between(xs, xs * 0.95, xs * 1.05, color="grey", alpha=0.2, label="±5 %")
    ax1.set_xscale("log")
    ax1.set_yscale("log")
    ax2.set_xscale("log")
    span_of = (float(ok[["measured_cycles", "predicted_cycles"]].min().min()),
               float(ok[["measured_cycles", "predicted_cycles"]].max().max())) if len(ok) else (1.0, 10.0)
    for axis in (ax1.xaxis, ax1.yaxis, ax2.xaxis):
        _cycles_axis(axis, *span_of)
    ax1.set_xlabel("measured cycles")
    ax1.set_ylabel("predicted cycles")
    ax1.set_title("predicted vs measured")
    ax1.legend(fontsize=7, ncol=2)
    ax2.axhspan(-5, 5, color="grey", alpha=0.2)
    ax2.axhline(0, color="k", lw=1)
    if placed:  # labels pushed above the highest point stay inside the panel
        bottom, top = ax2.get_ylim()
        ax2.set_ylim(bottom, max(top, max(py for _, py in placed) + step))
    ax2.set_xlabel("measured cycles")
    ax2.set_ylabel("error (predicted − measured) / measured [%]")
    n_out = int((ok["err"].abs() > 5).sum())
    ax2.set_title("residuals (no row beyond ±5 %)" if not n_out else
                  f"residuals (the {n_out} row{'s' if n_out > 1 else ''} beyond ±5 % named)" if n_out <= RESIDUAL_LABELS
                  else f"residuals (the {RESIDUAL_LABELS} worst of {n_out} rows beyond ±5 % named)")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def _cycles_axis(axis, lo: float, hi: float) -> None:
    """Label a log-scaled cycles axis spanning `lo`..`hi` in plain numbers, at 1, 2 and 5 per decade over a short
    range (matplotlib's default labels its minor ticks in powers of ten, on top of each other)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    decades = np.log10(max(hi, 1e-9) / max(lo, 1e-9))
    # 1, 2, 5 per decade over a short range; over a wide one every decade (or every other past six)
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if decades <= 3 else (1.0,),
                                      numticks=12 if decades <= 6 else 7))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0f}" if v < 1e5 else f"{v:.0e}".replace("e+0", "e")))
    axis.set_minor_formatter(NullFormatter())


def _series_label(keys: tuple, names: list[str]) -> str:
    return " ".join(str(k) for k in keys) if len(names) > 1 else str(keys[0])


def curves_figure(df: pd.DataFrame, x: str, series: list[str], title: str = "", measured: pd.DataFrame | None = None):
    """Return a figure of cycles vs `x` (rows or cols), one step-line per series, and below it a strip per dtype
    showing which strategy is the default at each `x`.

    Lines are drawn as steps between sampled shapes so repeat and 255-repeat boundaries stay visible; each step ends
    at its sample (a cost that grows with ceil(x / chunk) holds from just past one sample up to the next), so a
    measured row at a width between samples sits on the step of the sample above it. A strategy has one colour
    (in the lines and the strip), a dtype one dash pattern; where several strategies of a dtype are drawn, each later
    one is thinner, so lines that tie stay visible. `measured` rows (columns `x`, measured_cycles, dtype and
    strategy) are crosses in the colour of their strategy's line (their dtype's, where lines are per dtype), one
    legend entry per strategy (and dtype); where they carry `predicted_cycles` (the model at the point's own shape),
    a tick marks that price and a dotted line joins it to the cross.
    """
    import matplotlib

    defaults = df[df["default"]].sort_values(x) if "default" in df else df.iloc[:0]
    strip_rows = defaults["dtype"].nunique()
    fig = _figure(figsize=(11, 6 + 0.35 * strip_rows))
    if strip_rows:
        ax, strip = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [14, 0.8 * strip_rows]})
    else:
        ax, strip = fig.subplots(), None
    xs = np.sort(df[x].unique())
    by_strategy = "strategy" in series
    palette = matplotlib.colormaps["tab10"]
    drawn = [n for n in dict.fromkeys(df.loc[df["cycles"].notna(), "strategy"]) if n]
    colours = {n: palette(k % 10) for k, n in enumerate(drawn)} if by_strategy else {}
    dashes = {dt: LINE_STYLES[k % len(LINE_STYLES)] for k, dt in enumerate(dict.fromkeys(df["dtype"]))}
    groups = list(df[df["cycles"].notna()].groupby(series, sort=False))  # unmodelled points: _mark_unmodelled
    dtype_colours = {}
    # lines can cover each other only where two series have a value at the same x
    can_tie = bool(df[df["cycles"].notna()].groupby([x, "dtype"]).size().gt(1).any())
    for i, (keys, g) in enumerate(groups):
        keys = keys if isinstance(keys, tuple) else (keys,)
        row = dict(zip(series, keys))
        style = {"color": colours[row["strategy"]]} if by_strategy else {"color": palette(i % 10)}
        dtype_colours.setdefault(row.get("dtype", g["dtype"].iloc[0]), style["color"])
        style["ls"] = dashes.get(row.get("dtype", g["dtype"].iloc[0]), "-") if "dtype" in series or by_strategy else "-"
        g = g.groupby(x)["cycles"].first().reindex(xs)  # gaps where the strategy is illegal stay gaps
        rank = list(colours).index(row["strategy"]) if by_strategy else i
        lw = _width(rank, len(colours) or len(groups)) if can_tie else 1.4
        y = g.to_numpy()
        # a run of samples after a gap starts at its first sample: a step reaching back into the gap would price a
        # shape where the strategy is illegal (matplotlib's steps-pre draws it from the NaN sample's x)
        starts = np.flatnonzero(~np.isnan(y) & np.isnan(np.r_[np.nan, y[:-1]]))
        for k, a in enumerate(starts):
            b = a + (np.flatnonzero(np.isnan(y[a:]))[:1].tolist() or [len(y) - a])[0]
            ax.plot(g.index[a:b], y[a:b], drawstyle="steps-pre", marker="o", ms=lw + 1.5, lw=lw,
                    label=_series_label(keys, series) if k == 0 else None, **style)
    if measured is not None and len(measured):
        several = df["dtype"].nunique() > 1
        priced = False
        for (dt, name), m in measured.groupby(["dtype", "strategy"], sort=False):
            colour = colours.get(name) if by_strategy else dtype_colours.get(dt)
            ax.scatter(m[x], m["measured_cycles"], marker="x", color=colour or "black", s=45, lw=1.6, zorder=5,
                       label=f"measured {name}{f' {dt}' if several else ''} (at its valid extent)")
            if "predicted_cycles" in m:
                ax.vlines(m[x], m["measured_cycles"], m["predicted_cycles"], colors=colour or "black", lw=0.9,
                          linestyles=":", zorder=4)
                ax.scatter(m[x], m["predicted_cycles"], marker="_", color=colour or "black", s=90, lw=1.6, zorder=5,
                           label="model at that point (dotted: its error)" if not priced else None)
                priced = True
    _mark_unmodelled(ax, df, x)
    _mark_series_ends(ax, df, x)
    extra = []
    if strip is not None:
        # strategies that are not lines get colours of another palette than the lines'
        strip_colours = colours or {n: matplotlib.colormaps["Pastel1"](k % 9)
                                    for k, n in enumerate(dict.fromkeys(defaults["strategy"]))}
        _default_strip(strip, defaults, x, xs, strip_colours)
        if not by_strategy:
            from matplotlib.patches import Patch

            extra = [Patch(color=c, label=f"default {n}") for n, c in strip_colours.items()]
    if len(xs) == 1:  # one sample: centre it
        ax.set_xlim(xs[0] - max(1.0, 0.1 * abs(xs[0])), xs[0] + max(1.0, 0.1 * abs(xs[0])))
    (strip or ax).set_xlabel("columns (elements)" if x == "cols" else "rows")
    ax.set_ylabel("cycles")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles + extra, labels + [h.get_label() for h in extra], fontsize=8)
    fig.tight_layout()
    return fig


def _width(rank: int, n: int) -> float:
    """Line width of the rank-th of n series: from 3.2 down to 0.8, so a later line drawn over a tied one leaves
    it visible on both sides."""
    return 3.2 - 2.4 * rank / max(n - 1, 1)


def _default_strip(ax, defaults: pd.DataFrame, x: str, xs: np.ndarray, colours: dict) -> None:
    """Draw one bar per dtype under the curves, coloured by the default strategy at each x (`colours`: strategy ->
    colour), named where the bar is wide."""
    step = np.diff(xs).min() if len(xs) > 1 else max(1.0, 0.1 * abs(xs[0]))
    span = (xs.max() - xs.min() + step) if len(xs) else 1
    dtypes = list(dict.fromkeys(defaults["dtype"]))
    # nothing precedes the first sample: its bar reaches back half a step, not below the half row or column
    first = max(xs[0] - step / 2, 0.5 if xs[0] >= 1 else -np.inf) if len(xs) > 1 else -np.inf
    for k, dt in enumerate(dtypes):
        row = len(dtypes) - 1 - k  # the first dtype on top
        g = defaults[defaults["dtype"] == dt]
        pos = pd.Series(np.searchsorted(xs, g[x].to_numpy()), index=g.index)
        # a new bar where the default changes or a sample between has no default (not modelled, or not drawn)
        run = (g["strategy"].ne(g["strategy"].shift()) | pos.diff().ne(1)).cumsum()
        for _, seg in g.groupby(run, sort=False):
            name = seg["strategy"].iloc[0]
            lo, hi = max(seg[x].min() - step, first), seg[x].max()  # a step holds a sample's cost from the one before
            hi += step if len(xs) == 1 else 0  # one sample: centred, like its point
            ax.broken_barh([(lo, hi - lo)], (row + 0.1, 0.8), color=colours.get(name, "lightgrey"), alpha=0.75)
            if hi - lo >= 0.07 * span:
                ax.text((lo + hi) / 2, row + 0.5, name, ha="center", va="center", fontsize=7)
    ax.set_yticks(np.arange(len(dtypes)) + 0.5, [f"default ({dt})" for dt in reversed(dtypes)], fontsize=7)
    ax.set_ylim(0, len(dtypes))
    ax.tick_params(axis="y", length=0)


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
        ax.axvspan(lo - step, hi, color="lightgrey", alpha=0.5, lw=0)  # the x range a sample's step covers
    notes = df[df[x].isin(xs) & df["note"].notna() & (df["note"].astype(str) != "")]["note"].astype(str)
    reason = notes.mode().iloc[0] if len(notes) else "not modelled"
    trailing = not (~dead[dead.index >= xs.min()]).any()  # every sample from the first dead one on is dead
    where = f"from {x} = {xs.min()}" if trailing else f"at {len(xs)} of {len(dead)} {x} values (shaded)"
    ax.annotate(f"not modelled {where}:\n{reason}", (0.99, 0.02), xycoords="axes fraction", ha="right",
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


def _edges(ticks: np.ndarray) -> np.ndarray:
    """Cell edges around sorted tick values: halfway between neighbours, half a gap beyond the ends (one tick: ±0.5)."""
    if len(ticks) == 1:
        return np.array([ticks[0] - 0.5, ticks[0] + 0.5])
    mid = (ticks[1:] + ticks[:-1]) / 2
    return np.concatenate([[ticks[0] - (mid[0] - ticks[0])], mid, [ticks[-1] + (ticks[-1] - mid[-1])]])


def _sample_ticks(ax, xs: np.ndarray, ys: np.ndarray, most: int = 12) -> None:
    """Ticks on sampled values only (every one, or every k-th from the first where there are more than `most`), so no
    tick names a row or column count that was not evaluated (rows 1:64:4 had a tick 0 on the rows=1 cell)."""
    for values, set_ticks in ((xs, ax.set_xticks), (ys, ax.set_yticks)):
        set_ticks(values[::-(-len(values) // most)])


# what a strategy must save over the plotted one to be shown as the fastest: more than the profiler's ±1 cycle of
# noise (measured/README.md) and 1 %, well inside the models' cross-validated error (2-7 % MAPE)
SAVING_SHOWN, CYCLES_SHOWN = 1.0, 2.0


def _worth_switching(d: pd.DataFrame) -> pd.Series:
    """Each point's fastest strategy where it saves at least SAVING_SHOWN % and CYCLES_SHOWN cycles over the plotted
    one (`best_cycles` against `cycles`), else the plotted one; `best` as it is without `best_cycles`."""
    if "best_cycles" not in d:
        return d["best"]
    saved = d["cycles"] - d["best_cycles"]
    small = (saved < d["cycles"] * (SAVING_SHOWN / 100)) | (saved < CYCLES_SHOWN)
    return d["best"].astype(object).where(~small, d["strategy"].astype(object))


def heatmap_figure(df: pd.DataFrame, title: str = "", strategy: str = "default"):
    """Return heatmaps over rows × cols, one row of panels per dtype: the cycles of the default strategy (or of the
    one named: `strategy`; blank where it is illegal), and the fastest strategy when several were evaluated (with
    `best_cycles`, the cycles of the fastest, only where it saves enough: `_worth_switching`). Each cell is centred on
    its rows and cols values."""
    named = strategy not in ("default", "all")
    dtypes = list(dict.fromkeys(df["dtype"]))
    panels = 2 if df["best"].nunique() > 1 else 1
    fig = _figure(figsize=(7 * panels, 5 * len(dtypes)))
    axes = fig.subplots(len(dtypes), panels, squeeze=False)
    for row, dt in enumerate(dtypes):
        sub = df[df["dtype"] == dt]
        d = sub if named or not sub["default"].any() else sub[sub["default"]]
        ys, xs = np.sort(sub["rows"].unique()), np.sort(sub["cols"].unique())
        grid = d.pivot_table(index="rows", columns="cols", values="cycles", aggfunc="first").reindex(index=ys, columns=xs)
        ax = axes[row, 0]
        if grid.empty or not np.isfinite(grid.to_numpy(dtype=float)).any():
            notes = sub["note"].astype(str) if "note" in sub else pd.Series(dtype=str)
            why = notes[notes != ""].mode().iloc[0] if (notes != "").any() else "no point could be modelled"
            ax.text(0.5, 0.5, f"{dt}: not modelled\n{why}", ha="center", va="center", wrap=True, fontsize=8,
                    transform=ax.transAxes)
            ax.set_axis_off()
            for extra in axes[row, 1:]:
                extra.set_axis_off()
            continue
        cells = (_edges(xs), _edges(ys))
        im = ax.pcolormesh(*cells, np.ma.masked_invalid(grid.to_numpy(dtype=float)), cmap="viridis")
        _sample_ticks(ax, xs, ys)
        fig.colorbar(im, ax=ax, label=f"cycles ({strategy if named else 'default strategy'})")
        missing = int((~np.isfinite(grid.to_numpy(dtype=float))).sum())
        xlabel = "columns (elements)"
        if missing:  # the axes' own face shows through the masked cells
            ax.patch.set_facecolor("white")
            ax.patch.set_hatch("///")
            ax.patch.set_edgecolor("0.75")
            xlabel += f"\nhatched: {missing} point(s) not modelled, e.g. {_first_reason(sub, grid)}"
        ax.set_xlabel(xlabel, wrap=True)
        ax.set_ylabel("rows")
        ax.set_title(f"{dt}: cycles")
        if not named and "strategy" in d:
            _outline_defaults(ax, d, xs, ys)
        if panels == 2:
            # a cell whose plotted strategy is kept (the fastest, or nothing saves enough) gets a colour of its own: in
            # the strategy's colour it read as that strategy being the fastest (QA 50)
            kept = f"keep the {strategy if named else 'default'}"
            switch = _worth_switching(d).astype(object)
            if "strategy" in d:
                switch = switch.where(switch.astype(str) != d["strategy"].astype(str), kept)
            names, codes = _category_grid(d.assign(best=switch), "best", xs, ys, order=lambda n: (n != kept, n))
            cmap = _cmap("tab10", len(names))
            axes[row, 1].pcolormesh(*cells, np.ma.masked_invalid(codes), cmap=cmap, vmin=-0.5, vmax=len(names) - 0.5)
            if missing:
                axes[row, 1].patch.set_hatch("///")
                axes[row, 1].patch.set_edgecolor("0.75")
            _sample_ticks(axes[row, 1], xs, ys)
            from matplotlib.patches import Rectangle

            handles = [Rectangle((0, 0), 1, 1, color=cmap(i)) for i in range(len(names))]
            axes[row, 1].legend(handles, names, fontsize=7, loc="upper right")
            axes[row, 1].set_xlabel("columns (elements)")
            axes[row, 1].set_title(f"{dt}: fastest strategy" + (f" (saving at least {SAVING_SHOWN:g} % and "
                                                                   f"{CYCLES_SHOWN:g} cycles)"
                                                                   if "best_cycles" in d else ""))
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def _category_grid(d: pd.DataFrame, column: str, xs: np.ndarray, ys: np.ndarray, order=None
                   ) -> tuple[list[str], np.ndarray]:
    """Return (the names `column` takes over the rows × cols grid, sorted by `order` or by name; each cell's index in
    them, NaN where it has none)."""
    grid = d.pivot_table(index="rows", columns="cols", values=column, aggfunc="first").reindex(index=ys, columns=xs)
    names = sorted((n for n in pd.unique(grid.to_numpy().ravel()) if isinstance(n, str) and n), key=order)
    return names, grid.apply(lambda c: c.map({n: i for i, n in enumerate(names)})).to_numpy(float)


def _outline_defaults(ax, d: pd.DataFrame, xs: np.ndarray, ys: np.ndarray) -> None:
    """Outline the regions of a default-strategy heatmap where the default differs, each named at its middle cell: a
    step in the cycles is then seen to be the emission mode changing (QA 55: TROWSUM's cheap stripe at 96-112 cols
    was another mode, which nothing on the plot said)."""
    names, codes = _category_grid(d, "strategy", xs, ys)
    if len(names) < 2:
        return
    if len(xs) > 1 and len(ys) > 1:
        ax.contour(xs, ys, np.ma.masked_invalid(codes), levels=np.arange(len(names) - 1) + 0.5, colors="white",
                   linewidths=1.2)
    for i, n in enumerate(names):  # at staggered heights, so labels of narrow neighbouring stripes do not overlap
        r, c = np.nonzero(codes == i)
        want = (i + 1) * (len(ys) - 1) // (len(names) + 1)
        at = np.argmin(np.abs(r - want) * len(xs) + np.abs(c - np.median(c)))
        ax.text(xs[c[at]], ys[r[at]], n, ha="center", va="center", fontsize=7, color="white",
                bbox={"facecolor": "black", "alpha": 0.45, "pad": 1.5, "linewidth": 0})


def _first_reason(sub: pd.DataFrame, grid: pd.DataFrame, most: int = 110) -> str:
    """The note most unmodelled cells of a heatmap panel share (notes that differ only in their numbers are one), cut
    to `most` characters."""
    holes = grid.stack(future_stack=True)
    holes = holes[holes.isna()].index
    at = pd.MultiIndex.from_frame(sub[["rows", "cols"]])
    notes = sub.loc[at.isin(holes), "note"].astype(str) if "note" in sub else pd.Series(dtype=str)
    common = commonest_notes(notes)
    if not common:
        return "no reason given"
    text = common[0][0]
    return text if len(text) <= most else text[: most - 1] + "…"


# a number (or shape, 1x200) not inside a name: f16 and e4m3 stay; 1x200 and 1x312 are one kind
NUMBER = r"(?<![A-Za-z_\d.])\d+(?:\.\d+)?(?:x\d+)*"


def commonest_notes(notes: pd.Series) -> list[tuple[str, int]]:
    """Return [(a note, how many share its kind)], most shared first (then in order of appearance), over the non-empty
    notes: notes that differ only in their numbers are one kind, shown with each number its notes share, or the range
    they span ("needs 409600–1228800 B"); the digits of a type name, i8 or e4m3, are no number: i8 and i64 are two
    kinds."""
    import re

    if isinstance(notes.dtype, pd.CategoricalDtype):  # a sweep's notes: count the codes, never build the strings
        codes, names = notes.cat.codes.to_numpy(), np.asarray(notes.cat.categories.astype(object), dtype=object)
    else:
        codes, names = pd.factorize(notes.astype(str))
    codes = codes[codes >= 0]
    counts = np.bincount(codes, minlength=len(names))
    seen, first = np.unique(codes, return_index=True)
    order = seen[np.argsort(first, kind="stable")]  # distinct notes in order of appearance
    distinct = [str(x) for x in np.asarray(names, dtype=object)[order].tolist()]
    order = [i for i, x in zip(order, distinct) if x]
    distinct = [x for x in distinct if x]
    if not distinct:
        return []
    # one split over all distinct notes joined by a NUL (no note holds one) gives each note's text between numbers and
    # its numbers: far faster than a regex call per note. A kind is a note's text with \x01 for each number.
    parts = re.split(f"({NUMBER})", "\0".join(distinct))
    kinds = "\x01".join(parts[0::2]).split("\0")
    tokens = np.array(parts[1::2], dtype=object)
    m = np.array([k.count("\x01") for k in kinds])
    start = np.concatenate([[0], np.cumsum(m)[:-1]])
    kind, _ = pd.factorize(np.array(kinds, dtype=object))  # kinds numbered in order of appearance
    totals = np.bincount(kind, weights=counts[order]).astype(np.int64)
    by_kind = np.argsort(kind, kind="stable")
    members = np.split(by_kind, np.cumsum(np.bincount(kind))[:-1])
    out = []
    for k in np.argsort(-totals, kind="stable"):
        idx = members[k]
        numbers = tokens[start[idx][:, None] + np.arange(m[idx[0]])]  # a row per note of the kind
        out.append((_spanned(distinct[idx[0]], numbers), int(totals[k])))
    return out


def _spanned(first: str, numbers: np.ndarray) -> str:
    """Return `first`, a note of a kind, with each number that differs among the kind's notes (`numbers`: a row of
    number strings per note) shown as the range they span."""
    import re

    if len(numbers) == 1:
        return first
    spans = []
    for col in numbers.T:
        if "x" in "".join(col):  # shapes: ordered as tuples
            ranked = sorted(range(len(col)), key=lambda i: tuple(float(x) for x in col[i].split("x")))
            lo, hi = col[ranked[0]], col[ranked[-1]]
        else:
            values = col.astype(float)
            lo, hi = col[np.argmin(values)], col[np.argmax(values)]
        spans.append(lo if lo == hi else f"{lo}–{hi}")
    shown = iter(spans)
    return re.sub(NUMBER, lambda _m: next(shown), first)
