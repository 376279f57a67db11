"""Golden functions of the partial, expand and block-reduce families (registered into `golden`)."""
from __future__ import annotations

import numpy as np

from . import register
from .blockreduce import block_reduce


@register("block_reduce")
def _block_reduce(inst, operands, valid, out, params):
    mask = params.get("mask")
    return block_reduce(inst.kernel, operands[0], repeat=int(params["repeat"]), mask=mask,
                        dst_rep_stride=int(params.get("dst_rep_stride", 1)),
                        src_blk_stride=int(params.get("src_blk_stride", 1)),
                        src_rep_stride=int(params.get("src_rep_stride", 8)), out=out)
