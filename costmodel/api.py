"""The public API: estimate, compare, plan, catalog, golden (DESIGN.md §2)."""
from __future__ import annotations

import functools
import os
from typing import Any

from . import lower as _lower
from .emulate.verify import verify as _verify
from .errors import PtoCostError
from .models import registry
from .operands import make_request
from .plan import Plan
from .request import NOT_CHECKED, Estimate, Request

DEFAULT_ARCH = "a2a3"


def resolve_arch(arch: str | None) -> tuple[str, str]:
    """Return (arch, source): the explicit value ('option'), else $PTO_COST_ARCH ('env'), else 'a2a3' ('default'),
    under its own name (A5 and a5 alike)."""
    from .arch import ARCHES, check_arch

    if arch:
        return check_arch(arch), "option"
    env = os.environ.get("PTO_COST_ARCH")
    if env:
        try:
            return check_arch(env), "env"
        except PtoCostError:
            raise PtoCostError(f"unknown arch {env!r} from $PTO_COST_ARCH; accepted: {', '.join(ARCHES)}") from None
    return DEFAULT_ARCH, "default"


def request(op: str, shape: Any = None, dtype: Any = "f16", arch: str | None = None, strategy: str | None = None,
            **params: Any) -> Request:
    """Return the checked Request (see `operands.make_request` for the accepted parameters)."""
    arch, _ = resolve_arch(arch)
    return make_request(op, shape, dtype, arch=arch, strategy=strategy, **params)


def plan(op: str, shape: Any = None, dtype: Any = "f16", arch: str | None = None, strategy: str | None = None,
         **params: Any) -> Plan:
    """Return the plan the arch's PTO implementation issues (or the forced strategy's plan)."""
    return _lower.lower(request(op, shape, dtype, arch, strategy, **params))


def estimate_request(req: Request, *, model: str = "auto", verify: bool = True, arch_source: str = "option",
                     seed: int = 0) -> Estimate:
    """Return the Estimate of a prepared request: lower, cost and (optionally) emulate against the golden."""
    strategy, source = _lower.resolve_strategy(req)
    p = _lower.lower(req, strategy)
    m = registry.model_for(req.arch, model)
    cycles, breakdown = m.cost(p)
    if verify:
        v = _verify(p, seed=seed)
        verified, note = v.ok, v.note
    else:
        verified, note = None, f"{NOT_CHECKED}: --no-verify / verify=False"
    src = getattr(m, "source", "")
    notes = p.notes + ((m.source_note,) if getattr(m, "source_note", "") else ())
    return Estimate(req.op, req.arch, strategy, m.name, float(cycles), tuple(breakdown), verified, note, source,
                    arch_source, p, req, notes, params_from=src, provenance=dict(getattr(m, "provenance", {})))


def estimate(op: str, shape: Any = None, dtype: Any = "f16", arch: str | None = None, strategy: str | None = None,
             model: str = "auto", verify: bool = True, **params: Any) -> Estimate:
    """Return cycles, breakdown, strategy and verification for one instruction request."""
    arch, src = resolve_arch(arch)
    req = make_request(op, shape, dtype, arch=arch, strategy=strategy, **params)
    return estimate_request(req, model=model, verify=verify, arch_source=src)


def compare_estimates(op: str, shape: Any = None, dtype: Any = "f16", arch: str | None = None, model: str = "auto",
                      verify: bool = True, **params: Any) -> list[Estimate]:
    """Return one Estimate per legal strategy, the default first (`ranked` orders them fastest first)."""
    arch, src = resolve_arch(arch)
    req = make_request(op, shape, dtype, arch=arch, **params)
    default = _lower.resolve_strategy(req)[0]
    out = []
    for s in _lower.legal_strategies(req):
        e = estimate_request(req.with_strategy(s), model=model, verify=verify, arch_source=src)
        out.append(e if s != default else _as_default(e))
    return out


def _as_default(e: Estimate) -> Estimate:
    from dataclasses import replace

    return replace(e, strategy_source="default")


def compare(op: str, shape: Any = None, dtype: Any = "f16", arch: str | None = None, model: str = "auto",
            verify: bool = True, **params: Any):
    """Return a pandas DataFrame with one row per legal strategy: cycles, breakdown terms, verified, default, fastest."""
    import pandas as pd

    rows = []
    ests = compare_estimates(op, shape, dtype, arch, model, verify, **params)
    default, fastest = default_and_fastest(ests)
    for e in ests:
        row = {"strategy": e.strategy, "cycles": e.cycles, "model": e.model, "arch": e.arch,
               "verified": e.verified_text, "default": e is default, "fastest": e is fastest}
        row.update({f"bd_{k}": v for k, v in e.breakdown})
        rows.append(row)
    return pd.DataFrame(rows).fillna(0.0)


def default_and_fastest(ests: list[Estimate]) -> tuple[Estimate, Estimate]:
    """Return (the default strategy's estimate, the fastest: the default where it ties the minimum, else the first
    estimate at the minimum)."""
    default = next((e for e in ests if e.strategy_source == "default"), ests[0])
    best = min(e.cycles for e in ests)
    return default, default if default.cycles == best else next(e for e in ests if e.cycles == best)


def ranked(ests: list[Estimate]) -> list[Estimate]:
    """Return the estimates fastest first (the default before others it ties, as `default_and_fastest` prefers it)."""
    default = default_and_fastest(ests)[0]
    return sorted(ests, key=lambda e: (e.cycles, e is not default))


def best_strategy(op: str, shape: Any = None, dtype: Any = "f16", arch: str | None = None, model: str = "auto",
                  **params: Any) -> tuple[str, float, float]:
    """Return (fastest legal strategy, its cycles, its saving over the default strategy in % of the default)."""
    ests = compare_estimates(op, shape, dtype, arch, model, verify=False, **params)
    default, best = default_and_fastest(ests)
    saving = (1 - best.cycles / default.cycles) * 100 if default.cycles else 0.0
    return best.strategy, best.cycles, saving


# Tall enough for every expand mode's column-major tile (32 rows for 8-bit types) and small enough for the largest
# operand set (TPARTARGMAX f32: seven tiles) to fit the unified buffer, so a token fails here only for its dtypes.
_PROBE_SHAPE = "32x128"


def modelled_dtypes(op: str, arch: str) -> tuple[str, ...]:
    """Return the dtype tokens of `op` on `arch`, as the catalogue lists them ('src>dst' for two-type ops), that
    have a modelled plan (a family's lowering may leave some dtypes unmodelled, e.g. A2/A3 integer row sums)."""
    from .catalog import instruction

    return _modelled_dtypes(instruction(op).name, arch)


@functools.lru_cache(maxsize=None)
def _modelled_dtypes(op: str, arch: str) -> tuple[str, ...]:
    """`modelled_dtypes`, worked out once per op and arch: it plans every listed dtype (TCVT: about 46 pairs), and
    every TCVT dtype error reads it."""
    from .catalog import instruction

    out = []
    for tok in instruction(op).dtypes_on(arch):
        src, _, dst = tok.partition(">")
        try:
            plan(op, _PROBE_SHAPE, src, arch=arch, **({"dst_dtype": dst} if dst else {}))
        except PtoCostError:
            continue
        out.append(tok)
    return tuple(out)


def catalog():
    """Return the instruction catalogue as a pandas DataFrame (one row per instruction)."""
    import pandas as pd

    from ._data import read_rows

    return pd.DataFrame(list(read_rows("catalog.csv")))


__all__ = ["estimate", "compare", "best_strategy", "plan", "catalog", "modelled_dtypes", "request", "estimate_request", "compare_estimates", "PtoCostError"]
