"""A2/A3 formula model: cycles of a plan as the sum of per-intrinsic and control costs (costmodel.md §5).

Per segment of vector calls between barriers: the first call pays its `head`, each call pays
`per_repeat × repeats` (counter-mode calls are charged the ceil(count / lanes) repeats the hardware really
walks, where upstream charged 0), the last call's `tail` is paid when the pipe drains. Binary ALU calls
issued under counter mode or a partial mask pay the `count_floor`. Mask and mode writes, barriers, UB copies
and scalar loops have their own terms.
"""
from __future__ import annotations

import math

from ..isa_a2a3 import (FULL_MASK, CopyGmToUb, CopyUB, CopyUbToGm, PipeBarrier, ScalarLoop, ScalarMove, SetMaskMode,
                        SetSaturation, SetVectorMask, VecOp)
from ..dtypes import dtype as as_dtype
from ..plan import Plan
from .params import ParamTable, shipped

BINARY_ALU = {"vadd", "vsub", "vmul", "vdiv", "vmax", "vmin", "vand", "vor"}
TERMS = ("startup", "repeats", "count_floor", "mask_mode", "barrier", "copy", "transfer", "scalar")


def cost_class(intrinsic: str) -> str:
    """Map an intrinsic name to its parameter class (`vconv_f322f16r` -> `vconv`, `vcmpv_lt` -> `vcmpv`)."""
    for prefix in ("vconv", "vcmpv"):
        if intrinsic.startswith(prefix):
            return prefix
    return intrinsic


class IntrinsicModel:
    """Prices an A2/A3 plan from a parameter table (the shipped one by default)."""

    name = "formula"

    def __init__(self, table: ParamTable | None = None):
        self.table = table

    def _p(self, cls: str, term: str, op: str, dtype: str) -> float:
        t = self.table or shipped()
        for key in (cls, "default"):
            row = t.lookup("a2a3", "intrinsic", "intrinsic", key, term, dtype=dtype)
            if row is not None:
                return row.value
        raise KeyError(f"no a2a3 intrinsic parameter {term} for {cls}")

    def _c(self, term: str) -> float:
        return (self.table or shipped()).value("a2a3", "intrinsic", "control", "*", term)

    def cost(self, plan: Plan) -> tuple[float, tuple[tuple[str, float], ...]]:
        """Return (cycles, breakdown) of the plan; the breakdown terms sum to the cycles."""
        terms = dict.fromkeys(TERMS, 0.0)
        mode, mask = "norm", FULL_MASK
        queue_empty, pending_tail = True, 0.0
        for ins in plan.body:
            if isinstance(ins, VecOp):
                cls = cost_class(ins.intrinsic)
                dt = as_dtype(ins.dtype)
                bits = max(dt.bits, as_dtype(ins.dst_dtype).bits if ins.dst_dtype else 0)
                lanes = 2048 // bits
                reps = math.ceil(mask[1] / lanes) if mode == "count" else ins.repeat
                if queue_empty:
                    terms["startup"] += self._p(cls, "head", plan.op, ins.dtype)
                    queue_empty = False
                terms["repeats"] += self._p(cls, "per_repeat", plan.op, ins.dtype) * reps
                pending_tail = self._p(cls, "tail", plan.op, ins.dtype)
                if cls in BINARY_ALU and (mode == "count" or mask != FULL_MASK):
                    terms["count_floor"] += self._c("count_floor")
            elif isinstance(ins, SetMaskMode):
                mode = ins.mode
                terms["mask_mode"] += self._c("set_mode")
            elif isinstance(ins, SetVectorMask):
                mask = (ins.hi, ins.lo)
                terms["mask_mode"] += self._c("set_mask")
            elif isinstance(ins, PipeBarrier):
                terms["barrier"] += self._c("barrier")
                terms["startup"] += pending_tail
                queue_empty, pending_tail = True, 0.0
            elif isinstance(ins, CopyUB):
                terms["copy"] += self._c("copy_head") + self._c("copy_per_block") * ins.n_burst * ins.len_burst
            elif isinstance(ins, ScalarLoop):
                terms["scalar"] += self._c("scalar_per_element") * ins.rows * ins.count
            elif isinstance(ins, (CopyGmToUb, CopyUbToGm)):
                moved = ins.n_burst * ins.len_burst
                terms["transfer"] += (self._p(ins.intrinsic, "per_call", plan.op, ins.dtype)
                                      + self._p(ins.intrinsic, "per_byte", plan.op, ins.dtype) * moved)
            elif isinstance(ins, ScalarMove):
                terms["scalar"] += self._c("scalar_per_element") * ins.rows * ins.cols
            elif isinstance(ins, SetSaturation):
                terms["mask_mode"] += self._c("set_ctrl")
        terms["startup"] += pending_tail
        total = sum(terms.values())
        return total, tuple((k, v) for k, v in terms.items() if v)
