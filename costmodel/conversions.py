"""TCVT request parameters for every arch, and the A2/A3 conversion table (data/a2a3_convert.csv).

Round modes are named as in isa.md §4.4 (`none rint round floor ceil trunc odd`); the intrinsic suffix
letters are r/a/f/c/z/o (isa.md §7.1) and `CAST_*` spellings are accepted. `none` stands for the NPU default:
`r` for float targets and `z` for float -> integer (isa.md §4.4, stated for A2/A3; assumed on A5, inferred).
The default saturation per pair is the table's: OFF for f16>u8 f16>i8 f32>i16 f16>i16 i64>i32 i32>i16 and ON
otherwise (isa.md §4.4, A2/A3; assumed the same on A5, inferred). The table also gives each A2/A3 pair its
intrinsic, accepted modes and saturation-OFF path.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ._data import read_rows
from .dtypes import dtype as as_dtype
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


def pairs() -> list[tuple[str, str]]:
    """Return the (src, dst) pairs the A2/A3 table models."""
    return list(_table())


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
    if key.lstrip("+-").replace(".", "", 1).isdigit():
        # the enum numbers ON=0, OFF=1 (isa.md §4.4) read the other way round from a 0/1 flag
        raise ParamError(f"saturation mode {value!r} is ambiguous (SaturationMode::ON is 0, OFF 1, where a flag's 0 "
                         "means off); accepted: on, off")
    if key in TRUE | FALSE:  # the spellings of flags.py
        return key in TRUE
    raise ParamError(f"unknown saturation mode {value!r}; accepted: on, off")


def default_round_mode(src: str, dst: str) -> str:
    """Return what CAST_NONE means for src -> dst: `trunc` (a C cast) for float -> integer, `rint` otherwise."""
    return "trunc" if as_dtype(dst).is_integer and not as_dtype(src).is_integer else "rint"


def default_saturation(src: str, dst: str) -> bool:
    """Return the pair's saturation when none is given: True (ON, clamp) or False (OFF, keep the low bits)."""
    row = _table().get((src, dst))
    return True if row is None else row.default_sat


def effective_round_mode(src: str, dst: str, round_mode) -> str:
    """Return the canonical round mode a conversion applies (`none` -> the pair's default)."""
    mode = round_mode_name(round_mode)
    return default_round_mode(src, dst) if mode == "none" else mode


def effective_modes(src: str, dst: str, round_mode, saturation) -> tuple[str, bool]:
    """Return (round mode, saturate) of a TCVT on any arch, the isa.md §4.4 defaults filled in."""
    sat = saturation_flag(saturation)
    return effective_round_mode(src, dst, round_mode), default_saturation(src, dst) if sat is None else sat


def resolve(src: str, dst: str, round_mode, saturation) -> tuple[Conversion, str, bool]:
    """Return (table row, effective round mode, saturate) of an A2/A3 request, checking the mode against the
    pair's row: a pair without modes converts with the default (nearest or exact)."""
    conv = conversion(src, dst)
    mode = round_mode_name(round_mode)
    if mode != "none" and conv.modes and mode not in conv.modes:
        raise ParamError(f"round mode {mode} is not available for A2/A3 TCVT {src}->{dst}; accepted: none, "
                         + ", ".join(conv.modes))
    if mode not in ("none", "rint") and not conv.modes and conv.rounds:
        raise ParamError(f"A2/A3 TCVT {src}->{dst} rounds to nearest only (the reference names no round modes for "
                         f"it); accepted: none, rint")
    mode, sat = effective_modes(src, dst, mode if conv.modes else "none", saturation)
    return conv, mode, sat


def exact(src: str, dst: str) -> bool:
    """Whether every `src` value is a `dst` value, so no round mode can change a result: integer -> integer (a
    narrowing one wraps or saturates but rounds nothing), or a float or integer source whose range and precision the
    float `dst` holds (f16 -> f32, i8 -> f16); False for a type without a numpy form (hif8, fp4 e1m2) and for a
    float to itself (f32 -> f32 rounds to an integral value, isa.md §4.4)."""
    import ml_dtypes

    s, d = as_dtype(src), as_dtype(dst)
    if s.is_integer and d.is_integer:
        return True
    if d.is_integer or s.name == d.name or not (s.emulatable and d.emulatable):  # f32 -> f32 rounds to an integer
        return False
    to = ml_dtypes.finfo(d.np)
    if s.is_integer:
        magnitude = s.bits - (1 if np.dtype(s.np).kind == "i" else 0)
        return magnitude <= to.nmant + 1
    fro = ml_dtypes.finfo(s.np)
    return (to.nmant >= fro.nmant and to.maxexp >= fro.maxexp
            and to.minexp - to.nmant <= fro.minexp - fro.nmant)


def mode_notes(arch: str, src: str, dst: str, round_mode, saturation) -> tuple[str, ...]:
    """Return what a TCVT request's round and saturation modes leave unknown: CAST_ODD's definition (isa.md §4.4),
    and on A5 that only round=rint with saturation on was measured (costmodel.md §3 step 6)."""
    mode, sat = effective_modes(src, dst, round_mode, saturation)
    notes = []
    if mode == "odd" and not exact(src, dst):
        notes.append("round=odd as the CPU reference defines CAST_ODD: nearest, exact ties to the odd neighbour; "
                     "whether the hardware rounds to odd with a sticky bit is UNKNOWN (isa.md §4.4), so a value that "
                     "is no tie may differ in its last bit")
    # CAST_NONE shares the RINT curve upstream (costmodel.md §3 step 6)
    asked = [f"round={mode}"] if round_mode_name(round_mode) not in ("none", "rint") and not exact(src, dst) else []
    asked += ["saturation off"] if not sat else []
    if arch == "a5" and asked:
        notes.append(f"the measured A5 TCVT rows all convert with round=rint and saturation on (costmodel.md §3 "
                     f"step 6): this {' and '.join(asked)} program issues the same vcvt with its mode and is priced "
                     "alike (inferred)")
    return tuple(notes)
