"""Execute a plan on seeded random data and check it against the golden semantics.

Checks: the destination's valid region agrees with the golden (tolerance `eps` per isa.md §8, exact for
integers); nothing of the destination outside its valid region changed; no source tile changed; no byte of
the unified buffer outside the plan's buffers changed (scratch buffers may change).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..catalog import instruction
from ..errors import PtoCostError
from ..golden import golden
from ..plan import Plan
from .data import sample


@dataclass(frozen=True)
class Verification:
    """Outcome of one emulator check: ok True/False, or None when the plan could not be executed (with why)."""

    ok: bool | None
    note: str = ""
    mismatches: tuple[tuple, ...] = field(default=())

    @property
    def label(self) -> str:
        return "n/a" if self.ok is None else ("yes" if self.ok else "no")


_ROLES = {  # which operand of a kernel gets a special input domain
    "div": {"src1": "divisor", "src": "divisor"},
    "rem": {"src1": "divisor"},
    "fmod": {"src1": "divisor"},
    "recip": {"src": "divisor"},
    "shl": {"src1": "shift"},
    "shr": {"src1": "shift"},
    "pow": {"src1": "exponent"},
}


def make_inputs(plan: Plan, seed: int) -> dict[str, np.ndarray]:
    """Return seeded random static-shape arrays for every non-scratch, non-dst buffer (and an initial dst)."""
    inst = instruction(plan.op)
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    roles = _ROLES.get(inst.kernel, {})
    if inst.kernel == "div" and inst.family == "binary":
        roles = {"src1": "divisor"}
    if inst.kernel == "div" and plan.request.param("order") != "scalar_tile" and inst.family == "binary_scalar":
        roles = {}
    for buf in plan.buffers:
        if buf.scratch:
            continue
        out[buf.name] = sample(buf.tile.dtype, buf.tile.shape, inst.domain, rng, roles.get(buf.name, "value"))
    return out


def compare(actual: np.ndarray, expected: np.ndarray, eps: float) -> np.ndarray:
    """Return a boolean array: True where `actual` is an error against `expected` (ResultCmp rule, isa.md §8)."""
    if np.issubdtype(actual.dtype, np.integer) or eps == 0:
        a = actual.astype(np.float64) if not np.issubdtype(actual.dtype, np.integer) else actual
        e = expected.astype(np.float64) if not np.issubdtype(expected.dtype, np.integer) else expected
        same = (a == e) | (np.isnan(a.astype(np.float64)) & np.isnan(e.astype(np.float64)))
        return ~same
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    with np.errstate(all="ignore"):
        diff = np.abs(a - e)
        rel = diff / np.abs(e)
    bad = (diff > eps) & (rel > eps)
    bad |= np.isnan(a) != np.isnan(e)
    bad &= ~((a == e) & np.isinf(a))
    return bad


def _first(where: np.ndarray, limit: int = 8) -> list[tuple[int, int]]:
    return [tuple(int(v) for v in ix) for ix in np.argwhere(where)[:limit]]


def verify(plan: Plan, seed: int = 0) -> Verification:
    """Execute the plan and compare with the golden; returns a Verification (never raises for a bad plan)."""
    req = plan.request
    for _, tile in req.tiles:
        if not tile.dtype.emulatable:
            return Verification(None, f"{tile.dtype} has no numpy representation (isa.md §2): estimate only")
    from . import a2a3 as emu_a2a3

    inputs = make_inputs(plan, seed)
    if plan.arch == "a2a3":
        before, after = emu_a2a3.run(plan, inputs, seed)
    else:
        from . import a5 as emu_a5

        before, after = emu_a5.run(plan, inputs, seed)
    inst = instruction(plan.op)
    dst_buf = plan.buffers[0]
    for buf in plan.buffers:
        if buf.name == "dst":
            dst_buf = buf
    got = after.tile(dst_buf.offset, dst_buf.tile)
    initial = before.tile(dst_buf.offset, dst_buf.tile)
    try:
        expected = golden_for(plan, inputs)
    except PtoCostError as exc:
        return Verification(None, f"no golden: {exc}")
    t = dst_buf.tile
    vr, vc = t.valid_rows, t.valid_cols
    spec = check_spec_for(plan, t, inst)
    eps = spec.eps
    bad = compare(got, expected, eps) & spec.checked
    problems: list[tuple] = []
    for i, j in _first(bad):
        problems.append(("dst", (i, j), got[i, j].item(), expected[i, j].item()))
    changed = ~spec.checked & ~spec.free & ~_bitwise_equal(got, initial)
    for i, j in _first(changed):
        problems.append(("dst outside valid", (i, j), got[i, j].item(), initial[i, j].item()))
    for buf in plan.buffers:
        if buf.scratch or buf is dst_buf:
            continue
        if not np.array_equal(before.bytes[buf.offset:buf.offset + buf.nbytes], after.bytes[buf.offset:buf.offset + buf.nbytes]):
            problems.append((buf.name, "source tile changed", None, None))
    mask = np.ones(before.bytes.size, dtype=bool)
    for buf in plan.buffers:
        mask[buf.offset:buf.offset + buf.nbytes] = False
    stray = np.flatnonzero(mask & (before.bytes != after.bytes))
    if stray.size:
        problems.append(("UB outside buffers", int(stray[0]), int(stray.size), None))
    if problems:
        n_bad = int(bad.sum())
        return Verification(False, f"{n_bad} valid-region element(s) differ from the golden; {len(problems)} problem(s) listed", tuple(problems))
    n_checked = int(spec.checked.sum())
    region = f"{vr}x{vc}" if n_checked == vr * vc and spec.checked[:vr, :vc].all() else str(n_checked)
    whole_tile_checked = n_checked == t.numel and (vr, vc) != t.shape
    untouched = "" if whole_tile_checked else "; nothing outside the valid region changed"
    if spec.free.any():
        untouched = "; outside the valid region only padding inside written 32-byte blocks may change"
    note = f" ({spec.note})" if spec.note else ""
    return Verification(True, f"{region} elements match the golden (eps {eps:g}){untouched}{note}")


def _bitwise_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    size = a.dtype.itemsize
    ua = np.ascontiguousarray(a).view(f"u{size}")
    ub = np.ascontiguousarray(b).view(f"u{size}")
    return ua == ub


@dataclass(frozen=True)
class CheckSpec:
    """What `verify` checks on the destination: the tolerance, the elements compared with the golden
    (`checked`), and the elements outside them the plan may change (`free`); both masks have the dst shape."""

    eps: float
    checked: np.ndarray
    free: np.ndarray
    note: str = ""


_CHECK_SPECS = {}


def check_spec(family: str):
    """Decorator: register fn(plan, default CheckSpec) -> CheckSpec for a family (tolerance, regions)."""
    def deco(fn):
        _CHECK_SPECS[family] = fn
        return fn
    return deco


def check_spec_for(plan: Plan, t, inst) -> CheckSpec:
    """Return the family's CheckSpec, by default the dst valid region, nothing free, the catalogue eps."""
    checked = np.zeros(t.shape, dtype=bool)
    checked[:t.valid_rows, :t.valid_cols] = True
    default = CheckSpec(0.0 if t.dtype.is_integer else inst.eps, checked, np.zeros(t.shape, dtype=bool))
    fn = _CHECK_SPECS.get(plan.request.family)
    return default if fn is None else fn(plan, default)


_GOLDEN_ARGS = {}


def golden_args(family: str):
    """Decorator: register how a family's plan inputs map to `golden(...)` arguments."""
    def deco(fn):
        _GOLDEN_ARGS[family] = fn
        return fn
    return deco


def golden_for(plan: Plan, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """Return the golden destination for the plan's request given the emulator's input arrays."""
    req = plan.request
    fn = _GOLDEN_ARGS.get(req.family)
    if fn is not None:
        return fn(plan, inputs)
    operands = [inputs[name] for name, _ in req.sources]
    params = dict(req.params)
    return golden(req.op, *operands, valid=req.dst.valid, **params)
from . import checks as _checks  # noqa: E402,F401  (registers the reduce/convert/move rules)
