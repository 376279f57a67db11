"""A5 VF programs of the column reductions TCOLMAX / TCOLMIN / TCOLSUM / TCOLPROD (isa.md §4.3, §7.2).

A column reduction folds each column over the valid rows, so a chunk of `epr` columns is the unit of work: its
predicate covers the chunk's valid columns, row 0 is loaded into the accumulator, rows 1..vr-1 are loaded and
combined with it lane by lane (the op's statement in data/a5_ops.csv: vmax / vmin / vadd / vmul), and the one
result chunk is stored to dst row 0 under the same predicate (inferred: the VF counterpart of the A2/A3 linear
form, costmodel.md §6, with the accumulator held in a register)::

    s_n = vc                                  ; predicate counter over the dst row
    loop j in 0..ceil(vc/epr) {               ; chunks
      p0 = plt(s_n)
      vlds v0, src[j*epr]                     ; row 0
      loop r in 0..vr-1 {                     ; rows 1..vr-1
        vlds v1, src[(r+1)*rowStride + j*epr]
        vop  v0, v0, v1, p0                   ; rows folded in order, as the CPU reference does
      }
      vsts v0, dst[j*epr], p0
    }

One loop form only, `2d-no-post-update` (explicit addresses from the chunk and row indices): the fold runs down
the rows of a chunk, so no flat 1D walk of the valid region exists, and the reference names no post-update variant
of a reduction (costmodel.md §7 describes the VFImplKind switch for elementwise bodies only) — every vf_impl_kind
resolves to this form (data/a5_dispatch.csv, inferred). An empty valid region issues nothing (the instruction
returns at once, isa.md §3 TCOLMAX row).
"""
from __future__ import annotations

import math

from ...errors import ShapeError
from ...isa_a5 import Addr, Affine, Loop, Plt, SetScalar, Vlds, Vsts
from ...request import Request
from .forms import _check_trip
from .program import Regs

REDUCE_FAMILIES = ("col_reduce",)
REDUCE_FORM = "2d-no-post-update"


def check_tiles(req: Request) -> None:
    """Raise ShapeError unless dst is one row of the source's valid columns (isa.md §3: dst [1, C], ValidCol equal)."""
    src, dst = req.tile("src"), req.dst
    if dst.valid_rows > 1 or dst.valid_cols != src.valid_cols or dst.cols < src.valid_cols:
        raise ShapeError(f"{req.op}: dst must be one row holding the source's {src.valid_cols} valid columns "
                         f"(ValidCol equal); got dst {dst.rows}x{dst.cols} valid {dst.valid_rows}x{dst.valid_cols}")


def col_reduce_program(req: Request, accumulate, lane: int, pred_bits: int) -> tuple[int, tuple]:
    """Return (elements per chunk, the VF instruction tree) of a column reduction.

    `accumulate(regs, pred)` compiles the op's statements (data/a5_ops.csv) into (prologue, body) with `x0` the
    accumulator and `x1` the loaded row, the result written back to the accumulator (`y` = `x0`).
    """
    check_tiles(req)
    src = req.tile("src")
    vr, vc = src.valid
    epr = 2048 // lane
    if not (vr and vc):
        return epr, ()
    regs = Regs({"x0": "v0", "x1": "v1", "y": "v0"})
    head, body = accumulate(regs, "p0")
    dt, rs = src.dtype, src.row_stride
    chunks = _check_trip(math.ceil(vc / epr), "column-chunk")
    rows = [Vlds("v1", Addr("src", dt.bits, Affine(rs, (("r", rs), ("j", epr)))), dt.name, "NORM"), *body]
    chunk = [Plt("p0", "s_n", pred_bits),
             Vlds("v0", Addr("src", dt.bits, Affine(0, (("j", epr),))), dt.name, "NORM")]
    if vr > 1:
        chunk.append(Loop("r", _check_trip(vr - 1, "row"), tuple(rows), "rows"))
    chunk.append(Vsts("v0", Addr("dst", req.dst.dtype.bits, Affine(0, (("j", epr),))), dt.name, f"NORM_B{lane}", "p0"))
    prologue = [*regs.set_scalars, *head, SetScalar("s_n", vc * (lane // pred_bits), note="predicate counter over the dst row")]
    return epr, (*prologue, Loop("j", chunks, tuple(chunk), "chunks"))
