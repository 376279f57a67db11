"""The instruction catalogue (data/catalog.csv): family, pipe, per-arch dtype support, kernel, test domain."""
from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass

from ._data import read_rows
from .arch import ARCHES, check_arch
from .errors import UnknownOpError, UnsupportedDtypeError
from .dtypes import DType


# the elementwise families and the source tiles each reads, in operand order (`dst_in`: the destination's own values
# before the op, in dst's buffer): one table for the request builder, the golden, the lowerings of both arches and
# the closed-form sweep
ELEMENTWISE_SOURCES = {"unary": ("src",), "binary": ("src0", "src1"), "binary_scalar": ("src",),
                       "ternary": ("dst_in", "src0", "src1"), "tile_scalar_tile": ("src0", "src1"),
                       "fused_scalar": ("dst_in", "src0"), "scalar_broadcast": ()}
ELEMENTWISE = tuple(ELEMENTWISE_SOURCES)
READS_DST = tuple(f for f, names in ELEMENTWISE_SOURCES.items() if "dst_in" in names)  # always in place
COMPARES = ("TCMP", "TCMPS")  # the compare_select ops that write a packed mask tile as their dst (isa.md §4.5)
SCALAR_FAMILIES = ("binary_scalar", "tile_scalar_tile", "fused_scalar",  # elementwise families taking a scalar
                   "scalar_broadcast")


@dataclass(frozen=True)
class Instruction:
    """One catalogue row. `dtypes[arch]` holds dtype names, or `src>dst` pairs for conversions."""

    name: str
    family: str
    pipe: str
    dtypes: tuple[tuple[str, tuple[str, ...]], ...]
    kernel: str
    domain: str
    eps: float
    scalar: str
    summary: str
    constraints: str

    def dtypes_on(self, arch: str) -> tuple[str, ...]:
        """Return the dtype tokens accepted on `arch` (empty: not available there)."""
        return dict(self.dtypes).get(check_arch(arch), ())

    def destinations(self, arch: str, src: str) -> tuple[str, ...]:
        """Return the destination dtypes a `src>dst` token pair of `arch` accepts for `src` (empty: none listed)."""
        return tuple(t.partition(">")[2] for t in self.dtypes_on(arch) if t.partition(">")[0] == src and ">" in t)

    def check_dtype(self, arch: str, dt: DType, dst: DType | None = None) -> None:
        """Raise UnsupportedDtypeError unless the instruction accepts `dt` (-> `dst`) on `arch`."""
        toks = self.dtypes_on(arch)
        if not toks:
            other = [a for a in ARCHES if self.dtypes_on(a)]
            where = (f"; it is available on {', '.join(other)}" if other else
                     "; the reference lists no element types for it on any arch (e.g. a CPU-simulator-only op)")
            raise UnsupportedDtypeError(f"{self.name} is not available on {arch}{where}")
        plain = {t for t in toks if ">" not in t}
        pairs = [t for t in toks if ">" in t]
        if dst is None or dst == dt:
            if dt.name in plain or "any" in plain or f"{dt.name}>{dt.name}" in pairs:
                return
            if pairs and not plain and dt.name not in {t.partition(">")[0] for t in pairs}:
                sources = " ".join(dict.fromkeys(t.partition(">")[0] for t in pairs))
                raise UnsupportedDtypeError(f"{self.name} does not support {dt.name} on {arch}; accepted: {sources}")
            if pairs and not plain and dst is None:  # worded as operands_convert words it
                raise UnsupportedDtypeError(f"{self.name} needs a destination dtype (--dst-dtype); "
                                            f"{self.conversion_targets(arch, dt)}")
            if not (pairs and not plain):
                raise UnsupportedDtypeError(f"{self.name} does not support {dt.name} on {arch}; accepted: "
                                            f"{self._marked(arch, toks)}")
        if not pairs:
            whose = "--dtype" if ELEMENTWISE_SOURCES.get(self.family) == () else "its source's type"
            raise UnsupportedDtypeError(f"{self.name} is modelled with dst of {whose}: it takes no "
                                        f"--dst-dtype (got {dt.name} to {dst.name}); accepted dtypes on {arch}: "
                                        f"{self._marked(arch, toks)}")
        if f"{dt.name}>{dst.name}" not in pairs:
            raise UnsupportedDtypeError(f"{self.name} does not convert {dt.name} to {dst.name} (--dst-dtype); "
                                        f"{self.conversion_targets(arch, dt)}")

    def _marked(self, arch: str, toks) -> str:
        """The listed dtypes `toks`, those the op has no plan for on `arch` marked (not modelled)."""
        from .api import modelled_dtypes  # plans each dtype once: a path of errors only

        ok = set(modelled_dtypes(self.name, arch))
        return " ".join(t if t in ok or ">" in t else f"{t} (not modelled)" for t in toks)

    def conversion_targets(self, arch: str, src: DType) -> str:
        """What `src` converts to on `arch` (those without a model marked), or, for a type that is no source there,
        every listed pair."""
        from .api import modelled_dtypes  # plans each pair once: a path of errors only

        ok = set(modelled_dtypes(self.name, arch))
        dsts = self.destinations(arch, src.name)
        if not dsts:
            pairs = [t if t in ok else f"{t} (not modelled)" for t in self.dtypes_on(arch) if ">" in t]
            return f"accepted pairs on {arch}: {' '.join(pairs)}"
        shown = [d if f"{src.name}>{d}" in ok else f"{d} (not modelled)" for d in dsts]
        return f"{src.name} converts to {' '.join(shown)} on {arch}"

@functools.cache
def _instructions() -> dict[str, Instruction]:
    out: dict[str, Instruction] = {}
    for row in read_rows("catalog.csv"):
        eps = row.get("eps", "").strip()
        inst = Instruction(
            name=row["name"],
            family=row["family"],
            pipe=row["pipe"],
            dtypes=tuple((a, tuple(row.get(f"{a}_dtypes", "").split())) for a in ARCHES),
            kernel=row.get("kernel", "").strip(),
            domain=row.get("domain", "").strip(),
            eps=float(eps) if eps else 0.0,
            scalar=row.get("scalar", "").strip(),
            summary=row.get("summary", ""),
            constraints=row.get("constraints", ""),
        )
        out[inst.name.upper()] = inst
    return out


def instructions() -> tuple[Instruction, ...]:
    """Return every catalogue instruction in file order."""
    return tuple(_instructions().values())


def instruction(name: str) -> Instruction:
    """Return the catalogue row for `name` (case-insensitive), or raise naming close matches."""
    table = _instructions()
    found = table.get(str(name).strip().upper())
    if found is None:
        close = difflib.get_close_matches(str(name).upper(), list(table), n=3)
        hint = f"; did you mean {', '.join(table[c].name for c in close)}?" if close else ""
        raise UnknownOpError(f"unknown op {name!r}{hint} (`pto-cost ops` lists all {len(table)} instructions)")
    return found


def families() -> tuple[str, ...]:
    """Return the distinct family keys in catalogue order."""
    return tuple(dict.fromkeys(i.family for i in instructions()))
