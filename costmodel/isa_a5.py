"""The A5 vector-function (VF) program a plan is made of (isa.md §7.2, costmodel.md §7).

A `VfProgram` is one `__VEC_SCOPE__`: a tuple of instructions where `Loop` nests carry trip counts. Every
instruction names its operation (`op`), the registers it reads and writes, and (vector ops) its element type
and governing predicate, so a pipeline model can schedule it and an emulator can execute it.

Register naming: `v*` vector registers (256 B), `p*` predicate registers (one bit per byte of a vector
register; a b16/b32 lane is active when the bit of its first byte is set — inferred), `s*` scalar registers
(counters, scalar operands), `a*` address registers (post-update pointers). Offsets and steps are in
elements of the operand's type (`bits` per element: 1 for mask bit streams, 4 for fp4).
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Iterator, Union


@dataclass(frozen=True)
class Affine:
    """An element offset `const + sum(coeff * loop_var)`; loop vars are the `var` of enclosing loops."""

    const: int = 0
    terms: tuple[tuple[str, int], ...] = ()

    def eval(self, env: dict[str, int]) -> int:
        """Return the offset for the loop indices in `env`."""
        return self.const + sum(coeff * env[var] for var, coeff in self.terms)

    def text(self) -> str:
        parts = [f"{var}*{coeff}" for var, coeff in self.terms if coeff]
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts)


@dataclass(frozen=True)
class Addr:
    """Explicit addressing: element `offset` of buffer `buf` (no pointer update)."""

    buf: str
    bits: int
    offset: Affine

    def text(self) -> str:
        return f"{self.buf}[{self.offset.text()}]"

    @property
    def regs(self) -> tuple[str, ...]:
        return ()


@dataclass(frozen=True)
class PostAddr:
    """POST_UPDATE addressing: access at pointer `ptr`, then advance it by `step` elements."""

    ptr: str
    step: int

    def text(self) -> str:
        return f"{self.ptr}, step {self.step}, POST_UPDATE"

    @property
    def regs(self) -> tuple[str, ...]:
        return (self.ptr,)


Address = Union[Addr, PostAddr]


class _Instr:
    """Common protocol: `op`, `unit`, `reads`, `writes`, `listing()`."""

    unit = "scalar"

    @property
    def reads(self) -> tuple[str, ...]:
        """Registers read: a memory operand's post-update pointer, where the instruction has one."""
        addr = getattr(self, "addr", None)
        return addr.regs if addr is not None else ()

    @property
    def writes(self) -> tuple[str, ...]:
        """Registers written: the destination register and a post-update pointer, where the instruction has them."""
        dst = getattr(self, "dst", None)
        addr = getattr(self, "addr", None)
        return ((dst,) if dst else ()) + (addr.regs if addr is not None else ())


@dataclass(frozen=True)
class SetScalar(_Instr):
    """Scalar register = value (a predicate counter, a loop-invariant scalar operand)."""

    dst: str
    value: Any
    dtype: str = "u32"
    note: str = ""
    op = "smov"

    def listing(self) -> str:
        note = f"    ; {self.note}" if self.note else ""
        return f"{self.dst} = {self.value!r} ({self.dtype}){note}"


@dataclass(frozen=True)
class SetPtr(_Instr):
    """Address register = &buf[offset] for post-update streams."""

    dst: str
    buf: str
    bits: int
    offset: int = 0
    op = "smov"

    def listing(self) -> str:
        off = f" + {self.offset}" if self.offset else ""
        return f"{self.dst} = &{self.buf}{off}"


@dataclass(frozen=True)
class PtrAdd(_Instr):
    """Address register += delta elements (2D post-update row-end adjustment: row stride minus advance)."""

    ptr: str
    delta: int
    op = "sadd"

    @property
    def reads(self) -> tuple[str, ...]:
        return (self.ptr,)

    @property
    def writes(self) -> tuple[str, ...]:
        return (self.ptr,)

    def listing(self) -> str:
        return f"{self.ptr} += {self.delta}"


@dataclass(frozen=True)
class Plt(_Instr):
    """`plt_b{bits}(counter, POST_UPDATE)`: lanes i < counter active, then counter -= lanes (floored at 0, inferred)."""

    dst: str
    counter: str
    bits: int
    unit = "pred"

    @property
    def op(self) -> str:
        return f"plt_b{self.bits}"

    @property
    def reads(self) -> tuple[str, ...]:
        return (self.counter,)

    @property
    def writes(self) -> tuple[str, ...]:
        return (self.dst, self.counter)

    def listing(self) -> str:
        return f"{self.dst} = plt_b{self.bits}({self.counter}, POST_UPDATE)"


@dataclass(frozen=True)
class Pset(_Instr):
    """`pset_b{bits}(PAT_ALL | PAT_ALLF)`: every lane active / inactive."""

    dst: str
    bits: int
    pattern: str = "PAT_ALL"
    unit = "pred"

    @property
    def op(self) -> str:
        return f"pset_b{self.bits}"

    def listing(self) -> str:
        return f"{self.dst} = pset_b{self.bits}({self.pattern})"


@dataclass(frozen=True)
class Plds(_Instr):
    """Predicate load (inferred): 2048/bits mask bits from UB, LSB first, bit k -> b{bits} lane k."""

    dst: str
    addr: Address
    bits: int
    op = "plds"
    unit = "load"

    def listing(self) -> str:
        # its address counts mask bits, where every other listing's counts elements
        return f"{self.dst} = plds_b{self.bits}({self.addr.text()})    ; bit address"


@dataclass(frozen=True)
class PLogic(_Instr):
    """Predicate algebra: pand / por / pxor / pnot."""

    op: str
    dst: str
    srcs: tuple[str, ...]
    unit = "pred"

    @property
    def reads(self) -> tuple[str, ...]:
        return self.srcs

    def listing(self) -> str:
        return f"{self.dst} = {self.op}({', '.join(self.srcs)})"


@dataclass(frozen=True)
class Vlds(_Instr):
    """`vlds(vreg, addr, dist)`: one register's worth read with a load distribution (NORM, UNPK_*, BRC_*, BLK)."""

    dst: str
    addr: Address
    dtype: str
    dist: str = "NORM"
    op = "vlds"
    unit = "load"

    def listing(self) -> str:
        return f"vlds   {self.dst}, {self.addr.text()}, {self.dist}    {self.dtype}"


@dataclass(frozen=True)
class Vsts(_Instr):
    """`vsts(vreg, addr, dist, preg)`: active lanes are written; inactive lanes issue no store."""

    src: str
    addr: Address
    dtype: str
    dist: str
    pred: str
    op = "vsts"
    unit = "store"

    @property
    def reads(self) -> tuple[str, ...]:
        return (self.src, self.pred, *self.addr.regs)

    def listing(self) -> str:
        return f"vsts   {self.src}, {self.addr.text()}, {self.dist}, {self.pred}    {self.dtype}"


@dataclass(frozen=True)
class VOp(_Instr):
    """A vector compute op `dst = op(srcs..., scalar)` on `dtype` lanes under `pred` (MODE_ZEROING: inactive lanes -> 0).

    `attrs` holds op parameters (conversion target `to`, `round`, `sat`, `lane_bits`). `pred` None = all lanes.
    """

    op: str
    dtype: str
    dst: str
    srcs: tuple[str, ...] = ()
    pred: str | None = None
    scalar: str | None = None
    attrs: tuple[tuple[str, Any], ...] = ()
    unit = "vector"

    def attr(self, key: str, default: Any = None) -> Any:
        return dict(self.attrs).get(key, default)

    @property
    def reads(self) -> tuple[str, ...]:
        extra = tuple(x for x in (self.pred, self.scalar) if x)
        return (*self.srcs, *extra)

    def listing(self) -> str:
        args = [*self.srcs]
        if self.scalar:
            args.append(self.scalar)
        if self.pred:
            args += [self.pred, "MODE_ZEROING"]
        extra = "".join(f" {k}={v}" for k, v in self.attrs)
        return f"{self.op:<6} {self.dst}, {', '.join(args)}    {self.dtype}{extra}"


@dataclass(frozen=True)
class VCmp(_Instr):
    """A compare writing a predicate: lane active iff `srcs[0] cmp (srcs[1] | scalar)` and `pred` is active."""

    op: str
    dtype: str
    dst: str
    srcs: tuple[str, ...]
    pred: str | None = None
    scalar: str | None = None
    unit = "vector"

    @property
    def reads(self) -> tuple[str, ...]:
        return (*self.srcs, *(x for x in (self.pred, self.scalar) if x))

    def listing(self) -> str:
        args = [*self.srcs, *([self.scalar] if self.scalar else []), *([self.pred] if self.pred else [])]
        return f"{self.op:<6} {self.dst}, {', '.join(args)}    {self.dtype}"


@dataclass(frozen=True)
class VSel(_Instr):
    """`vsel(dst, on_true, on_false, sel)`: per lane, on_true where `sel` is active, else on_false."""

    dtype: str
    dst: str
    on_true: str
    on_false: str
    sel: str
    op = "vsel"
    unit = "vector"

    @property
    def reads(self) -> tuple[str, ...]:
        return (self.on_true, self.on_false, self.sel)

    def listing(self) -> str:
        return f"vsel   {self.dst}, {self.on_true}, {self.on_false}, {self.sel}    {self.dtype}"


@dataclass(frozen=True)
class Loop:
    """A VF loop: `body` runs `trip` times with index `var` = 0..trip-1 (16-bit trip counts, isa.md §7.2)."""

    var: str
    trip: int
    body: tuple[Any, ...]
    role: str = ""  # "elements" (1D), "rows", "chunks", "steps"
    op = "loop"
    unit = "loop"

    def listing_lines(self, indent: int = 0) -> list[str]:
        pad = "  " * indent
        role = f"  ; {self.role}" if self.role else ""
        out = [f"{pad}loop {self.var} in 0..{self.trip} {{{role}"]
        out += _lines(self.body, indent + 1)
        out.append(f"{pad}}}")
        return out


def _lines(body: tuple[Any, ...], indent: int) -> list[str]:
    out: list[str] = []
    for ins in body:
        if isinstance(ins, Loop):
            out += ins.listing_lines(indent)
        else:
            out.append("  " * indent + ins.listing())
    return out


def walk(body: tuple[Any, ...], times: int = 1, depth: int = 0) -> Iterator[tuple[Any, int, int]]:
    """Yield (instruction, dynamic execution count, loop depth) for every non-loop instruction of `body`."""
    for ins in body:
        if isinstance(ins, Loop):
            yield from walk(ins.body, times * ins.trip, depth + 1)
        else:
            yield ins, times, depth


@dataclass(frozen=True)
class VfProgram:
    """One VF (`__VEC_SCOPE__`): the loop form, elements per iteration and the instruction tree."""

    form: str          # strategy name, e.g. "2d-post-update"
    epr: int           # elements per iteration of the (main) chunk loop
    body: tuple[Any, ...]
    summary: str = ""
    op = "vf"

    def listing_lines(self) -> list[str]:
        head = f"__VEC_SCOPE__ {{    ; {self.form}, {self.epr} elements per iteration"
        if self.summary:
            head += f", {self.summary}"
        return [head, *_lines(self.body, 1), "}"]

    def loops(self) -> list[Loop]:
        """Return every loop of the program, outermost first (depth-first order)."""
        out: list[Loop] = []

        def visit(body):
            for ins in body:
                if isinstance(ins, Loop):
                    out.append(ins)
                    visit(ins.body)

        visit(self.body)
        return out

    def counts(self) -> dict[str, int]:
        """Return the dynamic issue count of each operation name (static count x enclosing trip counts)."""
        out: dict[str, int] = {}
        for ins, n, _ in walk(self.body):
            out[ins.op] = out.get(ins.op, 0) + n
        return out

    def unit_counts(self) -> dict[str, int]:
        """Return dynamic issue counts per unit: scalar, pred, load, store, vector."""
        out: dict[str, int] = {}
        for ins, n, _ in walk(self.body):
            out[ins.unit] = out.get(ins.unit, 0) + n
        return out


_REG_FIELDS = ("dst", "srcs", "pred", "sel", "on_true", "on_false", "src", "scalar", "counter")


def rename(ins: Any, mapping: dict[str, str]) -> Any:
    """Return `ins` with register names replaced per `mapping` (loops are renamed recursively)."""
    if isinstance(ins, Loop):
        return replace(ins, body=tuple(rename(i, mapping) for i in ins.body))
    changes = {}
    for f in fields(ins):
        if f.name not in _REG_FIELDS:
            continue
        val = getattr(ins, f.name)
        if isinstance(val, str) and val in mapping:
            changes[f.name] = mapping[val]
        elif isinstance(val, tuple) and any(v in mapping for v in val):
            changes[f.name] = tuple(mapping.get(v, v) for v in val)
    return replace(ins, **changes) if changes else ins
