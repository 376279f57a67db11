"""Compile the compute statements of data/a5_ops.csv / a5_sequences.csv into VF instructions.

Statement syntax: `OP DST SRC... [s=EXPR] [dt=T|U] [to=T] [round=MODE]`. Names: `x0, x1, ...` are the loaded
operands, `y` the result, `q*` (and `qm`) predicates, anything else a vector temporary or a prologue constant. EXPR
is `s`, `-s`, `1/s` (the request scalar) or a number. `dt=U` runs the op on the unsigned integer view of the same
width (bit manipulation of float lanes). A `vcvt`/`vtrc` takes its target type (`to`, default the op's) and round
mode (`round`, conversions.py names). `{NAME}` placeholders are replaced from a constants table first.
"""
from __future__ import annotations

import functools

import numpy as np

from ..._data import read_rows
from ...dtypes import DType, dtype as as_dtype
from ...errors import ParamError
from ...isa_a5 import Loop, PLogic, SetScalar, VCmp, VOp, VSel


@functools.cache
def vf_ops() -> dict[str, tuple[str, str]]:
    """Return VF op -> (kind, kernel) from data/a5_vf_ops.csv."""
    return {r["op"]: (r["kind"], r["kernel"]) for r in read_rows("a5_vf_ops.csv")}


def unsigned_view(dt: DType) -> DType:
    """Return the unsigned integer type with the width of `dt`."""
    return as_dtype(f"u{dt.bits}")


def scalar_value(expr: str, s, dt: DType):
    """Evaluate a scalar expression in element type `dt` (integers wrap to the type's width)."""
    if expr in ("s", "-s", "1/s"):
        if s is None:
            raise ParamError("this op needs a scalar (--scalar)")
        val = {"s": s, "-s": -s, "1/s": (1.0 / s) if s else float("inf")}[expr]
    else:
        val = float(expr) if any(c in expr for c in ".eE") else int(expr, 0)
    if dt.is_integer:
        return np.array(int(val), dtype=np.int64 if int(val) < 2**63 else np.uint64).astype(dt.np).item()
    return float(np.asarray(val, dtype=np.float64).astype(dt.np).astype(np.float64))


class Regs:
    """Names -> VF registers (`v*`, `p*`, `s*`), shared by the prologue and the body of one kernel."""

    def __init__(self, fixed: dict[str, str] | None = None):
        self.map: dict[str, str] = dict(fixed or {})
        self.n = {"v": 0, "p": 0, "s": 0}
        for reg in self.map.values():
            kind, num = reg[0], reg[1:]
            if num.isdigit():
                self.n[kind] = max(self.n[kind], int(num) + 1)
        self.scalars: dict[tuple, str] = {}
        self.set_scalars: list[SetScalar] = []

    def new(self, kind: str) -> str:
        reg = f"{kind}{self.n[kind]}"
        self.n[kind] += 1
        return reg

    def get(self, name: str, kind: str) -> str:
        if name not in self.map:
            self.map[name] = self.new(kind)
        return self.map[name]

    def scalar(self, value, dt: DType) -> str:
        key = (value, dt.name)
        if key not in self.scalars:
            reg = self.new("s")
            self.scalars[key] = reg
            self.set_scalars.append(SetScalar(reg, value, dt.name, note="scalar operand"))
        return self.scalars[key]


def _fill(text: str, consts: dict[str, int]) -> str:
    for k, v in consts.items():
        text = text.replace("{" + k + "}", str(v))
    return text


def compile_stmt(text: str, regs: Regs, dt: DType, pred: str | None, scalar, consts: dict[str, int] | None = None):
    """Return the VF instruction of one statement (registers allocated in `regs`)."""
    toks = _fill(text, consts or {}).split()
    kw = dict(t.split("=", 1) for t in toks if "=" in t)
    pos = [t for t in toks if "=" not in t]
    op, dst, srcs = pos[0], pos[1], pos[2:]
    kind, _ = vf_ops()[op]
    odt = unsigned_view(dt) if kw.get("dt") == "U" else (as_dtype(kw["dt"]) if kw.get("dt", "T") != "T" else dt)
    sreg = regs.scalar(scalar_value(kw["s"], scalar, odt), odt) if "s" in kw else None
    if kind == "pred_logic":
        return PLogic(op, regs.get(dst, "p"), tuple(regs.get(s, "p") for s in srcs))
    if kind in ("compare", "compare_scalar"):
        return VCmp(op, odt.name, regs.get(dst, "p"), tuple(regs.get(s, "v") for s in srcs), pred, sreg)
    if kind == "select":
        return VSel(odt.name, regs.get(dst, "v"), regs.get(srcs[0], "v"), regs.get(srcs[1], "v"), regs.get(srcs[2], "p"))
    if kind == "dup":
        return VOp(op, odt.name, regs.get(dst, "v"), (), None, sreg)
    attrs: tuple = ()
    if kind == "convert":  # `vtrc t x round=floor`: to an integral value of the same type (round: conversions.py)
        attrs = (("to", kw.get("to", odt.name)), ("round", kw.get("round", "none")), ("sat", kw.get("sat", "on")),
                 ("lane_bits", odt.bits))
    return VOp(op, odt.name, regs.get(dst, "v"), tuple(regs.get(s, "v") for s in srcs), pred, sreg, attrs)


def compile_block(stmts, regs: Regs, dt: DType, pred: str | None, scalar, consts=None) -> list:
    """Compile a `;`-separated statement string or a sequence of statements."""
    if isinstance(stmts, str):
        stmts = [s for s in stmts.split(";") if s.strip()]
    return [compile_stmt(s, regs, dt, pred, scalar, consts) for s in stmts]


def float_format(dt: DType) -> dict[str, int]:
    """Return the bit-layout constants of an IEEE-style float type (mantissa bits from numpy/ml_dtypes finfo)."""
    import ml_dtypes

    w = dt.bits
    m = int(ml_dtypes.finfo(dt.np).nmant)
    e = w - 1 - m
    bias = (1 << (e - 1)) - 1
    return {"W": w, "M": m, "E": e, "SIGN": 1 << (w - 1), "EMASK": (1 << e) - 1, "MMASK": (1 << m) - 1,
            "HIDDEN": 1 << m, "NUM": 1 << (m + 1), "TWOB1": 2 * bias - 1, "TWOB": 2 * bias, "STEPS": m + 2}


def integer_format(dt: DType) -> dict[str, int]:
    """Return the constants of an integer type's sequences: its width, which is also the steps' trip count (one step
    per bit)."""
    return {"W": dt.bits, "STEPS": dt.bits}


def compile_sequence(sections: dict[str, tuple[str, ...]], regs: Regs, dt: DType, pred: str | None, scalar):
    """Compile a named sequence: returns (prologue, body) where `steps` becomes an inner loop of STEPS trips. A section
    named `NAME:signed` follows NAME and is compiled only for a signed integer type."""
    consts = integer_format(dt) if dt.is_integer else float_format(dt)
    signed = dt.kind == "int"

    def block(name: str, p: str | None) -> list:
        stmts = sections.get(name, ()) + (sections.get(f"{name}:signed", ()) if signed else ())
        return compile_block(stmts, regs, dt, p, scalar, consts)

    prologue = block("prologue", None)
    body = block("body", pred)
    steps = block("steps", pred)
    if steps:
        body.append(Loop("k", consts["STEPS"], tuple(steps), "steps"))
    body += block("epilogue", pred)
    return prologue, body
