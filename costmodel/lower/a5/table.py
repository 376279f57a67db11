"""Read the A5 lowering tables: per-op VF bodies, named sequences, TCVT recipes, the dispatch switch.

* data/a5_ops.csv       op, dtypes, when, body, prologue: the compute statements of one chunk
* data/a5_sequences.csv named multi-section sequences referenced as `@name` from a body
* data/a5_convert.csv   TCVT pair -> VF op and elements per iteration for 1D and 2D loops
* data/a5_dispatch.csv  (scope, contiguity, vf_impl_kind) -> loop form
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ..._data import read_rows
from ...errors import NotModelledError
from ...request import Request


@dataclass(frozen=True)
class OpRow:
    """One row of data/a5_ops.csv."""

    op: str
    dtypes: tuple[str, ...]
    when: tuple[tuple[str, str], ...]
    body: str
    prologue: str
    source: str

    def matches(self, req: Request) -> bool:
        if self.dtypes != ("*",) and req.dtype.name not in self.dtypes:
            return False
        return all(str(req.param(k, "")).lower() == v.lower() for k, v in self.when)


@functools.cache
def _op_rows() -> tuple[OpRow, ...]:
    out = []
    for r in read_rows("a5_ops.csv"):
        when = tuple(tuple(c.split("=", 1)) for c in r["when"].split() if c)
        out.append(OpRow(r["op"], tuple(r["dtypes"].split()) or ("*",), when, r["body"].strip(), r["prologue"].strip(),
                         r["source"]))
    return tuple(out)


def op_row(req: Request) -> OpRow:
    """Return the most specific row for the request: a parameter condition first, then a dtype list, beats `*`."""
    cands = [r for r in _op_rows() if r.op == req.op and r.matches(req)]
    if not cands:
        own = [r for r in _op_rows() if r.op == req.op]
        if own:
            types = " ".join(dict.fromkeys(t for r in own if not r.when for t in r.dtypes))
            of_dtype = any(r.dtypes == ("*",) or req.dtype.name in r.dtypes for r in own)  # under other parameters
            given = " with these parameters" if of_dtype else ""
            raise NotModelledError(f"{req.op} has no A5 VF lowering for {req.dtype}{given} (lowered for: {types})")
        raise NotModelledError(f"{req.op} has no A5 VF lowering; modelled A5 ops: {', '.join(modelled_ops())}")
    return max(cands, key=lambda r: (len(r.when), r.dtypes != ("*",)))


def modelled_ops() -> tuple[str, ...]:
    """Return the ops with an A5 body row (TCVT is driven by data/a5_convert.csv, the value-and-index part ops by
    lower/a5/vf.py's arg kernel)."""
    return tuple(dict.fromkeys(r.op for r in _op_rows())) + ("TCVT", "TPARTARGMAX", "TPARTARGMIN")


@functools.cache
def sequence(name: str) -> dict[str, tuple[str, ...]]:
    """Return a named sequence as {section: statements} (sections: prologue, body, steps, epilogue)."""
    out: dict[str, list[str]] = {}
    for r in read_rows("a5_sequences.csv"):
        if r["name"] == name:
            out.setdefault(r["section"], []).append(r["stmt"])
    if not out:
        raise NotModelledError(f"no A5 sequence {name!r} in data/a5_sequences.csv")
    return {k: tuple(v) for k, v in out.items()}


@dataclass(frozen=True)
class ConvertRow:
    src: str
    dst: str
    op: str
    epr_1d: int
    epr_2d: int
    source: str


@functools.cache
def convert_rows() -> dict[tuple[str, str], ConvertRow]:
    """Return TCVT recipes keyed by (src, dst) dtype names."""
    return {(r["src"], r["dst"]): ConvertRow(r["src"], r["dst"], r["op"], int(r["epr_1d"]), int(r["epr_2d"]), r["source"])
            for r in read_rows("a5_convert.csv")}


def convert_row(src: str, dst: str) -> ConvertRow:
    """Return the recipe of one TCVT pair, or raise naming the pair."""
    row = convert_rows().get((src, dst))
    if row is None:
        raise NotModelledError(f"TCVT {src}->{dst} has no A5 recipe in data/a5_convert.csv")
    return row


@functools.cache
def dispatch_rows() -> tuple[dict[str, str], ...]:
    return read_rows("a5_dispatch.csv")


def dispatch(op: str, family: str, contiguous: bool, kind: str) -> tuple[str, str]:
    """Return (loop form, source) for a vf_impl_kind: the most specific matching row (op > family > `*`)."""
    cont = "contiguous" if contiguous else "strided"
    best, best_rank = None, -1
    for r in dispatch_rows():
        if r["contiguity"] != cont or r["vf_impl_kind"] not in ("*", kind):
            continue
        scope_rank = {op: 2, family: 1, "*": 0}.get(r["scope"], -1)
        if scope_rank < 0:
            continue
        rank = scope_rank * 2 + (r["vf_impl_kind"] == kind)
        if rank > best_rank:
            best, best_rank = r, rank
    assert best is not None, (op, family, cont, kind)
    return best["strategy"], best["source"]
