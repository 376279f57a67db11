"""PadValue (isa.md §1.4): names, and the value a tile is padded with per element type (data/pad_values.csv)."""
from __future__ import annotations

import functools

import numpy as np

from ._data import read_rows
from .dtypes import DType
from .errors import ParamError

PAD_NAMES = ("null", "zero", "max", "min")


def pad_name(value) -> str:
    """Return the canonical pad name for `Max`, `PadValue::Max`, `max`, ... (None -> 'null')."""
    key = "null" if value in (None, "") else str(value).split("::")[-1].strip().lower()
    if key not in PAD_NAMES:
        raise ParamError(f"unknown pad value {value!r}; accepted: {', '.join(PAD_NAMES)} (PadValue::Null/Zero/Max/Min)")
    return key


@functools.cache
def _bits() -> dict[str, tuple[int, int]]:
    return {r["dtype"]: (int(r["max"], 16), int(r["min"], 16)) for r in read_rows("pad_values.csv")}


def pad_value(name: str, dt: DType):
    """Return the pad element for `name` as a numpy scalar of `dt` (Null and Zero pad with 0)."""
    name = pad_name(name)
    if name in ("null", "zero"):
        return np.zeros((), dtype=dt.np)[()]
    if dt.name not in _bits():
        raise ParamError(f"PadValue {name} has no bit pattern for {dt} (isa.md §1.4)")
    bits = _bits()[dt.name][0 if name == "max" else 1]
    raw = np.array([bits], dtype=f"u{dt.bits // 8}")
    return raw.view(dt.np)[0]
