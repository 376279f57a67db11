"""The input side of a sweep: the normalised request frame, and its rows grouped by everything but their shape.

Grouping follows runs of equal values (a grid frame holds each group in a few runs of rows; Arrow string columns
are run-end encoded rather than hashed row by row); a frame in no particular order falls back to factorising.
"""
from __future__ import annotations

from typing import Any

import numpy as np

SHAPE_COLUMNS = ("rows", "cols", "valid_rows", "valid_cols")


REQUIRED_COLUMNS = ("op", "dtype", "rows", "cols")


def check_frame(frame) -> dict:
    """Raise PtoCostError (one line) unless `frame` is a DataFrame with the request columns a sweep needs and whole
    numbers in its shape columns; return the valid count columns that hold a `full`, read with each as missing
    (`_full_as_missing`), so that the frame is scanned for it once."""
    import pandas as pd

    from ..errors import PtoCostError
    from ..flags import shown

    if not isinstance(frame, pd.DataFrame):
        raise PtoCostError(f"a sweep takes a pandas DataFrame of requests, got {type(frame).__name__}")
    missing = [c for c in REQUIRED_COLUMNS if c not in frame]
    if missing:
        raise PtoCostError(f"the sweep frame lacks column(s) {', '.join(missing)}; it needs {', '.join(REQUIRED_COLUMNS)} "
                           "(optional: arch, dst_dtype, valid_rows, valid_cols, strategy, op parameters)")
    _check_columns([str(c) for c in frame.columns])
    read = {}
    for col in ("rows", "cols", "valid_rows", "valid_cols"):
        if col not in frame or (pd.api.types.is_integer_dtype(frame[col]) and not frame[col].hasnans):
            continue
        given = _full_as_missing(frame[col]) if col.startswith("valid") else frame[col]
        if col.startswith("valid") and given is not frame[col]:
            read[col] = given
        values = pd.to_numeric(given, errors="coerce")
        fractional = values.notna() & (values != values.round())
        # a missing valid count means the whole tile; a missing or non-numeric anything else is an error
        not_a_number = values.isna() & (given.notna() | (col in ("rows", "cols")))
        bad = fractional | not_a_number
        if bad.any():
            at = int(np.flatnonzero(bad.to_numpy())[0])
            also = " or `full`" if col.startswith("valid") else ""
            raise PtoCostError(f"sweep frame column {col}: {shown(frame[col].iloc[at])} (row {at}) is not a whole "
                               f"number{also}")
    return read


# trace-format columns (DESIGN.md §4) a sweep would not read: what to do instead
TRACE_COLUMNS = {"saturation_mode": "rename it saturation", "op_params": "price the trace with `pto-cost predict`",
                 "extra": "price the trace with `pto-cost predict`"}


def _check_columns(columns: list[str]) -> None:
    """Raise PtoCostError for a column a sweep would silently not read although it names a request field: a trace's
    own column names, or a near miss of a column the sweep reads (valid_row). Other columns pass through."""
    import difflib

    from ..errors import PtoCostError
    from ..sweep import OUTPUT_COLUMNS, PARAM_COLUMNS, REQUEST_COLUMNS

    known = (*REQUEST_COLUMNS, *PARAM_COLUMNS, *OUTPUT_COLUMNS)  # strategy among the output columns
    for col in columns:
        if col in known:
            continue
        if col in TRACE_COLUMNS:
            raise PtoCostError(f"sweep frame column {col} is a trace's name, which a sweep does not read: "
                               f"{TRACE_COLUMNS[col]}")
        close = difflib.get_close_matches(col, known, n=1, cutoff=0.85)
        if close:
            raise PtoCostError(f"sweep frame column {col} is not read: did you mean {close[0]}? (other columns pass "
                               "through to the output untouched)")


def _full_as_missing(col):
    """A valid count column with each `full` (any case: the whole tile, as a spec writes it) as a missing value."""
    import pandas as pd

    if col.dtype != object and not isinstance(col.dtype, pd.StringDtype):
        return col
    full = col.astype(str).str.strip().str.lower() == "full"
    return col.astype(object).where(~full, None) if full.any() else col


def _holds_na(col) -> bool:
    """Whether a column holds pandas' NA (not NaN or None, which compare and hash as the sweep expects)."""
    import pandas as pd

    dt = col.dtype
    if isinstance(dt, pd.CategoricalDtype) or not col.hasnans:
        return False
    if isinstance(dt, pd.StringDtype):
        return dt.na_value is pd.NA
    if isinstance(dt, pd.api.extensions.ExtensionDtype):
        return True  # Int64, boolean, Float64: their gaps are NA
    if dt != object:
        return False  # numpy columns hold NaN, never NA
    return any(v is pd.NA for v in pd.unique(col.to_numpy()[col.isna().to_numpy()]))  # each distinct gap once


class Frame:
    """The normalised request frame: the caller's columns plus the defaults `sweep` adds (DESIGN.md §2).

    Added columns that hold one value for every row (strategy `default`, arch `$PTO_COST_ARCH` or `a2a3`, dst_dtype ``,
    static_valid False) are kept as constants and only materialised in the output.
    """

    def __init__(self, frame):
        import pandas as pd

        read = check_frame(frame)
        self.df = frame.copy(deep=False)  # copy-on-write: the caller's frame is never modified
        self.n = len(frame)
        self.order = list(frame.columns)
        self.const: dict[str, Any] = {}
        self.given: dict[str, Any] = {}  # the caller's columns as given, where they are read in another form
        df = self.df
        for col in df.columns:  # pandas' NA (nullable Int64/boolean/string columns with gaps, or an object column
            if col not in ("rows", "cols") and _holds_na(df[col]):  # holding it) cannot be compared or hashed like
                self.given[col] = df[col]  # a value; None can
                df[col] = df[col].astype(object).where(df[col].notna(), None)
        if "strategy" not in df:
            self._add("strategy", "default")
        for col, src in (("valid_rows", "rows"), ("valid_cols", "cols")):
            if col not in df:
                df[col] = df[src]
                self.order.append(col)
            else:
                df[col] = read.get(col, df[col])  # as check_frame read it, where it held a `full`
            if df[col].hasnans:
                self.given.pop(col, None)  # written as filled in
                df[col] = df[col].fillna(df[src])
            if df[col].dtype != np.int64:
                df[col] = df[col].astype(np.int64)
        for col in ("dtype", "dst_dtype"):  # numpy types (np.float16, ml_dtypes.bfloat16) as the names they stand for
            if col in df and df[col].dtype == object and pd.api.types.infer_dtype(df[col], skipna=True) != "string":
                self.given.setdefault(col, df[col])
                codes, uniques = pd.factorize(df[col], use_na_sentinel=False)
                df[col] = pd.Series(np.array([_type_name(v) for v in uniques], dtype=object)[codes], index=df.index)
        if "dst_dtype" not in df:
            self._add("dst_dtype", "")
        elif df["dst_dtype"].hasnans or df["dst_dtype"].dtype == object:
            self.given.pop("dst_dtype", None)
            df["dst_dtype"] = df["dst_dtype"].astype(object).fillna("").astype(str)
        from ..api import resolve_arch

        if "arch" not in df:
            self._add("arch", resolve_arch(None)[0])  # $PTO_COST_ARCH, else a2a3, as `estimate` defaults it
        else:
            gap = df["arch"].isna() | (df["arch"].astype(object) == "")
            if gap.any():  # a gap is the default arch too (and written as filled in)
                self.given.pop("arch", None)
                df["arch"] = df["arch"].astype(object).where(~gap, resolve_arch(None)[0])
        if "static_valid" not in df:
            self._add("static_valid", False)

    def _add(self, col: str, value: Any) -> None:
        self.const[col] = value
        self.order.append(col)

    def __contains__(self, col: str) -> bool:
        return col in self.order

    def value(self, col: str, i: int):
        return self.const[col] if col in self.const else self.df[col].iat[i]


_NA = object()  # one key for every missing value


def _type_name(v):
    """A dtype cell as `sweep` reads it: a numpy or ml_dtypes type as its element type's name, anything else as it is
    (an unknown type is its group's note)."""
    from ..dtypes import dtype
    from ..errors import PtoCostError

    if isinstance(v, (type, np.dtype)):
        try:
            return dtype(v).name
        except PtoCostError:
            return np.dtype(v).name  # float64: refused by name in its group's note
    return v


def _key(v):
    return _NA if v is None or (isinstance(v, float) and v != v) else v


def runs(col) -> tuple[np.ndarray, list] | None:
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
            if not len(chunk):
                continue
            if chunk.null_count:
                ree = pc.run_end_encode(chunk)
                ends = np.asarray(ree.run_ends, dtype=np.int64)
                at = np.concatenate([[0], ends[:-1]])
                found = ree.values.to_pylist()
            else:  # comparing neighbours is about twice as fast as run-end encoding
                neq = pc.not_equal(chunk.slice(1), chunk.slice(0, len(chunk) - 1))
                at = np.concatenate([[0], np.flatnonzero(neq.to_numpy(zero_copy_only=False)) + 1])
                if len(values) + len(at) > limit:
                    return None
                found = chunk.take(at).to_pylist()
            starts.append(offset + np.asarray(at, dtype=np.int64))
            values.extend(found)
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


def groups(f, cols: list[str]) -> list[tuple[dict[str, Any], slice | np.ndarray]]:
    """[(group values, row positions)]: rows equal in `cols`; slices when a group is one run of rows."""
    n = f.n
    if n == 0:
        return []
    const = {c: f.const[c] for c in cols if c in f.const}
    live = [c for c in cols if c not in f.const]
    by_col = {}
    for c in live:
        r = runs(f.df[c])
        if r is None:
            return _groups_by_codes(f, cols)
        by_col[c] = r
    bounds = np.unique(np.concatenate([np.zeros(1, dtype=np.int64), *(r[0] for r in by_col.values())]))
    ends = np.append(bounds[1:], n)
    at = {c: np.searchsorted(by_col[c][0], bounds, side="right") - 1 for c in live}
    by_key: dict[tuple, list[tuple[int, int]]] = {}
    first: dict[tuple, dict[str, Any]] = {}
    for k, (a, b) in enumerate(zip(bounds.tolist(), ends.tolist())):
        values = {c: by_col[c][1][at[c][k]] for c in live}
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


def asked(f) -> tuple[np.ndarray, list[str]]:
    """(code per row, the distinct `strategy` values), missing and empty values read as `default`."""
    import pandas as pd

    if "strategy" in f.const:
        return np.zeros(f.n, dtype=np.int64), ["default"]
    col = f.df["strategy"]
    found = runs(col)
    if found is not None:
        starts, values = found
        codes = np.repeat(np.arange(len(values)), np.diff(np.append(starts, f.n)))
    else:
        codes, values = pd.factorize(col, use_na_sentinel=False)
        values = list(values)

    def norm(v):
        if v is None or (isinstance(v, float) and v != v):
            return "default"
        s = str(v)
        return "default" if s in ("", "None") else s.lower() if s.lower() in ("default", "all") else s

    return codes.astype(np.int64), [norm(v) for v in values]
