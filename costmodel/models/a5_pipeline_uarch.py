"""The A5 VF pipeline's microarchitecture parameters: one frozen dataclass, read from data/a5_pipeline_params.csv.

The CSV is the output of `fit/pipeline_fit.py` (columns name, value, stderr, unit, source); parameters the fit
does not move are marked `fixed` there with the reference section they come from (costmodel.md §8, VfSim).
Every timing parameter is per *instruction class* (`vector_class`), never per op x shape. Times are cycles and
may be fractional: the engine schedules on a continuous time line, so a fitted initiation interval of 0.67
means three accesses per two cycles.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from .._data import per_file_version
from ..dtypes import dtype as as_dtype
from ..errors import PtoCostError

PARAMS_FILE = "a5_pipeline_params.csv"

# Vector instruction classes (costmodel.md §8: ALU / SFU functional units, VCVT by width; ours: by width ratio).
ALU_OPS = frozenset({"vadd", "vsub", "vmax", "vmin", "vand", "vor", "vxor", "vshl", "vshr", "vadds", "vmaxs",
                     "vmins", "vshls", "vshrs", "vabs", "vneg", "vrelu", "vnot", "vmov", "vdup", "vsel",
                     "vcmp_eq", "vcmp_ne", "vcmp_ge", "vcmp_gt", "vcmps_gt"})
MUL_OPS = frozenset({"vmul", "vmuls"})
SFU_OPS = frozenset({"vexp", "vln", "vsqrt", "vdiv"})
REDUCE_OPS = frozenset({"vcmax", "vcmin"})  # in-register reductions (costmodel.md §8 VCMAX/VCMIN)
SUM_OPS = frozenset({"vcadd"})  # (§8 VCADD: a longer latency)
CONVERT_OPS = frozenset({"vcvt", "vtrc"})
EXU0_ONLY = frozenset({"vdup", "vcmax", "vcmin", "vcadd"})  # costmodel.md §8 port sets
VECTOR_CLASSES = ("alu", "mul", "sfu32", "sfu16", "cvt1", "cvt_w2", "cvt_w4", "cvt_n2", "cvt_n4", "reduce",
                  "reduce16", "reduce_sum", "reduce_sum16")


@dataclass(frozen=True)
class A5Uarch:
    """Timing of the A5 vector-function pipeline (all times in cycles)."""

    # --- front end (in-order dispatch) ---
    startup: float = 23.0          # cycle of the first possible dispatch after the VF is launched (VfSim gate 21-23, §8)
    drain: float = 12.0            # cycles from the last instruction done to the end of the VF (vf_drain_cost, §8)
    dispatch_width: float = 4.0    # instructions dispatched per cycle, in program order (VfSim IDU: up to 5, §8)
    window: int = 24               # dispatched-but-not-issued instructions before dispatch stalls (VfSim IDU 6 + EXQ, §8)
    loop_entry: float = 5.0        # front-end bubble on entering a loop instance of >= 2 trips (1-trip loops are
    #                                flattened, §8 "canonicalize single-super-iteration loops")
    iter_gap: float = 1.0          # min cycles between starts of consecutive iterations of an innermost loop (§8)
    outer_gap: float = 1.0         # min cycles between starts of consecutive iterations of an outer loop (§8 uses 7)
    # --- memory pipes ---
    load_ports: int = 2            # vector load ports (§8)
    store_ports: int = 1           # vector store ports (§8)
    load_latency: float = 6.0      # vlds/plds issue -> data usable by a consumer (§8 VLDS -> compute forwarding 6)
    load_ii: float = 1.0           # cycles a load occupies its port
    store_latency: float = 9.0     # vsts issue -> done (§8 data_store_cost 9)
    store_ii: float = 1.0          # cycles a store occupies the store port
    ptr_latency: float = 1.0       # a POST_UPDATE access -> its advanced pointer usable (inferred)
    agu_ii: float = 0.67           # occupancy of the single address unit per explicit address that has a row term
    #                                (2D no-post-update); 1D and post-update addresses do not use it (inferred)
    agu_lead: float = 0.0          # how far (cycles) the address unit may run ahead of dispatch, from before the VF's
    #                                first dispatch on (inferred from measurement: 2D TSUB costs 2.07 cycles a chunk
    #                                at 400 chunks, yet 82 cycles at 20, so its address stream starts ~20 cycles early)
    pack_store_serial: float = 3.0  # a quarter-register packing store (<= 64 B, 4:1 narrowing TCVT) waits until the
    #                                 packing stores of earlier iterations are done, plus this (inferred)
    pack_store_pu_gap: float = 80.0  # how much longer such a store takes to complete in a POST_UPDATE loop of several
    #                                  chunks (partial-block hazard, inferred; measured 2D fp32->fp8 and bf16->fp4 are
    #                                  exactly 59 + 79 per chunk + 40 per row once rows hold several chunks)
    pack_store_row_gap: float = 0.0  # a row's first such store waits this much more after the row before (inferred)
    # --- scalar and predicate units (one port each) ---
    scalar_latency: float = 1.0    # smov/sadd result usable
    scalar_ii: float = 1.0
    pred_latency: float = 1.0      # plt/pset/pand result (and plt's post-updated counter) usable (§8 plt 2 = total)
    pred_ii: float = 1.0
    # --- vector classes on the two EXU ports (EXU0-only ops use port 0) ---
    exu_ports: int = 2             # issue ports EXU0, EXU1 (§8)
    alu_latency: float = 5.0       # simple ALU, compare, select, move, dup -> consumer (§8: 2-6)
    alu_ii: float = 1.0            # (§8 same-op II 1)
    mul_latency: float = 6.0       # vmul/vmuls (§8 VMUL latency 8, forwarding 4-6)
    mul_ii: float = 1.0
    sfu32_latency: float = 14.0    # exp/ln/sqrt/div on 32-bit lanes (§8 VEXP 16, VDIV 17; forwarding 13-15)
    sfu32_ii: float = 4.0          # (§8 VEXP/VDIV II 4 in fp32)
    sfu16_latency: float = 19.0    # the same on 16-bit lanes (§8 21/22; forwarding 18-20)
    sfu16_ii: float = 8.0          # (§8 II 8 in fp16)
    cvt1_latency: float = 7.0      # vcvt/vtrc between equal widths (§8 VCVT f32<->s32 8)
    cvt1_ii: float = 1.0
    cvt_w2_latency: float = 7.0    # vcvt widening 2x (f16/bf16 -> f32; §8 VCVT f16<->f32 7)
    cvt_w2_ii: float = 1.0
    cvt_w4_latency: float = 7.0    # vcvt widening 4x (fp8/hif8 -> f32, fp4 -> bf16)
    cvt_w4_ii: float = 1.0
    cvt_n2_latency: float = 7.0    # vcvt narrowing 2x (f32 -> f16/bf16, f16 -> hif8)
    cvt_n2_ii: float = 1.0
    cvt_n4_latency: float = 7.0    # vcvt narrowing 4x (f32 -> fp8/hif8, bf16 -> fp4)
    cvt_n4_ii: float = 1.0
    reduce_latency: float = 16.0   # vcmax/vcmin, one register -> lane 0 (§8 VCMAX/VCMIN 16 fp32, 17 fp16; not measured)
    reduce_ii: float = 1.0         # (§8 lists no same-op II for them: missing II entries default to 1)
    reduce16_latency: float = 17.0    # the same on 16- and 8-bit lanes (§8: 17 in fp16)
    reduce16_ii: float = 1.0
    reduce_sum_latency: float = 22.0  # vcadd (§8 VCADD 22 fp32, 24 fp16; not measured)
    reduce_sum_ii: float = 1.0
    reduce_sum16_latency: float = 24.0
    reduce_sum16_ii: float = 1.0

    def vector(self, cls: str) -> tuple[float, float]:
        """Return (latency, initiation interval) of a vector class."""
        return getattr(self, f"{cls}_latency"), getattr(self, f"{cls}_ii")

    def with_values(self, values: dict[str, float]) -> "A5Uarch":
        """Return a copy with some fields replaced (integer fields are rounded)."""
        ints = {f.name for f in fields(self) if f.type in ("int", int)}
        return replace(self, **{k: (int(round(v)) if k in ints else float(v)) for k, v in values.items()})


PARAM_NAMES = tuple(f.name for f in fields(A5Uarch))
# parameters added after parameter files were written by earlier fits, none fitted: a file without them takes the
# defaults above
LATER_PARAMS = tuple(f"{c}_{t}" for c in ("reduce", "reduce16", "reduce_sum", "reduce_sum16") for t in ("latency", "ii"))


def vector_class(op: str, dtype: str, attrs: dict | None = None) -> str:
    """Return the parameter class of a vector op (`vexp` on f16 -> `sfu16`, a 4:1 narrowing vcvt -> `cvt_n4`)."""
    if op in SFU_OPS:
        return "sfu32" if as_dtype(dtype).bits >= 32 else "sfu16"
    if op in MUL_OPS:
        return "mul"
    if op in REDUCE_OPS or op in SUM_OPS:  # §8 gives fp32 and fp16 latencies: 8-bit lanes take the 16-bit ones
        return ("reduce" if op in REDUCE_OPS else "reduce_sum") + ("" if as_dtype(dtype).bits >= 32 else "16")
    if op in CONVERT_OPS:
        src = as_dtype(dtype).bits
        to = (attrs or {}).get("to")
        dst = as_dtype(to).bits if to else src
        if src == dst:
            return "cvt1"
        ratio = 4 if max(src, dst) >= 4 * min(src, dst) else 2
        return f"cvt_{'w' if dst > src else 'n'}{ratio}"
    return "alu"


def read_params(path=None) -> tuple[A5Uarch, dict[str, dict[str, str]]]:
    """Return (uarch, rows by name) from a parameter CSV (the shipped one by default)."""
    import csv

    from .._data import data_path

    p = data_path(PARAMS_FILE) if path is None else path
    try:
        with open(p, newline="", encoding="utf-8") as fh:
            rows = [r for r in csv.DictReader(line for line in fh if not line.startswith("#"))]
    except FileNotFoundError:
        raise PtoCostError(f"A5 pipeline parameters {p} not found; run `pto-cost fit --model pipeline`") from None
    if not rows or not {"name", "value"} <= set(rows[0]):
        raise PtoCostError(f"{p}: not an A5 pipeline parameter table (needs name and value columns, one row per "
                           "parameter, as `pto-cost fit --model pipeline` writes)")
    by_name = {r["name"]: r for r in rows}
    unknown = sorted(set(by_name) - set(PARAM_NAMES))
    if unknown:
        raise PtoCostError(f"{p}: unknown A5 pipeline parameter(s) {', '.join(unknown)}")
    missing = [n for n in PARAM_NAMES if n not in by_name and n not in LATER_PARAMS]
    if missing:
        raise PtoCostError(f"{p}: A5 pipeline parameter(s) missing: {', '.join(missing)}")
    try:
        values = {k: float(r["value"]) for k, r in by_name.items()}
    except (TypeError, ValueError):
        raise PtoCostError(f"{p}: a parameter value is not a number") from None
    bad = [k for k, v in values.items() if not math.isfinite(v)]
    if bad:
        raise PtoCostError(f"{p}: parameter value(s) of {', '.join(bad)} not finite numbers")
    return A5Uarch().with_values(values), by_name


def path_in_use() -> str:
    """Return the path of the pipeline parameters in use: $PTO_COST_PIPELINE_PARAMS when set (a user's own fit), else
    the shipped data/a5_pipeline_params.csv."""
    import os

    from .._data import data_path

    return os.environ.get("PTO_COST_PIPELINE_PARAMS") or str(data_path(PARAMS_FILE))


def shipped() -> A5Uarch:
    """Return the pipeline parameters in use (`path_in_use`), read again when the file changes."""
    return _load(path_in_use())


def _fit_summary(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return next((line[1:].strip() for line in fh if line.startswith("# trace=")), "")
    except OSError:
        return ""


# what the fit that wrote a parameter file says of itself (its `# trace=... n_obs=...` header line), or ''
fit_summary = per_file_version(_fit_summary)
_load = per_file_version(lambda path: read_params(path)[0])
