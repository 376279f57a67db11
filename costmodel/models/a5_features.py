"""Trip-count features of an A5 VF plan, the variables the A5 formula model is a closed form over.

* `rows` R: iterations of the row loop (1 for a 1D program);
* `chunks` C: executions of a chunk of work — an iteration of the element (1D) or chunk (2D) loop, or a tail
  chunk issued once per row after the full chunks (2D post-update, costmodel.md §7);
* `per_row` I = C / R, and `multi` = 1 when rows hold two or more chunks (2D) — consecutive chunks of one row
  are what some conversions serialise on (the measured narrowing TCVT step, costmodel.md §11/§13) — unless the rows
  are `flat`: their chunk loop runs at most once (a post-update row of one full chunk and a tail chunk), a loop
  VfSim canonicalises away (costmodel.md §8), as it does the chunk loop of rows of one chunk.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..isa_a5 import Loop, VfProgram
from ..plan import Plan


@dataclass(frozen=True)
class VfTrips:
    """Trip-count features of one plan (summed over its VF programs)."""

    strategy: str
    rows: int
    chunks: int
    flat: bool = False

    @property
    def dim(self) -> str:
        return self.strategy[:2]

    @property
    def per_row(self) -> float:
        return self.chunks / self.rows if self.rows else 0.0

    @property
    def multi(self) -> int:
        return int(self.dim == "2d" and self.per_row >= 2 and not self.flat)


def _count(body: tuple, times: int) -> tuple[int, int]:
    """Return (chunks, rows) executed by `body` run `times` times."""
    chunks = rows = 0
    for ins in body:
        if not isinstance(ins, Loop):
            continue
        if ins.role in ("elements", "chunks"):
            chunks += times * ins.trip
        elif ins.role == "rows":
            rows += times * ins.trip
            has_tail = any(getattr(i, "unit", "") == "store" for i in ins.body if not isinstance(i, Loop))
            chunks += times * ins.trip * int(has_tail)
            c, r = _count(ins.body, times * ins.trip)
            chunks += c
        else:
            c, r = _count(ins.body, times * ins.trip)
            chunks, rows = chunks + c, rows + r
    return chunks, rows


def _row_chunk_trips(body: tuple, in_rows: bool = False) -> list[int]:
    """Return the trip counts of the chunk loops nested in a rows loop."""
    out = []
    for ins in body:
        if isinstance(ins, Loop):
            if in_rows and ins.role == "chunks":
                out.append(ins.trip)
            out += _row_chunk_trips(ins.body, in_rows or ins.role == "rows")
    return out


def vf_trips(plan: Plan) -> VfTrips:
    """Return the trip-count features of an A5 plan."""
    chunks = rows = 0
    trips: list[int] = []
    for prog in plan.body:
        if isinstance(prog, VfProgram):
            c, r = _count(prog.body, 1)
            chunks, rows = chunks + c, rows + r
            trips += _row_chunk_trips(prog.body)
    return VfTrips(plan.strategy, max(rows, 1), chunks, bool(trips) and max(trips) <= 1)


def _chunk_body(body: tuple) -> tuple:
    """Return the instructions of the deepest loop that stores (the per-chunk body), or () if none stores."""
    return _chunk_loop(body)[0]


def _chunk_loop(body: tuple) -> tuple[tuple, tuple]:
    """Return (the per-chunk body: `_chunk_body`, the instructions of the loop around it, such as a row loop, or the
    program's own where none is)."""
    best: tuple[int, tuple, tuple] = (-1, (), ())
    stack = [(body, 0)]
    while stack:
        items, depth = stack.pop()
        for ins in items:
            if isinstance(ins, Loop):
                if depth + 1 > best[0] and any(getattr(i, "unit", "") == "store" for i in ins.body):
                    best = (depth + 1, ins.body, items)
                stack.append((ins.body, depth + 1))
    return best[1], best[2]


def chunk_work(plan: Plan) -> tuple[tuple[str, int], ...]:
    """Return the work of a chunk of the plan (`_chunk_body` of each VF program): its loads, its stores and each
    vector op, with their counts, sorted by name."""
    from collections import Counter

    work: Counter = Counter()
    for prog in plan.body:
        if isinstance(prog, VfProgram):
            for ins in _chunk_body(prog.body):
                unit = getattr(ins, "unit", "")
                if unit in ("load", "store"):
                    work[unit] += 1
                elif unit == "vector":
                    work[ins.op] += 1
    return tuple(sorted(work.items()))


def contains_work(big: tuple[tuple[str, int], ...], small: tuple[tuple[str, int], ...]) -> bool:
    """Whether a chunk of work `big` (`chunk_work`) does all of `small`'s: every load, store and op at least as
    often."""
    have = dict(big)
    return bool(small) and all(have.get(k, 0) >= n for k, n in small)


def body_signature(plan: Plan) -> str:
    """Return what bounds a chunk of the plan's work: its loads and stores and its busiest compute unit with the
    number of ops on it — the SFU (exp, ln, sqrt, div) if any op uses it, else conversions, else the simple EXU ops
    (costmodel.md §8 functional units). Ops with one signature emit the same work per chunk (TADD/TSUB/TMUL: two
    loads, one simple op, one store) and measure alike: within 1-2 cycles at every shape measured for several of
    them; an SFU-bound chunk measures the same with or without a simple op beside it (TDIVS = TRECIP). Two or more
    ops beside the busiest unit's (a chain such as TFMODS's divide, truncate, multiply, subtract) are counted (` +3`):
    nothing measured shows them free, so such a chunk shares no measured body."""
    from .a5_pipeline_uarch import CONVERT_OPS, SFU_OPS

    loads = stores = row_loads = 0
    ops = {"sfu": 0, "cvt": 0, "simple": 0}
    for prog in plan.body:
        if not isinstance(prog, VfProgram):
            continue
        chunk, around = _chunk_loop(prog.body)
        for ins in chunk:
            unit = getattr(ins, "unit", "")
            loads += unit == "load"
            stores += unit == "store"
            if unit == "vector":
                ops["sfu" if ins.op in SFU_OPS else "cvt" if ins.op in CONVERT_OPS else "simple"] += 1
        # loads a row loop issues once a row beside its chunk loop (a row-expand's broadcast of src1[r]); not a
        # post-update row's tail chunk, issued after the loop with its own store
        units = [getattr(ins, "unit", "") for ins in around]
        if around is not prog.body and "store" not in units:
            row_loads += units.count("load")
    busy = next((u for u in ("sfu", "cvt") if ops[u]), "simple")
    others = sum(ops.values()) - ops[busy]
    return (f"ld{loads} st{stores} {busy}{ops[busy]}" + (f" +{others}" if others > 1 else "")
            + (f" rowld{row_loads}" if row_loads else ""))
