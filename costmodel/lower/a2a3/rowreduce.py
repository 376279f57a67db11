"""A2/A3 lowering of the float row reductions TROWSUM / TROWMAX / TROWMIN (costmodel.md §6 row reduce).

With EPR = 256 B / sizeof(T) and a valid region vr x vc:

* `RowReduceMask`   (vc < EPR): one cross-lane reduce over all rows under a contiguous mask of vc lanes,
                    one call per 255-row chunk, each followed by a barrier.
* `RowReduceCount`  (vc == EPR): the same reduce in counter mode (count vr*EPR, repeat stride = row stride).
* `RowReduceCopyTail` (EPR < vc < 2*EPR): copy_ubuf_to_ubuf of the first repeat of every row into tmp, then
                    the masked tail (vc - EPR lanes) combined into tmp per 255 rows, then the reduce of tmp.
* `RowReduceAccumulate` (vc >= 2*EPR): tmp = op(repeat 0, repeat 1) in counter mode, then the masked tail per
                    255 rows, then one counter-mode call per further full repeat (the order of isa.md §4.3),
                    then the reduce of tmp.

Every elementwise call and every reduce is followed by a PIPE_V barrier. The reduce (`vcadd` / `vcmax` /
`vcmin`) writes one value per row with a dst repeat stride in elements: the dst tile's Cols for an ND dst,
1 for a DN Rx1 dst (isa.md §5). Row strides above 255 blocks fall back to one call per row (inferred).
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
from .emitter import Emitter

_A = constants("a2a3")
BLOCK = _A.block_bytes
MAX_REPEAT = _A.max_repeat
MAX_STRIDE = _A.max_repeat_stride
ELEMENTWISE = {"add": "vadd", "max": "vmax", "min": "vmin"}
CROSS_LANE = {"add": "vcadd", "max": "vcmax", "min": "vcmin"}
GROUP_REDUCE_SHAPES = {(64, 128), (32, 256), (16, 512), (8, 1024)}  # costmodel.md §6, isa.md §4.3
STRATEGIES = ("RowReduceMask", "RowReduceCount", "RowReduceCopyTail", "RowReduceAccumulate")


def lowers(op: str) -> bool:
    """Whether this module lowers `op`: the row reductions with a whole-repeat cross-lane reduce (TROWSUM, TROWMAX,
    TROWMIN)."""
    return instruction(op).kernel in CROSS_LANE


def _check_modelled(req: Request) -> str:
    kernel = instruction(req.op).kernel
    if not lowers(req.op):
        raise NotModelledError(f"{req.op} has no A2/A3 lowering (no whole-repeat reduce exists for it; the catalogue's "
                               f"one-block tmp path is not modelled); modelled row reductions: TROWSUM, TROWMAX, TROWMIN")
    if not req.dtype.is_float:
        raise NotModelledError(f"{req.op} on {req.dtype}: the A2/A3 integer row-reduce path (one-block tmp read out "
                               f"on the scalar unit, isa.md §7.1) is not modelled; modelled dtypes: f16, f32")
    return kernel


def _epr(req: Request) -> int:
    return _A.repeat_bytes * 8 // req.dtype.bits


def case_of(vc: int, epr: int) -> str:
    """Return the structure the implementation uses for vc valid columns (costmodel.md §6)."""
    if vc < epr:
        return "RowReduceMask"
    if vc == epr:
        return "RowReduceCount"
    return "RowReduceCopyTail" if vc < 2 * epr else "RowReduceAccumulate"


_NEEDS = {"RowReduceMask": "valid cols < {epr}", "RowReduceCount": "valid cols == {epr}",
          "RowReduceCopyTail": "{epr} < valid cols < {epr2}", "RowReduceAccumulate": "valid cols >= {epr2}"}


def strategies(req: Request) -> tuple[str, dict[str, str | None]]:
    """Return (default, {strategy: None or why illegal}); the valid column count fixes the structure."""
    _check_modelled(req)
    epr = _epr(req)
    vc = req.tile("src").valid_cols
    chosen = case_of(vc, epr)
    return chosen, {s: None if s == chosen else
                    f"needs {_NEEDS[s].format(epr=epr, epr2=2 * epr)} elements (valid cols are {vc})"
                    for s in STRATEGIES}


def _row_chunks(vr: int, row_blocks: int) -> list[tuple[int, int]]:
    """(first row, rows) per call: 255-row chunks, or one row per call when the row stride exceeds 255 blocks."""
    if vr > 1 and row_blocks > MAX_STRIDE:
        return [(r, 1) for r in range(vr)]
    return [(r, min(MAX_REPEAT, vr - r)) for r in range(0, vr, MAX_REPEAT)]


class _RowReduce:
    """The operands of one row-reduce plan and the calls it is made of."""

    def __init__(self, req: Request, kernel: str):
        self.src, self.dst = req.tile("src"), req.dst
        self.dt = req.dtype
        self.esize = self.dt.bits // 8
        self.epr = _A.repeat_bytes // self.esize
        self.row_blocks = self.src.cols * self.esize // BLOCK
        self.vr, self.vc = self.src.valid
        self.kernel = kernel
        self.out_stride = self.dst.cols if self.dst.layout == "row_major" else 1  # elements between row results
        self.per_row = self.vr > 1 and self.row_blocks > MAX_STRIDE  # a repeat stride cannot span a row

    def combine(self, dst_row: int, first: Addr, second: Addr, repeat: int) -> VecOp:
        """tmp[rows] = op(first, second): the lane-wise max/add into tmp (tmp rows are one repeat = 8 blocks)."""
        tmp = Addr("tmp", dst_row * _A.repeat_bytes, 1, 8)
        return VecOp(ELEMENTWISE[self.kernel], self.dt.name, tmp, (first, second), repeat)

    def src_at(self, row: int, col: int) -> Addr:
        return Addr("src", (row * self.src.cols + col) * self.esize, 1, self.row_blocks)

    def tmp_at(self, row: int) -> Addr:
        return Addr("tmp", row * _A.repeat_bytes, 1, 8)

    def reduce(self, row: int, src: Addr, repeat: int) -> VecOp:
        """The cross-lane reduce writing row `row`'s result (dst repeat stride in elements, isa.md §5)."""
        dst = Addr("dst", row * self.out_stride * self.esize, 1, self.out_stride)
        return VecOp(CROSS_LANE[self.kernel], self.dt.name, dst, (src,), repeat, mode="value")

    def reduce_tmp(self, em: Emitter) -> None:
        """Final step: the reduce of tmp (one repeat per row) into dst in counter mode, then a barrier."""
        em.count(self.vr * self.epr).add(self.reduce(0, self.tmp_at(0), 0), barrier=True)

    def masked_tail(self, em: Emitter, col: int, lanes: int) -> None:
        """tmp = op(tmp, src[:, col:col+lanes]) under a contiguous mask, one call per row chunk."""
        em.mask(lanes)
        for r0, n in _row_chunks(self.vr, self.row_blocks):
            em.add(self.combine(r0, self.tmp_at(r0), self.src_at(r0, col), n), barrier=True)

    def full_repeat(self, em: Emitter, col: int, first: Addr | None = None) -> None:
        """tmp = op(first or tmp, src[:, col:col+EPR]) in counter mode (per row if the stride is too large)."""
        if not self.per_row:
            em.count(self.vr * self.epr)
            em.add(self.combine(0, first or self.tmp_at(0), self.src_at(0, col), 0), barrier=True)
            return
        em.count(self.epr)
        for r in range(self.vr):
            lead = self.src_at(r, 0) if first is not None else self.tmp_at(r)
            em.add(self.combine(r, lead, self.src_at(r, col), 0), barrier=True)


def lower(req: Request, strategy: str) -> Plan:
    """Return the row-reduce plan (the strategy is fixed by the valid columns; see `strategies`)."""
    kernel = _check_modelled(req)
    rr = _RowReduce(req, kernel)
    vr, vc, epr = rr.vr, rr.vc, rr.epr
    em = Emitter()
    scratch = []
    if strategy == "RowReduceMask":
        em.mask(vc)
        for r0, n in _row_chunks(vr, rr.row_blocks):
            em.add(rr.reduce(r0, rr.src_at(r0, 0), n), barrier=True)
    elif strategy == "RowReduceCount":
        if not rr.per_row:
            em.count(vr * epr).add(rr.reduce(0, rr.src_at(0, 0), 0), barrier=True)
        else:
            em.count(epr)
            for r in range(vr):
                em.add(rr.reduce(r, rr.src_at(r, 0), 0), barrier=True)
    else:
        scratch = [("tmp", Tile(vr, epr, rr.dt, vr, epr))]
        if strategy == "RowReduceCopyTail":
            em.add(CopyUB(rr.tmp_at(0), rr.src_at(0, 0), vr, 8, rr.row_blocks - 8, 0), barrier=True)
            rr.masked_tail(em, epr, vc - epr)
        else:
            n_full, tail = divmod(vc, epr)
            rr.full_repeat(em, epr, first=rr.src_at(0, 0))
            if tail:
                rr.masked_tail(em, n_full * epr, tail)
            for k in range(2, n_full):
                rr.full_repeat(em, k * epr)
        rr.reduce_tmp(em)
    buffers = allocate("a2a3", list(req.tiles), scratch)
    notes = ["row stride above 255 blocks: one call per row (inferred)"] if rr.per_row else []
    if rr.dt.name == "f32" and req.dst.layout == "col_major" and (rr.src.rows, rr.src.cols) in GROUP_REDUCE_SHAPES:
        notes.append("the implementation has a hand-tuned vcgadd/vcgmax sequence for this f32 shape with a DN dst "
                     "(costmodel.md §6); the reference does not give it, so the generic sequence is planned")
    return Plan("a2a3", req.op, strategy, req, buffers, tuple(em.finish()), tuple(notes))
