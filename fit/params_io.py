"""Write parameter tables atomically, replacing only the rows a fit produced (other arches/forms are kept)."""
from __future__ import annotations

import csv
import os
from pathlib import Path

from costmodel.models.params import COLUMNS, FORMAT_VERSION, ParamRow, read_table

from .io import atomic_path


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def merge_rows(old: list[ParamRow], new: list[ParamRow]) -> list[ParamRow]:
    """Return `old` with the (arch, form) groups `new` covers replaced by `new`, groups in sorted order (each keeping
    its own row order), so a table's layout does not depend on which fit wrote it last."""
    covered = {(r.arch, r.form) for r in new}
    kept = [r for r in old if (r.arch, r.form) not in covered] + list(new)
    return sorted(kept, key=lambda r: (r.arch, r.form))


def write_params(rows: list[ParamRow], path: str | os.PathLike, *, merge: bool = True) -> int:
    """Write `rows` atomically, merged into the existing table at `path`, or where there is none into the table in
    use ($PTO_COST_PARAMS, else the shipped one: a new file is a whole table); returns the row count."""
    from costmodel.models.params import shipped

    target = Path(path)
    if merge:
        rows = merge_rows((read_table(target) if target.exists() else shipped()).rows, rows)
    with atomic_path(target) as tmp:
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(COLUMNS)
            for r in rows:
                w.writerow([FORMAT_VERSION, r.arch, r.form, r.scope, r.name, r.dtype, r.dst_dtype, r.strategy,
                            r.op_params, r.term, _fmt(float(r.value)), _fmt(r.stderr), r.n_obs, _fmt(r.cv_mape), r.source])
    return len(rows)
