"""A byte image of the on-chip unified buffer with typed element access at byte addresses."""
from __future__ import annotations

import numpy as np

from ..dtypes import DType
from ..layouts import BOXED, element_offsets
from ..plan import Plan
from ..tiles import Tile


class UnifiedBuffer:
    """A mutable byte array; `read`/`write` move typed elements at arbitrary (element-aligned) byte addresses."""

    def __init__(self, nbytes: int, rng: np.random.Generator):
        self.bytes = rng.integers(0, 256, size=nbytes, dtype=np.uint8)

    def read(self, addrs: np.ndarray, dt: DType) -> np.ndarray:
        """Return the elements of type `dt` at byte addresses `addrs` (any shape)."""
        size = dt.bits // 8
        idx = np.asarray(addrs, dtype=np.int64)[..., None] + np.arange(size)
        return self.bytes[idx].reshape(-1).view(dt.np).reshape(np.shape(addrs))

    def write(self, addrs: np.ndarray, values: np.ndarray, dt: DType) -> None:
        """Store `values` (converted to `dt`) at byte addresses `addrs`; later duplicates win."""
        size = dt.bits // 8
        raw = np.ascontiguousarray(np.asarray(values).astype(dt.np)).reshape(-1).view(np.uint8).reshape(-1, size)
        idx = np.asarray(addrs, dtype=np.int64).reshape(-1, 1) + np.arange(size)
        self.bytes[idx] = raw

    def load_tile(self, offset: int, tile: Tile, data: np.ndarray) -> None:
        """Place a whole tile (static shape, including padding) at `offset` in its layout."""
        if tile.layout in BOXED:
            self.write(offset + _boxed_offsets(tile) * (tile.dtype.bits // 8), np.asarray(data), tile.dtype)
            return
        order = "C" if tile.layout == "row_major" else "F"
        raw = np.asarray(data, dtype=tile.dtype.np).reshape(-1, order=order).view(np.uint8)
        if tile.dtype.bits == 4:
            raw = pack_nibbles(raw)
        self.bytes[offset:offset + raw.size] = raw

    def tile(self, offset: int, tile: Tile) -> np.ndarray:
        """Return a copy of a whole tile (static shape) read from `offset`."""
        if tile.layout in BOXED:
            return self.read(offset + _boxed_offsets(tile) * (tile.dtype.bits // 8), tile.dtype).copy()
        order = "C" if tile.layout == "row_major" else "F"
        raw = self.bytes[offset:offset + tile.nbytes].copy()
        if tile.dtype.bits == 4:
            raw = unpack_nibbles(raw)
        return raw.view(tile.dtype.np).reshape((tile.rows, tile.cols), order=order)


def pack_nibbles(codes: np.ndarray) -> np.ndarray:
    """Twin 4-bit types (isa.md §1.1): element k is the low nibble (k even) or high nibble (k odd) of byte k//2."""
    codes = np.asarray(codes, dtype=np.uint8) & 0xF
    if codes.size % 2:
        codes = np.append(codes, np.uint8(0))
    return (codes[0::2] | (codes[1::2] << 4)).astype(np.uint8)


def unpack_nibbles(raw: np.ndarray) -> np.ndarray:
    """Inverse of `pack_nibbles`: one uint8 code per element (low nibble first)."""
    raw = np.asarray(raw, dtype=np.uint8)
    return np.stack([raw & 0xF, raw >> 4], axis=-1).reshape(-1)


def _boxed_offsets(tile: Tile) -> np.ndarray:
    """Element offsets of a boxed tile (whole-byte types only: layouts.alignment_problem rejects 4-bit boxes)."""
    return element_offsets(tile.layout, tile.rows, tile.cols, tile.dtype.bits // 8)


def initial_image(plan: Plan, inputs: dict[str, np.ndarray], nbytes: int, seed: int) -> UnifiedBuffer:
    """Return a UB filled with random bytes, with every named input tile written at its buffer address."""
    ub = UnifiedBuffer(nbytes, np.random.default_rng(seed))
    for buf in plan.buffers:
        if buf.name in inputs:
            ub.load_tile(buf.offset, buf.tile, inputs[buf.name])
    return ub
