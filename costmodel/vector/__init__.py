"""Closed-form evaluation of a sweep group: many requests that differ only in shape, costed with numpy.

A *group* is a set of sweep rows with the same op, dtypes, arch and op parameters; only (rows, cols, valid rows,
valid cols) vary. For the families below the cost of every legal strategy is a closed form over those four
arrays, so a group is costed without lowering a plan per row:

* A2/A3 unary, binary and binary-scalar ops, conversions and the mask ops TSEL, TSELS, TCMP, TCMPS (`a2a3.py`):
  the formula model's features counted per emission mode;
* A5 unary, binary and binary-scalar ops, conversions, TSEL and TSELS (`a5.py`): the VF program's trip counts
  (chunks C, rows R) per loop form, priced by the A5 formula or by the pipeline model's vectorised `cycles_for`.

Everything constant within a group (elements per repeat, the intrinsic steps and their classes, the dispatch
result for a contiguous and a strided request, the lowered program of each structure) is read from the lowering
code run on a representative request, so the lowering stays the one source of truth; the shape rules that vary
per row are restated over arrays and checked against the plan path by tests/test_sweep_vector.py.

Anything else — other families (reductions, data movement, expand, partial, block reduce), scalar loops, `@hook` sequences, other models, rows whose request would be rejected — is left to the sweep's
per-request fallback: `closed_form` returns None for a whole group, or marks single rows in `Block.fallback`.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..catalog import COMPARES, ELEMENTWISE
from ..errors import PtoCostError
from ..lower.alloc import aligned, in_place_possible, overflow_message
from ..request import Request
from .output import Caveats

VECTOR_FAMILIES = ELEMENTWISE
# conversions run the same loops (A5, costmodel.md §3 step 3) or emission modes (A2/A3, the unary rule of §6) as a
# unary op, one source and one destination; TSEL the binary loops (A5) or counter-mode calls (A2/A3) plus a mask of
# one bit per element
ARCH_FAMILIES = {"a5": ("convert", "compare_select"), "a2a3": ("convert", "compare_select")}
# a buffer's (bits, const) for the TSEL mask: one bit per element of a rows x cols tile, each row padded to a
# 32-byte block (operands.py _mask_tile)
MASK_BUFFER = (-1, 0)
REP_SHAPE = (2, 256)  # a representative request: 256 columns are a whole number of 32-byte rows for every dtype


class Shapes(NamedTuple):
    """Int64 arrays of one group: static rows and cols, valid rows and cols."""

    rows: np.ndarray
    cols: np.ndarray
    vr: np.ndarray
    vc: np.ndarray

    def take(self, idx) -> Shapes:
        if isinstance(idx, slice) and idx == slice(None):
            return self
        return Shapes(*(a[idx] for a in self))

    def __len__(self) -> int:  # type: ignore[override]
        return len(self.rows)


@dataclass
class Block:
    """Results of one group: S strategies (in the order `lower.strategies` lists them) by n rows.

    `cycles` (S, n) is NaN where a strategy is illegal, `legal` (S, n) says where it is legal; `default` (n,)
    indexes `strategies`; `models` names the model that priced each strategy; `fallback` (n,) marks rows this block
    does not cover (the sweep lowers those one by one); a non-empty `note` means every covered row is that error
    (e.g. the model does not exist on the arch).
    """

    strategies: tuple[str, ...]
    cycles: np.ndarray
    legal: np.ndarray
    default: np.ndarray
    models: tuple[str, ...]
    fallback: np.ndarray
    note: str = ""
    best: np.ndarray | None = None     # (n,) index of the fastest legal strategy (ties: default, then listed order)
    dval: np.ndarray | None = None     # (n,) cycles of the default strategy
    errors: Errors | None = None     # rows whose request is rejected with a known message (not in `fallback`)
    sig: np.ndarray | None = None    # (S, n) int16: rows of a strategy with equal codes get one note (None: all 0;
    #                                  rows a chunk does not evaluate stay 0, as allocated)


@dataclass
class Errors:
    """Rows (positions in the block) rejected with a message: `messages[code[i]]` for row `rows[i]`."""

    rows: np.ndarray
    code: np.ndarray
    messages: list[str]


MakeRequest = Callable[[int, int, int, int], Request]


def representative(make: MakeRequest) -> Request:
    """Return the group's request at REP_SHAPE, all of it valid (raises PtoCostError where the group has none)."""
    return make(REP_SHAPE[0], REP_SHAPE[1], REP_SHAPE[0], REP_SHAPE[1])


def closed_form(make: MakeRequest, shapes: Shapes, models) -> Block | None:
    """Return the Block of a group, or None when the group has no closed form.

    `make(rows, cols, valid_rows, valid_cols)` builds the group's request for one shape; `models` gives the cost
    model instance per arch (`models.get(arch)`, raising PtoCostError for a model the arch does not have).
    """
    try:
        rep = representative(make)
    except PtoCostError:
        return None
    if rep.family not in VECTOR_FAMILIES + ARCH_FAMILIES.get(rep.arch, ()) or not _uniform(rep):
        return None
    if rep.arch == "a2a3":
        from .a2a3 import prepare
    elif rep.arch == "a5":
        from .a5 import prepare
    else:
        return None
    prep = prepare(rep, make, models)
    if prep is None:
        return None
    n, S = len(shapes.rows), len(prep.strategies)
    block = Block(prep.strategies, np.empty((S, n)), np.empty((S, n), dtype=bool), np.zeros(n, dtype=np.int64),
                  prep.models, np.empty(n, dtype=bool), prep.note, np.zeros(n, dtype=np.int64), np.empty(n),
                  sig=np.zeros((S, n), dtype=np.int16) if getattr(prep, "signs", False) else None)
    step = prep.chunk or max(n, 1)
    errors = []
    for a in range(0, n, step):
        sl = slice(a, a + step)
        view = Block(block.strategies, block.cycles[:, sl], block.legal[:, sl], block.default[sl], block.models,
                     block.fallback[sl], block.note, block.best[sl], block.dval[sl],
                     sig=None if block.sig is None else block.sig[:, sl])
        err = prep.evaluate(shapes.take(sl), view)
        if err is not None:
            errors.append((a, err))
        if S and not prep.note:
            best_of(view.cycles, view.default, view.best, view.dval)
    if errors:
        messages: dict[str, int] = {}
        rows, codes = [], []
        for a, err in errors:
            local = np.array([messages.setdefault(m, len(messages)) for m in err.messages], dtype=np.int64)
            rows.append(err.rows + a)
            codes.append(local[err.code])
        block.errors = Errors(np.concatenate(rows), np.concatenate(codes), list(messages))
    return block


# parameter table -> {(group, model, strategy, signature): note}, see `caveats`; a table no longer read takes its
# notes with it
_NOTES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
NOTES_KEPT = 65536  # per table


def caveats(make: MakeRequest, shapes: Shapes, block: Block, models, group: tuple) -> Caveats:
    """Return the model's note of each priced row of a block: per strategy and signature (`Block.sig`), the
    `group_note` the per-request path's model gives the first such row, so both paths note a row alike.

    The note depends on the group (`group`: what its requests share, but a scalar operand's value, which selects no
    instruction a note names: at most it shares a scalar register with a literal, sweep._Reused), the strategy, the
    signature and the parameter table only, so it is kept across sweeps (and their partitions) while the table is."""
    from ..lower import lower
    from ..models.auto import cycles_of, group_note
    from ..models.params import shipped

    S, n = block.legal.shape
    kept = _NOTES.setdefault(shipped(), {})
    group = tuple(kv for kv in group if kv[0] != "scalar")
    texts: dict[str, int] = {"": 0}
    per_strategy = np.zeros(S, dtype=np.int32)
    varied = []  # (strategy, the code of each row) where a strategy's rows have different notes
    for j, strategy in enumerate(block.strategies):
        sig = block.sig[j] if block.sig is not None else None
        low, high = (int(sig.min(initial=0)), int(sig.max(initial=0))) if sig is not None else (0, 0)
        values = np.arange(low, high + 1) if high - low < 2 else np.flatnonzero(np.bincount(sig))
        found = []
        for v in values.tolist():
            key = (group, models.name, strategy, v)
            hit = kept.get(key)
            if hit is None:
                rows = block.legal[j] & ~block.fallback
                if len(values) > 1 or v:
                    rows &= sig == v
                if not rows.any():  # no row takes this note
                    found.append(0)
                    continue
                req = make(*(int(a[rows.argmax()]) for a in shapes))
                m = models.get(req.arch)
                cycles_of(m, lower(req, strategy))
                if len(kept) >= NOTES_KEPT:
                    kept.clear()
                hit = kept[key] = group_note(m)
            found.append(texts.setdefault(hit, len(texts)))
        per_strategy[j] = found[0]
        if len(set(found)) > 1:
            code = np.zeros(int(values[-1]) + 1, dtype=np.int8 if len(texts) < 128 else np.int32)
            code[values] = found
            varied.append((j, code[sig]))
    codes = None
    if varied:
        codes = np.repeat(per_strategy.astype(np.int8 if len(texts) < 128 else np.int32)[:, None], n, axis=1)
        for j, code in varied:
            codes[j] = code
    return Caveats(tuple(texts), per_strategy, codes)


def ub_errors(arch: str, named: list[tuple[str, int, int]], shapes: Shapes, rows: np.ndarray,
              cache: dict | None = None, aliased: bool = False, in_place: bool | None = None) -> Errors | None:
    """The allocator's error for the given rows, whose buffers (name, and bits and bytes as in `ub_need`) exceed the
    unified buffer (lower/alloc.py); one message per distinct tile size (per tile shape where a mask's rows are
    padded), kept in `cache` (size -> message) across the chunks of a group. `aliased`: a source already shares
    dst's buffer, so the message does not suggest --in-place; `in_place`: whether the op may run in place
    (`overflow_message`)."""
    from ..arch import constants

    if not len(rows):
        return None
    c = constants(arch)
    align, limit = c.ub_align_bytes, c.ub_bytes
    cache = {} if cache is None else cache
    r, k = shapes.rows[rows].astype(np.int64), shapes.cols[rows].astype(np.int64)
    # the sizes depend on rows x cols alone, or (a mask's padded rows) on both
    shaped = any((b, cst) == MASK_BUFFER for _, b, cst in named)
    keys, code = np.unique(np.stack([r, k], 1) if shaped else r * k, axis=0 if shaped else None, return_inverse=True)
    sizes = [tuple(key) for key in keys.tolist()] if shaped else keys.tolist()
    new = [i for i, size in enumerate(sizes) if size not in cache]
    if new:  # the buffers' bytes of every new size at once; a message per size
        kr, kc = (keys[new, 0], keys[new, 1]) if shaped else (keys[new], np.ones(len(new), dtype=np.int64))
        used = [(name, buffer_bytes(bits, const, kr, kc).astype(np.int64).tolist()) for name, bits, const in named]
        need = sum(aligned(np.asarray(nbytes), align) for _, nbytes in used).tolist()
        # dst and its first source: rows x cols tiles of one width, not already one buffer
        same_first = not aliased and len(named) > 1 and named[0][1] == named[1][1] > 0
        for j, i in enumerate(new):
            cache[sizes[i]] = overflow_message(arch, [(name, nbytes[j]) for name, nbytes in used], need[j], limit,
                                               same_first, in_place)
    return Errors(np.asarray(rows, dtype=np.int64), code.ravel(), [cache[size] for size in sizes])


def buffer_bytes(bits: int, const: int, rows, cols) -> np.ndarray:
    """Bytes of one buffer over arrays of tile rows and cols: `bits` per element of a rows x cols tile, the TSEL
    mask (MASK_BUFFER), or `const` bytes."""
    if bits > 0:
        return cdiv(rows * cols * bits, 8)
    if (bits, const) == MASK_BUFFER:
        return rows * (mask_row_bits(cols) // 8)
    return np.broadcast_to(const, np.shape(rows))


def mask_row_bits(cols):
    """Bits a TSEL mask row holds: one per element of a `cols`-wide row, padded to a 32-byte block."""
    return cdiv(cdiv(cols, 8), 32) * 256


def best_of(cycles: np.ndarray, default: np.ndarray, best: np.ndarray, dval: np.ndarray) -> None:
    """Fill `dval` with the default strategy's cycles and `best` with the index of the first minimum in the order
    default, then the strategies as listed (NaN, an illegal strategy, never wins); the default must be legal."""
    S = len(cycles)
    dval[...] = cycles[0]
    for j in range(1, S):
        take_where(default == j, cycles[j], dval)
    if S == 1:
        best[...] = default
        return
    low = np.fmin(cycles[0], np.inf)  # NaN -> inf
    first = np.zeros(len(default), dtype=np.int8)
    for j in range(1, S):  # int8 arithmetic in place of np.where: several times faster
        lower = cycles[j] < low
        np.fmin(low, cycles[j], out=low)
        first += lower.view(np.int8) * (np.int8(j) - first)
    at_default = (dval == low).view(np.int8)
    best[...] = first + at_default * (default.astype(np.int8) - first)


def take_where(cond: np.ndarray, values: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Return `out` (float64) with `values` where `cond` holds: np.copyto(out, values, where=cond), bit for bit, as
    branch-free integer operations on the bits (several times faster on a mask that alternates at random)."""
    keep = cond.view(np.int8).astype(np.int64)
    np.negative(keep, out=keep)  # all ones where cond
    v, o = np.ascontiguousarray(values).view(np.int64), out.view(np.int64)
    np.bitwise_and(np.bitwise_xor(v, o), keep, out=keep)
    o ^= keep
    return out


_NAN_OR_ZERO = np.array([np.nan, 0.0])


def nan_unless(cond: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Return `out` (float64) with NaN where `cond` does not hold: np.copyto(out, nan, where=~cond) for any `out`
    that holds no -0.0 (x + 0.0 is x otherwise), without branches."""
    out += np.take(_NAN_OR_ZERO, cond.view(np.uint8))
    return out


def mask_of(req: Request) -> str:
    """The operand that is a packed mask (operands.py _mask_tile): a compare's dst, else the one called `mask`."""
    return "dst" if req.op in COMPARES else "mask"


def data_tile(req: Request):
    """The tile whose shape a sweep row gives: the first operand that is not the mask (dst; a compare's src0)."""
    return next(t for n, t in req.tiles if n != mask_of(req))


def _uniform(req: Request) -> bool:
    """Whether every operand tile but the mask (the one make_request derives from the data, operands.py _mask_tile)
    has the data tile's static shape, valid region, layout and static-valid flag."""
    tiles = [t for n, t in req.tiles if n != mask_of(req)]
    d = data_tile(req)
    return all((t.shape, t.valid, t.layout, t.static_valid) == (d.shape, d.valid, "row_major", d.static_valid)
               for t in tiles)


def screen(arch: str, rep: Request, named: list[tuple[str, int, int]], shapes: Shapes, out, messages: dict,
           note: str, extra_ok: "Callable[[], np.ndarray] | None" = None, aliased: bool = False):
    """Mark the rows the closed form cannot take (`out.fallback`) and the rows whose buffers overflow the unified
    buffer (their allocator error; `aliased`: the op already runs in place); return (errors, index of the rows to
    evaluate, their narrowed shapes) — the shapes are None when nothing is left to evaluate or the group only
    carries a note."""
    from ..arch import constants

    c = constants(arch)
    ok = request_ok(rep, shapes)
    fits = ub_need([b for _, *b in named], shapes, c.ub_align_bytes) <= c.ub_bytes
    errors = joined(shape_errors(rep, shapes, np.flatnonzero(~ok)),
                    ub_errors(arch, named, shapes, np.flatnonzero(ok & ~fits), messages, aliased,
                              in_place_possible(arch, rep.family)))
    ok &= fits
    if extra_ok is not None:
        ok &= extra_ok()
    np.logical_not(ok, out=out.fallback)
    if errors is not None:
        out.fallback[errors.rows] = False
    if note:
        return errors, None, None
    whole = bool(ok.all())
    idx = slice(None) if whole else np.flatnonzero(ok)
    if not whole:
        out.cycles[...] = np.nan
        out.legal[...] = False
        out.default[...] = 0
    sh = narrow(shapes.take(idx))
    return errors, idx, (sh if len(sh.rows) else None)


def shape_errors(req: Request, shapes: Shapes, rows: np.ndarray) -> Errors | None:
    """`make_request`'s error for those of the given rows (ones `request_ok` refuses) whose tiles it refuses: a valid
    region larger than the tile (dst is checked first), else the first tile, in the request's order, whose row is no
    whole number of 32-byte blocks. Rows with an empty valid region, or a tile of no row or column, are left out
    (the per-request path words them). Each distinct message is written once."""
    from ..tiles import unaligned, valid_too_large

    # a shape of no row, or a negative valid count: make_request's own error
    rows = rows[(shapes.rows[rows] >= 1) & (shapes.cols[rows] >= 1) & (shapes.vr[rows] >= 0) & (shapes.vc[rows] >= 0)]
    r, c, vr, vc = (a[rows] for a in shapes)
    larger = (vr > r) | (vc > c)
    kind = np.where(larger, 0, -1)
    tiles = [(n, t.dtype) for n, t in req.tiles if n != mask_of(req)]  # a mask's rows are padded to whole blocks
    for i, (_, dt) in enumerate(tiles):
        kind = np.where((kind < 0) & (vr >= 1) & (vc >= 1) & (fmod(c * dt.bits, 256) != 0), i + 1, kind)
    take = np.flatnonzero(kind >= 0)
    if not len(take):
        return None
    key = np.stack([kind[take], r[take], c[take], np.where(larger[take], vr[take], 0),
                    np.where(larger[take], vc[take], 0)], axis=1)
    uniq, code = np.unique(key, axis=0, return_inverse=True)
    messages = [valid_too_large(tiles[0][0], a, b, rr, cc) if k == 0 else unaligned(tiles[k - 1][0], "row_major", rr, cc,
                                                                               tiles[k - 1][1])
                for k, rr, cc, a, b in uniq.tolist()]
    return Errors(rows[take], code.ravel(), messages)


def joined(a: Errors | None, b: Errors | None) -> Errors | None:
    """Return the rows of both (disjoint) sets of errors as one."""
    if a is None or b is None:
        return a if b is None else b
    return Errors(np.concatenate([a.rows, b.rows]), np.concatenate([a.code, b.code + len(a.messages)]),
                  a.messages + b.messages)


def request_ok(req: Request, shapes: Shapes) -> np.ndarray:
    """Rows whose request `make_request` accepts for sure (elementwise tiles of one shape, row-major).

    Conservative: a row outside this mask is routed to the per-request path, which raises the exact error.
    """
    rows, cols, vr, vc = shapes
    ok = (vr >= 1) & (vc >= 1) & (vr <= rows) & (vc <= cols)
    for bits in {t.dtype.bits for n, t in req.tiles if n != mask_of(req)}:  # a mask's rows are padded (_mask_tile)
        ok &= fmod(cols * bits, 256) == 0  # a row-major row is a whole number of 32-byte blocks (tiles.py)
    return ok


def placed(buffers) -> list:
    """Return the plan buffers that take unified buffer of their own, in the plan's order: an in-place source, placed
    at an earlier buffer's address (lower/alloc.py `alias`), is left out."""
    seen, out = set(), []
    for b in buffers:
        if b.offset not in seen:
            seen.add(b.offset)
            out.append(b)
    return out


def ub_need(buffers: list[tuple[int, int]], shapes: Shapes, align: int) -> np.ndarray:
    """Bytes of unified buffer the allocator uses: per buffer (bits per element of a rows x cols tile, 0 and a
    constant byte size, or MASK_BUFFER), rounded up to `align` bytes and summed (lower/alloc.py)."""
    numel = shapes.rows * shapes.cols
    need = 0
    for bits in sorted({b for b, _ in buffers if b > 0}):
        count = sum(1 for b, _ in buffers if b == bits)
        need = need + count * cdiv(cdiv(numel * bits, 8), align) * align
    for bits, const in buffers:
        if bits <= 0:
            need = need + cdiv(buffer_bytes(bits, const, shapes.rows, shapes.cols), align) * align
    return np.broadcast_to(need, numel.shape)


# integer helpers: shifts and masks when the divisor is a power of two (non-negative operands)

def _shift(d: int) -> int | None:
    return d.bit_length() - 1 if d > 0 and d & (d - 1) == 0 else None


def fdiv(a, d: int):
    """a // d."""
    k = _shift(d)
    return a >> k if k is not None else a // d


def fmod(a, d: int):
    """a % d."""
    k = _shift(d)
    return a & (d - 1) if k is not None else a % d


def cdiv(a, d: int):
    """ceil(a / d)."""
    k = _shift(d)
    return (a + (d - 1)) >> k if k is not None else -(-a // d)


def narrow(sh: Shapes) -> Shapes:
    """The shapes as int32 (covered rows: every product the closed forms take stays far below 2**31, the tiles
    fitting the unified buffer)."""
    if sh.rows.dtype == np.int32:
        return sh
    return Shapes(*(a.astype(np.int32) for a in sh))


def narrow_all(sh: Shapes) -> Shapes:
    """The shapes as int32 when even the byte size of a 64-bit tile of the largest rows x cols fits (then the row
    checks and the UB sums are exact in int32 too), else unchanged."""
    if not len(sh.rows) or sh.rows.dtype == np.int32:
        return sh
    lo = min(int(a.min()) for a in sh)
    hi = int(sh.rows.max()) * int(sh.cols.max())
    return narrow(sh) if lo >= 0 and hi * 64 < 1 << 30 else sh
