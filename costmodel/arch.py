"""Per-architecture constants, read from data/arch.csv (each row cites the reference section it comes from)."""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ._data import read_rows
from .errors import ParamError

ARCHES = ("a2a3", "a5")


@dataclass(frozen=True)
class ArchConstants:
    """The constants of one arch as a read-only mapping key -> int."""

    arch: str
    values: tuple[tuple[str, int], ...]

    def __getattr__(self, key: str) -> int:
        for k, v in object.__getattribute__(self, "values"):
            if k == key:
                return v
        raise AttributeError(f"arch {self.arch} has no constant {key!r}")


def check_arch(arch: str) -> str:
    """Return the canonical arch key, or raise naming the accepted ones."""
    key = str(arch).strip().lower().replace("/", "")
    if key not in ARCHES:
        raise ParamError(f"unknown arch {arch!r}; accepted: {', '.join(ARCHES)}")
    return key


@functools.cache
def constants(arch: str) -> ArchConstants:
    """Return the constants of an arch (`a2a3` or `a5`)."""
    arch = check_arch(arch)
    vals = tuple((r["key"], int(r["value"])) for r in read_rows("arch.csv") if r["arch"] == arch)
    return ArchConstants(arch, vals)
