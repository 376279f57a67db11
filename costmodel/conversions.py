"""The A2/A3 conversion table (data/a2a3_convert.csv): intrinsic, round modes, default saturation, OFF path.

Round modes are named as in isa.md §4.4 (`none rint round floor ceil trunc odd`); the intrinsic suffix
letters are r/a/f/c/z/o (isa.md §7.1).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ._data import read_rows
from .errors import NotModelledError, ParamError
from .flags import FALSE, TRUE

ROUND_MODES = ("none", "rint", "round", "floor", "ceil", "trunc", "odd")
LETTER = {"rint": "r", "round": "a", "floor": "f", "ceil": "c", "trunc": "z", "odd": "o"}
_ALIASES = {**{v: k for k, v in LETTER.items()}, **{f"cast_{m}": m for m in ROUND_MODES}, **{m: m for m in ROUND_MODES}}


_NOT_MODELLED = {("i32", "f16"): "a dequantising conversion that needs a deq scale (catalogue constraint)",
                 ("f16", "i4"): "a conversion to packed 4-bit elements", ("i4", "f16"): "a conversion from packed 4-bit elements"}


@dataclass(frozen=True)
class Conversion:
    """One vconv pair: `modes` are the accepted round modes (empty: only the default), `via` the integer
    types the saturation-OFF path passes through, `rounds` whether a round mode can change the result."""

    src: str
    dst: str
    intrinsic: str
    modes: tuple[str, ...]
    rounds: bool
    default_sat: bool
    via: tuple[str, ...]
    source: str

    def intrinsic_for(self, mode: str) -> str:
        """Return the intrinsic name with the round-mode suffix (none for exact or mode-less pairs)."""
        return self.intrinsic + (LETTER[mode] if self.modes else "")


@functools.cache
def _table() -> dict[tuple[str, str], Conversion]:
    out = {}
    for r in read_rows("a2a3_convert.csv"):
        modes = tuple(_ALIASES[m] for m in r["modes"].split())
        out[(r["src"], r["dst"])] = Conversion(r["src"], r["dst"], r["intrinsic"], modes, r["rounds"] == "yes",
                                               r["default_sat"] == "on", tuple(r["via"].split()), r["source"])
    return out


def modelled(src: str, dst: str) -> bool:
    """Whether the table has a conversion model for src -> dst."""
    return (src, dst) in _table()


def conversion(src: str, dst: str) -> Conversion:
    """Return the table row for src -> dst, or raise NotModelledError naming the modelled pairs."""
    found = _table().get((src, dst))
    if found is None and (src, dst) in _NOT_MODELLED:
        raise NotModelledError(f"TCVT {src}->{dst} on A2/A3 is {_NOT_MODELLED[(src, dst)]}; it is not modelled")
    if found is None:
        pairs = " ".join(f"{a}>{b}" for a, b in _table())
        raise NotModelledError(f"TCVT {src}->{dst} has no A2/A3 conversion model; modelled pairs: {pairs}")
    return found


def round_mode_name(value) -> str:
    """Return the canonical round-mode name for `rint`, `r`, `CAST_RINT`, ... (None -> 'none')."""
    key = "none" if value in (None, "") else str(value).strip().lower()
    if key not in _ALIASES:
        raise ParamError(f"unknown round mode {value!r}; accepted: {', '.join(ROUND_MODES)} (or r/a/f/c/z/o, CAST_*)")
    return _ALIASES[key]


def saturation_flag(value) -> bool | None:
    """Return True (ON, clamp), False (OFF, wrap) or None (the pair's default) for on/off/sat_on/... text."""
    if value in (None, ""):
        return None
    if isinstance(value, bool):
        return value
    key = str(value).strip().lower().replace("saturationmode::", "").replace("sat_", "")
    if key in TRUE | FALSE:
        return key in TRUE
    raise ParamError(f"unknown saturation mode {value!r}; accepted: on, off")


def resolve(src: str, dst: str, round_mode, saturation) -> tuple[Conversion, str, bool]:
    """Return (table row, effective round mode, saturate) for a request, applying the isa.md §4.4 defaults:
    `rint` for float targets and `trunc` for integer targets when the mode is `none`; the pair's saturation."""
    conv = conversion(src, dst)
    mode = round_mode_name(round_mode)
    if mode != "none" and conv.modes and mode not in conv.modes:
        raise ParamError(f"round mode {mode} is not available for A2/A3 TCVT {src}->{dst}; accepted: none, "
                         + ", ".join(conv.modes))
    if mode not in ("none", "rint") and not conv.modes and conv.rounds:
        raise ParamError(f"A2/A3 TCVT {src}->{dst} rounds to nearest only (the reference names no round modes for "
                         f"it); accepted: none, rint")
    if mode == "none" or not conv.modes:
        mode = "trunc" if dst[0] in "iu" and src[0] not in "iu" else "rint"
    sat = saturation_flag(saturation)
    return conv, mode, conv.default_sat if sat is None else sat
