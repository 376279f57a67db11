"""The public API: estimate, compare, plan, catalog, golden (DESIGN.md §2)."""
from __future__ import annotations

import functools
import os
from typing import Any

from . import lower as _lower
from .emulate.verify import verify as _verify
from .errors import ParamError, PtoCostError, StrategyError
from .flags import flag
from .models import registry
from .operands import make_request
from .plan import Plan
from .request import NOT_CHECKED, Estimate, Request

DEFAULT_ARCH = "a2a3"


# How every request-taking function of the API reads its arguments; appended to their docstrings.
REQUEST_ARGS = """
    Arguments (as the CLI options of `pto-cost estimate`):
      op        instruction name, any case (`pto-cost ops` lists them).
      shape     the tile, "64x64", (64, 64) or [64, 64].
      dtype     element type: f16, f32, bf16, i8 ... u64, fp8_e4m3, fp8_e5m2, hif8, fp4_e1m2, fp4_e2m1; long forms
                (float16, half, int8), ml_dtypes names (float8_e4m3fn) and numpy types (np.float16) too.
      arch      a2a3 or a5; None: $PTO_COST_ARCH, else a2a3.
      strategy  an emission strategy of the op on the arch (`compare` lists them); None or "default": the one the
                implementation picks.
      **params  valid=(rows, cols) (default: the whole tile), dst_dtype (conversions, compares), static_valid,
                in_place, scalar (tile-scalar ops; held in the tile's type), round_mode and saturation (TCVT),
                precision (TRECIP, ...), vf_impl_kind (A5), cmp_mode (TCMP, TCMPS), order (TDIVS), src0_valid,
                src1_valid, and the family parameters `pto-cost estimate --help` lists; a misspelt name is an
                error naming the close one.
    Raises a PtoCostError subclass with a one-line message (UnknownOpError, UnsupportedDtypeError, ShapeError,
    ParamError: also an unknown arch or model, StrategyError, NotModelledError) for anything it cannot model; all are
    importable from `costmodel`.
"""


def resolve_arch(arch: str | None) -> tuple[str, str]:
    """Return (arch, source): the explicit value ('option'), else $PTO_COST_ARCH ('env'), else 'a2a3' ('default'),
    under its own name (A5 and a5 alike)."""
    from .arch import ARCHES, check_arch

    if arch is not None:  # given blank, it is an unknown arch, not the default
        return check_arch(arch), "option"
    env = os.environ.get("PTO_COST_ARCH")
    if env:
        try:
            return check_arch(env), "env"
        except PtoCostError:
            raise ParamError(f"unknown arch {env!r} from $PTO_COST_ARCH; accepted: {', '.join(ARCHES)}") from None
    return DEFAULT_ARCH, "default"


def request(op: str, shape: Any = None, dtype: Any = "f16", arch: str | None = None, strategy: str | None = None,
            **params: Any) -> Request:
    """Return the checked Request, the input every model and lowering reads."""
    arch, _ = resolve_arch(arch)
    return make_request(op, shape, dtype, arch=arch, strategy=strategy, **params)


def plan(op: str, shape: Any = None, dtype: Any = "f16", arch: str | None = None, strategy: str | None = None,
         **params: Any) -> Plan:
    """Return the Plan the arch's PTO implementation issues (or the named strategy's plan): its body of vector
    intrinsic calls (A2/A3) or VF programs (A5), its buffers and notes; `print(plan.listing())` shows it as
    `pto-cost plan` does."""
    return _lower.lower(request(op, shape, dtype, arch, strategy, **params))


def estimate_request(req: Request, *, model: str = "auto", verify: bool = True, arch_source: str = "option",
                     seed: int = 0) -> Estimate:
    """Return the Estimate of a prepared request: lower, cost and (optionally) emulate against the golden."""
    verify = flag(verify, "verify")  # 'no' is no: any non-empty text would be true
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
    """Return the Estimate of one instruction request: cycles, breakdown (terms that sum to the cycles), the
    strategy and model used, and `verified` (True: the plan, emulated on random data, matched the golden
    semantics; False: it did not, see verify_note; None: not emulated). `model`: auto (the arch's default),
    formula, pipeline or anchored (A5); `verify=False` skips the emulation."""
    arch, src = resolve_arch(arch)
    req = make_request(op, shape, dtype, arch=arch, strategy=strategy, **params)
    return estimate_request(req, model=model, verify=verify, arch_source=src)


def compare_estimates(op: str, shape: Any = None, dtype: Any = "f16", arch: str | None = None, model: str = "auto",
                      verify: bool = True, **params: Any) -> list[Estimate]:
    """Return one Estimate per legal strategy, the default first (`ranked` orders them fastest first). Arguments
    as in `estimate`; `strategy`, if given, may only be `all` (or `default`)."""
    named = params.pop("strategy", None)
    if named is not None and str(named).strip().lower() not in ("all", "default", ""):
        raise StrategyError(f"compare prices every legal strategy; strategy {named!r} asks for one (estimate "
                            "with strategy= prices it alone)")
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
    """Return a pandas DataFrame with one row per legal strategy (the default first): strategy, cycles, model, arch,
    verified (as Estimate.verified: True, False, or NA where not emulated; `df[df.verified]` keeps the verified
    ones), verify_note, default, fastest and a bd_<term> column per breakdown term (0 where a strategy has none).
    Parameters as in `estimate`; `strategy`, if given, may only be `all` (or `default`)."""
    import pandas as pd

    rows = []
    ests = compare_estimates(op, shape, dtype, arch, model, verify, **params)
    default, fastest = default_and_fastest(ests)
    for e in ests:
        row = {"strategy": e.strategy, "cycles": e.cycles, "model": e.model, "arch": e.arch,
               "verified": e.verified, "verify_note": e.verify_note, "default": e is default, "fastest": e is fastest}
        row.update({f"bd_{k}": v for k, v in e.breakdown})
        rows.append(row)
    df = pd.DataFrame(rows)
    terms = [c for c in df if c.startswith("bd_")]
    return df.fillna({c: 0.0 for c in terms}).astype({"verified": "boolean"})


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
    """Return (fastest legal strategy, its cycles, its saving over the default strategy in % of the default).
    Arguments as in `estimate`."""
    ests = compare_estimates(op, shape, dtype, arch, model, verify=False, **params)
    default, best = default_and_fastest(ests)
    saving = (1 - best.cycles / default.cycles) * 100 if default.cycles else 0.0
    return best.strategy, best.cycles, saving


# Tall enough for every expand mode's column-major tile (32 rows for 8-bit types) and small enough for the largest
# operand set (TPARTARGMAX f32: seven tiles) to fit the unified buffer, so a token fails here only for its dtypes.
_PROBE_SHAPE = "32x128"


def modelled_dtypes(op: str, arch: str | None = None) -> tuple[str, ...]:
    """Return the dtype tokens of `op` on `arch` (None: $PTO_COST_ARCH, else a2a3, as `estimate` takes it), as the
    catalogue lists them ('src>dst' for two-type ops), that have a modelled plan (a family's lowering may leave some
    dtypes unmodelled, e.g. A2/A3 integer row sums)."""
    from .catalog import instruction

    return _modelled_dtypes(instruction(op).name, resolve_arch(arch)[0])


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


for _f in (request, plan, estimate, compare_estimates, compare, best_strategy):
    _f.__doc__ = (_f.__doc__ or "").rstrip() + "\n" + REQUEST_ARGS
