"""A2/A3 lowering of the Ascend C BlockReduceMax/Min/Sum APIs (isa.md §5): one vcgmax/vcgmin/vcgadd call.

The call carries the request's repeat, dstRepStride (in units of one repeat's 8 results), srcBlkStride and
srcRepStride (32-byte blocks). A mask other than all lanes is set before the call and the full mask restored
after it, as PTO does around masked calls (isa.md §7.1).
"""
from __future__ import annotations

from ...isa_a2a3 import FULL_MASK, Addr, SetVectorMask, VecOp, continuous_mask
from ...plan import Plan
from ...request import Request
from ..alloc import allocate
from .part_expand_table import steps_for

STRATEGY = "vcg"


def strategies(req: Request) -> tuple[str, dict[str, str | None]]:
    """Return the single strategy: one group-reduce call."""
    return STRATEGY, {STRATEGY: None}


def _lane_bits(mask: tuple[int, int], lanes: int) -> tuple[int, int]:
    """The part of (hi, lo) the dtype uses: 32-bit types read only the low word (isa.md §5)."""
    return (mask[0] if lanes > 64 else 0), mask[1]


def lower(req: Request, strategy: str) -> Plan:
    """Return the plan: [set_vector_mask,] vcg<op>(dst, src, repeat, dstRep, srcBlk, srcRep) [, full mask]."""
    buffers = allocate("a2a3", list(req.tiles))
    spec = steps_for(req.op, "vector")[0]
    lanes = 256 * 8 // req.dtype.bits
    call = VecOp(spec.intrinsic, req.dtype.name, Addr("dst", 0, 1, int(req.param("dst_rep_stride"))),
                 (Addr("src", 0, int(req.param("src_blk_stride")), int(req.param("src_rep_stride"))),),
                 int(req.param("repeat")))
    mask = tuple(req.param("mask"))
    if _lane_bits(mask, lanes) == _lane_bits(continuous_mask(lanes), lanes):
        body = (call,)
    else:
        body = (SetVectorMask(*mask), call, SetVectorMask(*FULL_MASK))
    return Plan("a2a3", req.op, strategy, req, buffers, body, ("dst repeat stride in units of 8 results",))
