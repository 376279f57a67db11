"""A2/A3 formula model: cycles of a plan as a sum of per-intrinsic and control costs (costmodel.md §5).

The plan is first reduced to *features* — counts that the cost is linear in — then priced from the parameter
table. Per segment of vector calls between barriers the first call pays its class's `head` and the last its
`tail`; every call pays `per_repeat` × the repeats it walks (counter-mode calls are charged ceil(count/lanes),
the repeats the hardware really walks, where upstream charged 0); binary ALU calls under counter mode or a
partial mask pay `count_floor`; mask/mode/CTRL writes, barriers, UB copies, GM transfers and scalar loops have
their own terms. Because the cost is linear in the parameters, `fit/` can regress them from measured traces.
"""
from __future__ import annotations

import functools
import math
from collections import defaultdict

from ..catalog import READS_DST
from ..dtypes import dtype as as_dtype
from ..flags import truthy
from ..isa_a2a3 import (FULL_MASK, Addr, CopyGmToUb, CopyUB, CopyUbToGm, PipeBarrier, ScalarLoop, ScalarMove, SetMaskMode,
                        SetSaturation, SetVectorMask, TransposeMove, VecOp, intrinsic_table)
from ..plan import Plan
from . import provenance
from .params import ParamRow, ParamTable, shipped

BINARY_ALU = {"vadd", "vsub", "vmul", "vdiv", "vmax", "vmin", "vand", "vor"}
EXTENT_TERM = "max_repeats"  # a class row's measured extent: the most repeats one measured plan walked of it
TERMS = ("startup", "repeats", "count_floor", "mask_mode", "barrier", "copy", "transfer", "scalar")

# feature kind -> (breakdown term, parameter scope, parameter term)
KINDS = {
    "head": ("startup", "intrinsic", "head"),
    "tail": ("startup", "intrinsic", "tail"),
    "rep": ("repeats", "intrinsic", "per_repeat"),
    "xfer_call": ("transfer", "intrinsic", "per_call"),
    "xfer_byte": ("transfer", "intrinsic", "per_byte"),
    "count_floor": ("count_floor", "control", "count_floor"),
    "set_mask": ("mask_mode", "control", "set_mask"),
    "set_mode": ("mask_mode", "control", "set_mode"),
    "set_ctrl": ("mask_mode", "control", "set_ctrl"),
    "barrier": ("barrier", "control", "barrier"),
    "copy_call": ("copy", "control", "copy_head"),
    "copy_block": ("copy", "control", "copy_per_block"),
    "scalar_elem": ("scalar", "control", "scalar_per_element"),
    "scalar_read": ("scalar", "control", "scalar_read"),
}


# costmodel.md §5: vcmpv_ge and vcmpv_ne have their own stub row (14/2/22); the other compares (vcmpv eq/gt/le/lt,
# vcmpvs_*) are in the default class
_COMPARE_CLASS = {"vcmpv_ge": "vcmpv", "vcmpv_ne": "vcmpv"}


def cost_class(intrinsic: str) -> str:
    """Map an intrinsic name to its parameter class (`vconv_f322f16r` -> `vconv`, `vcmpv_ne` -> `vcmpv`,
    `vcmpv_lt` and `vcmpvs_eq` -> `default`)."""
    if intrinsic.startswith("vconv"):
        return "vconv"
    if intrinsic.startswith("vcmpv"):
        return _COMPARE_CLASS.get(intrinsic, "default")
    return intrinsic


def feature_key(kind: str, cls: str = "", dtype: str = "") -> str:
    """Return the feature name `kind[:class:dtype]`."""
    return f"{kind}:{cls}:{dtype}" if cls else kind


def split_key(key: str) -> tuple[str, str, str]:
    """Return (kind, class, dtype) of a feature name (class and dtype empty for control features)."""
    parts = key.split(":")
    return (parts[0], parts[1], parts[2]) if len(parts) == 3 else (parts[0], "", "")


def plan_features(plan: Plan) -> dict[str, float]:
    """Return the plan's cost features: counts (calls, walked repeats, control writes, bytes) the cost is linear in."""
    f: dict[str, float] = defaultdict(float)
    mode, mask = "norm", FULL_MASK
    last: tuple[str, str] | None = None
    for ins in plan.body:
        if isinstance(ins, VecOp):
            cls = cost_class(ins.intrinsic)
            dt = as_dtype(ins.dtype)
            bits = max(dt.bits, as_dtype(ins.dst_dtype).bits if ins.dst_dtype else 0)
            reps = math.ceil(mask[1] / (2048 // bits)) if mode == "count" else ins.repeat
            if last is None:
                f[feature_key("head", cls, dt.name)] += 1
            f[feature_key("rep", cls, dt.name)] += reps
            last = (cls, dt.name)
            if cls in BINARY_ALU and (mode == "count" or mask != FULL_MASK):
                f["count_floor"] += 1
            if isinstance(ins.scalar, Addr):  # the scalar operand is read from UB by the scalar unit first
                f["scalar_read"] += 1
        elif isinstance(ins, SetMaskMode):
            mode = ins.mode
            f["set_mode"] += 1
        elif isinstance(ins, SetVectorMask):
            mask = (ins.hi, ins.lo)
            f["set_mask"] += 1
        elif isinstance(ins, SetSaturation):
            f["set_ctrl"] += 1
        elif isinstance(ins, PipeBarrier):
            f["barrier"] += 1
            if last is not None:
                f[feature_key("tail", *last)] += 1
            last = None
        elif isinstance(ins, CopyUB):
            f["copy_call"] += 1
            f["copy_block"] += ins.n_burst * ins.len_burst
        elif isinstance(ins, (CopyGmToUb, CopyUbToGm)):
            f[feature_key("xfer_call", ins.intrinsic, ins.dtype)] += 1
            f[feature_key("xfer_byte", ins.intrinsic, ins.dtype)] += ins.n_burst * ins.len_burst
        elif isinstance(ins, ScalarLoop):
            f["scalar_elem"] += ins.rows * ins.count
        elif isinstance(ins, TransposeMove):  # priced like a UB copy of the same blocks (see lower/a2a3/tmov.py)
            f["copy_call"] += 1
            f["copy_block"] += ins.blocks
        elif isinstance(ins, ScalarMove):
            f["scalar_elem"] += ins.rows * ins.cols
    if last is not None:
        f[feature_key("tail", *last)] += 1
    return dict(f)


def param_value(table: ParamTable, key: str) -> float:
    """Return the parameter priced by feature `key`.

    A (class, dtype) row wins; otherwise the class row plus the dtype's shared adjustment (`dtype_delta` rows,
    fitted when several classes show the same dtype effect); the `default` class covers unknown intrinsics.
    """
    return sum(r.value for r in param_rows(table, key))


def param_rows(table: ParamTable, key: str) -> tuple[ParamRow, ...]:
    """Return the rows whose values sum to the parameter of feature `key` (`param_value`)."""
    kind, cls, dt = split_key(key)
    _, scope, term = KINDS[kind]
    if scope == "control":
        row = table.lookup("a2a3", "intrinsic", "control", "*", term)
        if row is None:
            raise table.missing(f"the a2a3 control term {term}")
        return (row,)
    for name in (cls, "default"):
        row = table.lookup("a2a3", "intrinsic", "intrinsic", name, term, dtype=dt)
        if row is None:
            continue
        if row.dtype == dt:
            return (row,)
        twin = same_width_row(table, name, term, dt)
        if twin is not None or name in _type_blind():  # bits only: no arithmetic dtype adjustment either
            return (twin or row,)
        delta = table.lookup("a2a3", "intrinsic", "dtype_delta", "*", term, dtype=dt)
        return (row, delta) if delta is not None and delta.dtype == dt else (row,)
    raise table.missing(f"the a2a3 {term} of intrinsic {cls} (nor a default class)")


@functools.cache
def _type_blind() -> frozenset[str]:
    """Intrinsics whose lanes carry bits only, whatever their type: copies, broadcasts and bitwise logic
    (data/a2a3_intrinsics.csv kernels copy, and, or, not)."""
    return frozenset(name for name, (_, kernel) in intrinsic_table().items() if kernel in ("copy", "and", "or", "not"))


def same_width_row(table: ParamTable, cls: str, term: str, dt: str) -> ParamRow | None:
    """Return the row of a type-blind intrinsic class (`_type_blind`) fitted from observations of another dtype of
    `dt`'s width, for a `dt` without a row of its own: such a class moves the same bits in either type (a u16
    vector_dup is an f16 one), which its measured twin prices better than the class's unmeasured family value; None
    otherwise."""
    if cls not in _type_blind():
        return None
    bits = as_dtype(dt).bits
    for other in measured_dtypes(table).get(cls, ()):
        row = table.lookup("a2a3", "intrinsic", "intrinsic", cls, term, dtype=other)
        if other != dt and as_dtype(other).bits == bits and row is not None and row.dtype == other and row.n_obs:
            return row
    return None


def rows_provenance(table: ParamTable, rows) -> dict:
    """Return the provenance of an estimate priced from `rows`: the table, each class (or control, or dtype
    adjustment) read with the observations its fit had (the fewest over its terms), and the fits that wrote them."""
    seen: dict[str, int] = {}
    for r in rows:
        label = " ".join(x for x in (r.name if r.scope == "intrinsic" else r.scope, r.dtype) if x and x != "*")
        seen[label] = min(seen.get(label, r.n_obs), r.n_obs)
    fits = sorted({r.source.split(";")[0] for r in rows})
    return provenance.table(table.path, rows=", ".join(f"{k} (n {n})" for k, n in sorted(seen.items())),
                            fitted_from="; ".join(fits))


class IntrinsicModel:
    """Prices an A2/A3 plan from a parameter table (the shipped one by default)."""

    name = "formula"
    provenance: dict = {}  # the last plan's parameter rows: table file, digest, fit (models/provenance.py)
    source_note = ""  # the last plan's unmeasured classes and typical error, for the estimate's notes
    group_note = ""  # its caveats alone (no typical error), for a sweep's rows

    def __init__(self, table: ParamTable | None = None):
        self.table = table

    def cost(self, plan: Plan) -> tuple[float, tuple[tuple[str, float], ...]]:
        """Return (cycles, breakdown) of the plan; the breakdown terms sum to the cycles."""
        table = self.table or shipped()
        terms = dict.fromkeys(TERMS, 0.0)
        used: list[ParamRow] = []
        unmeasured: set[tuple[str, str]] = set()  # (class, dtype) priced from a class row no observation fitted
        twins: set[tuple[str, str, str]] = set()  # (class, dtype, measured dtype of its width that priced it)
        features = plan_features(plan)
        for key, count in features.items():
            rows = param_rows(table, key)
            terms[KINDS[split_key(key)[0]][0]] += count * sum(r.value for r in rows)
            used += rows
            if rows[0].scope == "intrinsic" and not rows[0].n_obs:
                unmeasured.add(split_key(key)[1:])
            elif rows[0].scope == "intrinsic" and rows[0].dtype not in ("*", split_key(key)[2]):
                twins.add((*split_key(key)[1:], rows[0].dtype))
        self.provenance = {"formula": rows_provenance(table, used)}
        in_default = ()  # the intrinsics the default class priced, named only for the note that needs them
        if any(cls == "default" for cls, _ in unmeasured):
            in_default = tuple(sorted({i.intrinsic for i in plan.body
                                       if isinstance(i, VecOp) and cost_class(i.intrinsic) == "default"}))
        notes = [_unmeasured_note(cls, dt, measured_dtypes(table).get(cls, ()), in_default)
                 for cls, dt in sorted(unmeasured)]
        notes += [f"no measured {dt} row exercises {cls}: priced by its measured {other} row (the same width: its "
                  "lanes carry bits only)" for cls, dt, other in sorted(twins)]
        beyond = [(key, count, limit) for key, count in features.items()
                  if (limit := repeat_limit(table, key)) is not None and count > limit]
        # a sweep's note is the caveats alone: a class's typical error is no caveat (as an A5 key's, a5_formula.py),
        # nor a count of this plan's (a sweep's rows share the note)
        in_place = in_place_note(plan.request)
        self.group_note = "; ".join(x for x in (*notes, beyond_note(beyond, counts=False), in_place) if x)
        self.source_note = "; ".join(x for x in (*notes, beyond_note(beyond, counts=True), in_place,
                                                 typical_error(used)) if x)
        return sum(terms.values()), tuple((k, v) for k, v in terms.items() if v)


def repeat_limit(table: ParamTable, key: str) -> float | None:
    """Return the most repeats of a `rep` feature's class one measured plan walked, on the feature's dtype (or, where
    no row measured that, on any), as the fit recorded them (EXTENT_TERM); None for another feature or none
    recorded."""
    kind, cls, dt = split_key(key)
    row = table.lookup("a2a3", "intrinsic", "intrinsic", cls, EXTENT_TERM, dtype=dt) if kind == "rep" else None
    return None if row is None else row.value


def beyond_note(beyond: list[tuple[str, float, float]], counts: bool) -> str:
    """Return the caveat of a plan walking more repeats of a class than any measured row using it did (`beyond`:
    (feature, this plan's repeats, the most measured)), naming this plan's counts or not; "" for none."""
    parts = []
    for key, count, limit in beyond:
        _, cls, dt = split_key(key)
        walked = f"{count:g} {cls} {dt} repeats" if counts else f"its {cls} {dt} repeats"
        parts.append(f"{walked} lie beyond the measured rows that use {cls} (up to {limit:g} in one plan): the "
                     "per-repeat line is extrapolated")
    return "; ".join(parts)


def typical_error(rows) -> str:
    """Return the typical error of a price from the class rows that made it (the largest mean cross-validated error a
    measured class row the plan used records, fit/a2a3_fit.py), or "" where none records one."""
    measured = [r for r in rows if r.scope == "intrinsic" and r.n_obs and r.cv_mape is not None]
    if not measured:
        return ""
    worst = max(measured, key=lambda r: (r.cv_mape, r.name, r.dtype))
    what = f"{worst.name}{'' if worst.dtype == '*' else ' ' + worst.dtype}"
    if worst.n_obs == 1:  # as an A5 key's note on one row (a5_formula.py)
        return (f"typical error {worst.cv_mape:.1f} %, from the one measured row that uses {what}, predicted by a fit "
                "that did not see its tile shape (one row: a weak guide)")
    return (f"typical error {worst.cv_mape:.1f} %: the mean error on the {worst.n_obs} measured rows that use {what}, "
            "each predicted by a fit that did not see its tile shape")


def in_place_note(req) -> str:
    """Return the caveat of an A2/A3 in-place request's price (IN_PLACE_NOTE), or "" for one not in place or one that
    reads dst (only ever in place: there is no out-of-place plan to compare with)."""
    return IN_PLACE_NOTE if truthy(req.param("in_place", "")) and req.family not in READS_DST else ""


# measured (a2a3_cycles.csv, TSQRT 64x64): in place 198 against 160 cycles in f32, 102 against 160 in f16; the
# intrinsics issued are the same, and the two effects have opposite signs, so no per-intrinsic cost can carry them
IN_PLACE_NOTE = ("in place is priced like the out-of-place plan (the same intrinsics): the measured in-place TSQRT "
                 "64x64 differs from it by +24 % in f32 and -36 % in f16, which this model does not explain")


@functools.lru_cache(maxsize=4)
def measured_dtypes(table: ParamTable) -> dict[str, tuple[str, ...]]:
    """Return intrinsic class -> the dtypes of its rows fitted from observations in `table`."""
    out: dict[str, list[str]] = {}
    for r in table.rows:
        if r.arch == "a2a3" and r.scope == "intrinsic" and r.n_obs and r.dtype != "*":
            out.setdefault(r.name, []).append(r.dtype)
    return {k: tuple(dict.fromkeys(v)) for k, v in out.items()}


@functools.lru_cache(maxsize=1)
def _reference_classes() -> frozenset[str]:
    """The intrinsic classes costmodel.md §5 gives constants of their own (data/a2a3_priors.csv)."""
    from .._data import data_path
    from .params import read_table

    return frozenset(r.name for r in read_table(data_path("a2a3_priors.csv")).rows if r.scope == "intrinsic")


def _unmeasured_note(cls: str, dt: str, measured: tuple[str, ...], in_default: tuple[str, ...] = ()) -> str:
    if cls == "default":
        one = len(in_default) == 1
        named = f"{', '.join(in_default) or 'an intrinsic'} {'has' if one or not in_default else 'have'}"
        compares = ("; vcmpv_ne and vcmpv_ge, which have their own, cost more"
                    if any(i.startswith("vcmpv") for i in in_default) else "")
        return (f"{named} no stub row of {'its' if one or not in_default else 'their'} own in the reference: priced by "
                f"the reference's default-class constants (costmodel.md §5, data/a2a3_priors.csv{compares}), which no "
                "measured row exercises")
    elsewhere = f" {dt} row exercises {cls} (measured in {' '.join(measured)} only)" if measured else f" row exercises {cls}"
    how = ("its reference constants (costmodel.md §5), moved as the fit moved its cost family" if cls in _reference_classes()
           else "its cost family's fitted values")
    return f"no measured{elsewhere}: priced by {how}"
