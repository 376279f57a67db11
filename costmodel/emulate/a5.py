"""Execute an A5 VF program on a byte image of the unified buffer (isa.md §7.2).

State: 256-byte vector registers, predicate registers (one flag per register byte; a lane of b bits is active
when the flag of its first byte is set), scalar registers, address registers (bit addresses, so fp4 and mask
streams share one rule) and loop indices. Compute ops run on the lanes of their type and zero the inactive
lanes of the destination register (MODE_ZEROING). Loads read whole registers regardless of predicates;
stores write active lanes only (inactive lanes issue no store). Load and store distributions come from
data/a5_dists.csv, op semantics from data/a5_vf_ops.csv with the numpy kernels of `golden.kernels`.
"""
from __future__ import annotations

import functools

import numpy as np

from .._data import read_rows
from ..arch import constants
from ..dtypes import DType, dtype as as_dtype
from ..golden.convert import convert
from ..golden.kernels import PREDICATES, apply
from ..isa_a5 import (Addr, Loop, Plds, PLogic, Plt, Pset, PtrAdd, SetPtr, SetScalar, VCmp, VfProgram,
                      Vlds, VOp, VSel, Vsts)
from ..lower.a5.program import vf_ops
from ..plan import Plan
from .ub import UnifiedBuffer, initial_image, unpack_nibbles

_C = constants("a5")
VL = _C.vl_bytes
_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_PLOGIC = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


@functools.cache
def distributions() -> dict[str, dict[str, str]]:
    """Return load/store distribution name -> row of data/a5_dists.csv."""
    return {r["name"]: r for r in read_rows("a5_dists.csv")}


class VfState:
    """Registers and loop indices of one VF execution."""

    def __init__(self, bases: dict[str, int]):
        self.bases = bases
        self.v: dict[str, np.ndarray] = {}
        self.p: dict[str, np.ndarray] = {}
        self.s: dict[str, object] = {}
        self.a: dict[str, tuple[int, int]] = {}  # pointer -> (bit address, element bits)
        self.env: dict[str, int] = {}
        self.spent: set[str] = set()  # counters a plt drove below zero (held at 0 here)
        self.read_spent = False  # whether a plt read such a counter: the result assumes plt saturates at 0

    def vreg(self, name: str) -> np.ndarray:
        return self.v.setdefault(name, np.zeros(VL, dtype=np.uint8))

    def preg(self, name: str) -> np.ndarray:
        return self.p.setdefault(name, np.zeros(VL, dtype=bool))

    def address(self, addr) -> tuple[int, int]:
        """Return (bit address, element bits) of an access; a post-update pointer advances afterwards."""
        if isinstance(addr, Addr):
            return self.bases[addr.buf] * 8 + addr.offset.eval(self.env) * addr.bits, addr.bits
        bit, bits = self.a[addr.ptr]
        self.a[addr.ptr] = (bit + addr.step * bits, bits)
        return bit, bits


def _byte(bit: int) -> int:
    if bit % 8:
        raise ValueError(f"access at bit address {bit} is not byte aligned")
    return bit // 8


def _read(ub: UnifiedBuffer, start: int, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=np.uint8)
    avail = max(0, min(n, ub.bytes.size - start))
    out[:avail] = ub.bytes[start:start + avail]
    return out


def lane_flags(pred: np.ndarray, bits: int) -> np.ndarray:
    """Active flag per lane of `bits` bits (the flag of the lane's first byte)."""
    return pred[::max(bits // 8, 1)]


def _view(reg: np.ndarray, dt: DType) -> np.ndarray:
    return reg.view(dt.np)


def _store_lanes(reg_out: np.ndarray, values: np.ndarray, dt: DType, active: np.ndarray | None) -> None:
    vals = np.asarray(values).astype(dt.np)
    if active is not None:
        vals = np.where(active, vals, np.zeros((), dtype=dt.np)).astype(dt.np)
    reg_out[:] = np.ascontiguousarray(vals).view(np.uint8)


def _vop(st: VfState, ins: VOp) -> None:
    with np.errstate(all="ignore"):  # inactive lanes may hold any bit pattern (NaN, inf)
        _vop_lanes(st, ins)


def _vop_lanes(st: VfState, ins: VOp) -> None:
    kind, kernel = vf_ops()[ins.op]
    dt = as_dtype(ins.dtype)
    active = lane_flags(st.preg(ins.pred), dt.bits) if ins.pred else None
    if kind == "convert":
        _convert(st, ins, active)
        return
    lanes = VL * 8 // dt.bits
    if kind == "reduce":
        _reduce(st, ins, dt, kernel, active, lanes)
        return
    scalar = np.full(lanes, st.s[ins.scalar]).astype(dt.np) if ins.scalar else None
    if kind == "dup":
        res = scalar
    else:
        args = [_view(st.vreg(s).copy(), dt) for s in ins.srcs] + ([scalar] if scalar is not None else [])
        res = apply(kernel, *args)
    out = np.zeros(VL, dtype=np.uint8)
    _store_lanes(out, res, dt, active)
    st.v[ins.dst] = out


def _reduce(st: VfState, ins: VOp, dt: DType, kernel: str, active, lanes: int) -> None:
    """vcmax/vcmin/vcadd: the active lanes reduced into lane 0, every other lane 0 (isa.md §7.2 group reductions
    leave the rest zero). The hardware's order is UNKNOWN (isa.md §5); a pairwise tree over the lanes in index order,
    rounding in the lane type at each step, is inferred."""
    vals = _view(st.vreg(ins.srcs[0]).copy(), dt)
    x = vals if active is None else vals[active]
    while len(x) > 1:
        half = len(x) // 2
        paired = apply(kernel, x[:2 * half:2], x[1:2 * half:2])
        x = np.concatenate([np.asarray(paired).astype(dt.np), x[2 * half:]])
    res = np.zeros(lanes, dtype=dt.np)
    res[:len(x)] = x
    out = np.zeros(VL, dtype=np.uint8)
    _store_lanes(out, res, dt, None)
    st.v[ins.dst] = out


def _convert(st: VfState, ins: VOp, active) -> None:
    """vcvt/vtrc: the low source bits of each `lane_bits` lane are converted into the low bits of the lane."""
    src, to = as_dtype(ins.dtype), as_dtype(ins.attr("to"))
    lane = int(ins.attr("lane_bits"))
    lanes = _view(st.vreg(ins.srcs[0]), as_dtype(f"u{lane}"))
    codes = (lanes & ((1 << src.bits) - 1) if src.bits < lane else lanes).astype(_UINT[max(src.bits, 8)])
    vals = codes.view(src.np)
    res = convert(vals, src, to, ins.attr("round", "none"), ins.attr("sat", "on") == "on")
    bits_out = np.ascontiguousarray(res).view(_UINT[max(to.bits, 8)]).astype(_UINT[lane])
    if to.bits == 4:
        bits_out &= 0xF
    out = np.zeros(VL, dtype=np.uint8)
    wide = as_dtype(f"u{lane}")
    _store_lanes(out, bits_out, wide, lane_flags(st.preg(ins.pred), lane) if ins.pred else None)
    st.v[ins.dst] = out


def _vcmp(st: VfState, ins: VCmp) -> None:
    _, kernel = vf_ops()[ins.op]
    dt = as_dtype(ins.dtype)
    a = _view(st.vreg(ins.srcs[0]), dt)
    b = np.full(a.shape, st.s[ins.scalar]).astype(dt.np) if ins.scalar else _view(st.vreg(ins.srcs[1]), dt)
    with np.errstate(invalid="ignore"):
        res = PREDICATES[kernel](a, b)
    if ins.pred:
        res &= lane_flags(st.preg(ins.pred), dt.bits)
    st.p[ins.dst] = np.repeat(res, dt.bits // 8)


def _vsel(st: VfState, ins: VSel) -> None:
    dt = as_dtype(ins.dtype)
    pick = lane_flags(st.preg(ins.sel), dt.bits)
    res = np.where(pick, _view(st.vreg(ins.on_true), dt), _view(st.vreg(ins.on_false), dt))
    out = np.zeros(VL, dtype=np.uint8)
    _store_lanes(out, res, dt, None)
    st.v[ins.dst] = out


def _vlds(st: VfState, ub: UnifiedBuffer, ins: Vlds) -> None:
    bit, _ = st.address(ins.addr)
    start = _byte(bit)
    d = distributions()[ins.dist]
    mode = d["mode"]
    if mode == "norm":
        reg = _read(ub, start, VL)
    elif mode == "block":
        reg = np.tile(_read(ub, start, 32), VL // 32)
    elif mode == "broadcast":
        size = int(d["elem_bits"]) // 8
        reg = np.tile(_read(ub, start, size), VL // size)
    else:
        e, lane = int(d["elem_bits"]), int(d["lane_bits"])
        n = VL * 8 // lane
        raw = _read(ub, start, n * e // 8)
        codes = unpack_nibbles(raw) if e == 4 else raw.view(_UINT[e])
        reg = codes.astype(_UINT[lane]).view(np.uint8)
    st.v[ins.dst] = np.array(reg, dtype=np.uint8)


def _vsts(st: VfState, ub: UnifiedBuffer, ins: Vsts) -> None:
    bit, _ = st.address(ins.addr)
    start = _byte(bit)
    d = distributions()[ins.dist]
    e, lane = int(d["elem_bits"]), int(d["lane_bits"])
    reg = st.vreg(ins.src)
    active = lane_flags(st.preg(ins.pred), lane)
    vals = reg.view(_UINT[lane])
    k = np.flatnonzero(active)
    if e == 4:
        for parity in (0, 1):  # two nibbles share a byte: update low and high halves in separate passes
            kk = k[k % 2 == parity]
            codes = (vals[kk] & 0xF).astype(np.uint8)
            addr = start + kk // 2
            cur = ub.bytes[addr]
            ub.bytes[addr] = ((cur & 0x0F) | (codes << 4)) if parity else ((cur & 0xF0) | codes)
        return
    size = e // 8
    out = vals[k].astype(_UINT[e]) if e < lane else vals[k]
    raw = np.ascontiguousarray(out).view(np.uint8).reshape(-1, size)
    idx = (start + k * size)[:, None] + np.arange(size)
    ub.bytes[idx] = raw


def _plds(st: VfState, ub: UnifiedBuffer, ins: Plds) -> None:
    bit, _ = st.address(ins.addr)
    lanes = VL * 8 // ins.bits
    raw = _read(ub, _byte(bit), -(-lanes // 8))
    flags = np.unpackbits(raw, bitorder="little")[:lanes].astype(bool)
    st.p[ins.dst] = np.repeat(flags, ins.bits // 8)


def _plt(st: VfState, ins: Plt) -> None:
    lanes = VL * 8 // ins.bits
    n = int(st.s[ins.counter])
    pred = np.zeros(VL, dtype=bool)
    pred[:min(max(n, 0), lanes) * ins.bits // 8] = True
    st.p[ins.dst] = pred
    # isa.md §7.2 gives n_out = n - lanes and leaves saturation at 0 UNKNOWN; a uint32 counter that wrapped would
    # enable every lane of the next plt, so a plan that reads a spent counter is right only if it saturates
    st.read_spent |= ins.counter in st.spent
    if n < lanes:
        st.spent.add(ins.counter)
    st.s[ins.counter] = max(n - lanes, 0)


def _plogic(st: VfState, ins: PLogic) -> None:
    srcs = [st.preg(s) for s in ins.srcs]
    st.p[ins.dst] = ~srcs[0] if ins.op == "pnot" else _PLOGIC[vf_ops()[ins.op][1]](*srcs)


def execute(body, st: VfState, ub: UnifiedBuffer) -> None:
    """Run an instruction tree on `ub` with state `st`."""
    for ins in body:
        if isinstance(ins, Loop):
            for i in range(ins.trip):
                st.env[ins.var] = i
                execute(ins.body, st, ub)
        elif isinstance(ins, Vlds):
            _vlds(st, ub, ins)
        elif isinstance(ins, Vsts):
            _vsts(st, ub, ins)
        elif isinstance(ins, VOp):
            _vop(st, ins)
        elif isinstance(ins, VCmp):
            _vcmp(st, ins)
        elif isinstance(ins, VSel):
            _vsel(st, ins)
        elif isinstance(ins, Plt):
            _plt(st, ins)
        elif isinstance(ins, Pset):
            st.p[ins.dst] = np.full(VL, ins.pattern == "PAT_ALL")
        elif isinstance(ins, Plds):
            _plds(st, ub, ins)
        elif isinstance(ins, PLogic):
            _plogic(st, ins)
        elif isinstance(ins, SetScalar):
            st.s[ins.dst] = ins.value
            st.spent.discard(ins.dst)
        elif isinstance(ins, SetPtr):
            st.a[ins.dst] = (st.bases[ins.buf] * 8 + ins.offset * ins.bits, ins.bits)
        elif isinstance(ins, PtrAdd):
            bit, bits = st.a[ins.ptr]
            st.a[ins.ptr] = (bit + ins.delta * bits, bits)
        else:
            raise TypeError(f"the A5 emulator cannot execute {type(ins).__name__}")


def run_on(plan: Plan, ub: UnifiedBuffer) -> bool:
    """Execute every VF program of the plan on `ub`; return whether a plt read a counter an earlier plt had taken
    below zero (the result then assumes the counter saturates at 0, isa.md §7.2 UNKNOWN)."""
    bases = {b.name: b.offset for b in plan.buffers}
    read_spent = False
    for prog in plan.body:
        if not isinstance(prog, VfProgram):
            raise TypeError(f"an A5 plan holds VF programs, not {type(prog).__name__}")
        st = VfState(bases)
        execute(prog.body, st, ub)
        read_spent |= st.read_spent
    return read_spent


def run(plan: Plan, inputs: dict[str, np.ndarray], seed: int = 0) -> tuple[UnifiedBuffer, UnifiedBuffer, bool]:
    """Return the (initial, final) UB images after running the plan with the given input tiles (UB 256 KiB), and
    whether the result assumes plt saturates a spent counter at 0 (`run_on`)."""
    ub = initial_image(plan, inputs, _C.ub_bytes, seed)
    before = UnifiedBuffer.__new__(UnifiedBuffer)
    before.bytes = ub.bytes.copy()
    return before, ub, run_on(plan, ub)
