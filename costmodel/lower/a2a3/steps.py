"""Parse the intrinsic-sequence column of data/a2a3_lowering.csv into Steps.

Syntax: steps separated by `;`, each `INTRINSIC DST SRC... [s=EXPR] [mode=M] [to=DTYPE]`. Operands name
request tiles (`dst`, `src`, `src0`, `src1`, ...) or scratch tiles (`tmp`, `tmp2`). EXPR is `s`, `-s`, `1/s`
or a number. `to=` gives the destination type of a conversion step (vconv).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...dtypes import DType, dtype as as_dtype
from ...errors import ParamError
from .modes import Step, Stream


@dataclass(frozen=True)
class StepSpec:
    intrinsic: str
    dst: str
    srcs: tuple[str, ...]
    scalar: str | None = None
    mode: str = ""
    to: str | None = None


def parse(text: str) -> tuple[StepSpec, ...]:
    """Return the step specs of a sequence string."""
    out = []
    for part in text.split(";"):
        toks = part.split()
        if not toks:
            continue
        kw = dict(t.split("=", 1) for t in toks if "=" in t)
        pos = [t for t in toks if "=" not in t]
        out.append(StepSpec(pos[0], pos[1], tuple(pos[2:]), kw.get("s"), kw.get("mode", ""), kw.get("to")))
    return tuple(out)


def scalar_value(expr: str | None, s, dt: DType):
    """Evaluate a scalar expression against the request scalar `s`, in the step's element type."""
    if expr is None:
        return None
    if expr in ("s", "-s", "1/s"):
        if s is None:
            raise ParamError("this op needs a scalar (--scalar)")
        val = {"s": s, "-s": -s, "1/s": (1.0 / s) if s else float("inf")}[expr]
    else:
        val = float(expr)
    return int(val) if dt.is_integer else float(val)


def build(specs: tuple[StepSpec, ...], streams: dict[str, Stream], scalar) -> list[Step]:
    """Turn specs into Steps over the given operand streams."""
    steps = []
    for sp in specs:
        dst = streams[sp.dst]
        srcs = tuple(streams[n] for n in sp.srcs)
        compute = srcs[0].dtype if srcs else dst.dtype
        to = as_dtype(sp.to) if sp.to else None
        steps.append(Step(sp.intrinsic, compute, dst, srcs, scalar_value(sp.scalar, scalar, compute), to, sp.mode))
    return steps
