"""Vectorised sweeps: a frame of requests in, the same frame with `cycles`, `strategy`, `model`, `default`,
`best` and `note` out (DESIGN.md §2).

Rows are grouped by everything but their shape (op, dtypes, arch, op parameters). A group whose family has a
closed form (`costmodel.vector`: A2/A3 and A5 unary, binary and binary-scalar ops) is costed with numpy over
its shape arrays — every legal strategy of every row, no plan per row. Every other group, and the rows a closed
form does not cover, take the per-request path: each distinct request is lowered and costed once (strategy by
strategy) and merged back. Both paths fill the same per-row table (strategy -> cycles and model, default
strategy), so the output does not depend on the path taken.

Per row: `strategy` `default` gives the default strategy's row, `all` one row per legal strategy (the default
first), a name that strategy's row. A point that cannot be modelled (illegal strategy, tile too big for the
unified buffer, op not modelled) gets NaN cycles and the reason in `note`; nothing aborts. `model` names the
model that priced the row (A5 `auto`: `formula` where the key has parameters, else `pipeline`).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

REQUEST_COLUMNS = ("op", "dtype", "dst_dtype", "arch", "rows", "cols", "valid_rows", "valid_cols", "static_valid")
PARAM_COLUMNS = ("scalar", "order", "src0_valid", "src1_valid", "expand_mode", "expanded", "idx_dtype", "in_place",
                 "vf_impl_kind", "precision", "round_mode", "saturation", "repeat", "mask", "dst_rep_stride",
                 "src_blk_stride", "src_rep_stride", "binary", "dst_layout", "src_layout", "gm_shape", "gm_dynamic",
                 "pad", "src_valid", "layout", "src_loc", "dst_loc")
SHAPE_COLUMNS = ("rows", "cols", "valid_rows", "valid_cols")
OUTPUT_COLUMNS = ("cycles", "strategy", "model", "default", "best", "note")
ASK_DEFAULT, ASK_ALL, ASK_UNKNOWN = -1, -2, -3


def _normalise(frame):
    df = frame.copy(deep=False)  # copy-on-write: the caller's frame is never modified
    if "strategy" not in df:
        df["strategy"] = "default"
    df["strategy"] = df["strategy"].fillna("default").astype(str).replace({"": "default", "None": "default"})
    for col, src in (("valid_rows", "rows"), ("valid_cols", "cols")):
        if col not in df:
            df[col] = df[src]
        df[col] = df[col].fillna(df[src]).astype(int)
    if "dst_dtype" not in df:
        df["dst_dtype"] = ""
    df["dst_dtype"] = df["dst_dtype"].fillna("").astype(str)
    if "arch" not in df:
        df["arch"] = "a2a3"
    if "static_valid" not in df:
        df["static_valid"] = False
    return df


def _key_columns(df) -> list[str]:
    return [c for c in (*REQUEST_COLUMNS, *PARAM_COLUMNS) if c in df.columns]


def request_kwargs(values: dict[str, Any], rows: int, cols: int, vr: int, vc: int) -> dict[str, Any]:
    """Return the `make_request` keywords of one sweep row (empty and missing parameters left out)."""
    kw = {k: v for k, v in values.items() if k not in (*SHAPE_COLUMNS, "dst_dtype")
          and v is not None and v == v and v != ""}
    kw["shape"] = (int(rows), int(cols))
    kw["valid"] = (int(vr), int(vc))
    if values.get("dst_dtype") and values["dst_dtype"] != values["dtype"]:
        kw["dst_dtype"] = values["dst_dtype"]
    kw["static_valid"] = bool(kw.get("static_valid", False))
    return kw


class Models:
    """The cost model instance of each arch for one sweep, shared by all its rows (the pipeline model's caches)."""

    def __init__(self, name: str):
        self.name = name
        self._by_arch: dict[str, Any] = {}

    def get(self, arch: str):
        """Return the model for `arch`; raises PtoCostError when the arch has no such model."""
        from .errors import PtoCostError
        from .models import registry

        if arch not in self._by_arch:
            try:
                self._by_arch[arch] = registry.model_for(arch, self.name)
            except PtoCostError as exc:
                self._by_arch[arch] = exc
        got = self._by_arch[arch]
        if isinstance(got, PtoCostError):
            raise type(got)(str(got))
        return got


def evaluate_key(values: dict[str, Any], model: str | Models) -> tuple[dict[str, tuple[float, str]], str, str]:
    """Return ({strategy: (cycles, model name)} over every legal strategy, default strategy, note) for one request.

    The per-request path: lower the request in each legal strategy and cost the plan (as `estimate` does,
    without verification). A request that cannot be modelled gives ({}, "", the reason).
    """
    from . import lower
    from .errors import PtoCostError
    from .operands import make_request

    models = model if isinstance(model, Models) else Models(model)
    kw = request_kwargs(values, values["rows"], values["cols"], values["valid_rows"], values["valid_cols"])
    try:
        req = make_request(**kw)
        default = lower.resolve_strategy(req)[0]
        out: dict[str, tuple[float, str]] = {}
        for s in lower.legal_strategies(req):
            forced = req.with_strategy(s)
            p = lower.lower(forced, lower.resolve_strategy(forced)[0])
            m = models.get(req.arch)
            cycles, _ = m.cost(p)
            out[s] = (float(cycles), m.name)
        return out, default, ""
    except PtoCostError as exc:
        return {}, "", str(exc)


# ---------------------------------------------------------------------------------------------------------------
# grouping

def _codes(col) -> np.ndarray:
    """Integer codes of a column's values (missing values -> -1)."""
    import pandas as pd

    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.cat.codes.to_numpy(np.int64)
    if isinstance(col.dtype, pd.StringDtype) and getattr(col.dtype, "storage", "") == "pyarrow":
        import pyarrow as pa
        import pyarrow.compute as pc

        enc = pc.dictionary_encode(pa.array(col.array))
        return np.asarray(enc.indices.fill_null(-1), dtype=np.int64)
    return pd.factorize(col, use_na_sentinel=True)[0].astype(np.int64)


def _group_ids(df, cols: list[str]) -> tuple[np.ndarray, int]:
    """Return (dense group id per row, number of groups) over the given columns."""
    n = len(df)
    gid = np.zeros(n, dtype=np.int64)
    span = 1
    for c in cols:
        code = _codes(df[c]) + 1
        k = int(code.max()) + 1 if n else 1
        if span * k >= 1 << 62:  # re-densify before the product overflows
            gid = np.unique(gid, return_inverse=True)[1].astype(np.int64)
            span = int(gid.max()) + 1 if n else 1
        gid = gid * k + code
        span *= k
    if span <= max(1 << 20, 4 * n):
        present = np.zeros(span, dtype=bool)
        present[gid] = True
        remap = np.cumsum(present) - 1
        return remap[gid], int(present.sum())
    uniq, inv = np.unique(gid, return_inverse=True)
    return inv.astype(np.int64), len(uniq)


def _group_rows(gid: np.ndarray, n_groups: int) -> list[np.ndarray | slice]:
    """Row positions of every group (slices when each group is one run of rows, as in grid sweeps)."""
    n = len(gid)
    if n == 0:
        return []
    starts = np.concatenate([[0], np.flatnonzero(gid[1:] != gid[:-1]) + 1])
    if len(starts) == n_groups:
        ends = np.append(starts[1:], n)
        return [slice(int(a), int(b)) for a, b in zip(starts, ends)]
    small = gid.astype(np.int16 if n_groups < 1 << 15 else np.int64)
    order = np.argsort(small, kind="stable")
    bounds = np.cumsum(np.bincount(gid, minlength=n_groups))
    return np.split(order, bounds[:-1])


# ---------------------------------------------------------------------------------------------------------------
# results: entries (one per output row) collected from blocks

class _Strings:
    """Interned output strings; entries hold their codes."""

    def __init__(self):
        self.codes: dict[str, int] = {"": 0}
        self.items: list[str] = [""]

    def code(self, s: str) -> int:
        c = self.codes.get(s)
        if c is None:
            c = self.codes[s] = len(self.items)
            self.items.append(s)
        return c

    def array(self, codes: np.ndarray) -> np.ndarray:
        return np.array(self.items, dtype=object)[codes]


class _Entries:
    def __init__(self, asked: list[str]):
        self.strings = _Strings()
        self.asked = asked                                       # unique `strategy` values of the frame
        self.asked_code = np.array([self.strings.code(a) for a in asked], dtype=np.int64)
        self.parts: list[tuple[np.ndarray, ...]] = []

    def _ask_index(self, strategies: tuple[str, ...]) -> np.ndarray:
        """Per unique asked value: ASK_DEFAULT, ASK_ALL, the matching strategy index or ASK_UNKNOWN."""
        lower = {s.lower(): j for j, s in enumerate(strategies)}
        out = []
        for a in self.asked:
            out.append(ASK_DEFAULT if a == "default" else ASK_ALL if a == "all" else lower.get(a.lower(), ASK_UNKNOWN))
        return np.array(out, dtype=np.int64)

    def add(self, rows: np.ndarray, asked: np.ndarray, strategies: tuple[str, ...], cycles: np.ndarray,
            legal: np.ndarray, default: np.ndarray, models: tuple[str, ...]) -> None:
        """Entries of rows with a table: per row the legal strategies, their cycles, the default index."""
        n, S = legal.shape
        if n == 0:
            return
        sc = np.array([self.strings.code(s) for s in strategies], dtype=np.int64)
        mc = np.array([self.strings.code(m) for m in models], dtype=np.int64)
        cols = np.arange(S)
        rank = np.where(cols[None, :] == default[:, None], 0, cols[None, :] + 1)
        masked = np.where(legal, cycles, np.inf)
        low = masked.min(axis=1)
        best = np.argmin(np.where(legal & (masked == low[:, None]), rank, S + 1), axis=1)
        best_code = sc[best]
        k = self._ask_index(strategies)[asked]
        r_all = np.arange(n)
        # one entry per row: the default, or the strategy asked for
        single = k != ASK_ALL
        j = np.where(k >= 0, k, default)
        ok = single & ((k == ASK_DEFAULT) | ((k >= 0) & legal[r_all, np.maximum(k, 0)]))
        sel = np.flatnonzero(ok)
        js = j[sel]
        self.parts.append((rows[sel], np.zeros(len(sel), dtype=np.int64), cycles[sel, js], sc[js], mc[js],
                           js == default[sel], best_code[sel], np.zeros(len(sel), dtype=np.int64)))
        bad = np.flatnonzero(single & ~ok)
        if len(bad):
            bits = (legal[bad] * (1 << np.arange(S))[None, :]).sum(axis=1)
            combo = np.stack([asked[bad], bits, default[bad]], axis=1)
            uniq, inv = np.unique(combo, axis=0, return_inverse=True)
            notes = []
            for a, b, d in uniq.tolist():
                names = [strategies[d]] + [s for i, s in enumerate(strategies) if b >> i & 1 and i != d]
                notes.append(self.strings.code(f"strategy {self.asked[a]} is not legal here; legal: {', '.join(names)}"))
            self.parts.append((rows[bad], np.zeros(len(bad), dtype=np.int64), np.full(len(bad), np.nan),
                               self.asked_code[asked[bad]], mc[default[bad]], np.zeros(len(bad), dtype=bool),
                               best_code[bad], np.array(notes, dtype=np.int64)[inv.ravel()]))
        many = np.flatnonzero(~single)
        if len(many):
            lg = legal[many]
            rk = np.where(np.arange(S)[None, :] == default[many][:, None], 0,
                          np.cumsum(lg & (np.arange(S)[None, :] != default[many][:, None]), axis=1))
            r, s = np.nonzero(lg)
            self.parts.append((rows[many][r], rk[r, s], cycles[many][r, s], sc[s], mc[s], s == default[many][r],
                               best_code[many][r], np.zeros(len(r), dtype=np.int64)))

    def add_errors(self, rows: np.ndarray, asked: np.ndarray, note: str) -> None:
        """One entry per row: NaN cycles and the reason (strategy kept when a name was asked for)."""
        if len(rows) == 0:
            return
        named = np.array([a not in ("default", "all") for a in self.asked], dtype=bool)[asked]
        strat = np.where(named, self.asked_code[asked], 0)
        self.parts.append((rows, np.zeros(len(rows), dtype=np.int64), np.full(len(rows), np.nan), strat,
                           np.zeros(len(rows), dtype=np.int64), np.zeros(len(rows), dtype=bool),
                           np.zeros(len(rows), dtype=np.int64), np.full(len(rows), self.strings.code(note))))

    def frame(self, df):
        """The output frame: the input columns (repeated for `all` rows), the strategy column replaced, results."""
        import pandas as pd

        n = len(df)
        fields = [np.concatenate([p[i] for p in self.parts]) if self.parts else np.empty(0)
                  for i in range(8)]
        rows, rank, cycles, strat, model, default, best, note = fields
        counts = np.bincount(rows.astype(np.int64), minlength=n)
        if len(rows) == n and (counts == 1).all():
            pos, take = rows.astype(np.int64), None
        else:
            offsets = np.cumsum(counts) - counts
            pos = offsets[rows.astype(np.int64)] + rank.astype(np.int64)
            take = np.repeat(np.arange(n), counts)
        m = len(rows)

        def place(values, dtype):
            out = np.empty(m, dtype=dtype)
            out[pos] = values
            return out

        text = {name: pd.Series(self.strings.array(place(v, np.int64)), dtype=object, copy=False)
                for name, v in (("strategy", strat), ("model", model), ("best", best), ("note", note))}
        cols = {}
        for c in df.columns:
            if c == "strategy":
                cols[c] = text["strategy"]
            elif take is None:
                cols[c] = df[c].reset_index(drop=True)
            else:
                cols[c] = df[c].take(take).reset_index(drop=True)
        cols["cycles"] = place(cycles, np.float64)
        cols["model"] = text["model"]
        cols["default"] = place(default, bool)
        cols["best"] = text["best"]
        cols["note"] = text["note"]
        return pd.DataFrame(cols, copy=False)


# ---------------------------------------------------------------------------------------------------------------

def sweep(frame, *, model: str = "auto", progress: Callable[[int, int], None] | None = None, vectorised: bool = True):
    """Return `frame` with cycles/strategy/model/default/best/note columns (strategy `all` expands to every legal one).

    Parameters
    ----------
    frame : DataFrame with columns op, dtype, rows, cols and optionally arch, dst_dtype, valid_rows, valid_cols,
        static_valid, strategy (`default`, `all` or a name) and op parameters (PARAM_COLUMNS).
    model : `auto`, `formula`, `pipeline`, ... (per arch, as in `estimate`).
    progress : called as progress(rows done, rows total).
    vectorised : False costs every group by the per-request path (for checks; same results, slower).
    """
    from .vector import Shapes, closed_form
    from .operands import make_request

    df = _normalise(frame)
    n = len(df)
    keys = _key_columns(df)
    group_cols = [c for c in keys if c not in SHAPE_COLUMNS]
    gid, n_groups = _group_ids(df, group_cols)
    ask_codes, asked = _ask_codes(df["strategy"])
    shape_arrays = Shapes(*(df[c].to_numpy(dtype=np.int64) for c in SHAPE_COLUMNS))
    models = Models(model)
    entries = _Entries(asked)
    done = 0
    for rows in _group_rows(gid, n_groups):
        idx = np.arange(n)[rows] if isinstance(rows, slice) else rows
        first = int(idx[0])
        values = {c: df[c].iat[first] for c in group_cols}
        sh = shape_arrays.take(rows)
        block = None
        if vectorised:
            def make(r, c, vr, vc, values=values):
                return make_request(**request_kwargs(values, r, c, vr, vc))

            block = closed_form(make, sh, models)
        if block is None:
            rest = np.arange(len(idx))
        else:
            rest = np.flatnonzero(block.fallback)
            cov = np.flatnonzero(~block.fallback)
            if block.note:
                entries.add_errors(idx[cov], ask_codes[idx[cov]], block.note)
            else:
                entries.add(idx[cov], ask_codes[idx[cov]], block.strategies, block.cycles[cov], block.legal[cov],
                            block.default[cov], block.models)
            done += len(cov)
        if len(rest):
            done = _per_request(values, idx[rest], sh.take(rest), ask_codes, entries, models, progress, done, n)
        if progress is not None:
            progress(done, n)
    return entries.frame(df)


def _ask_codes(col) -> tuple[np.ndarray, list[str]]:
    import pandas as pd

    codes, uniq = pd.factorize(col)
    return codes.astype(np.int64), [str(u) for u in uniq]


def _per_request(values, idx, sh, ask_codes, entries: _Entries, models: Models, progress, done: int, total: int) -> int:
    """Cost rows by lowering each distinct request once; returns the updated count of rows done."""
    stacked = np.stack(list(sh), axis=1)
    uniq, inv = np.unique(stacked, axis=0, return_inverse=True)
    inv = inv.ravel()
    order = np.argsort(inv, kind="stable")
    bounds = np.cumsum(np.bincount(inv, minlength=len(uniq)))
    for k, members in enumerate(np.split(order, bounds[:-1])):
        r, c, vr, vc = (int(v) for v in uniq[k])
        table, default, note = evaluate_key({**values, "rows": r, "cols": c, "valid_rows": vr, "valid_cols": vc}, models)
        rows = idx[members]
        if not table:
            entries.add_errors(rows, ask_codes[rows], note)
        else:
            names = tuple(table)
            m = len(rows)
            entries.add(rows, ask_codes[rows], names, np.tile([table[s][0] for s in names], (m, 1)),
                        np.ones((m, len(names)), dtype=bool), np.full(m, names.index(default), dtype=np.int64),
                        tuple(table[s][1] for s in names))
        done += len(rows)
        if progress is not None:
            progress(done, total)
    return done


def sweep_dask(frame, *, model: str = "auto", scheduler: str | None = None, workers: int | None = None,
               npartitions: int | None = None):
    """Run `sweep` over partitions of the frame on a dask.distributed cluster; returns the same frame as `sweep`."""
    from .errors import PtoCostError

    try:
        import dask.dataframe as dd
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise PtoCostError("the dask engine needs the optional extra: pip install 'pto-cost[dask]'") from None
    import pandas as pd

    df = _normalise(frame)
    n = npartitions or max(1, min(len(df) // 2000 + 1, 4 * (workers or 2)))
    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        cluster = LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        meta = sweep(df.head(1), model=model).iloc[:0]
        ddf = dd.from_pandas(df, npartitions=n, sort=False)
        out = ddf.map_partitions(sweep, model=model, meta=meta).compute()
        return pd.DataFrame(out).reset_index(drop=True)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def verify_sample(result, n: int, *, seed: int = 0) -> list[str]:
    """Emulate `n` random modelled points of a sweep result against the golden; return descriptions of failures."""
    from . import lower
    from .emulate.verify import verify
    from .operands import make_request

    ok = result[result["cycles"].notna()]
    if not len(ok):
        return []
    pick = ok.sample(n=min(n, len(ok)), random_state=seed)
    failures = []
    for rec in pick.to_dict("records"):
        values = {k: v for k, v in rec.items() if k in (*REQUEST_COLUMNS, *PARAM_COLUMNS)}
        kw = request_kwargs(values, rec["rows"], rec["cols"], rec["valid_rows"], rec["valid_cols"])
        req = make_request(**kw, strategy=rec["strategy"])
        v = verify(lower.lower(req), seed=seed)
        if v.ok is False:
            failures.append(f"{req.describe()} strategy {rec['strategy']}: {v.note}")
    return failures
