"""The four A5 loop forms (costmodel.md §7, isa.md §7.2): one chunk body turned into a VF loop nest.

A `Kernel` describes one chunk of `epr` elements: predicate generation from counters (`Gen`), memory accesses
whose addresses the loop form fills in (`Mem`), and concrete compute instructions. The form decides:

* `1d-no-post-update`  one loop of ceil(n/epr) iterations; address = base + i*epr; counter starts at n = vr*vc
* `1d-post-update`     the same loop; loads/stores advance their pointer by the access size (POST_UPDATE)
* `2d-no-post-update`  rows x ceil(vc/epr); counter reset to vc each row; address = base + r*rowStride + j*epr
* `2d-post-update`     rows x floor(vc/epr) chunks under a full predicate, then one tail chunk under a
                       precomputed tail predicate; pointers advance by rowStride - advance at each row end
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ...arch import constants
from ...errors import ShapeError
from ...isa_a5 import Addr, Affine, Loop, Plds, Plt, PostAddr, Pset, PtrAdd, SetPtr, SetScalar, Vlds, Vsts, rename

STRATEGIES = ("1d-post-update", "1d-no-post-update", "2d-post-update", "2d-no-post-update")
MAX_TRIP = constants("a5").max_trip_count


@dataclass(frozen=True)
class Stream:
    """A memory operand walked by the loop: buffer, element bits for addressing, elements between rows."""

    buf: str
    bits: int
    row_stride: int


@dataclass(frozen=True)
class Mem:
    """A load (`vlds`), mask load (`plds`) or store (`vsts`) at element `offset` of the chunk, covering `count` elements."""

    kind: str
    reg: str
    stream: str
    offset: int
    count: int
    dtype: str = ""
    dist: str = "NORM"
    pred: str | None = None
    bits: int = 0


@dataclass(frozen=True)
class Gen:
    """`dst = plt_b{bits}(counter)` inside the chunk body."""

    dst: str
    bits: int
    counter: str


@dataclass(frozen=True)
class Counter:
    """A predicate counter: scalar register, counter units per element, elements per row."""

    reg: str
    units: int
    per_row: int


@dataclass(frozen=True)
class Kernel:
    """One chunk body and what surrounds it. `counters[0]` is the main (destination) counter."""

    epr: int
    streams: tuple[tuple[str, Stream], ...]
    counters: tuple[Counter, ...]
    prologue: tuple = ()
    row_head: tuple = ()
    body: tuple = ()

    def stream(self, name: str) -> Stream:
        return dict(self.streams)[name]

    def advance(self, name: str) -> int:
        """Elements of stream `name` consumed per chunk iteration."""
        return sum(m.count for m in self.body if isinstance(m, Mem) and m.stream == name)


@dataclass(frozen=True)
class Segment:
    """A kernel applied to rows row0..row0+rows-1 and columns 0..cols-1 of the destination."""

    kernel: Kernel
    row0: int
    rows: int
    cols: int


def _check_trip(trip: int, what: str) -> int:
    if trip > MAX_TRIP:
        raise ShapeError(f"a VF {what} loop of {trip} iterations exceeds the 16-bit trip count ({MAX_TRIP}, isa.md §7.2)")
    return trip


def _materialise(m: Mem, k: Kernel, addr) -> object:
    if m.kind == "vlds":
        return Vlds(m.reg, addr, m.dtype, m.dist)
    if m.kind == "plds":
        return Plds(m.reg, addr, m.bits)
    return Vsts(m.reg, addr, m.dtype, m.dist, m.pred or "")


def _explicit(k: Kernel, m: Mem, base: int, terms: tuple[tuple[str, int], ...]) -> Addr:
    s = k.stream(m.stream)
    return Addr(s.buf, s.bits, Affine(base + m.offset, tuple(t for t in terms if t[1])))


def _ptr(name: str) -> str:
    return f"a_{name}"


def _materialise_all(items, k: Kernel, address, drop_main: bool = False) -> list:
    """Turn Gen/Mem placeholders into instructions; `address(mem)` builds each access address.

    With `drop_main`, predicates of the main counter are left out (2D post-update precomputes them)."""
    main = k.counters[0].reg
    out = []
    for ins in items:
        if isinstance(ins, Gen):
            if not (drop_main and ins.counter == main):
                out.append(Plt(ins.dst, ins.counter, ins.bits))
        elif isinstance(ins, Mem):
            out.append(_materialise(ins, k, address(ins)))
        else:
            out.append(ins)
    return out


def _main_gens(k: Kernel) -> list[Gen]:
    return [g for g in k.body if isinstance(g, Gen) and g.counter == k.counters[0].reg]


def _one_d(seg: Segment, post_update: bool, var: str) -> list:
    k = seg.kernel
    n = seg.rows * seg.cols
    out: list = list(k.prologue)
    out += [SetScalar(c.reg, c.per_row * seg.rows * c.units, note="predicate counter") for c in k.counters]
    names = [name for name, _ in k.streams]
    if post_update:
        out += [SetPtr(_ptr(nm), k.stream(nm).buf, k.stream(nm).bits, seg.row0 * k.stream(nm).row_stride) for nm in names]
        post = lambda m: PostAddr(_ptr(m.stream), m.count)  # noqa: E731
        out += _materialise_all(k.row_head, k, post)
        body = _materialise_all(k.body, k, post)
    else:
        out += _materialise_all(k.row_head, k, lambda m: _explicit(k, m, seg.row0 * k.stream(m.stream).row_stride, ()))
        body = _materialise_all(k.body, k, lambda m: _explicit(k, m, seg.row0 * k.stream(m.stream).row_stride,
                                                               ((var, k.advance(m.stream)),)))
    out.append(Loop(var, _check_trip(math.ceil(n / k.epr), "1D"), tuple(body), "elements"))
    return out


def _two_d(seg: Segment, post_update: bool, rvar: str, jvar: str) -> list:
    k = seg.kernel
    vc = seg.cols
    chunks = math.ceil(vc / k.epr)
    out: list = list(k.prologue)
    main = k.counters[0]
    resets = [SetScalar(c.reg, c.per_row * c.units, note="per-row predicate counter") for c in k.counters
              if not (post_update and c is main)]
    names = [nm for nm, _ in k.streams]
    head_names = {m.stream for m in k.row_head if isinstance(m, Mem)}
    if not post_update:
        def addr(m: Mem, with_j: bool = True):
            s = k.stream(m.stream)
            terms = ((rvar, s.row_stride),) + (((jvar, k.advance(m.stream)),) if with_j else ())
            return _explicit(k, m, seg.row0 * s.row_stride, terms)

        head = _materialise_all(k.row_head, k, lambda m: addr(m, False))
        inner = Loop(jvar, _check_trip(chunks, "2D chunk"), tuple(_materialise_all(k.body, k, addr)), "chunks")
        row_body = tuple(resets + head + [inner])
        out.append(Loop(rvar, _check_trip(seg.rows, "2D row"), row_body, "rows"))
        return out
    full, tail = divmod(vc, k.epr)
    gens = _main_gens(k)
    out += [SetPtr(_ptr(nm), k.stream(nm).buf, k.stream(nm).bits, seg.row0 * k.stream(nm).row_stride) for nm in names]
    out += [Pset(f"{g.dst}_full", g.bits) for g in gens]
    if tail:
        out.append(SetScalar(f"{main.reg}_tail", tail * main.units, note="tail predicate counter"))
        out += [Plt(f"{g.dst}_tail", f"{main.reg}_tail", g.bits) for g in gens]
    post = lambda m: PostAddr(_ptr(m.stream), m.count)  # noqa: E731
    row_body: list = resets + _materialise_all(k.row_head, k, post)
    body = _materialise_all(k.body, k, post, drop_main=True)
    if full:
        to_full = {g.dst: f"{g.dst}_full" for g in gens}
        row_body.append(Loop(jvar, _check_trip(full, "2D chunk"), tuple(rename(i, to_full) for i in body), "chunks"))
    if tail:
        to_tail = {g.dst: f"{g.dst}_tail" for g in gens}
        row_body += [rename(i, to_tail) for i in body]
    for nm in names:
        if nm in head_names:
            continue
        # emitted even when it is 0: the kernel adjusts at every row end either way (costmodel.md §7, 2D POST_UPDATE)
        row_body.append(PtrAdd(_ptr(nm), k.stream(nm).row_stride - chunks * k.advance(nm)))
    out.append(Loop(rvar, _check_trip(seg.rows, "2D row"), tuple(row_body), "rows"))
    return out


def emit(form: str, segments: list[Segment]) -> tuple:
    """Return the VF instruction tree of `segments` in loop form `form` (empty segments emit nothing)."""
    out: list = []
    live = [s for s in segments if s.rows > 0 and s.cols > 0]
    for idx, seg in enumerate(live):
        sfx = str(idx) if len(live) > 1 else ""
        if form.startswith("1d"):
            out += _one_d(seg, form == "1d-post-update", f"i{sfx}")
        else:
            out += _two_d(seg, form == "2d-post-update", f"r{sfx}", f"j{sfx}")
    return tuple(out)
