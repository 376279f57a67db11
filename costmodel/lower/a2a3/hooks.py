"""Step sequences that depend on the request (the `@name` entries of data/a2a3_lowering.csv).

Each hook takes the Request and returns a sequence in the step language of `steps.py`; the table still says
which op and dtype use which hook.
"""
from __future__ import annotations

from typing import Callable

from ...errors import NotModelledError
from ...request import Request

_HOOKS: dict[str, Callable[[Request], str]] = {}


def hook(name: str):
    """Decorator: register a sequence function under `name` (referenced as `@name` in the table)."""
    def deco(fn: Callable[[Request], str]) -> Callable[[Request], str]:
        _HOOKS[name] = fn
        return fn
    return deco


def sequence(name: str, req: Request) -> str:
    """Return the step text the hook `name` produces for the request."""
    fn = _HOOKS.get(name)
    if fn is None:
        raise NotModelledError(f"data/a2a3_lowering.csv names an unknown sequence @{name}")
    return fn(req)


# The sign bit of an f32 lane, as an i32 literal.
F32_SIGN = "-2147483648"


@hook("pows_float")
def pows_float(req: Request) -> str:
    """TPOWS f32: exp(ln|b| * s), then copy b's sign bit into the result when s is an odd integer (isa.md §4).

    The sign fix as `dup(sign mask) & b | result` on the i32 view is inferred; so is the s == 0 shortcut (every
    base, including 0, gives 1, as pow does).
    """
    s = float(req.param("scalar"))
    if s == 0:
        return "vector_dup dst s=1"
    text = "vabs tmp src ; vln tmp tmp ; vmuls tmp tmp s=s ; vexp dst tmp"
    if s.is_integer() and int(s) % 2:
        text += f" ; vector_dup tmp s={F32_SIGN} as=i32 ; vand tmp tmp src as=i32 ; vor dst dst tmp as=i32"
    return text
