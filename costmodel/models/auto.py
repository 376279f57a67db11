"""The `auto` model: the arch's formula model where it has parameters for the request, else a second model (A5: the
anchored pipeline)."""
from __future__ import annotations

from ..errors import NotModelledError
from ..plan import Plan


class FormulaThenPipeline:
    """Prices with the formula model when its table covers the key; otherwise with the second model (`pipeline`).

    `name` reports which model priced the last plan, so every estimate says what it used, and `source` where its
    parameters came from when they are not the request's own.
    """

    def __init__(self, formula, pipeline):
        self.formula = formula
        self.pipeline = pipeline
        self.name = formula.name
        self.source = self.source_note = self.group_note = ""
        self.provenance: dict = {}

    def cost(self, plan: Plan) -> tuple[float, tuple[tuple[str, float], ...]]:
        """Return (cycles, breakdown) from the formula model, falling back to the pipeline model."""
        return self._price(plan, lambda m: m.cost(plan))

    def cycles(self, plan: Plan) -> float:
        """Return `cost`'s cycles alone (the second model's fast path where it has one)."""
        return self._price(plan, lambda m: cycles_of(m, plan))

    def _price(self, plan: Plan, how):
        try:
            out = how(self.formula)
            used = self.formula
        except NotModelledError:
            out = how(self.pipeline)
            used = self.pipeline
        self.name, self.source = used.name, getattr(used, "source", "")
        self.source_note = getattr(used, "source_note", "")
        self.group_note = group_note(used)
        self.provenance = getattr(used, "provenance", {})
        return out


def cycles_of(model, plan: Plan) -> float:
    """Return the cycles a model gives a plan: its `cycles` fast path where it has one, else `cost`'s."""
    fast = getattr(model, "cycles", None)
    return float(fast(plan)) if fast is not None else float(model.cost(plan)[0])


def group_note(model) -> str:
    """Return the caveats a model gave its last plan (what it extrapolates, borrows or cannot explain) in words that
    name none of the plan's trip counts or cycles: its `group_note` where it has one, else its `source_note`. They
    are the same for every shape it prices alike: a sweep's note of each such row."""
    note = getattr(model, "group_note", None)
    return getattr(model, "source_note", "") if note is None else note
