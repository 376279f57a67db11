"""Execute an A2/A3 plan on a byte image of the unified buffer (isa.md §7.1 emulator spec).

Normal mode: `repeat` repeats of 8 datablocks, lane p of a repeat active iff mask bit p is set (32-bit and
wider types use only the low word). Counter mode: the mask's low word is an element count N, the call walks
ceil(N / lanes) repeats and lane p of repeat r is active iff r*lanes + p < N. Strides are in 32-byte blocks;
inactive lanes are not written (inferred, isa.md §7.1). Repeats of one call are executed as one vectorised
gather/compute/scatter, which matches sequential execution when a call does not read what it writes in an
earlier repeat (PTO plans never do).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..arch import constants
from ..dtypes import DType, dtype as as_dtype
from ..golden.convert import convert
from ..golden.kernels import PREDICATES, apply
from ..isa_a2a3 import Addr, CopyUB, PipeBarrier, ScalarLoop, SetMaskMode, SetVectorMask, VecOp, intrinsic_table
from ..plan import Plan
from .ub import UnifiedBuffer, initial_image

_A = constants("a2a3")
BLOCK = _A.block_bytes


class VectorState:
    """Mask mode and mask register of the vector unit."""

    def __init__(self) -> None:
        self.mode = "norm"
        self.hi = (1 << 64) - 1
        self.lo = (1 << 64) - 1
        self.saturate = True  # CTRL bit 59 clear: conversions clamp (isa.md §7.1)


# The two dispatch tables, filled below and by a2a3_move / a2a3_reduce: instruction type -> fn(ub, bases, instr,
# state), and, for a VecOp, its intrinsic's kind (data/a2a3_intrinsics.csv) -> fn(ub, bases, op, state, kernel).
HANDLERS: dict = {}
KIND_HANDLERS: dict = {}


def _active(state: VectorState, lanes: int, repeat: int) -> np.ndarray:
    """Return a (repeats, lanes) boolean array of active lanes for the current mask state."""
    if state.mode == "count":
        n = state.lo
        reps = math.ceil(n / lanes)
        idx = np.arange(reps)[:, None] * lanes + np.arange(lanes)[None, :]
        return idx < n
    bits = state.lo | ((state.hi << 64) if lanes > 64 else 0)
    lane_bits = np.array([(bits >> p) & 1 for p in range(lanes)], dtype=bool)
    return np.broadcast_to(lane_bits, (max(repeat, 0), lanes))


def _addresses(plan_base: int, addr: Addr, esize: int, shape: tuple[int, int]) -> np.ndarray:
    reps, lanes = shape
    epb = BLOCK // esize
    p = np.arange(lanes)
    blk, e = p // epb, p % epb
    r = np.arange(reps)[:, None]
    return plan_base + addr.offset + (r * addr.rep_stride + blk[None, :] * addr.blk_stride) * BLOCK + e[None, :] * esize


def _scalar(value, dt: DType) -> np.ndarray:
    return np.asarray(value).astype(dt.np)


def _elementwise(ub: UnifiedBuffer, bases: dict[str, int], op: VecOp, state: VectorState, kernel: str, *,
                 kind: str) -> None:
    """One lane-wise call (kinds unary, binary, scalar, axpy, dup, convert): each active lane of dst from the same
    lane of the sources (and of dst itself for axpy)."""
    dt = as_dtype(op.dtype)
    out_dt = as_dtype(op.dst_dtype) if op.dst_dtype else dt
    lanes = _A.repeat_bytes * 8 // max(dt.bits, out_dt.bits)
    act = _active(state, lanes, op.repeat)
    if not act.any():
        return
    dst_addr = _addresses(bases[op.dst.buf], op.dst, out_dt.bits // 8, act.shape)[act]
    srcs = [ub.read(_addresses(bases[s.buf], s, dt.bits // 8, act.shape)[act], dt) for s in op.srcs]
    if kind == "dup":
        value = _ub_scalar(ub, bases, op.scalar, out_dt) if isinstance(op.scalar, Addr) else _scalar(op.scalar, out_dt)
        result = np.broadcast_to(value, dst_addr.shape)
    elif kind == "convert":
        # The plan's mode (TCVT names it), else the intrinsic's suffix letter r/a/f/c/z/o (isa.md §7.1) that the
        # intrinsic table carries as its kernel (vconv_f322s32z -> trunc).
        result = convert(srcs[0], dt, out_dt, op.mode or kernel, state.saturate)
    elif kind == "scalar":
        result = apply(kernel, srcs[0], np.broadcast_to(_scalar(op.scalar, dt), srcs[0].shape))
    elif kind == "axpy":  # reads dst too
        result = apply(kernel, ub.read(dst_addr, out_dt), srcs[0], np.broadcast_to(_scalar(op.scalar, dt), srcs[0].shape))
    else:
        result = apply(kernel, *srcs)
    ub.write(dst_addr, result, out_dt)


def _ub_scalar(ub: UnifiedBuffer, bases: dict[str, int], addr: Addr, dt: DType) -> np.ndarray:
    """The scalar operand the scalar unit loaded from UB (a per-row value, e.g. TROWEXPAND's src[i, 0])."""
    return ub.read(np.array(bases[addr.buf] + addr.offset), dt)


def _mask_bits(state: VectorState, lanes: int, repeat: int) -> tuple[np.ndarray, np.ndarray]:
    """Return (active lanes, bit index of each active lane): lane p of repeat r is bit r*lanes + p."""
    act = _active(state, lanes, repeat)
    return act, np.flatnonzero(act)


def _sources(ub: UnifiedBuffer, bases: dict[str, int], op: VecOp, state: VectorState, n: int):
    """Return (active mask, active lane numbers, the values of the first `n` sources) of a compare/select call, or
    None when no lane is active."""
    dt = as_dtype(op.dtype)
    act, k = _mask_bits(state, _A.repeat_bytes * 8 // dt.bits, op.repeat)
    if not k.size:
        return None
    return act, k, tuple(ub.read(_addresses(bases[s.buf], s, dt.bits // 8, act.shape)[act], dt) for s in op.srcs[:n])


def _compare(ub: UnifiedBuffer, bases: dict[str, int], op: VecOp, state: VectorState, kernel: str) -> None:
    """vcmpv_<mode>: one bit per active element, LSB first, `lanes` bits per repeat packed back to back (isa.md §7.1).

    The dst operand's block and repeat strides are not used. Bits of inactive lanes keep their old value
    (inferred, as for masked lanes of other intrinsics).
    """
    got = _sources(ub, bases, op, state, 2)
    if got is None:
        return
    _, k, (a, b) = got
    _write_bits(ub, bases, op, k, a, b, kernel)


def _compare_scalar(ub: UnifiedBuffer, bases: dict[str, int], op: VecOp, state: VectorState, kernel: str) -> None:
    """vcmpvs_<mode>(dst, src, scalar): as vcmpv with the scalar in place of the second source (isa.md §7.1)."""
    got = _sources(ub, bases, op, state, 1)
    if got is None:
        return
    _, k, (a,) = got
    _write_bits(ub, bases, op, k, a, np.asarray(op.scalar).astype(as_dtype(op.dtype).np), kernel)


def _write_bits(ub: UnifiedBuffer, bases: dict[str, int], op: VecOp, k: np.ndarray, a, b, kernel: str) -> None:
    """Write the predicate of each active lane k as bit k of the dst operand (LSB first)."""
    with np.errstate(invalid="ignore"):
        bits = PREDICATES[kernel](a, b).astype(np.uint8)
    base = bases[op.dst.buf] + op.dst.offset
    for pos in range(8):
        sel = (k % 8) == pos
        addr = base + k[sel] // 8
        ub.bytes[addr] = (ub.bytes[addr] & np.uint8(0xFF ^ (1 << pos))) | (bits[sel] << pos)


def _select(ub: UnifiedBuffer, bases: dict[str, int], op: VecOp, state: VectorState, kernel: str) -> None:
    """vsel(dst, src0, src1, mask): src0 where the lane's mask bit (same packing as vcmpv) is 1, else src1 (inferred)."""
    got = _sources(ub, bases, op, state, 2)
    if got is None:
        return
    act, k, (a, b) = got
    dt = as_dtype(op.dtype)
    m = op.srcs[2]
    bit = (ub.bytes[bases[m.buf] + m.offset + k // 8] >> (k % 8)) & 1
    dst = _addresses(bases[op.dst.buf], op.dst, dt.bits // 8, act.shape)[act]
    ub.write(dst, np.where(bit.astype(bool), a, b), dt)


def _gather(ub: UnifiedBuffer, bases: dict[str, int], op: VecOp, state: VectorState, kernel: str) -> None:
    """vgather(dst, src, offsets): each active lane of dst reads the element at src's base plus the lane's u32 byte
    offset (the operand the TGATHER lowering fills with index x element size; inferred). A repeat covers as many
    lanes as its 4-byte offsets fill one register with (64), whatever the element width."""
    dt = as_dtype(op.dtype)
    act = _active(state, _A.repeat_bytes * 8 // max(dt.bits, 32), op.repeat)
    if not act.any():
        return
    base, offsets = op.srcs
    off = ub.read(_addresses(bases[offsets.buf], offsets, 4, act.shape)[act], as_dtype("u32")).astype(np.int64)
    dst = _addresses(bases[op.dst.buf], op.dst, dt.bits // 8, act.shape)[act]
    ub.write(dst, ub.read(bases[base.buf] + base.offset + off, dt), dt)


def _broadcast_blocks(ub: UnifiedBuffer, bases: dict[str, int], op: VecOp, state: VectorState, kernel: str) -> None:
    """vbrcb: repeat r reads 8 consecutive elements and fills dst block b of that repeat with element b.

    Block and repeat strides of dst are in 32-byte blocks; the mask does not apply (inferred).
    """
    dt = as_dtype(op.dtype)
    esize = dt.bits // 8
    r = np.arange(op.repeat)[:, None]
    b = np.arange(8)[None, :]
    src = op.srcs[0]
    vals = ub.read(bases[src.buf] + src.offset + (r * 8 + b) * esize, dt)
    blocks = bases[op.dst.buf] + op.dst.offset + (r * op.dst.rep_stride + b * op.dst.blk_stride) * BLOCK
    addrs = blocks[..., None] + np.arange(BLOCK // esize) * esize
    ub.write(addrs, np.broadcast_to(vals[..., None], addrs.shape), dt)


def _block_reduce(ub: UnifiedBuffer, bases: dict[str, int], op: VecOp, state: VectorState, kernel: str) -> None:
    """vcgmax/vcgmin/vcgadd: one result per 32-byte datablock; a block with no active lane is not written."""
    from ..golden.blockreduce import reduce_blocks

    dt = as_dtype(op.dtype)
    esize = dt.bits // 8
    lanes = _A.repeat_bytes // esize
    act = _active(state, lanes, op.repeat)
    reps = act.shape[0]
    if reps == 0:
        return
    vals = ub.read(_addresses(bases[op.srcs[0].buf], op.srcs[0], esize, act.shape), dt)
    epb = BLOCK // esize
    res, any_active = reduce_blocks(kernel, vals.reshape(reps, 8, epb), act.reshape(reps, 8, epb))
    r = np.arange(reps)[:, None]
    b = np.arange(8)[None, :]
    dst = bases[op.dst.buf] + op.dst.offset + (r * op.dst.rep_stride * 8 + b) * esize
    ub.write(dst[any_active], res[any_active], dt)


def _copy(ub: UnifiedBuffer, bases: dict[str, int], op: CopyUB, state: VectorState) -> None:
    n = op.len_burst * BLOCK
    for i in range(op.n_burst):
        s = bases[op.src.buf] + op.src.offset + i * (op.len_burst + op.src_gap) * BLOCK
        d = bases[op.dst.buf] + op.dst.offset + i * (op.len_burst + op.dst_gap) * BLOCK
        ub.bytes[d:d + n] = ub.bytes[s:s + n].copy()


def _scalar_loop(ub: UnifiedBuffer, bases: dict[str, int], op: ScalarLoop, state: VectorState) -> None:
    dt = as_dtype(op.dtype)
    size = dt.bits // 8
    r = np.arange(op.rows)[:, None]
    k = np.arange(op.count)[None, :]

    def addr(a: Addr, stride: int) -> np.ndarray:
        return bases[a.buf] + a.offset + r * stride + k * size

    dst = addr(op.dst, op.row_stride_bytes[0])
    srcs = [ub.read(addr(s, st), dt) for s, st in zip(op.srcs, op.row_stride_bytes[1:])]
    if op.scalar is None:
        operands = tuple(srcs)
    else:
        s = np.broadcast_to(_scalar(op.scalar, dt), srcs[0].shape)
        operands = (s, srcs[0]) if op.reverse else (srcs[0], s)
    ub.write(dst, apply(op.kernel, *operands), dt)


def _vec_op(ub: UnifiedBuffer, bases: dict[str, int], op: VecOp, state: VectorState) -> None:
    """Run one vector call through the handler of its intrinsic's kind."""
    table = intrinsic_table()
    kind, kernel = table[op.intrinsic] if op.intrinsic in table else _family_of(op.intrinsic)
    handler = KIND_HANDLERS.get(kind)
    if handler is None:
        raise TypeError(f"the A2/A3 emulator has no executor for {op.intrinsic} (kind {kind!r})")
    handler(ub, bases, op, state, kernel)


def _set_mask_mode(ub: UnifiedBuffer, bases: dict[str, int], op: SetMaskMode, state: VectorState) -> None:
    state.mode = op.mode


def _set_vector_mask(ub: UnifiedBuffer, bases: dict[str, int], op: SetVectorMask, state: VectorState) -> None:
    state.hi, state.lo = op.hi, op.lo


def _barrier(ub: UnifiedBuffer, bases: dict[str, int], op: PipeBarrier, state: VectorState) -> None:
    """Instructions execute in order here, so a pipe barrier has nothing to wait for."""


KIND_HANDLERS.update({kind: functools.partial(_elementwise, kind=kind)
                      for kind in ("unary", "binary", "scalar", "axpy", "dup", "convert")})
KIND_HANDLERS.update({"block_reduce": _block_reduce, "compare": _compare, "compare_scalar": _compare_scalar,
                      "select": _select,
                      "brcb": _broadcast_blocks, "gather": _gather})
HANDLERS.update({
    VecOp: _vec_op,
    SetMaskMode: _set_mask_mode,
    SetVectorMask: _set_vector_mask,
    CopyUB: _copy,
    ScalarLoop: _scalar_loop,
    PipeBarrier: _barrier,
})


def execute(plan: Plan, ub: UnifiedBuffer) -> None:
    """Run every instruction of the plan on `ub` in order."""
    bases = {b.name: b.offset for b in plan.buffers}
    state = VectorState()
    for instr in plan.body:
        handler = HANDLERS.get(type(instr))
        if handler is None:
            raise TypeError(f"the A2/A3 emulator cannot execute {type(instr).__name__}")
        handler(ub, bases, instr, state)


def _family_of(intrinsic: str) -> tuple[str, str]:
    if intrinsic.startswith("vconv"):
        return "convert", "rint"
    raise KeyError(f"intrinsic {intrinsic} is not in data/a2a3_intrinsics.csv")


def run(plan: Plan, inputs: dict[str, np.ndarray], seed: int = 0) -> tuple[UnifiedBuffer, UnifiedBuffer]:
    """Return (initial, final) memory images (UB, then any GM buffers) after running the plan on the inputs."""
    size = max([_A.ub_bytes] + [b.offset + b.nbytes for b in plan.buffers])
    ub = initial_image(plan, inputs, size, seed)
    before = UnifiedBuffer.__new__(UnifiedBuffer)
    before.bytes = ub.bytes.copy()
    execute(plan, ub)
    return before, ub


from . import a2a3_move, a2a3_reduce  # noqa: E402,F401  (register their executors)
