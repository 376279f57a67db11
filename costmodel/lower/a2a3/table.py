"""Read data/a2a3_lowering.csv: per op (and dtype / parameter condition) the decision rule and intrinsic steps."""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ..._data import read_rows
from ...errors import NotModelledError
from ...request import Request
from .steps import StepSpec, parse


@dataclass(frozen=True)
class LoweringRow:
    op: str
    dtypes: tuple[str, ...]
    when: tuple[tuple[str, str], ...]
    rule: str
    steps: tuple[StepSpec, ...]
    scratch: tuple[tuple[str, str], ...]  # (name, dtype or "dst")
    source: str

    def matches(self, req: Request) -> bool:
        if self.dtypes != ("*",) and req.dtype.name not in self.dtypes:
            return False
        return all(str(req.param(k, "")).lower() == v.lower() for k, v in self.when)


@functools.cache
def _rows() -> tuple[LoweringRow, ...]:
    out = []
    for r in read_rows("a2a3_lowering.csv"):
        when = tuple(tuple(c.split("=", 1)) for c in r["when"].split() if c)
        scratch = tuple(tuple(c.split("=", 1)) if "=" in c else (c, "dst") for c in r["scratch"].split())
        out.append(LoweringRow(r["op"], tuple(r["dtypes"].split()) or ("*",), when, r["rule"],
                               parse(r["steps"]) if not r["steps"].startswith("@") else (), scratch, r["source"]))
    return tuple(out)


def lowering_row(req: Request) -> LoweringRow:
    """Return the most specific row for the request (a dtype-specific row beats `*`, a conditioned row beats none)."""
    cands = [r for r in _rows() if r.op == req.op and r.matches(req)]
    if not cands:
        raise NotModelledError(f"{req.op} has no A2/A3 lowering for {req.dtype} yet; see `pto-cost ops --arch a2a3` for modelled ops")
    return max(cands, key=lambda r: (r.dtypes != ("*",), len(r.when)))


def modelled_ops() -> tuple[str, ...]:
    """Return the ops with at least one A2/A3 lowering row."""
    return tuple(dict.fromkeys(r.op for r in _rows()))
