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
        self.source = self.source_note = ""

    def cost(self, plan: Plan) -> tuple[float, tuple[tuple[str, float], ...]]:
        """Return (cycles, breakdown) from the formula model, falling back to the pipeline model."""
        try:
            out = self.formula.cost(plan)
            self.name, self.source = self.formula.name, getattr(self.formula, "source", "")
            self.source_note = getattr(self.formula, "source_note", "")
        except NotModelledError:
            out = self.pipeline.cost(plan)
            self.name, self.source = self.pipeline.name, getattr(self.pipeline, "source", "")
            self.source_note = getattr(self.pipeline, "source_note", "")
        return out
