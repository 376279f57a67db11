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

from dataclasses import dataclass
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


class _Frame:
    """The normalised request frame: the caller's columns plus the defaults `sweep` adds (DESIGN.md §2).

    Added columns that hold one value for every row (strategy `default`, arch `a2a3`, dst_dtype ``, static_valid
    False) are kept as constants and only materialised in the output.
    """

    def __init__(self, frame):
        self.df = frame.copy(deep=False)  # copy-on-write: the caller's frame is never modified
        self.n = len(frame)
        self.order = list(frame.columns)
        self.const: dict[str, Any] = {}
        df = self.df
        if "strategy" not in df:
            self._add("strategy", "default")
        for col, src in (("valid_rows", "rows"), ("valid_cols", "cols")):
            if col not in df:
                df[col] = df[src]
                self.order.append(col)
            elif df[col].hasnans:
                df[col] = df[col].fillna(df[src])
            if df[col].dtype != np.int64:
                df[col] = df[col].astype(np.int64)
        if "dst_dtype" not in df:
            self._add("dst_dtype", "")
        elif df["dst_dtype"].hasnans or df["dst_dtype"].dtype == object:
            df["dst_dtype"] = df["dst_dtype"].fillna("").astype(str)
        if "arch" not in df:
            self._add("arch", "a2a3")
        if "static_valid" not in df:
            self._add("static_valid", False)

    def _add(self, col: str, value: Any) -> None:
        self.const[col] = value
        self.order.append(col)

    def __contains__(self, col: str) -> bool:
        return col in self.order

    def value(self, col: str, i: int):
        return self.const[col] if col in self.const else self.df[col].iat[i]


def _key_columns(f) -> list[str]:
    return [c for c in (*REQUEST_COLUMNS, *PARAM_COLUMNS) if c in f]


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
# grouping: rows that differ only in shape

_NA = object()  # one key for every missing value


def _key(v):
    return _NA if v is None or (isinstance(v, float) and v != v) else v


def _runs(col) -> tuple[np.ndarray, list] | None:
    """(start of each run of equal values, the run's value) when a column comes in few runs, else None."""
    import pandas as pd

    n = len(col)
    limit = max(64, n // 32)
    if isinstance(col.dtype, pd.StringDtype) and getattr(col.dtype, "storage", "") == "pyarrow":
        import pyarrow as pa
        import pyarrow.compute as pc

        arr = pa.array(col.array)
        chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
        starts, values, offset = [], [], 0
        for chunk in chunks:
            ree = pc.run_end_encode(chunk)
            ends = np.asarray(ree.run_ends, dtype=np.int64)
            starts.append(offset + np.concatenate([[0], ends[:-1]]))
            values.extend(ree.values.to_pylist())
            offset += len(chunk)
            if len(values) > limit:
                return None
        return (np.concatenate(starts) if starts else np.zeros(0, dtype=np.int64)), values
    if isinstance(col.dtype, pd.CategoricalDtype):
        v = col.cat.codes.to_numpy()
        change = np.flatnonzero(v[1:] != v[:-1]) + 1
    else:
        v = col.to_numpy()
        if len(v) > 1 and v.dtype == object and (v[0] == v[1:]).all():  # one value (a common constant column)
            change = np.zeros(0, dtype=np.int64)
        else:
            neq = v[1:] != v[:-1]
            if v.dtype.kind in "fO":
                na = pd.isna(v)
                neq &= ~(na[1:] & na[:-1])
            change = np.flatnonzero(neq) + 1
    if len(change) >= limit:
        return None
    starts = np.concatenate([[0], change]).astype(np.int64) if n else np.zeros(0, dtype=np.int64)
    return starts, [col.iat[int(i)] for i in starts]


def _codes(col) -> np.ndarray:
    """Integer codes of a column's values (missing values -> -1)."""
    import pandas as pd

    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.cat.codes.to_numpy(np.int64)
    return pd.factorize(col, use_na_sentinel=True)[0].astype(np.int64)


def _groups(f, cols: list[str]) -> list[tuple[dict[str, Any], slice | np.ndarray]]:
    """[(group values, row positions)]: rows equal in `cols`; slices when a group is one run of rows."""
    n = f.n
    if n == 0:
        return []
    const = {c: f.const[c] for c in cols if c in f.const}
    live = [c for c in cols if c not in f.const]
    runs = {}
    for c in live:
        r = _runs(f.df[c])
        if r is None:
            return _groups_by_codes(f, cols)
        runs[c] = r
    bounds = np.unique(np.concatenate([np.zeros(1, dtype=np.int64), *(r[0] for r in runs.values())]))
    ends = np.append(bounds[1:], n)
    at = {c: np.searchsorted(runs[c][0], bounds, side="right") - 1 for c in live}
    by_key: dict[tuple, list[tuple[int, int]]] = {}
    first: dict[tuple, dict[str, Any]] = {}
    for k, (a, b) in enumerate(zip(bounds.tolist(), ends.tolist())):
        values = {c: runs[c][1][at[c][k]] for c in live}
        key = tuple(_key(values[c]) for c in live)
        by_key.setdefault(key, []).append((a, b))
        first.setdefault(key, {**const, **values})
    out = []
    for key, spans in by_key.items():
        rows = slice(*spans[0]) if len(spans) == 1 else np.concatenate([np.arange(a, b) for a, b in spans])
        out.append(({c: first[key][c] for c in cols}, rows))
    return out


def _groups_by_codes(f, cols: list[str]):
    n = f.n
    gid = np.zeros(n, dtype=np.int64)
    span = 1
    for c in cols:
        if c in f.const:
            continue
        code = _codes(f.df[c]) + 1
        k = int(code.max()) + 1
        if span * k >= 1 << 62:  # re-densify before the product overflows
            gid = np.unique(gid, return_inverse=True)[1].astype(np.int64)
            span = int(gid.max()) + 1
        gid = gid * k + code
        span *= k
    gid = np.unique(gid, return_inverse=True)[1].ravel()
    order = np.argsort(gid, kind="stable")
    bounds = np.cumsum(np.bincount(gid))
    out = []
    for rows in np.split(order, bounds[:-1]):
        i = int(rows[0])
        out.append(({c: f.value(c, i) for c in cols}, rows))
    return out


def _asked(f) -> tuple[np.ndarray, list[str]]:
    """(code per row, the distinct `strategy` values), missing and empty values read as `default`."""
    import pandas as pd

    if "strategy" in f.const:
        return np.zeros(f.n, dtype=np.int64), ["default"]
    col = f.df["strategy"]
    runs = _runs(col)
    if runs is not None:
        starts, values = runs
        codes = np.repeat(np.arange(len(values)), np.diff(np.append(starts, f.n)))
    else:
        codes, values = pd.factorize(col, use_na_sentinel=False)
        values = list(values)

    def norm(v):
        if v is None or (isinstance(v, float) and v != v):
            return "default"
        s = str(v)
        return "default" if s in ("", "None") else s

    return codes.astype(np.int64), [norm(v) for v in values]


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


TEXT = ("strategy", "model", "best", "note")


@dataclass
class _Results:
    """Result columns of a frame's rows: `take[i]` is the input row of output row i (None: output row i is input
    row i), then cycles, default and the categorical string columns."""

    take: np.ndarray | None
    cycles: np.ndarray
    default: np.ndarray
    text: dict[str, Any]

    def __len__(self) -> int:
        return len(self.cycles)


def _concat(results: list[_Results], starts: list[int]) -> _Results:
    """The results of consecutive partitions (starting at input rows `starts`) as one."""
    import pandas as pd

    take = None
    if any(r.take is not None for r in results):
        take = np.concatenate([(r.take if r.take is not None else np.arange(len(r))) + a
                               for r, a in zip(results, starts)])
    text = {}
    for name in TEXT:
        cats = sorted(set().union(*(r.text[name].categories for r in results)))
        index = {c: i for i, c in enumerate(cats)}
        small = np.int8 if len(cats) < 127 else np.int16 if len(cats) < 32767 else np.int32
        codes = [np.array([index[c] for c in r.text[name].categories], dtype=small)[r.text[name].codes]
                 for r in results]
        text[name] = pd.Categorical.from_codes(np.concatenate(codes), categories=cats, validate=False)
    return _Results(take, np.concatenate([r.cycles for r in results]), np.concatenate([r.default for r in results]),
                    text)


def _assemble(f: "_Frame", r: _Results):
    """The output frame: the input columns (repeated for `all` rows), the strategy column replaced, the results."""
    import pandas as pd

    m = len(r)
    cols = {}
    for c in f.order:
        if c == "strategy":
            cols[c] = r.text["strategy"]
        elif c in f.const:
            v = f.const[c]
            cols[c] = pd.Categorical.from_codes(np.zeros(m, dtype=np.int8), [v]) if isinstance(v, str) else np.full(m, v)
        elif r.take is None:
            cols[c] = f.df[c].reset_index(drop=True)
        else:
            cols[c] = f.df[c].take(r.take).reset_index(drop=True)
    cols["cycles"] = r.cycles
    cols["model"] = r.text["model"]
    cols["default"] = r.default
    cols["best"] = r.text["best"]
    cols["note"] = r.text["note"]
    return pd.DataFrame(cols, copy=False)


class _Entries:
    """Output rows collected from blocks: per part the input rows (a slice or positions), the rank of each entry
    among its row's entries (`all` rows), and per field an array or one value for the whole part."""

    def __init__(self, asked: list[str]):
        self.strings = _Strings()
        self.asked = asked                                       # distinct `strategy` values of the frame
        self.asked_code = np.array([self.strings.code(a) for a in asked], dtype=np.int32)
        self.named = np.array([a not in ("default", "all") for a in asked], dtype=bool)
        self.parts: list[dict[str, Any]] = []
        self.expanded = False

    def _ask_index(self, strategies: tuple[str, ...]) -> np.ndarray:
        """Per distinct asked value: ASK_DEFAULT, ASK_ALL, the matching strategy's index or ASK_UNKNOWN."""
        lower = {s.lower(): j for j, s in enumerate(strategies)}
        return np.array([ASK_DEFAULT if a == "default" else ASK_ALL if a == "all" else lower.get(a.lower(), ASK_UNKNOWN)
                         for a in self.asked], dtype=np.int64)

    def _part(self, rows, **fields) -> None:
        self.parts.append({"rows": rows, **fields})

    def add(self, rows, asked: np.ndarray, strategies: tuple[str, ...], cycles: np.ndarray, legal: np.ndarray,
            default: np.ndarray, models: tuple[str, ...], best: np.ndarray | None = None,
            dval: np.ndarray | None = None) -> None:
        """Entries of rows with a table: `cycles` and `legal` are (strategies, rows), `default` indexes strategies
        (and is legal); `rows` are the input rows (a slice or positions); `best` and `dval` as `vector.best_of`
        fills them (computed here when not given)."""
        from .vector import best_of

        S, m = legal.shape
        if m == 0:
            return
        sc = np.array([self.strings.code(s) for s in strategies], dtype=np.int32)
        mc = np.array([self.strings.code(x) for x in models], dtype=np.int32)
        if best is None or dval is None:
            best, dval = np.empty(m, dtype=np.int64), np.empty(m)
            best_of(cycles, default, best, dval)
        ask = self._ask_index(strategies)
        if (ask == ASK_DEFAULT).all():  # every row wants its default strategy
            one_model = len(set(models)) == 1
            self._part(rows, cycles=dval, strategy=(sc, default), model=mc[0] if one_model else (mc, default),
                       default=True, best=(sc, best), note=0)
            return
        best_code = sc[best]
        ar = np.arange(m)
        flat = np.ascontiguousarray(cycles).ravel()
        rows = np.arange(rows.start, rows.stop) if isinstance(rows, slice) else rows
        k = ask[asked]
        single = k != ASK_ALL
        j = np.where(k >= 0, k, default)
        ok = single & ((k == ASK_DEFAULT) | ((k >= 0) & legal[np.maximum(k, 0), ar]))
        sel = np.flatnonzero(ok)
        js = j[sel]
        self._part(rows[sel], cycles=flat[js * m + sel], strategy=sc[js], model=mc[js], default=js == default[sel],
                   best=best_code[sel], note=0)
        bad = np.flatnonzero(single & ~ok)
        if len(bad):
            bits = (legal[:, bad] * (1 << np.arange(S))[:, None]).sum(axis=0)
            combo = np.stack([asked[bad], bits, default[bad]], axis=1)
            uniq, inv = np.unique(combo, axis=0, return_inverse=True)
            notes = []
            for a, b, d in uniq.tolist():
                names = [strategies[d]] + [s for i, s in enumerate(strategies) if b >> i & 1 and i != d]
                notes.append(self.strings.code(f"strategy {self.asked[a]} is not legal here; legal: {', '.join(names)}"))
            self._part(rows[bad], cycles=np.nan, strategy=self.asked_code[asked[bad]], model=mc[default[bad]],
                       default=False, best=best_code[bad], note=np.array(notes, dtype=np.int32)[inv.ravel()])
        many = np.flatnonzero(~single)
        if len(many):
            lg = legal[:, many]
            d = default[many]
            s_idx = np.arange(S)[:, None]
            rank = np.where(s_idx == d[None, :], 0, np.cumsum(lg & (s_idx != d[None, :]), axis=0))
            s, r = np.nonzero(lg)
            self._part(rows[many][r], rank=rank[s, r], cycles=flat[s * m + many[r]], strategy=sc[s], model=mc[s],
                       default=s == d[r], best=best_code[many][r], note=0)
            self.expanded = True

    def add_errors(self, rows, asked: np.ndarray, note: str | np.ndarray) -> None:
        """One entry per row: NaN cycles and the reason (one message, or interned codes per row); the strategy is
        kept when a name was asked for."""
        m = len(asked)
        if m == 0:
            return
        strat = np.where(self.named[asked], self.asked_code[asked], 0)
        code = self.strings.code(note) if isinstance(note, str) else note
        self._part(rows, cycles=np.nan, strategy=strat, model=0, default=False, best=0, note=code)

    def results(self, n: int) -> "_Results":
        """The result columns of the `n` input rows (expanded for `all` rows)."""
        if self.expanded:
            listed = [p["rows"] for p in self.parts if not isinstance(p["rows"], slice)]
            counts = np.bincount(np.concatenate(listed), minlength=n) if listed else np.zeros(n, dtype=np.int64)
            for p in self.parts:
                if isinstance(p["rows"], slice):
                    counts[p["rows"]] += 1
            offsets = np.cumsum(counts) - counts
            where = [offsets[p["rows"]] + p.get("rank", 0) for p in self.parts]
            take = np.repeat(np.arange(n), counts)
            m = int(counts.sum())
        else:
            where = [p["rows"] for p in self.parts]
            take, m = None, n
        out = {"cycles": np.empty(m), "default": np.empty(m, dtype=bool)}
        for p, pos in zip(self.parts, where):
            for name, arr in out.items():
                arr[pos] = p[name]
        text = {name: self._categorical(name, where, m) for name in TEXT}
        return _Results(take, out["cycles"], out["default"], text)

    def _categorical(self, name: str, where: list, m: int):
        """The string field `name` of every part as one pandas Categorical whose categories are the values present,
        sorted (so the dtype depends neither on the order rows were evaluated in nor on how a frame was partitioned).

        A part holds an interned code, an array of codes, or (table, index) — codes table[index]; the output codes
        are written once, through small per-part tables."""
        import pandas as pd

        used = np.zeros(len(self.strings.items), dtype=bool)
        for p in self.parts:
            v = p[name]
            if isinstance(v, tuple):
                table, index = v
                used[table[np.bincount(index, minlength=len(table)) > 0]] = True
            else:
                used[v] = True
        present = np.flatnonzero(used)
        names = [self.strings.items[c] for c in present.tolist()]
        order = sorted(range(len(names)), key=names.__getitem__)
        small = np.int8 if len(order) < 127 else np.int16 if len(order) < 32767 else np.int32
        cat = np.full(len(self.strings.items), -1, dtype=small)
        cat[present[order]] = np.arange(len(order))
        codes = np.empty(m, dtype=small)
        for p, pos in zip(self.parts, where):
            v = p[name]
            if isinstance(v, tuple):
                if isinstance(pos, slice):
                    np.take(cat[v[0]], v[1], out=codes[pos])
                else:
                    codes[pos] = cat[v[0]][v[1]]
            else:
                codes[pos] = cat[v]
        return pd.Categorical.from_codes(codes, categories=[names[o] for o in order], validate=False)


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

    Returns
    -------
    DataFrame: the input columns (normalised: strategy, valid_rows, valid_cols, dst_dtype, arch and static_valid
    filled in), one row per input row (per legal strategy for `all` rows), plus `cycles` (float, NaN where the point
    cannot be modelled), `model`, `default` (bool), `best` (the fastest legal strategy) and `note`. The string
    columns the sweep writes (strategy, model, best, note, and added constant columns) are categorical.
    """
    f = _Frame(frame)
    return _assemble(f, _evaluate(f, model, progress, vectorised))


def _evaluate(f: _Frame, model: str, progress=None, vectorised: bool = True) -> _Results:
    """Cost every row of a normalised frame: closed forms per group where they exist, else per request."""
    from .operands import make_request
    from .vector import Shapes, closed_form

    n = f.n
    keys = _key_columns(f)
    group_cols = [c for c in keys if c not in SHAPE_COLUMNS]
    ask_codes, asked = _asked(f)
    shape_arrays = Shapes(*(f.df[c].to_numpy(dtype=np.int64) for c in SHAPE_COLUMNS))
    models = Models(model)
    entries = _Entries(asked)
    done = 0
    for values, rows in _groups(f, group_cols):
        idx = np.arange(rows.start, rows.stop) if isinstance(rows, slice) else rows
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
            err = block.errors
            if err is not None:
                at = idx[err.rows]
                codes = np.array([entries.strings.code(msg) for msg in err.messages], dtype=np.int32)[err.code]
                entries.add_errors(at, ask_codes[at], codes)
            if not len(rest) and err is None:  # the whole group
                cov, at = slice(None), rows
            else:
                keep = ~block.fallback
                if err is not None:
                    keep[err.rows] = False
                cov = np.flatnonzero(keep)
                at = idx[cov]
            if block.note:
                entries.add_errors(at, ask_codes[at], block.note)
            else:
                entries.add(at, ask_codes[at], block.strategies, block.cycles[:, cov], block.legal[:, cov],
                            block.default[cov], block.models, block.best[cov], block.dval[cov])
            done += len(idx) - len(rest)
        if len(rest):
            done = _per_request(values, idx[rest], sh.take(rest), ask_codes, entries, models, progress, done, n)
        if progress is not None:
            progress(done, n)
    return entries.results(n)


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
            cyc = np.array([table[s][0] for s in names])
            entries.add(rows, ask_codes[rows], names, np.repeat(cyc[:, None], m, axis=1),
                        np.ones((len(names), m), dtype=bool), np.full(m, names.index(default), dtype=np.int64),
                        tuple(table[s][1] for s in names))
        done += len(rows)
        if progress is not None:
            progress(done, total)
    return done


def sweep_dask(frame, *, model: str = "auto", scheduler: str | None = None, workers: int | None = None,
               npartitions: int | None = None, processes: bool = True, client=None):
    """Run `sweep` over partitions of the frame on a dask.distributed cluster; returns the same frame as `sweep`.

    Workers get only the columns a sweep reads (strings as categoricals, shapes as small integers) and send back
    only the result columns; the output frame is assembled here, from the caller's columns, exactly as `sweep`
    assembles it. The cluster: `client` (an existing dask Client, left open), else `scheduler` (an address,
    connected for the call), else a local cluster of `workers` (default 2) worker processes (threads if
    `processes` is False) started for the call.
    """
    from .errors import PtoCostError

    try:
        from dask.distributed import Client
    except ImportError:
        raise PtoCostError("the dask engine needs the optional extra: pip install 'pto-cost[dask]'") from None

    f = _Frame(frame.reset_index(drop=True))
    slim = _slim(f)
    k = npartitions or max(1, min(f.n // 2000 + 1, workers or 2))
    starts = [f.n * i // k for i in range(k)]
    parts = [slim.iloc[a:b] for a, b in zip(starts, starts[1:] + [f.n])]
    cluster, own = None, client is None
    if client is None and scheduler:
        client = Client(scheduler)
    elif client is None:
        cluster = local_cluster(workers or 2, processes=processes)
        client = Client(cluster)
    try:
        results = client.gather(client.map(_partition_results, client.scatter(parts), model=model, pure=False))
    finally:
        if own:
            client.close()
        if cluster is not None:
            cluster.close()
    return _assemble(f, _concat(results, starts))


# dask starts worker processes with MALLOC_TRIM_THRESHOLD_=64 KiB (memory goes back to the OS eagerly); that also
# pins glibc's mmap threshold at 128 KiB, so every numpy temporary of a 32k-row chunk is a fresh mmap that
# page-faults in: a sweep then takes ~2.5x the CPU it takes in a plain process. Sweep workers keep freed memory.
WORKER_ENVIRON = {"MALLOC_TRIM_THRESHOLD_": 128 << 20, "MALLOC_MMAP_THRESHOLD_": 64 << 20}


def local_cluster(workers: int = 2, *, processes: bool = True):
    """A dask LocalCluster for sweeps: `workers` single-threaded workers (processes, or threads of this process),
    worker processes started with WORKER_ENVIRON."""
    import dask
    from dask.distributed import LocalCluster

    environ = {f"distributed.nanny.pre-spawn-environ.{k}": v for k, v in WORKER_ENVIRON.items()}
    with dask.config.set(environ):
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes, dashboard_address=None)


def _partition_results(part, model: str = "auto") -> _Results:
    """The result columns of one partition (what a dask worker runs: the same evaluation as `sweep`)."""
    return _evaluate(_Frame(part), model)


def _slim(f: _Frame):
    """The columns a sweep reads, compact for shipping: strings in runs as categoricals, shapes in the smallest
    integer type that holds them."""
    import pandas as pd

    cols = {}
    for c in [*_key_columns(f), "strategy"]:
        if c in f.const:
            continue
        col = f.df[c]
        if isinstance(col.dtype, pd.StringDtype) or col.dtype == object:
            runs = _runs(col)
            if runs is not None:
                starts, values = runs
                codes, uniq = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
                if (codes >= 0).all() and len(uniq) < 127:
                    lengths = np.diff(np.append(starts, f.n))
                    col = pd.Categorical.from_codes(np.repeat(codes.astype(np.int8), lengths), uniq, validate=False)
        elif c in SHAPE_COLUMNS and len(col):
            lo, hi = int(col.min()), int(col.max())
            for small in (np.int16, np.int32):
                if np.iinfo(small).min <= lo and hi <= np.iinfo(small).max:
                    col = col.to_numpy(small)
                    break
        cols[c] = col
    return pd.DataFrame(cols, copy=False)  # columns the frame lacks are added by each partition, as by `sweep`


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
