"""A5 VF programs of the column reductions TCOLMAX / TCOLMIN / TCOLSUM / TCOLPROD and the row reductions TROWMAX /
TROWMIN / TROWSUM (isa.md §4.3, §7.2).

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

A row reduction (`row_reduce_program`) folds each row's chunks into one register the same way and then reduces the
register in place; it has the same single loop form, rows outer and chunks inner.
"""
from __future__ import annotations

import math

from ...catalog import instruction
from ...errors import NotModelledError, ShapeError
from ...golden.kernels import identity
from ...isa_a5 import Addr, Affine, Loop, Plt, Pset, SetScalar, Vlds, VOp, VSel, Vsts
from ...request import Request
from .forms import _check_trip
from .program import Regs, vf_ops

REDUCE_FAMILIES = ("col_reduce", "row_reduce")
REDUCE_FORM = "2d-no-post-update"


def in_register_op(req: Request) -> str:
    """Return the VF op that reduces one register for a row reduction: the `reduce` row of data/a5_vf_ops.csv with
    the op's kernel (vcmax / vcmin / vcadd); NotModelledError where there is none (no product reduction, TROWPROD)."""
    kernel = instruction(req.op).kernel
    for op, (kind, k) in vf_ops().items():
        if kind == "reduce" and k == kernel:
            return op
    raise NotModelledError(f"{req.op} has no A5 VF lowering: no in-register {kernel or 'product'} reduction is "
                           "named in the reference (isa.md §5, §7.2 vcgadd/vcgmax/vcgmin; costmodel.md §8 "
                           "vcadd/vcmax/vcmin)")


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
    prologue = [*regs.set_scalars, *head,
                SetScalar("s_n", vc * (lane // pred_bits), note="predicate counter over the dst row")]
    return epr, (*prologue, Loop("j", chunks, tuple(chunk), "chunks"))


def row_reduce_program(req: Request, accumulate, reduce_op: str, lane: int, pred_bits: int) -> tuple[int, tuple]:
    """Return (elements per chunk, the VF instruction tree) of a row reduction (TROWMAX / TROWMIN / TROWSUM).

    The loop nest is the elementwise 2D no-post-update one (costmodel.md §7: rows x ceil(vc/epr) chunks, the
    predicate counter reset to vc each row and lowered by each chunk's plt), so a tail chunk runs the same body as a
    whole one and the cost grows with the chunk count. Each chunk is loaded and its lanes past the valid columns are
    replaced by the op's identity (a select on the loaded chunk: compute ops zero their inactive lanes, isa.md §7.2,
    so a predicated fold would lose the accumulator's lanes, and the select stays off the accumulator's chain); the
    row's first chunk starts the accumulator (so a NaN in the row's first element stays, as the reference's scan from
    element 0 keeps it, isa.md §4.3), the others are folded in lane by lane (`accumulate`, as for the column
    reductions); then one in-register reduction (`reduce_op`: vcmax / vcmin / vcadd, costmodel.md §8; its lane order
    is inferred) over the register leaves the row's value in lane 0, stored at dst[r, 0] under a one-lane predicate
    (inferred)::

        v4 = vdup(identity of the op); pf = pset(ALL); p1 = plt(1)
        loop r in 0..vr {                        ; rows
          s_n = vc; p0 = plt(s_n)
          vlds v1, src[r*rowStride]; vsel v0, v1, v4, p0   ; chunk 0 starts the accumulator
          loop j in 0..ceil(vc/epr)-1 {          ; chunks 1..
            p0 = plt(s_n)
            vlds v1, src[r*rowStride + (j+1)*epr]
            vsel v2, v1, v4, p0
            vop  v0, v0, v2
          }
          vcop v3, v0, pf
          vsts v3, dst[r*dstRowStride], p1
        }
    """
    src, dst = req.tile("src"), req.dst
    vr, vc = src.valid
    if dst.rows < vr or dst.valid_rows != vr:
        raise ShapeError(f"{req.op}: dst must hold one value for each of the source's {vr} valid rows; got dst "
                         f"{dst.rows}x{dst.cols} valid {dst.valid_rows}x{dst.valid_cols}")
    epr = 2048 // lane
    dt, rs, units = src.dtype, src.row_stride, lane // pred_bits
    kernel = instruction(req.op).kernel
    regs = Regs({"x0": "v0", "x1": "v2", "y": "v0"})
    head, fold = accumulate(regs, "pf")
    prologue = [*regs.set_scalars, *head,
                SetScalar("s_id", identity(kernel, dt.np), dt.name, note=f"the {kernel} identity"),
                VOp("vdup", dt.name, "v4", (), None, "s_id"), Pset("pf", pred_bits),
                SetScalar("s_one", units, note="one lane: the row's result"), Plt("p1", "s_one", pred_bits)]
    chunk = (Plt("p0", "s_n", pred_bits),
             Vlds("v1", Addr("src", dt.bits, Affine(epr, (("r", rs), ("j", epr)))), dt.name, "NORM"),
             VSel(dt.name, "v2", "v1", "v4", "p0"), *fold)
    row = [SetScalar("s_n", vc * units, note="per-row predicate counter"), Plt("p0", "s_n", pred_bits),
           Vlds("v1", Addr("src", dt.bits, Affine(0, (("r", rs),))), dt.name, "NORM"),
           VSel(dt.name, "v0", "v1", "v4", "p0")]
    if vc > epr:
        row.append(Loop("j", _check_trip(math.ceil(vc / epr) - 1, "chunk"), chunk, "chunks"))
    row += [VOp(reduce_op, dt.name, "v3", ("v0",), "pf"),
           Vsts("v3", Addr("dst", dst.dtype.bits, Affine(0, (("r", dst.row_stride),))), dt.name, f"NORM_B{lane}", "p1")]
    return epr, (*prologue, Loop("r", _check_trip(vr, "row"), tuple(row), "rows"))
