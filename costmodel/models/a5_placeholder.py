"""PLACEHOLDER A5 cost model: one cycle per dynamically issued VF instruction. Not fitted, not a prediction.

It exists only so that `estimate --arch a5` runs end to end (plan, emulate, verify) before the real A5
formula and pipeline models land; those will replace it as the arch's default. Cycles = the number of VF
instructions the plan issues (each instruction x the trip counts of its enclosing loops), broken down by unit
(scalar, pred, load, store, vector).
"""
from __future__ import annotations

from ..isa_a5 import VfProgram
from ..plan import Plan

UNITS = ("scalar", "pred", "load", "store", "vector")


class PlaceholderModel:
    """Counts issues; documented as a placeholder in every estimate's model name."""

    name = "placeholder"

    def cost(self, plan: Plan) -> tuple[float, tuple[tuple[str, float], ...]]:
        """Return (issue count, per-unit issue counts) of the plan's VF programs."""
        terms = dict.fromkeys(UNITS, 0.0)
        for prog in plan.body:
            if isinstance(prog, VfProgram):
                for unit, n in prog.unit_counts().items():
                    terms[unit] = terms.get(unit, 0.0) + n
        return sum(terms.values()), tuple((k, v) for k, v in terms.items() if v)
