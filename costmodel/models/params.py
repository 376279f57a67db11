"""The parameter table data/formula_params.csv: lookup with `*` wildcards, most specific row wins."""
from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from .._data import data_path, per_file_version
from ..errors import NotModelledError, TraceError

KEY_FIELDS = ("arch", "form", "scope", "name", "dtype", "dst_dtype", "strategy", "op_params", "term")
COLUMNS = ("format_version", *KEY_FIELDS, "value", "stderr", "n_obs", "cv_mape", "source")
FORMAT_VERSION = 1


@dataclass(frozen=True)
class ParamRow:
    """One fitted (or provisional) parameter with its provenance."""

    arch: str
    form: str
    scope: str
    name: str
    dtype: str
    dst_dtype: str
    strategy: str
    op_params: str
    term: str
    value: float
    stderr: float | None
    n_obs: int
    cv_mape: float | None
    source: str
    # not in the file: the op key (arch, form, "op", name, dtype, dst dtype, variant) whose fitted body this row
    # copies (an A5 family row), so that a merge replaces it exactly when it replaces that key (fit/params_io.py)
    follows: tuple | None = field(default=None, compare=False)

    def specificity(self) -> int:
        return sum(getattr(self, f) not in ("*", "") for f in ("name", "dtype", "dst_dtype", "strategy", "op_params"))


class ParamTable:
    """Rows of the parameter CSV indexed by (arch, form, scope, term)."""

    def __init__(self, rows: list[ParamRow], path: str = ""):
        self.rows = rows
        self.path = path
        self._index: dict[tuple[str, str, str, str], list[ParamRow]] = {}
        self._found: dict[tuple, ParamRow | None] = {}  # lookups answered (the rows do not change once read)
        for r in rows:
            self._index.setdefault((r.arch, r.form, r.scope, r.term), []).append(r)

    def lookup(self, arch: str, form: str, scope: str, name: str, term: str, *, dtype: str = "*",
               dst_dtype: str = "", strategy: str = "*", op_params: str = "") -> ParamRow | None:
        """Return the most specific row matching the key (a `*` field matches anything), or None."""
        memo = (arch, form, scope, name, term, dtype, dst_dtype, strategy, op_params)
        if memo in self._found:
            return self._found[memo]
        best = None
        for r in self._index.get((arch, form, scope, term), ()):
            if r.name not in ("*", name) or r.dtype not in ("*", dtype) or r.strategy not in ("*", strategy):
                continue
            if r.dst_dtype not in ("*", "", dst_dtype) or r.op_params not in ("*", "", op_params):
                continue
            if r.dst_dtype == "" and dst_dtype not in ("", "*") and form != "intrinsic":
                continue
            if best is None or r.specificity() > best.specificity():
                best = r
        self._found[memo] = best
        return best

    def value(self, *args, default: float | None = None, **kw) -> float:
        row = self.lookup(*args, **kw)
        if row is None:
            if default is None:
                raise self.missing(" ".join(str(a) for a in args if a not in ("*", "")))
            return default
        return row.value

    def missing(self, what: str) -> NotModelledError:
        """Return the error for a parameter the table has no row for (`what` names it): a table holds only what
        its fits wrote."""
        return NotModelledError(f"parameter table {Path(self.path).name if self.path else '(in memory)'} has no row "
                                f"for {what}: a table written by `fit --fresh` holds only its traces' parameters "
                                "(refit without --fresh to merge them into a complete table)")


def _float(text: str) -> float | None:
    return float(text) if text not in ("", None) else None


def read_table(path: str | Path) -> ParamTable:
    """Read and check a parameter CSV; raises TraceError naming the line of a malformed row."""
    rows: list[ParamRow] = []
    if not Path(path).is_file():
        raise TraceError(f"parameter table {path} " + ("is a directory, not a .csv table" if Path(path).is_dir()
                                                       else "does not exist"))
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise TraceError(f"{path}: not a parameter table, missing columns {', '.join(missing)}")
        first_line: dict[tuple, int] = {}
        for r in reader:
            line = reader.line_num
            try:
                width = len(reader.fieldnames)
                if None in r or None in r.values():  # DictReader's marks of a row longer or shorter than the header
                    given = width + len(r.get(None) or ()) - sum(v is None for v in r.values())
                    raise ValueError(f"{given} fields where the header has {width} (a cut or merged line)")
                if int(r["format_version"]) != FORMAT_VERSION:
                    raise ValueError(f"format_version {r['format_version']} (this tool reads {FORMAT_VERSION})")
                row = ParamRow(r["arch"], r["form"], r["scope"], r["name"], r["dtype"], r["dst_dtype"],
                               r["strategy"], r["op_params"], r["term"], float(r["value"]), _float(r["stderr"]),
                               int(float(r["n_obs"] or 0)), _float(r["cv_mape"]), r["source"])
                if not math.isfinite(row.value):
                    raise ValueError(f"value {r['value']!r} is not a finite number")
            except (ValueError, TypeError) as exc:
                raise TraceError(f"{path}:{line}: bad parameter row: {exc}") from None
            key = (row.arch, row.form, row.scope, row.name, row.dtype, row.dst_dtype, row.strategy, row.op_params,
                   row.term)
            if key in first_line:
                raise TraceError(f"{path}:{line}: bad parameter row: the key of line {first_line[key]} again "
                                 f"({' '.join(x for x in key if x)}); a table holds one value per key")
            first_line[key] = line
            rows.append(row)
    return ParamTable(rows, str(path))


def path_in_use() -> str:
    """Return the path of the parameter table in use: $PTO_COST_PARAMS when set (a user's own fit), else the shipped
    one."""

    return os.environ.get("PTO_COST_PARAMS") or str(data_path("formula_params.csv"))


def shipped() -> ParamTable:
    """Return the parameter table in use (`path_in_use`), read again when the file changes (a refit in place)."""
    return _load(path_in_use())


_load = per_file_version(read_table)
