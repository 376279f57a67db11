"""Execute a plan on seeded random data and check it against the golden semantics.

Checks, for each output buffer the golden returns (the destination, or several, e.g. an arg op's values and
indices), under that buffer's CheckSpec: the checked elements (by default the valid region) agree with the golden
(tolerance `eps` per isa.md §8, exact for integers), and nothing else of the buffer changed except the elements
the spec marks free (e.g. padding inside written 32-byte blocks). Then: no source tile changed (a source placed
at the destination's address, i.e. an in-place op, is the destination); no byte of the unified buffer outside
the plan's buffers changed (scratch buffers may change). A check whose compared golden values are all inf or NaN
proves nothing and is n/a, not a pass. Families adjust the spec with `check_spec` and map plan
inputs to golden arguments with `golden_args`.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from ..catalog import instruction
from ..errors import PtoCostError
from ..golden import golden
from ..plan import Plan
from .data import sample


@dataclass(frozen=True)
class Verification:
    """Outcome of one emulator check: ok True/False, or None when nothing could be checked (with why): a type
    without a numpy form, no golden, or a golden with no finite value to compare."""

    ok: bool | None
    note: str = ""
    mismatches: tuple[tuple, ...] = field(default=())

    @property
    def label(self) -> str:
        return "n/a" if self.ok is None else ("yes" if self.ok else "no")


def overall(results: Iterable[Verification]) -> bool | None:
    """Return the outcome of several checks: False if any failed, True if every one passed, else None (some
    could not be checked: an n/a result is not a pass)."""
    oks = [v.ok for v in results]
    if False in oks:
        return False
    return True if oks and all(oks) else None


_ROLES = {  # which operand of a kernel gets a special input domain
    "div": {"src1": "divisor", "src": "divisor"},
    "gather": {"idx": "index"},
    # fmod/rem: integer-valued data as in the upstream tfmods tests (isa.md §8), so a quotient is never within
    # rounding of an integer it does not reach (the fp32 a - trunc(a/b)*b path would then be off by b, isa.md §4)
    "rem": {"src": "integral", "src0": "integral", "src1": "integral_divisor"},
    "fmod": {"src": "integral", "src0": "integral", "src1": "integral_divisor"},
    "recip": {"src": "divisor"},
    "shl": {"src1": "shift"},
    "shr": {"src1": "shift"},
    "pow": {"src1": "exponent"},
    "convert": {"src": "conversion"},
}
_FAMILY_ROLES = {  # (family, kernel) -> roles, in place of the kernel's: a reduction folds a whole row or column
    ("binary", "div"): {"src1": "divisor"},
    ("row_reduce", "add"): {"src": "summand"},
    ("col_reduce", "add"): {"src": "summand"},
    ("row_reduce", "mul"): {"src": "factor"},
    ("col_reduce", "mul"): {"src": "factor"},
}


def make_inputs(plan: Plan, seed: int) -> dict[str, np.ndarray]:
    """Return seeded random static-shape arrays for every non-scratch, non-dst buffer (and an initial dst)."""
    inst = instruction(plan.op)
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    roles = _FAMILY_ROLES.get((inst.family, inst.kernel), _ROLES.get(inst.kernel, {}))
    if inst.kernel == "div" and plan.request.param("order") != "scalar_tile" and inst.family == "binary_scalar":
        roles = {}
    to = plan.request.dst.dtype
    for buf in plan.buffers:
        if buf.scratch:
            continue
        out[buf.name] = sample(buf.tile.dtype, buf.tile.shape, inst.domain, rng, roles.get(buf.name, "value"), to)
    return out


def compare(actual: np.ndarray, expected: np.ndarray, eps: float) -> np.ndarray:
    """Return a boolean array: True where `actual` is an error against `expected` (ResultCmp rule, isa.md §8;
    an infinite value on either side must be matched exactly)."""
    with np.errstate(all="ignore"):  # bytes outside the valid region may hold signalling NaNs: casting them is fine
        return _compare(actual, expected, eps)


def _compare(actual: np.ndarray, expected: np.ndarray, eps: float) -> np.ndarray:
    if np.issubdtype(actual.dtype, np.integer) or eps == 0:
        a = actual.astype(np.float64) if not np.issubdtype(actual.dtype, np.integer) else actual
        e = expected.astype(np.float64) if not np.issubdtype(expected.dtype, np.integer) else expected
        same = (a == e) | (np.isnan(a.astype(np.float64)) & np.isnan(e.astype(np.float64)))
        return ~same
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    diff = np.abs(a - e)
    rel = diff / np.abs(e)
    bad = (diff > eps) & (rel > eps)
    bad |= np.isnan(a) != np.isnan(e)
    # the rule's |a-g|/|g| is inf/inf = NaN where g is infinite, which never exceeds eps: infinities match exactly
    bad |= (np.isinf(a) | np.isinf(e)) & (a != e)
    return bad


def _n_finite(values: np.ndarray) -> int:
    if np.issubdtype(values.dtype, np.integer):
        return values.size
    return int(np.isfinite(values.astype(np.float64)).sum())


def _first(where: np.ndarray, limit: int = 8) -> list[tuple[int, int]]:
    return [tuple(int(v) for v in ix) for ix in np.argwhere(where)[:limit]]


# where the NPU algorithm itself departs from the CPU golden (isa.md §4: float TFMOD(S)/TREM(S) compute a - q*b
# with q the rounded quotient, so a quotient that rounds onto an integer, e.g. with a divisor like 0.3, gives a
# different remainder than exact fmod; an infinite divisor gives a - 0*inf = NaN where fmod gives a); keyed by kernel,
# or by op where one op of a kernel departs
KNOWN_DIVERGENCE = {
    "fmod": "a known divergence, not a lowering error: the NPU computes a - trunc(a/b)*b from a rounded quotient, "
            "which departs from exact fmod where a/b rounds onto an integer, and is NaN for an infinite b (isa.md §4)",
    "TCMPS": "a known divergence, not a lowering error, where float values lie within 1e-9 of the scalar without "
             "equalling it: the CPU TCMPS's EQ is |a - s| < 1e-9, the NPU compares exactly (isa.md §4)",
    "rem": "a known divergence, not a lowering error: the NPU computes a - floor(a/b)*b from a rounded quotient, "
           "which departs from the exact floor-modulo where a/b rounds onto an integer, and is NaN for an infinite b "
           "(isa.md §4)",
}
# of integer types: the golden of TPOW(S) is pow in double cast to T (isa.md §4), inexact once b^e passes 2^53 and
# undefined past 2^63, while the NPU's integer path is an exact power loop whose products wrap
INTEGER_DIVERGENCE = {
    "pow": "a known divergence, not a lowering error: the NPU's integer power loop wraps exactly, while the golden "
           "is pow in double cast to the type, inexact where b^e passes 2^53 and undefined past 2^63 (isa.md §4)",
}
# likewise per strategy: TCOLSUM's pairwise tree (isBinary) adds in another order than the golden's row-by-row sum,
# both in the destination type, so a float sum over many rows rounds differently (isa.md §4.3)
STRATEGY_DIVERGENCE = {
    "ColBinary": "a known divergence, not a lowering error: the pairwise tree (isBinary) adds the rows in another "
                 "order than the golden's row-by-row sum, both rounding in the destination type, so a float column "
                 "sum over many rows differs in its last bits (isa.md §4.3)",
}


def verify(plan: Plan, seed: int = 0) -> Verification:
    """Execute the plan and compare with the golden; returns a Verification (never raises for a bad plan)."""
    req = plan.request
    for _, tile in req.tiles:
        if not tile.dtype.emulatable:
            return Verification(None, f"{tile.dtype} has no numpy representation (isa.md §2): estimate only")
    from . import a2a3 as emu_a2a3

    inputs = make_inputs(plan, seed)
    read_spent = False
    with np.errstate(all="ignore"):  # overflow to inf or NaN is a result to compare, not a warning to print
        if plan.arch == "a2a3":
            before, after = emu_a2a3.run(plan, inputs, seed)
        else:
            from . import a5 as emu_a5

            before, after, read_spent = emu_a5.run(plan, inputs, seed)
        try:
            expected = golden_for(plan, inputs)
        except PtoCostError as exc:
            return Verification(None, f"no golden: {exc}")
    inst = instruction(plan.op)
    dst_buf = plan.buffers[0]
    for buf in plan.buffers:
        if buf.name == "dst":
            dst_buf = buf
    # a golden may return {buffer name: expected tile} for ops with several outputs (arg ops: values and indices);
    # each output is checked under its own CheckSpec
    outputs = expected if isinstance(expected, dict) else {dst_buf.name: expected}
    problems: list[tuple] = []
    n_bad = n_checked = n_finite = 0
    specs: list[tuple] = []  # (output buffer, its CheckSpec)
    for buf in plan.buffers:
        if buf.name in outputs:
            spec = check_spec_for(plan, buf, inst)
            n_bad += _check_output(buf, before, after, outputs[buf.name], spec, problems)
            specs.append((buf, spec))
            n_checked += int(spec.checked.sum())
            n_finite += _n_finite(outputs[buf.name][spec.checked])
    for buf in plan.buffers:
        if buf.scratch or buf.name in outputs or buf.offset == dst_buf.offset:  # an in-place source is the destination
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
        if plan.request.dtype.is_integer:
            why = INTEGER_DIVERGENCE.get(inst.kernel)
        else:
            why = (KNOWN_DIVERGENCE.get(plan.op) or KNOWN_DIVERGENCE.get(inst.kernel)
                   or STRATEGY_DIVERGENCE.get(plan.strategy))
        known = f"; {why}" if why and n_bad else ""
        return Verification(False, f"{n_bad} valid-region element(s) differ from the golden; {len(problems)} problem(s) "
                                   f"listed{known}", tuple(problems))
    if n_checked and not n_finite:
        return Verification(None, f"not verified: all {n_checked} golden value(s) compared are inf or NaN, so the "
                                  "data exercised nothing finite")
    notes = [_match_note(buf, spec) for buf, spec in specs]
    note = notes[0] if len(notes) == 1 else ". ".join(f"{buf.name}: {n}" for (buf, _), n in zip(specs, notes))
    return Verification(True, note + (SATURATING_PLT if read_spent else ""))


# a plan whose plt reads a counter an earlier plt took below zero is right only if the counter stops at 0
SATURATING_PLT = ("; assuming plt stops its counter at 0 (isa.md §7.2 leaves that UNKNOWN): this plan calls plt again on "
                  "a spent counter, which would enable every lane if the counter wrapped")


def _match_note(buf, spec: "CheckSpec") -> str:
    """Say what was checked on one output: how many elements, the tolerance, what may change outside them."""
    t = buf.tile
    vr, vc = t.valid_rows, t.valid_cols
    n_checked = int(spec.checked.sum())
    region = f"{vr}x{vc}" if n_checked == vr * vc and spec.checked[:vr, :vc].all() else str(n_checked)
    whole_tile_checked = n_checked == t.numel and (vr, vc) != t.shape
    untouched = "" if whole_tile_checked else "; nothing outside the valid region changed"
    if spec.free.any():
        untouched = "; outside the valid region only padding inside written 32-byte blocks may change"
    note = f" ({spec.note})" if spec.note else ""
    if spec.bits is not None:
        return f"{region} mask bytes match the golden bit for bit{untouched}{note}"
    return f"{region} elements match the golden (eps {spec.eps:g}){untouched}{note}"


def _check_output(buf, before, after, expected: np.ndarray, spec: "CheckSpec", problems: list) -> int:
    """Compare one output buffer with its golden on the spec's checked elements, and check that nothing else of
    it changed except the spec's free elements.

    Appends to `problems` and returns the number of checked elements that differ.
    """
    t = buf.tile
    got = after.tile(buf.offset, t)
    initial = before.tile(buf.offset, t)
    if spec.bits is None:
        bad = compare(got, expected, spec.eps) & spec.checked
    else:
        bad = ((got & spec.bits) != (expected & spec.bits)) & spec.checked
    label = "dst" if buf.name == "dst" else buf.name
    for i, j in _first(bad):
        problems.append((label, (i, j), got[i, j].item(), expected[i, j].item()))
    changed = ~spec.checked & ~spec.free & ~_bitwise_equal(got, initial)
    for i, j in _first(changed):
        problems.append((f"{label} outside valid", (i, j), got[i, j].item(), initial[i, j].item()))
    return int(bad.sum())


def _bitwise_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    size = a.dtype.itemsize
    ua = np.ascontiguousarray(a).view(f"u{size}")
    ub = np.ascontiguousarray(b).view(f"u{size}")
    return ua == ub


@dataclass(frozen=True)
class CheckSpec:
    """What `verify` checks on one output buffer: the tolerance, the elements compared with the golden
    (`checked`), and the elements outside them the plan may change (`free`); both masks have the buffer's shape."""

    eps: float
    checked: np.ndarray
    free: np.ndarray
    note: str = ""
    bits: np.ndarray | None = None  # per element, the bits compared (integer outputs; None: all of them)


_CHECK_SPECS = {}


def check_spec(family: str):
    """Decorator: register fn(plan, output buffer, default CheckSpec) -> CheckSpec for a family (tolerance, regions)."""
    def deco(fn):
        _CHECK_SPECS[family] = fn
        return fn
    return deco


def check_spec_for(plan: Plan, buf, inst) -> CheckSpec:
    """Return the CheckSpec of one output buffer: the family's, else the default — the buffer's valid region
    compared, nothing else may change, eps from the catalogue (0 for integer types)."""
    t = buf.tile
    checked = np.zeros(t.shape, dtype=bool)
    checked[:t.valid_rows, :t.valid_cols] = True
    default = CheckSpec(0.0 if t.dtype.is_integer else inst.eps, checked, np.zeros(t.shape, dtype=bool))
    fn = _CHECK_SPECS.get(plan.request.family)
    return default if fn is None else fn(plan, buf, default)


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


@golden_args("scalar_broadcast")
def _scalar_broadcast_args(plan: Plan, inputs: dict[str, np.ndarray]):
    """TEXPANDS has no source: dst's shape and type come from a blank tile."""
    req = plan.request
    blank = np.zeros(req.dst.shape, dtype=req.dst.dtype.np)
    return golden(req.op, valid=req.dst.valid, out=blank, **dict(req.params))


@golden_args("partial")
def _partial_args(plan: Plan, inputs: dict[str, np.ndarray]):
    """TPART*: each operand's own valid region; arg ops return values and indices."""
    req = plan.request
    regions = [req.tile(n).valid for n in ("dst", "src0", "src1")]
    names = ["src0", "src1"] + [n for n in ("src0_idx", "src1_idx") if n in inputs]
    res = golden(req.op, *(inputs[n] for n in names), valid=regions)
    return {"dst": res[0], "dst_idx": res[1]} if isinstance(res, tuple) else res


@golden_args("col_expand")
def _col_expand_args(plan: Plan, inputs: dict[str, np.ndarray]):
    req = plan.request
    return golden(req.op, inputs["src"], valid=req.dst.valid, dst_shape=req.dst.shape)


@golden_args("row_expand")
def _row_expand_args(plan: Plan, inputs: dict[str, np.ndarray]):
    req = plan.request
    return golden(req.op, inputs["src"], valid=[req.dst.valid, req.tile("src").valid], dst_shape=req.dst.shape)


@golden_args("row_expand_binary")
def _row_expand_binary_args(plan: Plan, inputs: dict[str, np.ndarray]):
    """The expanded operand uses column j mod its valid cols (isa.md §4.2)."""
    req = plan.request
    regions = [req.tile(n).valid for n in ("dst", "src0", "src1")]
    return golden(req.op, inputs["src0"], inputs["src1"], valid=regions, dst_shape=req.dst.shape)


@golden_args("block_reduce")
def _block_reduce_args(plan: Plan, inputs: dict[str, np.ndarray]):
    """`out=` the initial dst, so results of masked-off blocks and the gaps between repeats compare equal."""
    req = plan.request
    params = dict(req.params)
    flat = golden(req.op, inputs["src"], out=inputs["dst"].reshape(-1), **params)
    return flat.reshape(req.dst.shape)


from . import checks as _checks  # noqa: E402,F401  (registers the reduce/convert/move rules)
