"""A2/A3 lowering of Vec->Vec TMOV: dst(r, c) = src(r, c) between two tiles of the same shape.

* `UbCopy`: both layouts keep runs of 32/sizeof(T) consecutive *columns of a row* in one 32-byte block
  (ND, Nz, Zz), or both keep runs of consecutive *rows of a column* (DN, Zn). The move is then a permutation
  of 32-byte blocks, issued as copy_ubuf_to_ubuf calls: blocks that are consecutive on both sides merge
  into bursts, and bursts with constant source and destination strides share one call (the grouping that
  needs fewer calls wins). Same layout and full rows: one burst. Blocks are copied whole, so padding after
  the valid region inside a written block is overwritten (isa.md §1.3).
* `Transpose`: any other pair (ND <-> DN, Nz -> DN, ...) needs elements to change place inside a 32-byte
  block, which neither lane-preserving vector calls (isa.md §7.1) nor UB copies can do; the plan transposes
  blocks on the vector unit with `scatter_vnchwconv` (an intrinsic costmodel.md §5 names). That this is the
  path PTO takes is inferred from the measurements: every Vec->Vec layout pair costs the same as a copy of
  the tile (measured/a2a3_cycles.csv, TMOV 64x128 f32).
* `ScalarMove`: the same move element by element on the scalar unit, as a what-if.
"""
from __future__ import annotations

from ...isa_a2a3 import Addr, CopyUB, ScalarMove, TransposeMove
from ...layouts import ROW_RUNS, element_offsets
from ...plan import Plan
from ...request import Request
from ...tiles import Tile
from ..alloc import allocate

BLOCK = 32


def _orientation(layout: str) -> str:
    return "row" if layout in ROW_RUNS else "col"


def strategies(req: Request) -> tuple[str, dict[str, str | None]]:
    """Return (default, {strategy: None or why illegal})."""
    src, dst = req.tile("src"), req.dst
    same = _orientation(src.layout) == _orientation(dst.layout)
    pair = f"{_name(src.layout)} -> {_name(dst.layout)}"
    why = None if same else f"{pair} moves elements inside 32-byte blocks; a block copy cannot do that"
    # the transpose path is for pairs that move elements inside blocks; the reference gives none for the others
    needless = (f"{pair} keeps every element's place inside its 32-byte block: a block copy moves it, and no "
                "transpose path exists for it") if same else None
    return ("UbCopy" if same else "Transpose"), {"UbCopy": why, "Transpose": needless, "ScalarMove": None}


def _name(layout: str) -> str:
    """The layout as the command line spells it (nd, dn, nz, zn, zz)."""
    return {"row_major": "nd", "col_major": "dn"}.get(layout, layout)


def _block_pairs(src: Tile, dst: Tile) -> list[tuple[int, int]]:
    """(src block, dst block) for every block holding part of the valid region."""
    esize = src.dtype.bits // 8
    per = BLOCK // esize
    vr, vc = dst.valid
    s_off = element_offsets(src.layout, src.rows, src.cols, esize)
    d_off = element_offsets(dst.layout, dst.rows, dst.cols, esize)
    if _orientation(src.layout) == "row":
        rows, cols = range(vr), range(0, vc, per)
    else:
        rows, cols = range(0, vr, per), range(vc)
    return [(int(s_off[r, c]) // per, int(d_off[r, c]) // per) for r in rows for c in cols]


def _bursts(pairs: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """Merge pairs (in the given order) into bursts (src start, dst start, length) of consecutive blocks."""
    out: list[list[int]] = []
    for s, d in pairs:
        if out and s == out[-1][0] + out[-1][2] and d == out[-1][1] + out[-1][2]:
            out[-1][2] += 1
        else:
            out.append([s, d, 1])
    return [tuple(b) for b in out]


def _calls(bursts: list[tuple[int, int, int]]) -> list[CopyUB]:
    """Group bursts of equal length with constant non-overlapping strides into copy_ubuf_to_ubuf calls."""
    calls: list[CopyUB] = []
    i = 0
    while i < len(bursts):
        s0, d0, n = bursts[i]
        j = i + 1
        if j < len(bursts) and bursts[j][2] == n:
            ss, ds = bursts[j][0] - s0, bursts[j][1] - d0
            if ss >= n and ds >= n:
                while j < len(bursts) and bursts[j][2] == n and bursts[j][0] - bursts[j - 1][0] == ss \
                        and bursts[j][1] - bursts[j - 1][1] == ds:
                    j += 1
        count = j - i
        ss = bursts[i + 1][0] - s0 if count > 1 else n
        ds = bursts[i + 1][1] - d0 if count > 1 else n
        calls.append(CopyUB(Addr("dst", d0 * BLOCK), Addr("src", s0 * BLOCK), count, n, ss - n, ds - n))
        i = j
    return calls


def block_copies(src: Tile, dst: Tile) -> list[CopyUB]:
    """Return the copy_ubuf_to_ubuf calls of a block-permuting move (the fewer of two groupings)."""
    pairs = _block_pairs(src, dst)
    by_src = _calls(_bursts(sorted(pairs)))
    by_dst = _calls(_bursts(sorted(pairs, key=lambda p: (p[1], p[0]))))
    return by_src if len(by_src) <= len(by_dst) else by_dst


def lower(req: Request, strategy: str) -> Plan:
    """Return the TMOV plan in `strategy` (UbCopy, Transpose or ScalarMove)."""
    src, dst = req.tile("src"), req.dst
    vr, vc = dst.valid
    body: list = []
    if vr and vc:
        if strategy == "UbCopy":
            body = block_copies(src, dst)
        else:
            kind = TransposeMove if strategy == "Transpose" else ScalarMove
            body = [kind(dst.dtype.name, Addr("dst"), Addr("src"), vr, vc, dst.layout, src.layout, dst.shape, src.shape)]
    notes = (TRANSPOSE_NOTE,) if strategy == "Transpose" else ()
    return Plan("a2a3", req.op, strategy, req, allocate("a2a3", list(req.tiles)), tuple(body), notes)


# what a Transpose plan rests on (module doc), said where it is priced (QA 53: only this file said so)
TRANSPOSE_NOTE = ("Transpose is one scatter_vnchwconv pass over the tile's blocks, priced as a UB copy of those "
                  "blocks (inferred: the reference does not give the sequence PTO emits; every Vec->Vec layout pair "
                  "measured, TMOV 64x128 f32, costs what a copy of the tile does)")
