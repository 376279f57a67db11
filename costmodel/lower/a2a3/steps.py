"""Parse the intrinsic-sequence column of data/a2a3_lowering.csv into Steps.

Syntax: steps separated by `;`, each `INTRINSIC DST SRC... [s=EXPR] [mode=M] [to=DTYPE] [as=DTYPE]`. Operands
name request tiles (`dst`, `src`, `src0`, `src1`, ...) or scratch tiles (`tmp`, `tmp2`, ...).

* `s=EXPR`: `s`, `-s` or `1/s` (the request scalar, in the op's element type) or a literal (decimal or `0x` hex,
  in the step's element type after any `as=` view).
* `to=DTYPE`: destination type of a conversion step (vconv).
* `as=DTYPE`: the step reinterprets the bytes of all its operands as DTYPE (e.g. b8/b32 data issued as b16,
  costmodel.md §6); the column count of the region scales by the width ratio. A request scalar is reinterpreted
  bit for bit, or replicated into every narrower element of a wider lane (an i8 scalar 0x12 becomes 0x1212).
* `scalar_loop DST SRC... k=KERNEL [s=EXPR] [rev=1]`: an element-by-element loop on the scalar unit applying a
  golden kernel; `rev=1` puts the scalar first (`s / src`).

A sequence may instead be `@name`: the steps then come from the Python function registered under that name
(`hooks.py`), for sequences that depend on the scalar value.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from ...dtypes import DType, dtype as as_dtype
from ...errors import ParamError, ShapeError
from .modes import Step, Stream


@dataclass(frozen=True)
class StepSpec:
    intrinsic: str
    dst: str
    srcs: tuple[str, ...]
    scalar: str | None = None
    mode: str = ""
    to: str | None = None
    view: str | None = None
    kernel: str | None = None
    reverse: bool = False


@dataclass(frozen=True)
class LoopStep:
    """A scalar-unit loop: dst[i, j] = kernel(srcs[i, j]..., scalar) over the region (scalar first if `reverse`)."""

    kernel: str
    dtype: DType
    dst: Stream
    srcs: tuple[Stream, ...]
    scalar: int | float | None = None
    reverse: bool = False


def parse(text: str) -> tuple[StepSpec, ...]:
    """Return the step specs of a sequence string."""
    out = []
    for part in text.split(";"):
        toks = part.split()
        if not toks:
            continue
        kw = dict(t.split("=", 1) for t in toks if "=" in t)
        pos = [t for t in toks if "=" not in t]
        out.append(StepSpec(pos[0], pos[1], tuple(pos[2:]), kw.get("s"), kw.get("mode", ""), kw.get("to"),
                            kw.get("as"), kw.get("k"), kw.get("rev", "0") not in ("0", "")))
    return tuple(out)


def _literal(expr: str) -> int | float:
    try:
        return int(expr, 0)
    except ValueError:
        return float(expr)


def scalar_value(expr: str | None, s, dt: DType):
    """Evaluate a scalar expression against the request scalar `s`, in the step's element type."""
    if expr is None:
        return None
    if expr in ("s", "-s", "1/s"):
        if s is None:
            raise ParamError("this op needs a scalar (--scalar)")
        val = {"s": s, "-s": -s, "1/s": (1.0 / s) if s else float("inf")}[expr]
    else:
        val = _literal(expr)
    return int(val) if dt.is_integer else float(val)


def _reinterpret(value, native: DType, view: DType):
    """Return the request scalar `value` (of type `native`) as a `view` lane: same bits, or replicated bytes."""
    if view.bits < native.bits:
        raise ParamError(f"a {native} scalar cannot be issued in {view} lanes")
    raw = np.full(view.bits // native.bits, value).astype(native.np)
    return raw.view(view.np)[0].item()


def lane_ratio(spec: StepSpec, streams: dict[str, Stream]) -> Fraction:
    """Return how many `as=` lanes one element of the step's operands spans (1 without a view)."""
    if not spec.view:
        return Fraction(1)
    names = (spec.dst, *spec.srcs)
    widths = {streams[n].dtype.bits for n in names}
    if len(widths) != 1:
        raise ParamError(f"step {spec.intrinsic}: `as=` needs operands of one width, got {sorted(widths)} bits")
    return Fraction(widths.pop(), as_dtype(spec.view).bits)


def scaled_cols(spec: StepSpec, streams: dict[str, Stream], vc: int) -> int:
    """Return the region's column count in the step's lanes; ShapeError if it is not a whole number of lanes."""
    cols = vc * lane_ratio(spec, streams)
    if cols.denominator != 1:
        view = as_dtype(spec.view)
        raise ShapeError(f"{spec.intrinsic} runs on {view} lanes (costmodel.md §6: b8 data is handled as b16); "
                         f"{vc} valid columns is not a whole number of {view} lanes: use an even valid column count")
    return int(cols)


def build_one(sp: StepSpec, streams: dict[str, Stream], scalar) -> Step | LoopStep:
    """Turn one spec into a vector Step (or a LoopStep) over the given operand streams."""
    dst = streams[sp.dst]
    srcs = tuple(streams[n] for n in sp.srcs)
    native = srcs[0].dtype if srcs else dst.dtype
    if sp.intrinsic == "scalar_loop":
        if not sp.kernel:
            raise ParamError("a scalar_loop step needs k=KERNEL")
        return LoopStep(sp.kernel, native, dst, srcs, scalar_value(sp.scalar, scalar, native), sp.reverse)
    if sp.view:
        view = as_dtype(sp.view)
        dst = replace(dst, dtype=view)
        srcs = tuple(replace(s, dtype=view) for s in srcs)
        if sp.scalar in ("s", "-s", "1/s"):
            value = _reinterpret(scalar_value(sp.scalar, scalar, native), native, view)
        else:
            value = scalar_value(sp.scalar, scalar, view)
        compute = view
    else:
        compute = native
        value = scalar_value(sp.scalar, scalar, compute)
    to = as_dtype(sp.to) if sp.to else None
    return Step(sp.intrinsic, compute, dst, srcs, value, to, sp.mode)


def build(specs: tuple[StepSpec, ...], streams: dict[str, Stream], scalar) -> list[Step | LoopStep]:
    """Turn specs into Steps over the given operand streams."""
    return [build_one(sp, streams, scalar) for sp in specs]
