"""Read and check measured traces (DESIGN.md §4): one row per measured instruction.

Columns: arch, op, dtype, dst_dtype, rows, cols, valid_rows, valid_cols, vf_impl_kind (or strategy),
op_params, round_mode, saturation_mode, measured_cycles; op parameters also under the column names `sweep` writes
(scalar, saturation, binary, static_valid, ...: `param_columns`); any other column is kept. `check_trace` reports
bad rows by file line number and says what is wrong; `request_kwargs` maps a row to `make_request` arguments.
"""
from __future__ import annotations

import csv
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from costmodel.errors import TraceError
from costmodel.flags import FLAG_PARAMS, flag
from costmodel.grid import MAX_COUNT, too_large
from costmodel.operands import VF_IMPL_KINDS, count, vf_impl_kind  # costmodel.md §3 step 5 (enum values 0..4)

REQUIRED = ("arch", "op", "dtype", "rows", "cols")
OPTIONAL = ("dst_dtype", "valid_rows", "valid_cols", "vf_impl_kind", "strategy", "op_params", "round_mode",
            "saturation_mode", "extra", "measured_cycles")
LINE = "_line"  # the row's file line, under a name a trace's own columns (a profiler's `line`) do not take
ROW_UNIT = "_unit"  # "row" on the rows of a Parquet trace (which has no lines), set where traces are combined
KEY = ("arch", "op", "dtype", "dst_dtype", "rows", "cols", "valid_rows", "valid_cols", "vf_impl_kind", "strategy",
       "op_params", "round_mode", "saturation_mode", "extra")


def row_where(row: Any, with_trace: bool = False) -> str:
    """Return where a trace row is, as the file counts it: `line N` (`row N` in a Parquet trace), after the trace
    file's name if asked and the row has one."""
    where = f"{row.get(ROW_UNIT) or 'line'} {row[LINE]}"
    return f"{row['trace']} {where}" if with_trace and row.get("trace") else where


# the command-line options library messages name, and the trace column that carries each (DESIGN.md §4; a sweep's
# cases file names op parameters like the options); options of the commands themselves (--model) stay as they are
_TRACE_NAME = {"shape": "rows/cols", "valid": "valid_rows/valid_cols", "saturation": "saturation_mode",
               **{o: o.replace("-", "_") for o in ("scalar", "dst-dtype", "expand-mode", "expanded", "strategy",
                                                    "src-valid", "order", "cmp-mode", "in-place", "dst-layout", "arch",
                                                    "round-mode")}}
_OPTION = re.compile(r"--(" + "|".join(sorted(_TRACE_NAME, key=len, reverse=True)) + r")\b(?!-)")
_QUOTED = re.compile(r"('[^']*'|\"[^\"]*\"|`[^`]*`)")


def trace_wording(message: str) -> str:
    """Return a library message about a trace row with each request option it names (`--scalar`) replaced by the
    trace column that carries it (`scalar`); quoted values and `commands` are left as they are."""
    parts = _QUOTED.split(message)
    return "".join(part if i % 2 else _OPTION.sub(lambda m: _TRACE_NAME[m[1]], part) for i, part in enumerate(parts))


@dataclass(frozen=True)
class Problem:
    """One bad trace row: its file line, the column at fault and what is wrong."""

    line: int
    column: str
    message: str
    source: str = ""  # the trace file, where several are read together
    unit: str = "line"  # "row" in a Parquet file (its rows from 1), which has no lines

    @property
    def where(self) -> str:
        return f"{self.source} {self.unit} {self.line}" if self.source else f"{self.unit} {self.line}"

    def __str__(self) -> str:
        return f"{self.where}: {self.column}: {self.message}"

    def to_dict(self) -> dict:
        """Return the problem as JSON-ready fields: trace (where several are read), line, unit ("row": a Parquet
        file's), column, message."""
        return {**({"trace": self.source} if self.source else {}), "line": self.line,
                **({"unit": self.unit} if self.unit != "line" else {}), "column": self.column, "message": self.message}


def _check_unique(columns: list[str], name: str) -> None:
    """Raise TraceError if two columns are one name once stripped and lower-cased, as the reader uses them."""
    seen: dict[str, list[str]] = {}
    for c in columns:
        if c.strip():
            seen.setdefault(c.strip().lower(), []).append(c.strip())
    twice = [" / ".join(dict.fromkeys(v)) if len(set(v)) > 1 else v[0] for v in seen.values() if len(v) > 1]
    if twice:
        raise TraceError(f"{name}: column {', '.join(twice)} appears more than once in the header (names are read "
                         "without case); name each column once")


def read_trace(path: str | os.PathLike) -> pd.DataFrame:
    """Return the trace as a DataFrame of strings/numbers with every column present and a `line` column."""
    path = Path(path)
    if not path.exists():
        raise TraceError(f"trace file {path} does not exist")
    lines = None
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            df = pd.read_parquet(path).reset_index(drop=True)  # a stored index (pd.concat's repeats) means nothing
            df.attrs["line_unit"] = "row"
            lines = list(range(1, len(df) + 1))
        else:
            lines = _record_lines(path)
            df = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True, index_col=False)
    except TraceError:
        raise
    except ImportError:
        raise TraceError(f"{path}: reading Parquet needs pyarrow (pip install 'pto-cost[parquet]')") from None
    except Exception as exc:  # pandas (and pyarrow) raise several parser error types
        said = str(exc).splitlines()[0] if str(exc) else ""
        said = said.split(". ")[0].replace(f" '{path}'", "")  # the path leads the message already
        kind = "Parquet" if path.suffix.lower() in (".parquet", ".pq") else "CSV"
        raise TraceError(f"{path}: not a readable {kind} trace ({type(exc).__name__}: {said})") from None
    return normalise_trace(df, name=str(path), lines=lines)


def _utf8_text(path: Path) -> str:
    """Return the file's text; raise TraceError unless it is UTF-8 (a byte-order mark allowed, and kept), naming the
    first line that is not."""
    raw = path.read_bytes()
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in raw[:4096]:
        raise TraceError(f"{path}: not UTF-8 text (it looks UTF-16); save the trace as UTF-8")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise TraceError(f"{path}: line {line} is not UTF-8 text (byte 0x{raw[exc.start]:02x}); save the trace as "
                         "UTF-8") from None


def _record_lines(path: Path) -> list[int]:
    """Return the file line each data record starts on (blank lines, which pandas skips, skipped); raise TraceError
    naming the lines whose field count differs from the header's (pandas would shift such a file's columns or drop
    fields silently), or a header that names a column twice (pandas would rename the second copy and read the first
    silently)."""
    import io

    with io.StringIO(_utf8_text(path), newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            raise TraceError(f"{path}: empty file; a trace needs a header row ({', '.join(REQUIRED)}, ...)")
        if header and header[0].lstrip().startswith("#"):
            raise TraceError(f"{path}: line 1 is a comment, not the header; a trace starts with its header row "
                             f"({', '.join(REQUIRED)}, ...) and has no comment lines")
        starts, bad, at, first = [], [], reader.line_num + 1, {}
        for row in reader:
            if row and not (len(row) == 1 and not row[0].strip()):  # pandas skips whitespace-only lines too
                starts.append(at)
                if len(row) != len(header):
                    bad.append((at, len(row)))
                    first.setdefault(at, row[0])
            at = reader.line_num + 1
    if bad:
        line, n = bad[0]
        more = f" (and {len(bad) - 1} more line(s))" if len(bad) > 1 else ""
        hint = ("a trace has no comment lines: remove it" if first[line].lstrip().startswith("#")
                else "quote fields that contain commas" if n > len(header)
                else "give every column a value, an empty one between two commas")
        raise TraceError(f"{path}: line {line} has {n} fields but the header has {len(header)}{more}; {hint}")
    _check_unique(header, str(path))
    return starts


def normalise_trace(df: pd.DataFrame, *, name: str = "trace", lines: list[int] | None = None) -> pd.DataFrame:
    """Return a copy of a trace-shaped frame in `read_trace`'s form: lower-case columns, every optional column
    present, key columns as stripped strings ('' for missing) and a LINE column: each row's file line (`lines`,
    else 2, 3, ... as a CSV with a header numbers them). A column of the caller's named `line` is data like any
    other."""
    df = df.copy()
    given = [str(c) for c in df.columns]
    df.columns = given_lower = [c.strip().lower() for c in given]
    _check_unique(given, name)
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        sep = next((s for s in (";", "\t", "|") if len(df.columns) == 1 and s in df.columns[0]), None)
        hint = f" (the header reads as one column: the file looks {sep!r}-separated; a trace is comma-separated)" if sep else ""
        raise TraceError(f"{name}: missing column(s) {', '.join(missing)}; a trace needs {', '.join(REQUIRED)} "
                         f"(optional: {', '.join(OPTIONAL)}){hint}")
    added = [col for col in OPTIONAL if col not in df.columns]
    for col in added:
        df[col] = ""
    for col in KEY:  # as the text of a CSV cell (op parameters are read so where used, and written back as given)
        df[col] = df[col].map(cell_text).astype(object)
    for col in (c for c in param_columns() if c in df.columns):  # a list cell (Parquet) has no other written form
        df[col] = df[col].map(lambda v: cell_text(v) if isinstance(v, (list, tuple, np.ndarray)) else v)
    df["measured_cycles"] = _missing_as_empty(df["measured_cycles"])
    if LINE not in df.columns:  # numbered once (a frame read by read_trace comes here again in predict_frame)
        df.insert(0, LINE, lines if lines is not None and len(lines) == len(df) else np.arange(2, len(df) + 2))
        added = [LINE, *added]
    df.attrs["added_columns"] = added  # what the input lacked: outputs leave them out again
    # the input's own spelling of the columns read lower-cased (`Arch`), which outputs write back
    df.attrs["given_names"] = {low: g for low, g in zip(given_lower, given) if low != g}
    return df


def lacks_measured(trace: pd.DataFrame) -> bool:
    """Whether a trace read by `read_trace` came without a measured_cycles column (a cases file)."""
    return "measured_cycles" in trace.attrs.get("added_columns", ())


def _converts(op: str) -> bool:
    """Whether `op` is a conversion (its destination type is part of the request even when equal to the source)."""
    from costmodel.catalog import instruction
    from costmodel.errors import PtoCostError

    try:
        return instruction(op).family == "convert"
    except PtoCostError:
        return False


def cell_text(value: Any) -> str:
    """Return a trace cell as the text a CSV would hold: '' for a missing value (None, NaN, 'nan'), an integral
    number without decimals (a Parquet or pandas column with a gap turns 1 into 1.0), a sequence (a GM shape read
    back from Parquet) as AxBxC, anything else stripped."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return "x".join(cell_text(v) for v in value)
    if value is None or pd.isna(value):  # None, NaN, pandas' NA (a nullable column's gap)
        return ""
    if isinstance(value, (float, np.floating)):
        return "" if value != value else str(int(value)) if float(value).is_integer() else repr(float(value))
    text = str(value).strip()
    if text.lower() in ("nan", "none"):
        return ""
    return text.split(".")[0] if re.fullmatch(r"-?\d+\.0+", text) else text


def _missing_as_empty(col: pd.Series) -> pd.Series:
    """Return the column with missing values (None, NaN) as '', what an empty CSV cell reads as."""
    return col.astype(object).where(col.notna(), "")


def _int_column(df: pd.DataFrame, col: str, problems: list[Problem], *, minimum: int, default: pd.Series | None = None) -> pd.Series:
    raw = df[col].where(df[col] != "", None) if default is not None else df[col]
    num = pd.to_numeric(raw, errors="coerce")
    if default is not None:
        num = num.where(df[col] != "", default)
    bad = num.isna() | (num < minimum) | (num != np.floor(num))
    for line, val in zip(df.loc[bad, LINE], df.loc[bad, col]):
        problems.append(Problem(int(line), col, f"{val!r} is not an integer >= {minimum}"))
    big = ~bad & (num > MAX_COUNT)
    for line, val in zip(df.loc[big, LINE], df.loc[big, col]):
        problems.append(Problem(int(line), col, too_large(val)))
    return num.where(~big, np.nan)


def check_trace(df: pd.DataFrame, *, require_measured: bool = True,
                tolerance: float | None = None) -> tuple[pd.DataFrame, list[Problem]]:
    """Return (rows that passed every check, problems). Numbers become numeric columns on the good rows. Without
    `require_measured` (predict), a problem of measured_cycles alone (not a count, a conflicting duplicate) is
    reported and the row kept. `tolerance`: how far apart runs of one case may read (REPEAT_TOLERANCE cycles by
    default)."""
    from costmodel.arch import ARCHES
    from costmodel.catalog import instruction
    from costmodel.dtypes import dtype as as_dtype
    from costmodel.errors import PtoCostError

    problems: list[Problem] = []
    df = df.copy()
    rows = _int_column(df, "rows", problems, minimum=1)
    cols = _int_column(df, "cols", problems, minimum=1)
    df["rows"], df["cols"] = rows, cols
    df["valid_rows"] = _int_column(df, "valid_rows", problems, minimum=0, default=rows)
    df["valid_cols"] = _int_column(df, "valid_cols", problems, minimum=0, default=cols)
    # only where the tile itself is a shape: a row whose rows or cols is wrong already says so
    over = ((df.valid_rows > df.rows) | (df.valid_cols > df.cols)) & (df.rows >= 1) & (df.cols >= 1)
    for line, vr, vc, r, c in df.loc[over, [LINE, "valid_rows", "valid_cols", "rows", "cols"]].itertuples(index=False):
        problems.append(Problem(int(line), "valid_rows/valid_cols", f"valid region {vr:g}x{vc:g} is larger than the tile {r:g}x{c:g}; accepted: at most {r:g}x{c:g}"))
    if require_measured or (df["measured_cycles"] != "").any():
        meas = pd.to_numeric(df["measured_cycles"], errors="coerce")
        wrong = meas.isna() | ~np.isfinite(meas) | (meas < 1)  # a profiler counts whole cycles, at least one
        bad = wrong if require_measured else (df["measured_cycles"] != "") & wrong
        for line, val in zip(df.loc[bad, LINE], df.loc[bad, "measured_cycles"]):
            problems.append(Problem(int(line), "measured_cycles", f"{val!r} is not a cycle count (a finite number "
                                                                    "of at least 1)"))
        df["measured_cycles"] = meas
    arch_bad = ~df["arch"].str.lower().isin(ARCHES)
    for line, val in zip(df.loc[arch_bad, LINE], df.loc[arch_bad, "arch"]):
        problems.append(Problem(int(line), "arch", f"unknown arch {val!r}; accepted: {', '.join(ARCHES)}"))
    kinds = {}  # canonical names, as `--vf-impl-kind` takes them: a name with or without VFIMPL_, or its enum value
    for val in df["vf_impl_kind"].unique():
        try:
            kinds[val] = vf_impl_kind(val) if val != "" else ""
        except PtoCostError:
            kinds[val] = None
    kind_bad = df["vf_impl_kind"].map(kinds).isna()
    for line, val in zip(df.loc[kind_bad, LINE], df.loc[kind_bad, "vf_impl_kind"]):
        problems.append(Problem(int(line), "vf_impl_kind", f"unknown {val!r}; accepted: {', '.join(VF_IMPL_KINDS)} "
                                                           "(or 0..4)"))
    df["vf_impl_kind"] = df["vf_impl_kind"].map(kinds).fillna(df["vf_impl_kind"])
    # catalogue checks: once per distinct (arch, op, dtype, dst_dtype), not per row
    combos = df.loc[~arch_bad, ["arch", "op", "dtype", "dst_dtype"]].drop_duplicates()
    verdicts: dict[tuple, tuple[str, str] | None] = {}
    for arch, op, dt, dst in combos.itertuples(index=False):
        try:
            inst = instruction(op)
        except PtoCostError as exc:
            verdicts[(arch, op, dt, dst)] = ("op", _NO_CATALOGUE.get(str(op).upper(), str(exc)))
            continue
        column = "dtype"
        try:
            t = as_dtype(dt)
            column = "dst_dtype"
            d = as_dtype(dst) if dst else None
            toks = inst.dtypes_on(arch.lower())
            # an op with no dtype on the arch is the op's fault; a source type it takes, the target's
            column = "op" if not toks else "dst_dtype" if d and t.name in {k.split(">")[0] for k in toks} else "dtype"
            inst.check_dtype(arch.lower(), t, d)
            verdicts[(arch, op, dt, dst)] = None
        except PtoCostError as exc:
            verdicts[(arch, op, dt, dst)] = (column, trace_wording(str(exc)))
    for line, arch, op, dt, dst in df.loc[~arch_bad, [LINE, "arch", "op", "dtype", "dst_dtype"]].itertuples(index=False):
        v = verdicts.get((arch, op, dt, dst))
        if v:
            problems.append(Problem(int(line), v[0], v[1]))
    clean = ~df[LINE].isin({p.line for p in problems})
    if "measured_cycles" in df:
        measured = df[clean & pd.to_numeric(df["measured_cycles"], errors="coerce").notna()]
        for idx in conflicting_duplicates(measured, tolerance):
            lines = ", ".join(str(int(x)) for x in df.loc[idx, LINE])
            said = ", ".join(f"{v:g}" for v in df.loc[idx, "measured_cycles"])
            msg = f"{CONFLICTING} ({df.attrs.get('line_unit', 'line')}s {lines}) measured {said}"
            extras = sorted({cell_text(v) for v in df.loc[idx, "extra"]}) if "extra" in df else []
            if len(extras) > 1:  # test parameters the request does not read may be what tells them apart
                msg += f"; their `extra` differs ({' | '.join(e or '(none)' for e in extras)}), which is not read"
            problems.extend(Problem(int(line), "measured_cycles", msg) for line in df.loc[idx, LINE])
    # predicting reads no measurement: a row whose measured_cycles is wrong is still priced (the problem is its note)
    bad_lines = {p.line for p in problems if require_measured or p.column != "measured_cycles"}
    good = df[~df[LINE].isin(bad_lines)].copy()
    for col in ("rows", "cols", "valid_rows", "valid_cols"):
        good[col] = good[col].astype(int)
    unit = df.attrs.get("line_unit", "line")
    return good, sorted((replace(p, unit=unit) for p in problems), key=lambda p: (p.line, p.column not in ("op", "arch")))


# measured/README.md: profiled cycles are integers and ±1 cycle is noise, so two runs of one case may read 2 apart
REPEAT_TOLERANCE = 2.0
CONFLICTING = "conflicting duplicates"  # how a problem of runs of one case further apart than that begins
REPEAT_HINT = "--repeat-tolerance CYCLES accepts a noisier profiler's repeats"  # what would take them as repeats


def conflicting_duplicates(df: pd.DataFrame, tolerance: float | None = None) -> list[pd.Index]:
    """Return the index of each group of rows that measure the same request (`measured_keys`) and disagree by more
    than the profiler's noise (`tolerance` cycles, REPEAT_TOLERANCE by default); repeats within it are kept, as
    repeated runs."""
    tolerance = REPEAT_TOLERANCE if tolerance is None else tolerance
    if len(df) < 2:
        return []
    keys = measured_keys(df)
    out = []
    for _, g in pd.to_numeric(df["measured_cycles"]).groupby(keys, sort=False):
        if len(g) > 1 and g.max() - g.min() > tolerance:
            out.append(g.index)
    return out


def average_repeats(df: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Return (`df` with repeated runs of a case — rows of one `measured_keys` label — folded into its first row at
    their mean measured_cycles, how many rows were folded). Conflicting runs are refused before (check_trace)."""
    if len(df) < 2:
        return df, 0
    keys = measured_keys(df)
    repeated = keys.duplicated()
    if not repeated.any():
        return df, 0
    mean = df.groupby(keys)["measured_cycles"].transform("mean")
    return df.assign(measured_cycles=mean)[~repeated.to_numpy()], int(repeated.sum())


def key_text(df: pd.DataFrame) -> pd.Series:
    """Return each row's key columns (the request and test parameters, not the measurement) as one text."""
    key = [c for c in (*KEY, *param_columns()) if c in df.columns]
    return df[key].apply(lambda col: col.map(cell_text)).agg("\x1f".join, axis=1)  # a Parquet cell may be a list


def measured_keys(df: pd.DataFrame) -> pd.Series:
    """Return a label per row that two rows share when they measure the same thing: the request each builds and the
    loop its strategy emits (so `ON` and `on`, `fp32` and `float32`, `CAST_RINT` and `rint` agree, and so do an A5
    VFIMPL_DEFAULT and the kind it dispatches to, or a blank strategy and the default named), or, for a row no
    request can be built from, its key columns as text."""
    from costmodel.errors import PtoCostError

    if df.empty:
        return pd.Series([], index=df.index, dtype="int64")
    cells = key_text(df)
    first = ~cells.duplicated()
    label: dict[str, Any] = {}
    for text, row in zip(cells[first], df.loc[first].to_dict("records")):  # one request per distinct spelling
        try:
            label[text] = _case_of(trace_request(row)[0])
        except (PtoCostError, ValueError):
            label[text] = text
    ids = {k: i for i, k in enumerate(dict.fromkeys(label.values()))}
    return cells.map(lambda t: ids[label[t]])


def _case_of(req) -> tuple:
    """What a measured run of `req` ran: the request without the strategy it names or the VF kind it asks for, and the
    strategy those resolve to (the request itself where they resolve to none)."""
    from costmodel import lower
    from costmodel.errors import PtoCostError

    try:
        strategy = lower.resolve_strategy(req)[0]
    except PtoCostError:
        return (req,)
    return (req.op, req.arch, req.tiles, tuple(p for p in req.params if p[0] != "vf_impl_kind"), strategy)


def request_keys(df: pd.DataFrame) -> pd.Series:
    """Return a label per row that two rows share when they measure one request, whatever strategy each ran
    (`measured_keys` without the strategy and vf_impl_kind columns): rows that differ in an op parameter (a compare
    mode, a scalar) are different requests."""
    return measured_keys(df.assign(**{c: "" for c in ("strategy", "vf_impl_kind") if c in df.columns}))


CV_GROUPINGS = ("shape", "measurement")


def cv_groups(frame: pd.DataFrame, by: str = "shape") -> np.ndarray:
    """Return a cross-validation group label per row: `shape` (rows x cols: a tile shape's rows are never in both
    train and test, whatever the op) or `measurement` (one measured case: op, types, shape, strategy and test
    parameters, so a tail-mirror row stays with its full-width row; the other ops at that shape may be seen — how
    withheld measurements of a measured campaign relate to the published ones)."""
    if by not in CV_GROUPINGS:
        raise TraceError(f"unknown cross-validation grouping {by!r}; accepted: {', '.join(CV_GROUPINGS)}")
    cols = ["rows", "cols"] if by == "shape" else [c for c in ("op", "dtype", "dst_dtype", "rows", "cols", "vf_impl_kind",
                                                               "strategy", "op_params", "round_mode", "saturation_mode",
                                                               "extra") if c in frame]
    return frame[cols].astype(str).agg("x".join if by == "shape" else "|".join, axis=1).to_numpy()


def fitted_groups(arch: str, used: pd.DataFrame, notes: list[str], by: str = "shape") -> np.ndarray:
    """Return `cv_groups` of the rows a fit of `arch` lowered (`used`; `notes` say why the others were not); raise
    TraceError where there are none, or a single group: a model is chosen by cross-validation across groups."""
    left = f" (and {len(notes) - 1} more row(s))" if len(notes) > 1 else ""
    if not len(used):
        raise TraceError(f"no {arch} row can be fitted: {notes[0]}{left}" if notes
                         else f"the traces hold no {arch} rows")
    groups = cv_groups(used, by)
    if len(set(groups)) < 2:
        what = "tile shapes" if by == "shape" else "measured cases"
        skipped = f" ({len(notes)} other {arch} row(s) not fitted: {notes[0]})" if notes else ""
        raise TraceError(f"the {arch} fit picks its form by cross-validation over {what}, and the {arch} rows it fits "
                         f"hold one; add rows of another {what[:-1]}{skipped}")
    return groups


def parse_extra(text: str) -> dict[str, str]:
    """Return the `key=value;key=value` test parameters of an A2/A3 trace row."""
    out = {}
    for part in str(text or "").split(";"):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


_NO_CATALOGUE = {  # measured ops that are not PTO catalogue instructions
    "TLOADCONV": "TLOADCONV (a TLOAD into a convolution layout such as NC1HWC0, measured on A2/A3) has no "
                 "catalogue entry and is not modelled",
}


# the `extra` test parameters the mapping reads (request_kwargs, _transfer_kwargs, _tmov_kwargs), and those of the
# measured A2/A3 file it does not need (a test tag, the convolution dims of TLOADCONV, a second spelling of the pad)
EXTRA_VARIANT = ("variant", "isInPlace", "isBinary")  # those that choose an instruction variant, not a shape
EXTRA_READ = (*EXTRA_VARIANT, *(f"shape{i}" for i in range(5)), "PadVal", "dyn",
              *(f"{side}{k}" for side in ("src", "dst") for k in ("BL", "SL", "Loc")))
EXTRA_UNUSED = ("TAG", "gShape0", "gShape1", "gShape2", "padValue", "N", "C1", "H", "W", "L")


# `variant` values of the measured A2/A3 file (TDIVS operand order): ScalarTile maps to order=scalar_tile
EXTRA_VARIANTS = ("TileScalar", "ScalarTile")
# the mask programs a TSEL runs, by element width (costmodel.md §3 step 6): the lowering picks one (a 32-bit TSEL in
# 1D by its trip count's parity), so a row's op_params only names it
TSEL_PROGRAMS = {32: ("TSel_b32_even", "TSel_b32_odd"), 16: ("TSel_b16_8",), 8: ("TSel_b16_8",)}


def extra_note(row: Any) -> str:
    """Return a note naming the row's `extra` keys the mapping does not read, and an `op_params` value of an op that
    takes none ("" if none); TraceError for a key that looks like one it reads (`binary` for isBinary) or that is an
    op-parameter column (`src1_valid`), a key given twice or without a value, or a `variant` the mapping does not
    know, whose value would otherwise be dropped without a word."""
    import difflib

    from costmodel.dtypes import dtype as as_dtype
    from costmodel.errors import PtoCostError

    extra: dict[str, str] = {}  # as parse_extra reads it, once every part is checked
    for part in (p.strip() for p in str(row.get("extra", "") or "").split(";")):
        if not part:
            continue
        key, eq, value = (x.strip() for x in part.partition("="))
        if not key or not eq or not value:
            raise TraceError(f"extra part {part!r} is not key=value; extra holds key=value pairs separated by ';'")
        if key in extra:
            raise TraceError(f"extra key {key!r} is given twice")
        extra[key] = value
    if "variant" in extra and extra["variant"] not in EXTRA_VARIANTS:
        raise TraceError(f"extra variant {extra['variant']!r} is not one the mapping reads; accepted: "
                         f"{', '.join(EXTRA_VARIANTS)}")
    notes = []
    params, op = cell_text(row.get("op_params", "")), str(row.get("op", "")).upper()
    if "variant" in extra and op != "TDIVS":
        notes.append(f"extra variant {extra['variant']!r} not read (only TDIVS takes an operand order)")
    if params and op == "TSEL":
        try:
            programs = TSEL_PROGRAMS.get(as_dtype(row.get("dtype", "")).bits, ())
        except PtoCostError:
            programs = ()
        if programs and params not in programs:
            notes.append(f"op_params {params!r} is not a TSEL mask program for {row.get('dtype')} "
                         f"({', '.join(programs)}): priced by the program the lowering picks")
    elif params and op != "TRECIP":
        name = params.partition("=")[0].strip().lower()
        notes.append(f"op_params {params!r} not read: give {name} a column of its own" if name in param_columns()
                     else f"op_params {params!r} not read (TRECIP takes a precision, TSEL names its mask program)")
    unread = []
    for key in extra:
        if key in EXTRA_READ or key in EXTRA_UNUSED:
            continue
        if key in param_columns():
            raise TraceError(f"extra key {key!r} is an op parameter: give it as a column named {key} (extra holds "
                             "the A2/A3 tests' parameters)")
        lower = {k.lower(): k for k in EXTRA_READ}
        near = lower.get(key.lower()) or next((k for k in EXTRA_READ if key.lower() in k.lower() and len(key) > 3),
                                              None) or next(iter(difflib.get_close_matches(key, EXTRA_READ, 1, 0.8)), None)
        if near:
            raise TraceError(f"extra key {key!r} is not read: did you mean {near!r}? (read: {', '.join(EXTRA_READ)})")
        unread.append(key)
    if unread:
        notes.append(f"extra key{'s' if len(unread) > 1 else ''} not read: {', '.join(unread)}")
    return "; ".join(notes)


def trace_request(row: Any, kw: dict[str, Any] | None = None) -> tuple[Any, str]:
    """Return (request, note) of one trace row. A measured row whose operand tiles cannot sit side by side in the
    unified buffer must have run in place: it is modelled with dst overwriting the first source, and the note says
    so (a row without measured cycles is not: it fails like `estimate`). `kw` is the row's `request_kwargs` where the
    caller has them, having also checked the row's extra keys (`extra_note`, predict). Raises PtoCostError for a row
    that cannot be modelled."""
    from costmodel.arch import constants
    from costmodel.errors import PtoCostError
    from costmodel.lower.alloc import alias_source, ub_need
    from costmodel.operands import make_request

    if kw is None:
        kw = request_kwargs(row)
        extra_note(row)  # a misspelt extra key is an error for fit too (the note is predict's)
    req = make_request(**kw)
    need, limit = ub_need(req.arch, list(req.tiles)), constants(req.arch).ub_bytes
    measured = cell_text(row.get("measured_cycles", "")) != ""
    if need <= limit or kw.get("in_place") or not measured:  # kw holds flags as bools  # an unmeasured case is what it says
        return req, ""
    try:
        alias = alias_source(list(req.tiles))
    except PtoCostError:
        return req, ""
    return (make_request(**{**kw, "in_place": True}),
            f"modelled in place (dst overwrites {alias}): the tiles need {need} B side by side, the UB has {limit} B")


def request_kwargs(row: Any) -> dict[str, Any]:
    """Map one trace row to `costmodel.operands.make_request` keyword arguments (op, shape, dtype, arch, ...)."""
    shape = (int(row["rows"]), int(row["cols"]))
    # a blank valid count is the whole tile, as check_trace fills it (predict's output keeps the blank)
    valid = tuple(n if cell_text(row.get(col, "")) == "" else int(row[col])
                  for n, col in zip(shape, ("valid_rows", "valid_cols")))
    kw: dict[str, Any] = {"op": row["op"], "shape": shape, "dtype": row["dtype"], "arch": str(row["arch"]).lower(),
                          "valid": valid}
    if row.get("dst_dtype") and (row["dst_dtype"] != row["dtype"] or _converts(row["op"])):
        kw["dst_dtype"] = row["dst_dtype"]  # a conversion to its own type (f32 -> f32) rounds to integral values
    if row.get("strategy"):
        if str(row["strategy"]).strip().lower() == "all":
            raise TraceError("strategy 'all' names no one strategy: a row is one measured or predicted case (leave "
                             "strategy blank for the default; `pto-cost compare` or a sweep prices every strategy)")
        kw["strategy"] = row["strategy"]
    if row.get("vf_impl_kind"):
        kw["vf_impl_kind"] = vf_impl_kind(row["vf_impl_kind"])
    params = str(row.get("op_params") or "")
    if row["op"].upper() == "TRECIP" and params:
        name, eq, value = params.partition("=")
        kw["precision"] = value.strip() if eq and name.strip().lower() == "precision" else params
    if row.get("round_mode"):
        kw["round_mode"] = str(row["round_mode"])  # CAST_RINT, rint, r: make_request names it (conversions.py)
    if row.get("saturation_mode"):
        kw["saturation"] = str(row["saturation_mode"]).lower()
    extra = parse_extra(row.get("extra", ""))
    if extra.get("variant") == "ScalarTile":
        kw["order"] = "scalar_tile"
    for key, name in (("isInPlace", "in_place"), ("isBinary", "binary")):
        if key in extra:
            kw[name] = flag(extra[key], f"extra {key}")
    if kw.get("in_place") is False and _reads_dst(row["op"]):
        raise TraceError(f"extra isInPlace={extra['isInPlace']}: {str(row['op']).upper()} reads and overwrites dst, "
                         "so it always runs in place")
    if row["op"].upper() in ("TLOAD", "TSTORE"):
        kw.update(_transfer_kwargs(extra, valid[0]))
    if row["op"].upper() == "TMOV":
        kw.update(_tmov_kwargs(extra))
    kw.update(_param_columns(row, kw))
    return kw


def _reads_dst(op: Any) -> bool:
    """Whether `op` is a catalogue instruction whose family reads dst (always in place); False for an unknown op."""
    from costmodel.catalog import READS_DST, instruction
    from costmodel.errors import PtoCostError

    try:
        return instruction(str(op)).family in READS_DST
    except PtoCostError:
        return False


def param_columns() -> tuple[str, ...]:
    """Return the op-parameter columns a trace may carry under the names `sweep` writes (its output is a cases file)."""
    from costmodel.sweep import OP_PARAMS

    return tuple(c for c in OP_PARAMS if c not in KEY)  # vf_impl_kind is a trace column of its own


def _param_columns(row: Any, kw: dict[str, Any]) -> dict[str, Any]:
    """Return the parameters a row names in sweep-named columns; TraceError where one gives a parameter the trace's
    own columns also give and the two requests differ (`saturation` off against `saturation_mode` ON)."""
    from costmodel.errors import PtoCostError
    from costmodel.operands import make_request

    out: dict[str, Any] = {}
    for name in param_columns():
        if name not in row:
            continue
        text = cell_text(row[name])
        if text:
            out[name] = flag(text, name) if name in FLAG_PARAMS else text
    clash = [n for n in out if n in kw]
    if clash:
        try:
            same = make_request(**kw) == make_request(**{**kw, **{n: out[n] for n in clash}})
        except PtoCostError:  # one of the two is malformed: the request built from the row reports it
            same = True
        if not same:
            given = ", ".join(f"{n} = {cell_text(row.get(n))} against {cell_text(kw[n])}" for n in clash)
            raise TraceError(f"a column contradicts the trace's own for the same parameter: {given}")
    return out


def _transfer_kwargs(extra: dict[str, str], valid_rows: int) -> dict[str, Any]:
    """GM shape, pad value and dynamic-shape flag of a TLOAD/TSTORE test row.

    The tests' shape3 counts all the tile's rows; the GM tensor's dim 3 is then valid_rows / (shape0 *
    shape1 * shape2), so that the §1.5 ND mapping holds and one copy per outer index moves its share of the
    tile (the bytes moved equal the tile's, as in costmodel.md §4's finding).
    """
    out: dict[str, Any] = {}
    given = [f"shape{i}" for i in range(5) if f"shape{i}" in extra]
    if given and len(given) < 5:
        raise TraceError(f"extra gives {', '.join(given)} of the GM shape; a TLOAD/TSTORE row needs all of "
                         "shape0..shape4")
    if given:
        dims = [count(extra[f"shape{i}"], f"extra shape{i}") for i in range(5)]
        outer = dims[0] * dims[1] * dims[2]
        if outer * dims[3] != valid_rows and dims[3] == valid_rows and valid_rows % outer == 0:
            dims[3] = valid_rows // outer
        out["gm_shape"] = tuple(dims)
    if "PadVal" in extra:
        out["pad"] = extra["PadVal"]
    if "dyn" in extra:
        out["gm_dynamic"] = flag(extra["dyn"], "extra dyn")
    return out


def _tmov_kwargs(extra: dict[str, str]) -> dict[str, Any]:
    """Tile locations and BLayout/SLayout pairs of a TMOV test row."""
    out: dict[str, Any] = {}
    for side in ("src", "dst"):
        if f"{side}BL" in extra:
            out[f"{side}_layout"] = f"{extra[f'{side}BL']}/{extra.get(f'{side}SL', 'NoneBox')}"
        if f"{side}Loc" in extra:
            out[f"{side}_loc"] = extra[f"{side}Loc"]
    return out
