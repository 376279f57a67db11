"""Read data/a2a3_lowering_part_expand.csv: per op and emission path, the intrinsic steps (steps.py syntax).

Paths: `copy` / `overlap` / `compare` / `select` (part ops), `copy` / `vector` (col expand), `dup` / `vector` /
`broadcast` (row expand), `vector` (block reduce). An `op` ending in `*` applies to every op with that prefix.
"""
from __future__ import annotations

import functools

from ..._data import read_rows
from ...errors import NotModelledError
from .steps import StepSpec, parse

TABLE = "a2a3_lowering_part_expand.csv"


@functools.cache
def _rows() -> tuple[tuple[str, str, tuple[StepSpec, ...], str], ...]:
    return tuple((r["op"], r["path"], parse(r["steps"]), r["source"]) for r in read_rows(TABLE))


def steps_for(op: str, path: str) -> tuple[StepSpec, ...]:
    """Return the step specs of `op` on `path` (an exact op row beats a `PREFIX*` row); raise if none."""
    exact = [s for o, p, s, _ in _rows() if o == op and p == path]
    if exact:
        return exact[0]
    pattern = [s for o, p, s, _ in _rows() if o.endswith("*") and op.startswith(o[:-1]) and p == path]
    if pattern:
        return pattern[0]
    raise NotModelledError(f"{op} has no A2/A3 '{path}' sequence in data/{TABLE}")


def has_path(op: str, path: str) -> bool:
    """Whether the table gives `op` a sequence on `path`."""
    try:
        steps_for(op, path)
    except NotModelledError:
        return False
    return True
