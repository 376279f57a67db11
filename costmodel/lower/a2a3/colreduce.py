"""A2/A3 lowering of the column reductions TCOLMAX / TCOLMIN / TCOLSUM / TCOLPROD (costmodel.md §6 col reduce).

* `ColLinear`: copy_ubuf_to_ubuf of src row 0 into dst (ceil(vc*sizeof/32) blocks, so padding inside the
  last block is overwritten, isa.md §1.3); then for each row 1..vr-1 one counter-mode call over the full
  repeats (floor(vc/EPR)*EPR elements) and a barrier; then, if vc is not a multiple of EPR, the same per-row
  loop under a contiguous mask of vc mod EPR lanes, one repeat per call, each with a barrier.
* `ColBinary` (TCOLSUM with isBinary): adjacent row pairs are added into tmp, an odd last row is folded
  into tmp row 0, and the pass repeats on tmp until one row is left, which is copied into dst
  (isa.md §4.3). Each pass is one row-repeat call per column chunk (2LNormRowRpt with a source repeat
  stride of two rows) followed by a barrier (inferred).
"""
from __future__ import annotations

from ...arch import constants
from ...catalog import instruction
from ...errors import NotModelledError
from ...isa_a2a3 import Addr, CopyUB, VecOp
from ...plan import Plan
from ...request import Request
from ...tiles import Tile
from ..alloc import allocate
from . import modes
from .emitter import Emitter
from .modes import Step, Stream

_A = constants("a2a3")
BLOCK = _A.block_bytes
ELEMENTWISE = {"add": "vadd", "max": "vmax", "min": "vmin", "mul": "vmul"}
STRATEGIES = ("ColLinear", "ColBinary")


def _kernel(req: Request) -> str:
    kernel = instruction(req.op).kernel
    if kernel not in ELEMENTWISE:
        raise NotModelledError(f"{req.op} has no A2/A3 column-reduce lowering")
    return kernel


def strategies(req: Request) -> tuple[str, dict[str, str | None]]:
    """Return (default, {strategy: None or why illegal}); TCOLSUM's `binary` parameter picks the default."""
    _kernel(req)
    if req.op != "TCOLSUM":
        return "ColLinear", {"ColLinear": None, "ColBinary": "the pairwise tree (isBinary) exists for TCOLSUM only"}
    return ("ColBinary" if req.param("binary") else "ColLinear"), {"ColLinear": None, "ColBinary": None}


def _copy_row(dst: Addr, src: Addr, vc: int, esize: int) -> CopyUB:
    return CopyUB(dst, src, 1, -(-vc * esize // BLOCK))


def _linear(em: Emitter, req: Request, intrinsic: str) -> None:
    src = req.tile("src")
    dt, esize = src.dtype, src.dtype.bits // 8
    epr = _A.repeat_bytes // esize
    vr, vc = src.valid
    row = src.cols * esize
    em.add(_copy_row(Addr("dst"), Addr("src"), vc, esize), barrier=True)
    full = vc // epr * epr
    if full and vr > 1:
        em.count(full)
        for r in range(1, vr):
            em.add(VecOp(intrinsic, dt.name, Addr("dst"), (Addr("dst"), Addr("src", r * row)), 0), barrier=True)
    if vc % epr and vr > 1:
        em.mask(vc % epr)
        at = full * esize
        for r in range(1, vr):
            em.add(VecOp(intrinsic, dt.name, Addr("dst", at), (Addr("dst", at), Addr("src", r * row + at)), 1),
                   barrier=True)


def _pair_pass(em: Emitter, out: Stream, first: Stream, pairs: int, vc: int) -> None:
    """out[k] = first[2k] + first[2k+1] for k < pairs, as row-repeat calls, then a barrier."""
    even = Stream(first.buf, first.dtype, 2 * first.row_bytes, first.offset)
    odd = Stream(first.buf, first.dtype, 2 * first.row_bytes, first.offset + first.row_bytes)
    em.mask(None).add(*modes.two_level_row_repeat(Step("vadd", first.dtype, out, (even, odd)), pairs, vc), barrier=True)


def _fold(em: Emitter, tmp: Stream, last: Stream, row: int, vc: int) -> None:
    """tmp[0] += last[row] (the odd row of a pass), then a barrier."""
    extra = Stream(last.buf, last.dtype, last.row_bytes, last.offset + row * last.row_bytes)
    em.mask(None).add(*modes.two_level_row_repeat(Step("vadd", tmp.dtype, tmp, (tmp, extra)), 1, vc), barrier=True)


def _binary(em: Emitter, req: Request) -> list[tuple[str, Tile]]:
    src = req.tile("src")
    dt, esize = src.dtype, src.dtype.bits // 8
    vr, vc = src.valid
    if vr < 2:
        em.add(_copy_row(Addr("dst"), Addr("src"), vc, esize), barrier=True)
        return []
    row = src.cols * esize
    s, tmp = Stream("src", dt, row), Stream("tmp", dt, row)
    n = vr // 2
    _pair_pass(em, tmp, s, n, vc)
    if vr % 2:
        _fold(em, tmp, s, vr - 1, vc)
    while n > 1:
        _pair_pass(em, tmp, tmp, n // 2, vc)
        if n % 2:
            _fold(em, tmp, tmp, n - 1, vc)
        n //= 2
    em.add(_copy_row(Addr("dst"), Addr("tmp"), vc, esize), barrier=True)
    half = -(-vr // 2)
    return [("tmp", Tile(half, src.cols, dt, half, vc))]


def lower(req: Request, strategy: str) -> Plan:
    """Return the column-reduce plan in `strategy` (ColLinear, or ColBinary for TCOLSUM)."""
    kernel = _kernel(req)
    src = req.tile("src")
    em = Emitter()
    scratch: list[tuple[str, Tile]] = []
    if src.valid_rows and src.valid_cols:
        if strategy == "ColBinary":
            scratch = _binary(em, req)
        else:
            _linear(em, req, ELEMENTWISE[kernel])
    buffers = allocate("a2a3", list(req.tiles), scratch)
    # isa.md §3 TCOLMAX row: early return if R == 0 or C == 0
    empty = () if src.valid_rows and src.valid_cols else ("empty valid region: nothing is issued (the instruction "
                                                          "returns early)",)
    return Plan("a2a3", req.op, strategy, req, buffers, tuple(em.finish()), empty)
