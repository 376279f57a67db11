"""The A2/A3 vector-unit instructions a plan is made of (isa.md §7.1, costmodel.md §5).

Strides are in 32-byte blocks; addresses are byte offsets inside a named buffer. In normal mask mode an
intrinsic walks `repeat` repeats of 8 datablocks; in counter mode it walks ceil(count / lanes) repeats and
ignores `repeat` (PTO passes 0).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass


@dataclass(frozen=True)
class Addr:
    """Operand address: buffer, byte offset, block stride and repeat stride (both in 32-byte blocks)."""

    buf: str
    offset: int = 0
    blk_stride: int = 1
    rep_stride: int = 8

    def text(self) -> str:
        off = f"+{self.offset}" if self.offset else ""
        return f"{self.buf}{off}"


@dataclass(frozen=True)
class VecOp:
    """One vector intrinsic call, e.g. `vmins(dst, src, s, repeat, dBlk, sBlk, dRep, sRep)`."""

    intrinsic: str
    dtype: str
    dst: Addr
    srcs: tuple[Addr, ...]
    repeat: int
    scalar: float | int | None = None
    dst_dtype: str | None = None
    mode: str = ""

    def listing(self) -> str:
        args = [self.dst.text(), *(s.text() for s in self.srcs)]
        if self.scalar is not None:
            args.append(f"s={self.scalar!r}")
        strides = f"blk=({self.dst.blk_stride}{''.join(',' + str(s.blk_stride) for s in self.srcs)})"
        reps = f"rep=({self.dst.rep_stride}{''.join(',' + str(s.rep_stride) for s in self.srcs)})"
        dt = self.dtype if not self.dst_dtype else f"{self.dtype}->{self.dst_dtype}"
        mode = f" mode={self.mode}" if self.mode else ""
        return f"  {self.intrinsic:<12} {dt:<8} repeat={self.repeat:<3} {', '.join(args)}  {strides} {reps}{mode}"


@dataclass(frozen=True)
class SetMaskMode:
    """`set_mask_count()` (mode 'count') or `set_mask_norm()` (mode 'norm')."""

    mode: str

    def listing(self) -> str:
        return f"  set_mask_{'count' if self.mode == 'count' else 'norm'}"


@dataclass(frozen=True)
class SetVectorMask:
    """`set_vector_mask(hi, lo)`: a 128-lane mask in normal mode, or the element count `lo` in counter mode."""

    hi: int
    lo: int

    def listing(self, counting: bool = False) -> str:
        """The call as listed: the count in decimal under counter mode, else the two mask halves in hex."""
        if counting:
            return f"  set_vector_mask(0, {self.lo})"
        return f"  set_vector_mask(0x{self.hi:016x}, 0x{self.lo:016x})"


@dataclass(frozen=True)
class PipeBarrier:
    """`pipe_barrier(PIPE_<pipe>)`: wait for all outstanding work of one pipe."""

    pipe: str = "V"

    def listing(self) -> str:
        return f"  pipe_barrier(PIPE_{self.pipe})"


@dataclass(frozen=True)
class CopyUB:
    """`copy_ubuf_to_ubuf`: `n_burst` bursts of `len_burst` 32-byte blocks, with gaps (blocks) after each burst."""

    dst: Addr
    src: Addr
    n_burst: int
    len_burst: int
    src_gap: int = 0
    dst_gap: int = 0

    @property
    def intrinsic(self) -> str:
        return "copy_ubuf_to_ubuf"

    def listing(self) -> str:
        return (f"  copy_ubuf_to_ubuf {self.dst.text()}, {self.src.text()}  nBurst={self.n_burst} "
                f"lenBurst={self.len_burst}blk srcGap={self.src_gap}blk dstGap={self.dst_gap}blk")


@dataclass(frozen=True)
class ScalarLoop:
    """An element-by-element loop on the scalar unit: dst[k] = kernel(src[k], scalar) for `count` elements per row."""

    kernel: str
    dtype: str
    dst: Addr
    srcs: tuple[Addr, ...]
    rows: int
    count: int
    row_stride_bytes: tuple[int, ...]
    scalar: float | int | None = None
    reverse: bool = False

    @property
    def intrinsic(self) -> str:
        return "scalar_loop"

    def listing(self) -> str:
        return (f"  scalar_loop  {self.kernel} {self.dtype} rows={self.rows} count={self.count} "
                f"{self.dst.text()}, {', '.join(s.text() for s in self.srcs)} s={self.scalar!r}")


FULL_MASK = ((1 << 64) - 1, (1 << 64) - 1)  # SetFullVecMaskByDType restores (-1, -1) (isa.md §7.1)


def continuous_mask(n: int) -> tuple[int, int]:
    """Return (hi, lo) enabling the first `n` lanes (SetContinuousMask, isa.md §7.1)."""
    lo = (1 << 64) - 1 if n >= 64 else (1 << n) - 1
    hi = ((1 << (n - 64)) - 1) if n > 64 else 0
    if n >= 128:
        hi = (1 << 64) - 1
    return hi, lo


@dataclass(frozen=True)
class CopyGmToUb:
    """`copy_gm_to_ubuf_align`: `n_burst` bursts of `len_burst` bytes from GM into UB (costmodel.md §4).

    GM bursts are `len_burst + src_gap` bytes apart. Each UB burst starts on a 32-byte block and occupies
    ceil(len_burst / 32) blocks, followed by `dst_gap` blocks. With `pad_value` set, the bytes from the end of
    the burst to its block boundary (`right_pad` elements) are written with the pad value (inferred).
    """

    dtype: str
    dst: Addr
    src: Addr
    n_burst: int
    len_burst: int
    src_gap: int = 0
    dst_gap: int = 0
    right_pad: int = 0
    pad_value: float | int | None = None

    @property
    def intrinsic(self) -> str:
        return "copy_gm_to_ubuf_align"

    def listing(self) -> str:
        pad = f" rightPad={self.right_pad}el padVal={self.pad_value!r}" if self.pad_value is not None else ""
        return (f"  copy_gm_to_ubuf_align {self.dtype:<5} {self.dst.text()}, {self.src.text()}  nBurst={self.n_burst} "
                f"lenBurst={self.len_burst}B srcGap={self.src_gap}B dstGap={self.dst_gap}blk{pad}")


@dataclass(frozen=True)
class CopyUbToGm:
    """`copy_ubuf_to_gm_align`: `n_burst` bursts of `len_burst` bytes from UB (block-aligned) into GM.

    UB bursts start ceil(len_burst / 32) + `src_gap` blocks apart; GM bursts `len_burst + dst_gap` bytes apart.
    """

    dtype: str
    dst: Addr
    src: Addr
    n_burst: int
    len_burst: int
    src_gap: int = 0
    dst_gap: int = 0

    @property
    def intrinsic(self) -> str:
        return "copy_ubuf_to_gm_align"

    def listing(self) -> str:
        return (f"  copy_ubuf_to_gm_align {self.dtype:<5} {self.dst.text()}, {self.src.text()}  nBurst={self.n_burst} "
                f"lenBurst={self.len_burst}B srcGap={self.src_gap}blk dstGap={self.dst_gap}B")


@dataclass(frozen=True)
class SetSaturation:
    """Write CTRL bit 59: float->int and narrowing conversions clamp (`on`) or keep the low bits (`off`) (isa.md §7.1)."""

    on: bool

    def listing(self) -> str:
        return f"  set_ctrl(sat={'on' if self.on else 'off'})"


@dataclass(frozen=True)
class ScalarMove:
    """An element-by-element copy on the scalar unit between two tile layouts: dst(r, c) = src(r, c) for the
    `rows` x `cols` region, each operand addressed through its tile layout (isa.md §1.1 GetTileOffset)."""

    dtype: str
    dst: Addr
    src: Addr
    rows: int
    cols: int
    dst_layout: str
    src_layout: str
    dst_shape: tuple[int, int]
    src_shape: tuple[int, int]

    @property
    def intrinsic(self) -> str:
        return "scalar_move"

    @property
    def blocks(self) -> int:
        """32-byte blocks of the moved region."""
        from .dtypes import dtype as as_dtype

        return -(-self.rows * self.cols * as_dtype(self.dtype).bits // 256)

    def listing(self) -> str:
        return (f"  {self.intrinsic:<12} {self.dtype} rows={self.rows} cols={self.cols} {self.dst.text()} ({self.dst_layout}), "
                f"{self.src.text()} ({self.src_layout})")


@dataclass(frozen=True)
class TransposeMove(ScalarMove):
    """The same element move done on the vector unit with `scatter_vnchwconv` block transposes (costmodel.md §5 names
    the intrinsic; using it for layout-changing TMOV is inferred from the measured TMOV cycles, which are equal for
    every layout pair, reference measured/a2a3_cycles.csv)."""

    @property
    def intrinsic(self) -> str:
        return "scatter_vnchwconv"


@functools.cache
def intrinsic_table() -> dict[str, tuple[str, str]]:
    """Return intrinsic -> (kind, kernel) from data/a2a3_intrinsics.csv."""
    from ._data import read_rows

    return {r["intrinsic"]: (r["kind"], r["kernel"]) for r in read_rows("a2a3_intrinsics.csv")}
