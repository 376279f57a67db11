"""A request: instruction, operand tiles, arch, optional strategy and op parameters."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .tiles import Tile


@dataclass(frozen=True)
class Request:
    """Everything a lowering needs. `tiles` are named operands (`dst`, `src`, `src0`, `src1`, ...), dst first."""

    op: str
    arch: str
    tiles: tuple[tuple[str, Tile], ...]
    params: tuple[tuple[str, Any], ...] = ()
    strategy: str | None = None
    family: str = ""

    def tile(self, name: str) -> Tile:
        """Return the operand tile called `name`."""
        for key, tile in self.tiles:
            if key == name:
                return tile
        raise KeyError(name)

    @property
    def dst(self) -> Tile:
        return self.tiles[0][1]

    @property
    def sources(self) -> tuple[tuple[str, Tile], ...]:
        return self.tiles[1:]

    @property
    def dtype(self):
        """The element type of the first source (the type the op computes in)."""
        return (self.tiles[1][1] if len(self.tiles) > 1 else self.tiles[0][1]).dtype

    def param(self, name: str, default: Any = None) -> Any:
        """Return an op parameter (scalar, round_mode, repeat, ...) or `default`."""
        for key, value in self.params:
            if key == name:
                return value
        return default

    def with_strategy(self, strategy: str | None) -> "Request":
        return Request(self.op, self.arch, self.tiles, self.params, strategy, self.family)

    def describe(self) -> str:
        """Return a one-line summary such as `TMINS a2a3 dst 64x64 f16 (dynamic valid)`."""
        ops = ", ".join(f"{k} {t.describe()}" for k, t in self.tiles)
        extra = "".join(f" {k}={v}" for k, v in self.params)
        return f"{self.op} on {self.arch}: {ops}{extra}"


NOT_CHECKED = "not checked"  # the start of a verify note when verification was not asked for
BREAKDOWN_FLOOR = 1e-6  # cycles: smaller parts are rounding residue of a fitted form, not a cost


@dataclass(frozen=True, eq=False)
class Estimate:
    """The result of costing (and optionally verifying) one plan.

    `cycles` with its `breakdown` ((term, cycles) pairs summing to it) from `model`; `strategy` the emission strategy
    priced, `strategy_source` "default" (the one the implementation emits) or "forced" (asked for); `arch_source`
    "option", "env" ($PTO_COST_ARCH) or "default"; `verified` True/False (the plan emulated against the
    golden) or None (`verify_note` says why: not asked, or no numpy form), `verify_note` what was checked; `notes`
    the lowering's and the model's remarks; `params_from` and `provenance` where the parameters came from; `plan` and
    `request` the objects priced. Two estimates are equal when they price the same request (tiles and parameters)
    in the same strategy with the same result, however the call named the arch or strategy.
    """

    op: str
    arch: str
    strategy: str
    model: str
    cycles: float
    breakdown: tuple[tuple[str, float], ...]
    verified: bool | None
    verify_note: str = ""
    strategy_source: str = "default"
    arch_source: str = "option"
    plan: Any = field(default=None, repr=False, compare=False)
    request: Any = field(default=None, repr=False, compare=False)
    notes: tuple[str, ...] = ()
    trace: Any = field(default=None, repr=False, compare=False)
    # parameters not the request's own: "family" (another dtype), "body" (the measured ops whose chunks do the same
    # work), "anchors"
    params_from: str = ""
    # the parameter tables the model read, per kind ("formula", "pipeline", "anchors"): file, digest, rows, fit
    provenance: dict = field(default_factory=dict, compare=False)

    @property
    def verified_text(self) -> str:
        """`yes` or `no` (emulated against the golden), `skipped` (not asked for) or `n/a` (no emulation exists for
        the plan's types)."""
        if self.verified is None:
            return "skipped" if self.verify_note.startswith(NOT_CHECKED) else "n/a"
        return "yes" if self.verified else "no"

    def _identity(self) -> tuple:
        req = self.request
        asked = None if req is None else (req.op, req.arch, req.tiles, req.params)
        return (self.op, self.arch, self.strategy, self.model, self.cycles, self.breakdown, self.verified,
                self.verify_note, self.notes, self.params_from, asked)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Estimate) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict of the estimate (no plan objects)."""
        req = self.request
        out: dict[str, Any] = {
            "op": self.op,
            "arch": self.arch,
            "arch_source": self.arch_source,
            "strategy": self.strategy,
            "strategy_source": self.strategy_source,
            "model": self.model,
            "cycles": float(self.cycles),
            "breakdown": {k: float(v) for k, v in self.breakdown if abs(v) >= BREAKDOWN_FLOOR},
            "verified": self.verified_text,
            "verify_note": self.verify_note,
            "notes": list(self.notes),
        }
        if self.params_from:
            out["params_from"] = self.params_from
        if self.provenance:
            out["provenance"] = self.provenance
        if req is not None:
            out["tiles"] = {
                k: {"shape": [t.rows, t.cols], "valid": [t.valid_rows, t.valid_cols], "dtype": t.dtype.name,
                    "layout": t.layout, "static_valid": t.static_valid}
                for k, t in req.tiles
            }
            out["params"] = {k: _jsonable(v) for k, v in req.params}
        return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    try:
        return value.item()
    except AttributeError:
        return str(value)
