"""Closed-form evaluation of a sweep group: many requests that differ only in shape, costed with numpy.

A *group* is a set of sweep rows with the same op, dtypes, arch and op parameters; only (rows, cols, valid rows,
valid cols) vary. For the families below the cost of every legal strategy is a closed form over those four
arrays, so a group is costed without lowering a plan per row:

* A2/A3 unary, binary and binary-scalar ops (`a2a3.py`): the formula model's features counted per emission mode;
* A5 unary, binary and binary-scalar ops (`a5.py`): the VF program's trip counts (chunks C, rows R) per loop form,
  priced by the A5 formula or by the pipeline model's vectorised `cycles_for`.

Everything constant within a group (elements per repeat, the intrinsic steps and their classes, the dispatch
result for a contiguous and a strided request, the lowered program of each structure) is read from the lowering
code run on a representative request, so the lowering stays the one source of truth; the shape rules that vary
per row are restated over arrays and checked against the plan path by tests/test_sweep_vector.py.

Anything else — other families (reductions, data movement, expand, partial, block reduce, conversions, TSEL),
scalar loops, `@hook` sequences, other models, rows whose request would be rejected — is left to the sweep's
per-request fallback: `closed_form` returns None for a whole group, or marks single rows in `Block.fallback`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

from ..errors import PtoCostError
from ..request import Request

VECTOR_FAMILIES = ("unary", "binary", "binary_scalar")
REP_SHAPE = (2, 256)  # a representative request: 256 columns are a whole number of 32-byte rows for every dtype


class Shapes(NamedTuple):
    """Int64 arrays of one group: static rows and cols, valid rows and cols."""

    rows: np.ndarray
    cols: np.ndarray
    vr: np.ndarray
    vc: np.ndarray

    def take(self, idx) -> "Shapes":
        return Shapes(*(a[idx] for a in self))

    def __len__(self) -> int:  # type: ignore[override]
        return len(self.rows)


@dataclass
class Block:
    """Results of one group: n rows by S strategies (in the order `lower.strategies` lists them).

    `cycles` is NaN where a strategy is illegal; `default` indexes `strategies`; `models` names the model that
    priced each strategy; `fallback` marks rows this block does not cover (the sweep lowers those one by one);
    a non-empty `note` means every covered row is that error (e.g. the model does not exist on the arch).
    """

    strategies: tuple[str, ...]
    cycles: np.ndarray
    legal: np.ndarray
    default: np.ndarray
    models: tuple[str, ...]
    fallback: np.ndarray
    note: str = ""


MakeRequest = Callable[[int, int, int, int], Request]


def closed_form(make: MakeRequest, shapes: Shapes, models) -> Block | None:
    """Return the Block of a group, or None when the group has no closed form.

    `make(rows, cols, valid_rows, valid_cols)` builds the group's request for one shape; `models` gives the cost
    model instance per arch (`models.get(arch)`, raising PtoCostError for a model the arch does not have).
    """
    try:
        rep = make(REP_SHAPE[0], REP_SHAPE[1], REP_SHAPE[0], REP_SHAPE[1])
    except PtoCostError:
        return None
    if rep.family not in VECTOR_FAMILIES or not _uniform(rep):
        return None
    if rep.arch == "a2a3":
        from .a2a3 import group_block
    elif rep.arch == "a5":
        from .a5 import group_block
    else:
        return None
    return group_block(rep, make, shapes, models)


def _uniform(req: Request) -> bool:
    """Whether every operand tile has dst's static shape, valid region, layout and static-valid flag."""
    d = req.dst
    return all((t.shape, t.valid, t.layout, t.static_valid) == (d.shape, d.valid, "row_major", d.static_valid)
               for _, t in req.tiles)


def request_ok(req: Request, shapes: Shapes) -> np.ndarray:
    """Rows whose request `make_request` accepts for sure (elementwise tiles of one shape, row-major).

    Conservative: a row outside this mask is routed to the per-request path, which raises the exact error.
    """
    rows, cols, vr, vc = shapes
    ok = (rows >= 1) & (cols >= 1) & (vr >= 1) & (vc >= 1) & (vr <= rows) & (vc <= cols)
    for bits in {t.dtype.bits for _, t in req.tiles}:
        ok &= (cols * bits) % 256 == 0  # a row-major row is a whole number of 32-byte blocks (tiles.py)
    return ok


def ub_need(buffers: list[tuple[int, int]], shapes: Shapes, align: int) -> np.ndarray:
    """Bytes of unified buffer the allocator uses: per buffer (bits per element of a rows x cols tile, or 0 and a
    constant byte size), rounded up to `align` bytes and summed (lower/alloc.py)."""
    need = np.zeros(len(shapes.rows), dtype=np.int64)
    numel = shapes.rows * shapes.cols
    for bits, const in buffers:
        nbytes = (numel * bits + 7) // 8 if bits else np.int64(const)
        need += -(-nbytes // align) * align
    return need
