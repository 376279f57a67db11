"""Lowering: request -> Plan, per arch and family; offers every legal strategy and picks the default."""
from __future__ import annotations

import importlib

from ..catalog import ELEMENTWISE
from ..errors import NotModelledError, PtoCostError, StrategyError
from ..plan import Plan
from ..request import Request

# (arch, family) -> module implementing strategies(req) and lower(req, strategy)
_MODULES = {
    **{("a2a3", family): "costmodel.lower.a2a3.elementwise" for family in ELEMENTWISE},
    ("a2a3", "row_reduce"): "costmodel.lower.a2a3.rowreduce",
    ("a2a3", "col_reduce"): "costmodel.lower.a2a3.colreduce",
    ("a2a3", "convert"): "costmodel.lower.a2a3.convert",
    ("a2a3", "data_movement"): "costmodel.lower.a2a3.datamove",
    ("a2a3", "partial"): "costmodel.lower.a2a3.partial",
    ("a2a3", "col_expand"): "costmodel.lower.a2a3.expand",
    ("a2a3", "col_expand_binary"): "costmodel.lower.a2a3.expand",
    ("a2a3", "row_expand"): "costmodel.lower.a2a3.rowexpand",
    ("a2a3", "row_expand_binary"): "costmodel.lower.a2a3.rowexpand",
    ("a2a3", "block_reduce"): "costmodel.lower.a2a3.blockreduce",
    ("a2a3", "compare_select"): "costmodel.lower.a2a3.select",
    ("a2a3", "gather_scatter"): "costmodel.lower.a2a3.gather",
}


def register(arch: str, family: str, module: str) -> None:
    """Declare the module that lowers `family` on `arch`."""
    _MODULES[(arch, family)] = module


def _module(req: Request):
    name = _MODULES.get((req.arch, req.family))
    if name is None:
        modelled = sorted({f for a, f in _MODULES if a == req.arch})
        raise NotModelledError(f"{req.op} ({req.family}) is in the catalogue but has no {req.arch} lowering yet; "
                               f"modelled families on {req.arch}: {', '.join(modelled)}")
    return importlib.import_module(name)


def strategies(req: Request) -> tuple[str, dict[str, str | None]]:
    """Return (default strategy, {strategy: None if legal else why not}) for the request."""
    return _module(req).strategies(req)


def legal_strategies(req: Request) -> tuple[str, ...]:
    """Return the legal strategies, default first."""
    return legal_of(*strategies(req))


def legal_of(default: str, table: dict[str, str | None]) -> tuple[str, ...]:
    """Return the legal strategies of a `strategies` answer, default first."""
    return (default, *(k for k, v in table.items() if v is None and k != default))


def resolve_strategy(req: Request) -> tuple[str, str]:
    """Return (strategy, source) where source is 'forced' or 'default'; raises StrategyError if illegal."""
    return pick_strategy(req, *strategies(req))


def pick_strategy(req: Request, default: str, table: dict[str, str | None]) -> tuple[str, str]:
    """Return (strategy, source) of a request among its strategies (`table`, as `strategies` gives it, with the
    implementation's `default`): the one it names in any letter case ('forced'), else the default ('default');
    raises StrategyError for an unknown or illegal name."""
    if req.strategy is None:
        return default, "default"
    match = _named(req.strategy, table)
    if match is None:
        legal = [k for k, v in table.items() if v is None]
        here = f" (legal for this request: {', '.join(legal)})" if len(legal) < len(table) else ""
        raise StrategyError(f"unknown strategy {req.strategy!r} for {req.op} on {req.arch}; strategies: "
                            f"{', '.join(table)}{here}")
    if table[match]:
        ok = ", ".join(k for k, v in table.items() if v is None)
        raise StrategyError(f"strategy {match} is illegal for this {req.op} request: {table[match]}; legal: {ok}")
    return match, "forced"


def spelled(req: Request) -> str:
    """Return the strategy `req` names as its op spells it (matched in any letter case), or "" where it names none
    or one the op does not have."""
    if req.strategy is None:
        return ""
    try:
        table = strategies(req)[1]
    except PtoCostError:
        return ""
    return _named(req.strategy, table) or ""


def _named(name: str, table) -> str | None:
    """The strategy of `table` that `name` names in any letter case, or None."""
    return {k.lower(): k for k in table}.get(name.lower())


def lower(req: Request, strategy: str | None = None) -> Plan:
    """Return the plan for the request in `strategy` (default: the request's, else the implementation's)."""
    if strategy is None:
        strategy, _ = resolve_strategy(req)
    return _module(req).lower(req, strategy)


def modelled(arch: str, family: str, op: str | None = None) -> bool:
    """Whether a lowering exists for `family` on `arch` (and, given `op`, lowers that op: a module covering only
    some ops of its family says which through `lowers(op)`)."""
    name = _MODULES.get((arch, family))
    if name is None or op is None:
        return name is not None
    lowers = getattr(importlib.import_module(name), "lowers", None)
    return lowers is None or lowers(op)


_A5_FAMILIES = (*ELEMENTWISE, "partial", "col_expand", "col_expand_binary", "row_expand", "row_expand_binary",
                "convert", "compare_select", "col_reduce", "row_reduce")
for _family in _A5_FAMILIES:
    register("a5", _family, "costmodel.lower.a5.vf")
