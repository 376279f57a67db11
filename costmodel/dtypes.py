"""Element types: the table in data/dtypes.csv (names, aliases, widths, numpy types)."""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ._data import read_rows
from .errors import UnsupportedDtypeError


@dataclass(frozen=True)
class DType:
    """One element type. `bits` is the storage width; `numpy` names the numpy/ml_dtypes type ('' if none)."""

    name: str
    aliases: tuple[str, ...]
    bits: int
    kind: str  # "float" | "int" | "uint"
    numpy_name: str
    note: str = ""

    @property
    def nbytes(self) -> float:
        """Bytes per element (0.5 for the 4-bit types)."""
        return self.bits / 8

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_integer(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def emulatable(self) -> bool:
        """Whether numpy can hold values of this type, so plans on it can be executed and verified (4-bit twin
        types too: the unified buffer image packs two per byte, isa.md §1.1)."""
        return bool(self.numpy_name)

    @property
    def np(self) -> np.dtype:
        """The numpy dtype (ml_dtypes for bf16/fp8/fp4); raises if the type has no numpy form."""
        return _numpy_dtype(self.numpy_name)

    def __str__(self) -> str:
        return self.name


@functools.cache
def _numpy_dtype(name: str) -> np.dtype:
    if not name:
        raise UnsupportedDtypeError("this element type has no numpy representation")
    if hasattr(np, name):
        return np.dtype(getattr(np, name))
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, name))


@functools.cache
def _table() -> tuple[dict[str, DType], dict[str, DType]]:
    by_name: dict[str, DType] = {}
    by_alias: dict[str, DType] = {}
    for row in read_rows("dtypes.csv"):
        dt = DType(
            name=row["name"],
            aliases=tuple(row["aliases"].split()),
            bits=int(row["bits"]),
            kind=row["kind"],
            numpy_name=row["numpy"],
            note=row["note"],
        )
        by_name[dt.name] = dt
        for key in (dt.name, *dt.aliases, *([dt.numpy_name] if dt.numpy_name else [])):  # float8_e4m3fn too
            by_alias.setdefault(key.lower(), dt)
    return by_name, by_alias


def all_dtypes() -> tuple[DType, ...]:
    """Return every known element type in table order."""
    return tuple(_table()[0].values())


def dtype(name: str | DType) -> DType:
    """Return the element type for a canonical name, an alias (`fp16`, `float32`, `half`, `int8`, ...), a numpy
    or ml_dtypes type name (`float8_e4m3fn`) or a numpy type (np.float16, np.dtype('int8'), ml_dtypes.bfloat16)."""
    if isinstance(name, DType):
        return name
    if isinstance(name, (type, np.dtype)):
        return from_numpy(name)
    found = _table()[1].get(str(name).strip().lower())
    if found is None:
        names = " ".join(d.name for d in all_dtypes())
        raise UnsupportedDtypeError(f"unknown dtype {name!r}; known dtypes: {names} (long forms like fp16, float32, int8 are accepted)")
    return found


def from_numpy(np_dtype) -> DType:
    """Return the element type whose numpy form is `np_dtype` (float32 -> f32, bfloat16 -> bf16, ...)."""
    want = np.dtype(np_dtype)
    for d in all_dtypes():
        if d.emulatable and d.np == want:
            return d
    known = " ".join(f"{d.np}" for d in all_dtypes() if d.emulatable)
    raise UnsupportedDtypeError(f"numpy type {want} is not an element type of this tool; accepted numpy types: {known}")
