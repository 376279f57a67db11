"""Read data/a2a3_lowering.csv: per op (and dtype / parameter condition) the decision rule and intrinsic steps.

`when` lists `param=value` / `param!=value` conditions on the request's op parameters. `rule` is the mode-decision rule (`bins`, `binary`, `unary`) or `scalar_loop` (strategy `ScalarLoop`). A rule
written `RULE:Name` makes the row a *named alternative*: it is offered as strategy `Name` (issued in the mode
RULE would pick) beside the strategies of the base row. `steps` is a sequence (see steps.py) or `@hook`.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ..._data import read_rows
from ...errors import NotModelledError
from ...flags import FALSE, TRUE
from ...request import Request
from .hooks import sequence
from .steps import StepSpec, parse

def _norm(value) -> str:
    text = str(value).strip().lower()
    if text in TRUE:
        return "true"
    return "" if text in FALSE or text == "none" else text


@dataclass(frozen=True)
class LoweringRow:
    op: str
    dtypes: tuple[str, ...]
    when: tuple[tuple[str, str, str], ...]  # (param, "=" or "!=", value)
    rule: str
    steps: tuple[StepSpec, ...]
    scratch: tuple[tuple[str, str], ...]  # (name, dtype or "dst")
    source: str
    name: str = ""  # strategy name of a named alternative ("" for a base row)
    hook: str = ""  # `@hook` sequence, resolved per request

    def matches(self, req: Request) -> bool:
        if self.dtypes != ("*",) and req.dtype.name not in self.dtypes:
            return False
        return all((_norm(req.param(k, "")) == _norm(v)) == (op == "=") for k, op, v in self.when)

    def specs(self, req: Request) -> tuple[StepSpec, ...]:
        """Return the row's step specs for this request (resolving an `@hook`)."""
        return parse(sequence(self.hook, req)) if self.hook else self.steps


@functools.cache
def _rows() -> tuple[LoweringRow, ...]:
    out = []
    for r in read_rows("a2a3_lowering.csv"):
        when = tuple(_condition(c) for c in r["when"].split() if c)
        scratch = tuple(tuple(c.split("=", 1)) if "=" in c else (c, "dst") for c in r["scratch"].split())
        rule, _, name = r["rule"].partition(":")
        steps = r["steps"].strip()
        hook = steps[1:] if steps.startswith("@") else ""
        out.append(LoweringRow(r["op"], tuple(r["dtypes"].split()) or ("*",), when, rule,
                               () if hook else parse(steps), scratch, r["source"], name, hook))
    return tuple(out)


def _condition(text: str) -> tuple[str, str, str]:
    """Parse `key=value` or `key!=value` (a parameter the request must, or must not, have)."""
    key, _, value = text.partition("=")
    return (key[:-1], "!=", value) if key.endswith("!") else (key, "=", value)


def _best(cands: list[LoweringRow]) -> LoweringRow:
    return max(cands, key=lambda r: (r.dtypes != ("*",), len(r.when)))


def lowering_row(req: Request) -> LoweringRow:
    """Return the base row for the request (a dtype-specific row beats `*`, a conditioned row beats none)."""
    cands = [r for r in _rows() if r.op == req.op and not r.name and r.matches(req)]
    if not cands:
        own = [r for r in _rows() if r.op == req.op and not r.name]
        types = " ".join(dict.fromkeys(t for r in own for t in r.dtypes))
        if own and types != "*":
            raise NotModelledError(f"{req.op} has no A2/A3 lowering for {req.dtype} (lowered for: {types})")
        raise NotModelledError(f"{req.op} has no A2/A3 lowering; see `pto-cost ops --arch a2a3` for modelled ops")
    return _best(cands)


def alternatives(req: Request) -> dict[str, LoweringRow]:
    """Return the named alternative rows that apply to the request, by strategy name (most specific per name)."""
    named: dict[str, list[LoweringRow]] = {}
    for r in _rows():
        if r.op == req.op and r.name and r.matches(req):
            named.setdefault(r.name, []).append(r)
    return {name: _best(rows) for name, rows in named.items()}


def modelled_ops() -> tuple[str, ...]:
    """Return the ops with at least one A2/A3 lowering row."""
    return tuple(dict.fromkeys(r.op for r in _rows()))
