"""Vectorised sweeps: closed forms == plan path, the pipeline path's batched simulation, the sweep contract."""
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from costmodel import api, estimate, lower
from costmodel.api import catalog
from costmodel.dtypes import dtype
from costmodel.errors import PtoCostError

# the closed form and the plan path run the same float operations (numpy's pow on arrays in both: on a scalar it may
# round one bit apart)
SAME_VALUES = {"check_exact": True}
from costmodel.models.a2a3_intrinsic import IntrinsicModel
from costmodel.models.a5_anchored import AnchoredPipeline
from costmodel.models.a5_formula import A5FormulaModel
from costmodel.models.a5_pipeline import PipelineModel
from costmodel.conversions import pairs as a2a3_pairs
from costmodel.lower.a5.table import convert_rows
from costmodel.operands import make_request
from costmodel.sweep import Models, request_kwargs, sweep
from costmodel.vector import VECTOR_FAMILIES, Shapes, closed_form


def test_cycles_for_keeps_the_trips_of_non_shape_loops():
    # TRECIP high_precision has a `steps` loop (the mantissa iterations) inside the chunk loop; cycles_for varies
    # only the rows and chunks loops, so each point must cost what the plan of that shape costs
    prog = api.plan("TRECIP", (4, 192), "f32", "a5", valid=(4, 130), precision="high_precision").body[0]
    shapes = [(3, 130), (5, 64), (30, 190)]
    got = PipelineModel().cycles_for(prog, inner=[math.ceil(vc / 64) for _, vc in shapes],
                                     outer=[vr for vr, _ in shapes])
    for (vr, vc), value in zip(shapes, got):
        plan = api.plan("TRECIP", (vr, 192), "f32", "a5", valid=(vr, vc), precision="high_precision")
        assert value == PipelineModel().cost(plan)[0]


@pytest.mark.parametrize("op, dtype, strategy", [("TADD", "f32", "2d-no-post-update"), ("TMINS", "f16", "2d-post-update")])
def test_cycles_for_rows_from_one_prefix_simulation_equal_the_plans(op, dtype, strategy):
    # every row count 1..30 of one chunk count: rows 2..24 come out of one simulation of 24 rows (in-order
    # dispatch), 1 and the extrapolated 25..30 from their own; each must equal the plan of that shape
    cols, vc = 256, 200
    kind = "VFIMPL_" + strategy.upper().replace("-", "_")
    prog = api.plan(op, (4, cols), dtype, "a5", valid=(4, vc), vf_impl_kind=kind).body[0]
    epr = 2048 // int(dtype[1:])
    rows = np.arange(1, 31)
    model = PipelineModel()
    if strategy == "2d-post-update":
        got = model.cycles_for(prog, inner=np.full(rows.size, vc // epr), outer=rows)
    else:
        got = model.cycles_for(prog, inner=np.full(rows.size, math.ceil(vc / epr)), outer=rows)
    for r, value in zip(rows.tolist(), got):
        plan = api.plan(op, (r, cols), dtype, "a5", valid=(r, vc), vf_impl_kind=kind)
        assert plan.strategy == strategy
        assert value == PipelineModel().cost(plan)[0], r


# ---------------------------------------------------------------------------------------------------------------
# closed forms == the plan path (hypothesis)


BITS = {"f16": 16, "bf16": 16, "f32": 32, "i8": 8, "u8": 8, "i16": 16, "u16": 16, "i32": 32, "u32": 32, "i64": 64,
        "u64": 64, "fp8_e4m3": 8, "fp8_e5m2": 8, "hif8": 8, "fp4_e1m2": 4, "fp4_e2m1": 4}
UB = {"a2a3": 196608, "a5": 262144}


def _ops(arch):
    c = catalog()
    rows = c[c["family"].isin(VECTOR_FAMILIES)]
    # TAXPY lists src0>dst pairs: the ones of one dtype are requests of that dtype; f16 into f32 is not modelled
    return [(r["name"], d.partition(">")[0]) for r in rows.to_dict("records") for d in r[f"{arch}_dtypes"].split()
            if d.partition(">")[0] == (d.partition(">")[2] or d)]


def _a5_fitted():
    """The A5 ops the shipped table has formula parameters for (per key or per family)."""
    from costmodel.models.params import shipped

    return {r.name.split(":")[0] for r in shipped().rows if r.arch == "a5" and r.scope in ("op", "family")}


OPS = {arch: _ops(arch) for arch in ("a2a3", "a5")}
A5_FITTED = [(op, d) for op, d in OPS["a5"] if op in _a5_fitted()]
# priced by the anchored pipeline under `auto`: no formula parameters of their own nor of a sibling body
A5_UNMEASURED = [(op, d) for op, d in OPS["a5"] if op in ("TRSQRT", "TDIV")]
A5_CONVERSIONS = sorted(convert_rows())  # (source, destination) pairs A5 lowers
A5_SELECTS = [(op, d) for op in ("TSEL", "TSELS") for d in catalog().set_index("name").loc[op, "a5_dtypes"].split()]
A2A3_CONVERSIONS = sorted(a2a3_pairs())  # (source, destination) pairs A2/A3 lowers
A2A3_SELECTS = ([(op, d) for op in ("TSEL", "TSELS") for d in catalog().set_index("name").loc[op, "a2a3_dtypes"].split()]
                + [(op, d) for op in ("TCMP", "TCMPS") for d in ("f32", "f16", "i32")])  # the modelled compares
PAIRS = {"a2a3": A2A3_CONVERSIONS, "a5": A5_CONVERSIONS}


@st.composite
def groups(draw, arch, max_rows=300, max_shapes=6, ops=None):
    """One sweep group (op, dtype, parameters) and a handful of shapes, some beyond the UB or malformed."""
    op, dtype = draw(st.sampled_from(ops or OPS[arch]))
    bits = BITS[dtype]
    params = {"static_valid": draw(st.booleans())}
    if op == "TCVT":
        params["dst_dtype"] = draw(st.sampled_from([d for s, d in PAIRS[arch] if s == dtype]))
        params["round_mode"] = draw(st.sampled_from(["none", "rint", "floor", "trunc"]))
        params["saturation"] = draw(st.sampled_from(["on", "off"]))
    if draw(st.integers(0, 3)) == 0:  # dst over the first source (A5: any op, alias_source permitting)
        params["in_place"] = True
    if op in ("TCMP", "TCMPS"):  # A2/A3 i32 compares only EQ (isa.md §3 row 22)
        params["cmp_mode"] = "eq" if dtype == "i32" else draw(st.sampled_from(["eq", "ne", "lt", "le", "gt", "ge"]))
    if op == "TRECIP" and arch == "a5" and dtype in ("f16", "f32"):
        params["precision"] = draw(st.sampled_from(["default", "high_precision"]))
    shapes = []
    unit = 256 // bits        # elements per 32-byte block
    epr = 2048 // bits        # elements per 256-byte repeat
    for _ in range(draw(st.integers(1, max_shapes))):
        # rows: few (the 2-level count rule), around the 255-repeat limit, or any
        rows = draw(st.one_of(st.integers(1, 8), st.sampled_from([254, 255, 256, 257]), st.integers(1, max_rows)))
        rows = min(rows, max_rows)
        # columns: whole 32-byte rows, mostly within about the UB for three tiles, sometimes far beyond it; around
        # multiples of a repeat and around a 255-block row stride
        cap = max(1, UB[arch] * 8 // (3 * rows * unit * bits))
        edges = [u for k in range(1, 5) for u in (8 * k - 1, 8 * k, 8 * k + 1)] + [255, 256]
        units = draw(st.one_of(st.integers(1, cap), st.sampled_from(edges), st.integers(1, 4 * cap)))
        cols = unit * units + draw(st.sampled_from([0] * 12 + [1]))  # a misaligned row now and then
        vr = draw(st.one_of(st.just(rows), st.integers(1, rows), st.just(1)))
        near = [v for k in range(1, 5) for v in (k * epr - 1, k * epr, k * epr + 1) if 1 <= v <= cols]
        vc = draw(st.one_of(st.just(cols), st.integers(1, cols), st.integers(1, min(cols, 300)),
                            st.sampled_from(near or [cols])))
        shapes.append((rows, cols, vr, vc))
    return arch, op, dtype, params, shapes


def _maker(arch, op, dtype, params):
    values = {"op": op, "dtype": dtype, "arch": arch, "dst_dtype": "", **params}
    return lambda r, c, vr, vc: make_request(**request_kwargs(values, r, c, vr, vc))


def _plan_path(req, model_cls):
    """Every legal strategy's (cycles, name of the model that priced it) on the plan path and the default, or the
    error that rejects the request."""
    try:
        default = lower.resolve_strategy(req)[0]
        out = {}
        for s in lower.legal_strategies(req):
            m = model_cls()
            out[s] = (m.cost(lower.lower(req.with_strategy(s)))[0], m.name)
        return out, default
    except PtoCostError as exc:
        return str(exc)


def _check_group(group, model: str, model_cls, deferred=lambda shape, bits: False):
    """Check the closed form of a group against the plan path; `deferred(shape, bits)` names rows the closed form may
    leave to the per-request path although the plan path prices them. Returns the number of rows it covered."""
    arch, op, dtype, params, shapes = group
    make = _maker(arch, op, dtype, params)
    sh = Shapes(*(np.array(col, dtype=np.int64) for col in zip(*shapes)))
    block = closed_form(make, sh, Models(model))
    expected = [_plan_path_or_none(make, s, model_cls) for s in shapes]
    if block is None:  # a group without closed form: only the documented kinds
        assert all(isinstance(e, str) for e in expected) or _documented_fallback(make), group
        return 0
    covered = 0
    errors = {} if block.errors is None else dict(zip(block.errors.rows.tolist(),
                                                      (block.errors.messages[c] for c in block.errors.code)))
    for i, (shape, exp) in enumerate(zip(shapes, expected)):
        if i in errors:  # rejected with the message the plan path gives
            assert not block.fallback[i] and errors[i] == exp, (shape, errors[i], exp)
            continue
        if block.fallback[i]:
            assert isinstance(exp, str) or deferred(shape, BITS[dtype]), (
                f"{op} {dtype} {arch} {shape} can be costed but the closed form does not cover it")
            continue
        assert not isinstance(exp, str), f"{op} {dtype} {arch} {shape}: the plan path rejects it ({exp}), the closed form costs it"
        table, default = exp
        names = block.strategies
        d = int(block.default[i])
        legal = [names[d]] + [s for j, s in enumerate(names) if block.legal[j, i] and j != d]
        assert names[d] == default and tuple(legal) == tuple(table), (shape, legal, table)
        for s, (cycles, name) in table.items():
            assert block.cycles[names.index(s), i] == cycles, (
                op, dtype, arch, shape, s)
            assert block.models[names.index(s)] == name, (op, dtype, shape, s)
        covered += 1
    return covered


def _plan_path_or_none(make, shape, model_cls):
    try:
        req = make(*shape)
    except PtoCostError as exc:
        return str(exc)
    return _plan_path(req, model_cls)


def _documented_fallback(make) -> bool:
    """A2/A3 scalar loops, `@hook` sequences and TCMPS NE (a NOT over mask words) have no closed form
    (costmodel/vector/a2a3.py)."""
    from costmodel.lower.a2a3.table import alternatives, lowering_row

    try:
        req = make(2, 256, 2, 256)
    except PtoCostError:
        return True
    if req.arch != "a2a3":
        return False
    if req.op == "TCMPS" and req.param("cmp_mode") == "ne":
        return True
    rows = [lowering_row(req), *alternatives(req).values()]
    return any(r.rule == "scalar_loop" or r.hook for r in rows)


def _edge_shapes(bits: int, static_valid: bool) -> list[tuple[int, int, int, int]]:
    """Shapes on the edges of the mode rules: 1-4 rows (the small-count test), 256 rows (> 255 repeats), columns
    around one and two repeats and a 256-block row stride; valid cols around one repeat and the full row."""
    unit, epr = 256 // bits, 2048 // bits
    out = []
    for rows in (1, 2, 3, 4, 256):
        for units in (1, 8, 9, 16, 17, 256):
            cols = unit * units
            for vr in sorted({1, rows}):
                for vc in sorted({v for v in (epr - 1, epr, epr + 1, cols) if 1 <= v <= cols}):
                    out.append((rows, cols, vr, vc))
    return out


@pytest.mark.parametrize("arch, op, dtype", [("a2a3", "TADD", "f32"), ("a2a3", "TMINS", "f16"), ("a2a3", "TEXP", "f32"),
                                             ("a2a3", "TXOR", "i8"), ("a2a3", "TEXPANDS", "f16"), ("a5", "TADD", "f16"),
                                             ("a5", "TEXP", "f32")])
@pytest.mark.parametrize("static_valid", [False, True])
def test_closed_form_on_the_edges_of_the_mode_rules(arch, op, dtype, static_valid):
    model = ("formula", IntrinsicModel) if arch == "a2a3" else ("formula", A5FormulaModel)
    shapes = _edge_shapes(BITS[dtype], static_valid)
    assert _check_group((arch, op, dtype, {"static_valid": static_valid}, shapes), *model) > len(shapes) // 4


@pytest.mark.parametrize("op, dtype, params", [
    ("TCVT", "f16", {"dst_dtype": "f32"}),
    ("TCVT", "f32", {"dst_dtype": "i16", "saturation": "off"}),  # two vconv steps through an s32 tmp, CTRL writes
    ("TCVT", "f16", {"dst_dtype": "i8", "saturation": "off"}),   # three steps of two EPRs
    ("TSEL", "f16", {}), ("TSEL", "f32", {}), ("TSELS", "u16", {}), ("TCMP", "f32", {"cmp_mode": "ge"}),
    ("TCMP", "i32", {}), ("TCMPS", "f16", {"cmp_mode": "lt"})])
@pytest.mark.parametrize("static_valid", [False, True])
def test_a2a3_conversions_and_select_in_closed_form_on_the_edges(op, dtype, params, static_valid):
    shapes = _edge_shapes(BITS[dtype], static_valid)
    group = ("a2a3", op, dtype, {"static_valid": static_valid, **params}, shapes)
    assert _check_group(group, "formula", IntrinsicModel) > len(shapes) // 4


CONVERSION_OPS = sorted({("TCVT", s) for s, _ in A5_CONVERSIONS})
A2A3_CONVERSION_OPS = sorted({("TCVT", s) for s, _ in A2A3_CONVERSIONS})


@given(st.one_of(groups("a2a3"), groups("a2a3", ops=A2A3_CONVERSION_OPS), groups("a2a3", ops=A2A3_SELECTS)))
def test_a2a3_closed_form_equals_the_plan_path(group):
    _check_group(group, "formula", IntrinsicModel)


@given(st.one_of(groups("a5", ops=A5_FITTED), groups("a5"), groups("a5", ops=CONVERSION_OPS),
                 groups("a5", ops=A5_SELECTS)))
def test_a5_formula_closed_form_equals_the_plan_path(group):
    _check_group(group, "formula", A5FormulaModel)


@given(st.one_of(groups("a5", max_rows=40, max_shapes=3), groups("a5", ops=CONVERSION_OPS, max_rows=40, max_shapes=3),
                 groups("a5", ops=A5_SELECTS, max_rows=40, max_shapes=3)))
def test_a5_pipeline_cycles_for_equals_the_plan_path(group):
    _check_group(group, "pipeline", PipelineModel)


@given(st.one_of(groups("a5", ops=A5_UNMEASURED, max_rows=40, max_shapes=3), groups("a5", max_rows=40, max_shapes=2),
                 groups("a5", ops=CONVERSION_OPS, max_rows=40, max_shapes=2),
                 groups("a5", ops=A5_SELECTS, max_rows=40, max_shapes=2)))
def test_a5_anchored_closed_form_equals_the_plan_path(group):
    # the pipeline plus the anchors' correction, each anchor (a measured op on the row's tiles) priced in closed
    # form; a row where an anchor would not fit the unified buffer goes to the per-request path, which leaves it out
    def three_tiles_overflow(shape, bits):  # a binary anchor's dst, src0 and src1
        return 3 * shape[0] * shape[1] * bits // 8 > UB["a5"]

    _check_group(group, "anchored", AnchoredPipeline, three_tiles_overflow)


@pytest.mark.parametrize("op, dtype, params, model", [
    ("TMULADDDST", "f32", {}, ("anchored", AnchoredPipeline)),      # reads dst: always in place
    ("TAXPY", "f16", {"scalar": "0.5"}, ("anchored", AnchoredPipeline)),
    ("TADD", "f16", {"in_place": True}, ("formula", A5FormulaModel)),
    ("TEXP", "f32", {"in_place": True}, ("formula", A5FormulaModel))])
def test_a5_in_place_groups_in_closed_form(op, dtype, params, model):
    # the source placed over dst takes no unified buffer of its own; a row that overflows all the same gets the
    # allocator's message, which suggests no --in-place; rows 256 x 256 f16 need 128 KiB a tile: three overflow
    # 256 KiB, two fit (the anchored plan path simulates each row: few rows for it)
    edges = [s for s in _edge_shapes(BITS[dtype], False) if model[0] != "anchored" or s[0] <= 2]
    shapes = edges + [(256, 256, 256, 256), (256, 512, 256, 512)]
    group = ("a5", op, dtype, {"static_valid": False, **params}, shapes)
    assert _check_group(group, *model, lambda shape, bits: 3 * shape[0] * shape[1] * bits // 8 > UB["a5"]) > 0
    make = _maker("a5", op, dtype, {"static_valid": False, **params})
    block = closed_form(make, Shapes(*(np.array([v]) for v in (256, 512, 256, 512))), Models(model[0]))
    (message,) = block.errors.messages
    assert "unified buffer" in message and "--in-place" not in message


def test_a5_scalar_broadcast_in_closed_form():
    # TEXPANDS reads no source: its program is a vdup and a store per chunk, its only buffer dst
    shapes = [s for s in _edge_shapes(32, False) if s[0] <= 2] + [(256, 256, 256, 256)]
    group = ("a5", "TEXPANDS", "f32", {"static_valid": False, "scalar": "3"}, shapes)
    assert _check_group(group, "pipeline", PipelineModel) == len(shapes)


@pytest.mark.parametrize("op", ["TADD", "TMINS", "TSEL"])
def test_a5_pipeline_every_2d_post_update_structure(op):
    # 2D post-update programs differ in loop structure: a full-chunk loop or not, a tail chunk or not (f32: 64
    # elements per chunk), with row-end pointer adjustments of any size, 0 included (a TSEL mask adjusts its own
    # pointer by 0 when its 32-byte padded rows hold exactly the chunks walked: 256 columns); one group holds them
    # all, rows 3 and 30
    shapes = [(r, c, r, vc) for r in (3, 30) for c, vc in ((64, 64), (128, 64), (64, 40), (128, 40), (128, 100),
                                                           (256, 100), (256, 256), (512, 256))]
    group = ("a5", op, "f32", {"static_valid": False, "vf_impl_kind": "VFIMPL_2D_POST_UPDATE"}, shapes)
    assert _check_group(group, "pipeline", PipelineModel) == len(shapes)


# ---------------------------------------------------------------------------------------------------------------
# the sweep contract: closed-form and per-request paths give the same frame


ASKS = ["default", "default", "all", "1LNorm", "1lnorm", "2LNormRowRpt", "2LNormColVLAlign", "1LNormSmall",
        "2d-post-update", "1D-POST-UPDATE", "ViaFloat", "HighPrecision", "no-such-strategy"]


@st.composite
def frames(draw):
    rows = []
    for _ in range(draw(st.integers(1, 4))):
        arch = draw(st.sampled_from(["a2a3", "a5"]))
        extra = A5_SELECTS + CONVERSION_OPS if arch == "a5" else A2A3_SELECTS + A2A3_CONVERSION_OPS
        op, dtype = draw(st.sampled_from(OPS[arch] + extra))
        dst = draw(st.sampled_from([d for s, d in PAIRS[arch] if s == dtype])) if op == "TCVT" else ""
        unit = 256 // min(BITS[dtype], BITS.get(dst, 64))  # whole 32-byte rows of every tile
        scalar = draw(st.sampled_from([np.nan, 2.0])) if op.endswith("S") else np.nan
        sv = draw(st.booleans())
        for _ in range(draw(st.integers(1, 5))):
            r = draw(st.integers(1, 70))
            c = unit * draw(st.integers(1, max(1, 512 // unit)))
            rows.append({"op": op, "dtype": dtype, "dst_dtype": dst, "arch": arch, "rows": r, "cols": c,
                         "valid_rows": draw(st.integers(1, r)), "valid_cols": draw(st.one_of(st.just(c), st.integers(1, c))),
                         "static_valid": sv, "scalar": scalar, "strategy": draw(st.sampled_from(ASKS))})
    return pd.DataFrame(rows)


@given(frames())
def test_sweep_closed_form_and_per_request_paths_give_the_same_frame(frame):
    fast = sweep(frame)
    slow = sweep(frame, vectorised=False)
    pd.testing.assert_frame_equal(fast, slow, **SAME_VALUES)
    # input rows stay in order; only `all` rows may turn into several
    single = frame["strategy"] != "all"
    kept = fast.drop_duplicates(subset=["op", "dtype", "arch", "rows", "cols", "valid_rows", "valid_cols"], keep="first")
    assert len(fast) >= len(frame) and fast["default"].sum() <= len(frame)
    if single.all():
        assert len(fast) == len(frame) and (fast["rows"].to_numpy() == frame["rows"].to_numpy()).all()
    assert len(kept) <= len(frame)


def test_groups_differing_in_the_scalar_only_are_priced_once(monkeypatch):
    """A grid over scalar values prices the closed form once per shape set, not once per value (an anchored op's
    anchors were simulated again for every value: about 1 k rows/s); a value the op refuses is still that row's
    error, and the frame is the per-request path's."""
    import costmodel.vector as vector

    frame = pd.DataFrame([{"op": op, "dtype": dt, "arch": arch, "rows": r, "cols": 64, "scalar": s}
                          for op, dt, arch in (("TADDS", "i16", "a2a3"), ("TADDS", "i16", "a5"),
                                               ("TAXPY", "f32", "a5"))
                          for s in (1, 100000, 2, 3) for r in (1, 2, 3)])
    calls = []
    real = vector.closed_form
    monkeypatch.setattr(vector, "closed_form", lambda *a: calls.append(1) or real(*a))
    fast = sweep(frame)
    pd.testing.assert_frame_equal(fast, sweep(frame, vectorised=False), **SAME_VALUES)
    refused = fast["scalar"].astype(str) == "100000"
    assert fast.loc[refused & (fast["dtype"] == "i16"), "note"].str.contains("does not fit i16").all()
    assert fast.loc[~refused | (fast["op"] == "TAXPY"), "cycles"].notna().all()
    # i16: the first value and the refused one; TAXPY f32 (100000 fits): its first value only
    assert len(calls) == 2 + 2 + 1
    # a value equal to a literal the program sets anyway shares its scalar register (one smov fewer): not shared
    frame = pd.DataFrame([{"op": op, "dtype": "f32", "arch": "a5", "rows": r, "cols": 64, "scalar": s}
                          for op, values in (("TLRELU", (0.5, 0, 2)), ("TDIVS", (2, 1, 3))) for s in values
                          for r in (1, 64)])
    for model in ("auto", "pipeline"):
        fast = sweep(frame, model=model)
        pd.testing.assert_frame_equal(fast, sweep(frame, model=model, vectorised=False), **SAME_VALUES)
        assert fast.loc[(fast["op"] == "TLRELU") & (fast["rows"] == 64), "cycles"].nunique() == 2


def test_the_floor_at_a_contained_anchor_is_priced_alike_on_both_paths():
    """TDIV f32 at 64x64 and 8x64 is floored at TRECIP's formula price, TSUBRELU f16 at 64x64 at TSUB f16's, priced by
    TSUB f32's rows, and TADDSC i16 (no anchor: the pipeline alone) at TADD i16's (models/a5_anchored): the closed
    form, the per-request path (its corrections remembered from the closed form, or not) and `estimate` give one
    price."""
    frame = pd.DataFrame([{"op": op, "dtype": dtype, "arch": "a5", "rows": r, "cols": 64, "strategy": "all"}
                          for op in ("TDIV", "TSUBRELU") for dtype in ("f32", "f16") for r in (64, 8, 3)]
                         # no op measured on i16 anchors TADDSC: the pipeline alone, floored at TADD i16 at 128 rows
                         + [{"op": "TADDSC", "dtype": "i16", "arch": "a5", "rows": r, "cols": 64, "strategy": "all",
                             "scalar": 1} for r in (128, 8)])
    fast = sweep(frame)
    pd.testing.assert_frame_equal(fast, sweep(frame, vectorised=False), **SAME_VALUES)
    floored = set()
    for row in fast.itertuples():
        e = estimate(row.op, (row.rows, 64), row.dtype, "a5", strategy=row.strategy, verify=False,
                     **({"scalar": 1} if row.op == "TADDSC" else {}))
        assert (e.model, e.cycles) == (row.model, row.cycles)
        if "measured_subset_floor" in dict(e.breakdown):
            floored.add((row.op, row.dtype, row.rows, row.model))
            assert "never below the formula price of" in row.note
    assert floored >= {("TDIV", "f32", 64, "anchored"), ("TDIV", "f32", 8, "anchored"),
                       ("TSUBRELU", "f16", 64, "anchored"), ("TADDSC", "i16", 128, "pipeline")}


def test_per_request_anchored_rows_take_their_anchor_corrections_from_the_closed_form(monkeypatch):
    """Ops without a closed form priced by the anchored pipeline (A5 expands): the anchors' corrections come from
    the elementwise closed form before the rows are lowered one by one — the same frame as without it, the anchors
    simulated per request only where the closed form could not price them (here: none)."""
    import costmodel.vector.a5  # noqa: F401  (bound to the real anchor_plans: only per-request look-ups are counted)
    from costmodel.models import a5_anchored

    frame = pd.DataFrame([{"op": op, "dtype": "f32", "arch": "a5", "rows": r, "cols": c, "valid_rows": vr,
                           "valid_cols": c, "strategy": "all"}
                          for op in ("TROWEXPAND", "TCOLEXPAND") for r, c, vr in
                          ((1, 256, 1), (8, 128, 8), (16, 320, 9), (64, 1024, 64), (120, 512, 120))])
    slow = sweep(frame, vectorised=False)
    calls = []
    real = a5_anchored.anchor_plans
    monkeypatch.setattr(a5_anchored, "anchor_plans", lambda *a: calls.append(a[0].op) or real(*a))
    fast = sweep(frame)
    pd.testing.assert_frame_equal(fast, slow, **SAME_VALUES)
    calls = [op for op in calls if op in ("TROWEXPAND", "TCOLEXPAND")]
    # 120x512: no anchor's three tiles fit the unified buffer, the pipeline alone; 64x1024: the op's neither
    assert (fast["model"] == "anchored").sum() == 16 and (fast["model"] == "pipeline").sum() == 4
    assert not calls  # no row's anchors were looked up (and simulated) one request at a time
    # reductions too: their anchors walk the source, or where three tiles of it do not fit its first rows, scaled
    frame = pd.DataFrame([{"op": op, "dtype": "f32", "arch": "a5", "rows": r, "cols": c, "valid_rows": r,
                           "valid_cols": c, "strategy": "all"}
                          for op in ("TROWSUM", "TCOLMAX") for r, c in ((1, 256), (8, 128), (16, 320), (40, 1280))])
    slow = sweep(frame, vectorised=False)
    calls.clear()
    fast = sweep(frame)
    pd.testing.assert_frame_equal(fast, slow, **SAME_VALUES)
    assert (fast["model"] == "anchored").all()
    assert not calls  # 40x1280 too, whose anchors take the 17 rows of it that fit three times


def _no_fallback(monkeypatch):
    import sys

    def refuse(*args, **kwargs):
        raise AssertionError("the closed form should have covered this row")

    monkeypatch.setattr(sys.modules["costmodel.sweep"], "lower_key", refuse)


# costmodel.md §6 worked examples: (op, rows, cols, valid cols, static valid), default mode, stub cycles (count-aware)
WORKED = [("TMINS", 64, 64, 64, False, "f16", "2LNormRowRpt", 96), ("TMINS", 64, 64, 64, True, "f16", "1LNorm", 62),
          ("TMINS", 16, 200, 190, False, "f32", "2LNormRowRpt", 80), ("TADD", 16, 200, 190, False, "f32", "2LNormRowRpt", 138),
          ("TMINS", 1, 3600, 3600, False, "f16", "1LCount", 63), ("TADD", 1, 3600, 3600, False, "f16", "1LCount", 102),
          ("TEXP", 1, 3600, 3600, False, "f16", "1LNorm", 91)]


def test_worked_examples_through_the_closed_form(monkeypatch):
    monkeypatch.setenv("PTO_COST_PARAMS", str(Path(__file__).parent / "data" / "upstream_stub_params.csv"))
    _no_fallback(monkeypatch)
    frame = pd.DataFrame([{"op": op, "rows": r, "cols": c, "valid_cols": vc, "static_valid": sv, "dtype": dt}
                          for op, r, c, vc, sv, dt, _, _ in WORKED])
    out = sweep(frame)
    assert out["strategy"].tolist() == [w[6] for w in WORKED]
    assert out["cycles"].tolist() == pytest.approx([w[7] for w in WORKED])
    assert out["default"].all() and (out["model"] == "formula").all()
    # the stub's rows were fitted from no observation: the note says so, as `estimate` does
    assert all(n.startswith("no measured row exercises v") for n in out["note"])


def test_all_expands_default_first_and_marks_the_fastest(monkeypatch):
    _no_fallback(monkeypatch)
    frame = pd.DataFrame({"op": ["TADD", "TADD"], "dtype": "f32", "arch": ["a2a3", "a5"], "rows": 16, "cols": 200,
                          "valid_cols": 200, "strategy": "all"})
    out = sweep(frame)
    for arch, g in out.groupby("arch", sort=False):
        legal = list(lower.legal_strategies(make_request("TADD", (16, 200), "f32", arch=arch)))
        assert g["strategy"].tolist() == legal and g["default"].tolist() == [True] + [False] * (len(legal) - 1)
        cycles = {s: estimate("TADD", "16x200", "f32", arch=arch, strategy=s, verify=False).cycles for s in legal}
        assert g["cycles"].tolist() == [cycles[s] for s in legal]
        assert (g["best"] == min(legal, key=lambda s: (cycles[s], legal.index(s)))).all()


def test_named_strategies_match_case_insensitively_and_illegal_ones_say_what_is_legal(monkeypatch):
    _no_fallback(monkeypatch)
    frame = pd.DataFrame({"op": "TMINS", "dtype": "f16", "rows": 64, "cols": 64, "valid_cols": [64, 60, 60, 60],
                          "strategy": ["2lnormrowrpt", "1lnorm", "2LNormColVLAlign", "nonsense"]})
    out = sweep(frame)
    # an illegal strategy the op has is written as a priced one is, so a group-by sees one strategy, not two
    assert out["strategy"].tolist() == ["2LNormRowRpt", "1LNorm", "2LNormColVLAlign", "nonsense"]
    assert out["cycles"].iloc[0] == estimate("TMINS", "64x64", "f16", strategy="2LNormRowRpt", verify=False).cycles
    assert out["cycles"].iloc[1:].isna().all()
    # an illegal one says why at that shape and lists the legal ones, as `estimate` refusing it does
    for s, note in zip(("1LNorm", "2LNormColVLAlign"), out["note"].iloc[1:3]):
        with pytest.raises(PtoCostError) as refused:
            estimate("TMINS", "64x64", "f16", valid="64x60", strategy=s, verify=False)
        reason, legal = re.fullmatch(rf"strategy {s} is illegal for this TMINS request: (.*); legal: (.*)",
                                     str(refused.value)).groups()
        assert note == f"strategy {s} is not legal here: {reason}; legal: {legal}"
    assert out["note"].iloc[3] == f"unknown strategy 'nonsense' for this op and arch; legal: {legal}"
    monkeypatch.undo()
    slow = sweep(frame, vectorised=False)  # the per-request path words them alike
    assert slow["note"].iloc[1:].tolist() == out["note"].iloc[1:].tolist()
    assert out["model"].iloc[0] == "formula" and (out["model"].iloc[1:] == "").all()  # no model priced them
    rpt, count = (estimate("TMINS", "64x64", "f16", valid="64x60", strategy=s, verify=False).cycles
                  for s in ("2LNormRowRpt", "2LCount"))
    assert (out["best"].iloc[1:] == ("2LCount" if count < rpt else "2LNormRowRpt")).all()


def test_a_refused_row_spells_a_strategy_of_its_op_as_the_op_does():
    """A row refused for another reason (the unified buffer, a bad scalar) keeps the strategy it named, spelled as the
    op spells it, so a group-by sees one strategy; a name the op does not have is kept as given."""
    frame = pd.DataFrame({"op": "TMINS", "dtype": "f16", "rows": [8, 1024, 8, 8], "cols": [64, 1024, 64, 64],
                          "strategy": ["1lnorm", "1lnorm", "1lnorm", "Bogus"], "scalar": ["1", "1", "1e9", "1"]})
    fast = sweep(frame)
    pd.testing.assert_frame_equal(fast, sweep(frame, vectorised=False), **SAME_VALUES)
    assert fast["strategy"].tolist() == ["1LNorm", "1LNorm", "1lnorm", "Bogus"]  # 1e9: no TMINS f16 request at all
    assert fast["cycles"].iloc[1:].isna().all() and "unified buffer" in fast["note"].iloc[1]


def test_default_and_all_are_keywords_in_any_letter_case(monkeypatch):
    _no_fallback(monkeypatch)
    frame = pd.DataFrame({"op": "TADD", "dtype": "f32", "rows": 16, "cols": 64, "strategy": ["DEFAULT", "All"]})
    out = sweep(frame)
    legal = lower.legal_strategies(make_request("TADD", (16, 64), "f32"))
    assert out["strategy"].tolist() == [legal[0], *legal] and out["cycles"].notna().all()


def test_model_column_names_the_model_of_each_strategy(tmp_path, monkeypatch):
    # a table with A5 formula parameters for TMAX f32 1d-post-update only: `auto` prices that strategy with the
    # formula and the others with the pipeline simulation, and each row says which
    src = Path_data("formula_params.csv").read_text().splitlines()
    keep = [src[0]] + [line for line in src[1:] if ",a5,vf,dispatch," in line]
    keep += [f"1,a5,vf,op,TMAX,f32,,1d-post-update,,{t},{v},,1,,test" for t, v in (("p0", 60.0), ("p1", 1.5))]
    path = tmp_path / "params.csv"
    path.write_text("\n".join(keep) + "\n")
    monkeypatch.setenv("PTO_COST_PARAMS", str(path))
    _no_fallback(monkeypatch)
    out = sweep(pd.DataFrame({"op": ["TMAX"], "dtype": "f32", "arch": "a5", "rows": 8, "cols": 128, "strategy": "all"}))
    for rec in out.to_dict("records"):
        e = estimate("TMAX", "8x128", "f32", arch="a5", strategy=rec["strategy"], verify=False)
        assert (rec["model"], rec["cycles"]) == (e.model, e.cycles)
    assert set(out["model"]) == {"formula", "pipeline"}


def Path_data(name):
    from costmodel._data import data_path

    return data_path(name)


def test_rows_the_requests_reject_get_the_per_request_notes():
    frame = pd.DataFrame({"op": "TADD", "dtype": "f16", "arch": ["a2a3", "a2a3", "a5", "a2a3"],
                          "rows": [64, 4096, 64, 8], "cols": [100, 64, 64, 64], "valid_rows": [64, 4096, 65, 8]})
    out = sweep(frame)
    assert out["cycles"].isna().tolist() == [True, True, True, False]
    assert "multiple of 16" in out["note"].iloc[0]
    assert "unified buffer" in out["note"].iloc[1]
    assert "larger than the tile" in out["note"].iloc[2]
    assert out["strategy"].iloc[:3].tolist() == ["", "", ""]


@pytest.mark.parametrize("arch", ["a2a3", "a5"])
def test_tiles_beyond_the_unified_buffer_get_the_allocator_note_without_lowering(arch, monkeypatch):
    # a rectangular grid runs into the UB: those rows get the allocator's message from the closed form (no
    # request is lowered), the same message the per-request path gives
    from costmodel.grid import expand

    frame = expand({"ops": ["TADD", "TEXP"], "dtypes": ["f32"], "archs": [arch], "rows": "1:400:37",
                    "cols": "64:4096:448", "strategies": ["default", "all"]})
    slow = sweep(frame, vectorised=False)
    _no_fallback(monkeypatch)
    fast = sweep(frame)
    pd.testing.assert_frame_equal(fast, slow, **SAME_VALUES)
    over = fast[fast["note"].str.contains("unified buffer")]
    assert len(over) > len(frame) // 4 and over["cycles"].isna().all()


def test_best_is_the_first_minimum_default_first_then_listed_order():
    from costmodel.vector import best_of

    nan = np.nan
    cycles = np.array([[5.0, 7.0, nan, 3.0, 2.0],     # strategy 0
                       [5.0, 6.0, 4.0, 3.0, 9.0],     # strategy 1
                       [6.0, 6.0, 4.0, 3.0, 2.0]])    # strategy 2
    default = np.array([1, 0, 2, 2, 1])
    best, dval = np.empty(5, dtype=np.int64), np.empty(5)
    best_of(cycles, default, best, dval)
    # col 0: tie 0/1 at 5, default 1 wins; col 1: 1 and 2 tie at 6, the listed order gives 1; col 2: strategy 0
    # illegal (NaN), default 2 ties with 1 and wins; col 3: all tie, default 2; col 4: 0 and 2 tie at 2, not the
    # default (1, at 9): the first listed, 0
    assert best.tolist() == [1, 1, 2, 2, 0]
    assert dval.tolist() == [5.0, 7.0, 4.0, 3.0, 9.0]


def test_dask_partitions_give_the_local_frame_exactly():
    # partitions cut groups, `all` rows and per-request rows apart; categories come back in the local order
    pytest.importorskip("dask.distributed")
    from dask.distributed import Client

    from costmodel.grid import expand
    from costmodel.sweep import local_cluster, sweep_dask

    frame = pd.concat([expand({"ops": ["TADD", "TDIVS"], "dtypes": ["i32", "f32"], "archs": ["a2a3", "a5"],
                               "rows": "1:300:61", "cols": "64:2048:640", "strategies": ["all", "default"]}),
                       pd.DataFrame({"op": ["TROWSUM", "TMATMUL"], "dtype": "f32", "rows": 16, "cols": 64})],
                      ignore_index=True)
    local = sweep(frame)
    cluster = local_cluster(1, processes=False)
    client = Client(cluster)
    try:
        for k in (1, 3, 7):
            pd.testing.assert_frame_equal(sweep_dask(frame, client=client, npartitions=k), local, check_exact=True)
    finally:
        client.close()
        cluster.close()


def test_dask_splits_the_frame_over_the_clusters_threads_and_reports_progress():
    """An existing cluster of 3 worker threads gets 3 partitions (it got 2 whatever its size), each reported as it
    comes back."""
    pytest.importorskip("dask.distributed")
    from dask.distributed import Client

    from costmodel.sweep import local_cluster, sweep_dask

    frame = pd.DataFrame({"op": "TADD", "dtype": "f16", "rows": np.arange(1, 6101) % 64 + 1, "cols": 128})
    cluster = local_cluster(3, processes=False)
    client = Client(cluster)
    calls = []
    try:
        out = sweep_dask(frame, client=client, progress=lambda done, total: calls.append((done, total)))
    finally:
        client.close()
        cluster.close()
    pd.testing.assert_frame_equal(out, sweep(frame), check_exact=True)
    assert len(calls) == 3 and calls[-1] == (6100, 6100) and [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_a5_overflow_says_when_writing_dst_over_the_first_source_would_fit(monkeypatch):
    # three 20x1312 f32 tiles (315 KB) overflow A5's 256 KB UB; two fit, and every A5 VF op can run in place
    # (a 60x1312 TEXP does not fit even in place); on A2/A3 only the elementwise sequences can: three 64x264 f32
    # tiles (203 KB) overflow its 192 KB, two fit, while TSEL's plan keeps its own buffers (QA 47c)
    frame = pd.DataFrame({"op": ["TADD", "TADD", "TEXP", "TADD", "TSEL"], "dtype": "f32",
                          "arch": ["a5", "a2a3", "a5", "a2a3", "a2a3"],
                          "rows": [20, 20, 60, 64, 64], "cols": [1312, 1312, 1312, 264, 264]})
    slow = sweep(frame, vectorised=False)
    _no_fallback(monkeypatch)
    fast = sweep(frame)
    pd.testing.assert_frame_equal(fast, slow, **SAME_VALUES)
    hint = fast["note"].str.contains("with --in-place (dst over src0) it would fit", regex=False)
    assert hint.tolist() == [True, False, False, True, False] and fast["note"].str.contains("unified buffer").all()
    assert api.estimate("TADD", (20, 1312), "f32", "a5", in_place=True).cycles > 0
    assert api.estimate("TADD", (64, 264), "f32", "a2a3", in_place=True).cycles > 0


def test_shipped_a5_formula_never_gets_cheaper_as_a_tile_grows_but_where_measured():
    """More columns or rows never cost fewer cycles under the shipped A5 formula, with one measured exception: a 1D
    widening conversion of one chunk costs more than its loop's trend (bf16->fp32 1x64: 81 cycles, 1x320: 73,
    1x640: 65), so its estimate may drop from one chunk to two; and a 32-bit TSEL in 1D runs another program for an
    even trip count (costmodel.md §3 step 6) that costs ~2 cycles a chunk against ~8 for an odd one (fp32 1x320, five
    chunks: 91 cycles; 1x1280, twenty: 97), so its estimate may drop where the trip count turns even."""
    measured = [("TADD", "f32", ""), ("TMINS", "f16", ""), ("TEXP", "f32", ""), ("TRECIP", "f16", ""),
                ("TSEL", "f32", ""), ("TSEL", "i8", ""), ("TDIVS", "f32", ""), ("TCVT", "f32", "fp8_e4m3"),
                ("TCVT", "bf16", "f16"), ("TCVT", "bf16", "fp4_e2m1"), ("TCVT", "f16", "f32"),
                ("TCVT", "fp8_e5m2", "f32"), ("TCVT", "fp4_e1m2", "bf16")]
    frame = pd.DataFrame([{"arch": "a5", "op": op, "dtype": dt, "dst_dtype": dst, "rows": r, "cols": c,
                           "strategy": "all"}
                          for op, dt, dst in measured for r in (1, 2, 3, 10) for c in range(32, 2049, 32)])
    out = sweep(frame, model="formula")
    out = out[out["cycles"].notna()].astype({"strategy": str})
    assert len(out) > 0.75 * 4 * len(frame)  # four strategies a point, less those a shape cannot take
    key = ["op", "dtype", "dst_dtype", "strategy"]
    for along, other in (("cols", "rows"), ("rows", "cols")):
        g = out.sort_values(along).groupby(key + [other], observed=True)
        step = g["cycles"].diff()
        before = g[along].shift()
        elems = (out["rows"] if along == "cols" else out["cols"]) * before
        one_chunk_1d = out["strategy"].str.startswith("1d") & (elems * 4 <= 256)  # at most one 256-byte chunk of f32
        bits = {d: dtype(d).bits for d in set(out["dtype"]) | set(out["dst_dtype"]) if d}
        widening = out["op"].eq("TCVT") & (out["dst_dtype"].map(bits) > out["dtype"].map(bits))
        even_trip = -(-(out["rows"] * out["cols"] * 4) // 256) % 2 == 0
        even_select = out["op"].eq("TSEL") & out["dtype"].eq("f32") & out["strategy"].str.startswith("1d") & even_trip
        drops = out[(step < -1e-6) & ~(one_chunk_1d & widening) & ~even_select]
        assert drops.empty, drops[key + ["rows", "cols", "cycles"]].head()


@pytest.mark.parametrize("op, extra", [("TEXPANDS", {}), ("TAXPY", {}), ("TSUBRELU", {"in_place": True})])
def test_an_empty_valid_region_next_to_anchored_rows_is_a_row_error(op, extra):
    # the anchors warmed in closed form skip rows no request takes (their error is the per-request path's)
    df = pd.DataFrame([dict(op=op, dtype="f32", arch="a5", rows=255, cols=128, valid_rows=255, valid_cols=1,
                            static_valid=True, **extra),
                       dict(op=op, dtype="f32", arch="a5", rows=1, cols=64, valid_rows=0, valid_cols=61,
                            static_valid=True, **extra)])
    out = sweep(df)
    assert np.isfinite(out.loc[0, "cycles"]) and np.isnan(out.loc[1, "cycles"])
    assert out.loc[1, "note"] == f"valid region 0x61 is empty; {op} needs at least 1x1"


def test_sweep_notes_carry_the_models_caveats_alike_on_both_paths():
    """A priced row's note is the model's caveat (estimate's, without the row's trip counts): the same whether the
    closed form or the per-request path priced it, per strategy (`all`, a named one, the default) and per row (an
    extent passed, a TSEL trip parity)."""
    cases = [("TADD", "f32", "a5", 1, 640), ("TADD", "f32", "a5", 1, 1280), ("TADD", "f32", "a5", 64, 64),
             ("TADD", "f32", "a5", 4, 64), ("TRSQRT", "f32", "a5", 16, 64), ("TSEL", "f32", "a5", 3, 64),
             ("TSEL", "f32", "a5", 2, 64), ("TEXPANDS", "u16", "a2a3", 64, 128), ("TSQRT", "f32", "a2a3", 64, 64),
             ("TADD", "bf16", "a5", 1, 1280), ("TADD", "bf16", "a5", 1, 2560), ("TABS", "f32", "a5", 1, 640),
             ("TABS", "f32", "a5", 128, 128), ("TADD", "f32", "a2a3", 128, 128), ("TADD", "f32", "a2a3", 64, 64),
             ("TRSQRT", "f32", "a5", 1, 1024), ("TRSQRT", "f32", "a5", 1, 640), ("TRSQRT", "f32", "a5", 128, 128)]
    frame = pd.DataFrame([{"op": op, "dtype": dt, "arch": arch, "rows": r, "cols": c, "strategy": s,
                           "in_place": "1" if op == "TSQRT" else "", "scalar": 1 if op == "TEXPANDS" else None}
                          for op, dt, arch, r, c in cases for s in ("default", "all", "2d-no-post-update")])
    fast = sweep(frame)
    pd.testing.assert_frame_equal(fast, sweep(frame, vectorised=False), **SAME_VALUES)
    for row in fast[fast["cycles"].notna()].itertuples():
        e = estimate(row.op, (row.rows, row.cols), row.dtype, row.arch, strategy=row.strategy, verify=False,
                     **({"in_place": True} if row.op == "TSQRT" else {"scalar": 1} if row.op == "TEXPANDS" else {}))
        said = " ".join(e.notes)
        for part in filter(None, str(row.note).split("; ")):  # each caveat is estimate's, trip counts aside
            words = part.replace("measured_op_correction", "").split(":")[0].split()
            assert all(w in said for w in words if not w.isdigit()), (row, part, said)
    note = dict(zip(zip(fast.op, fast.dtype, fast.rows, fast.cols, fast.default), fast.note.astype(str)))
    assert "lie beyond the measured TADD f32 rows" in note[("TADD", "f32", 1, 1280, True)]
    assert "beyond" not in note[("TADD", "f32", 1, 640, True)]
    # TADD bf16 is priced by the f32 rows' body, and bounded by their extent in chunks: 20 bf16 chunks lie beyond it
    assert "lie beyond the measured TADD f32 rows" in note[("TADD", "bf16", 1, 2560, True)]
    assert "beyond" not in note[("TADD", "bf16", 1, 1280, True)]
    # TABS, measured by nobody, is priced by the body measured ops share (TMINS, TNEG: a load, a simple op, a store),
    # and bounded by where they were measured
    assert "lie beyond the measured body ld1 st1 simple1 rows" in note[("TABS", "f32", 128, 128, True)]
    assert "beyond" not in note[("TABS", "f32", 1, 640, True)]
    # A2/A3: 256 vadd repeats in one plan lie beyond the measured rows' 64; the sweep's note names no count
    assert "its vadd f32 repeats lie beyond the measured rows that use vadd" in fast.loc[
        (fast.arch == "a2a3") & (fast.op == "TADD") & (fast.rows == 128) & fast.default, "note"].iloc[0]
    assert "beyond" not in str(fast.loc[(fast.arch == "a2a3") & (fast.op == "TADD") & (fast.rows == 64) & fast.default,
                                        "note"].iloc[0])
    assert "corrected by measured_op_correction" in note[("TRSQRT", "f32", 16, 64, True)]
    # the anchors priced beyond where they were measured are named, per row, as estimate names them
    assert "beyond" not in note[("TRSQRT", "f32", 16, 64, True)]
    assert "; TADD, TNEG run beyond their measured rows here" in note[("TRSQRT", "f32", 1, 1024, True)]
    assert "; TNEG runs beyond its measured rows here" in note[("TRSQRT", "f32", 1, 640, True)]
    assert "every one of them runs beyond its measured rows" in note[("TRSQRT", "f32", 128, 128, True)]
    assert "priced by its measured f16 row" in note[("TEXPANDS", "u16", 64, 128, True)]
    assert note[("TSQRT", "f32", 64, 64, True)].startswith("in place is priced like the out-of-place plan")


def test_tiles_make_request_refuses_are_refused_in_closed_form_in_its_words(monkeypatch):
    """A valid region larger than the tile, or a row of no whole number of 32-byte blocks in any tile (dst, a source
    of another type), gets the error `make_request` gives, without lowering the row (a grid of cols 1:5000:1 was
    lowered one request at a time)."""
    rng = np.random.default_rng(7)
    n = 300
    parts = [pd.DataFrame({"op": op, "dtype": dt, "arch": arch, "dst_dtype": dst, "rows": rng.integers(1, 40, n),
                           "cols": rng.integers(1, 300, n), "valid_rows": rng.integers(1, 45, n),
                           "valid_cols": rng.integers(1, 320, n), "scalar": 1 if op in ("TADDS", "TEXPANDS") else None})
             for op, dt, arch, dst in [("TADD", "f16", "a2a3", ""), ("TADD", "f32", "a5", ""),
                                       ("TCVT", "f32", "a2a3", "f16"), ("TCVT", "f16", "a5", "f32"),
                                       ("TSEL", "f16", "a5", ""), ("TSEL", "f32", "a2a3", ""),
                                       ("TADDS", "i8", "a5", ""), ("TEXPANDS", "f16", "a2a3", "")]]
    frame = pd.concat(parts, ignore_index=True)
    slow = sweep(frame, vectorised=False)
    refused = slow["cycles"].isna() & slow["note"].astype(str).str.contains("larger than the tile|not a multiple of 32")
    assert refused.sum() > len(frame) // 2
    # a tile of no row (a Python frame or a cases file can hold one): make_request's own error, on either path
    frame = pd.concat([frame, pd.DataFrame({"op": "TADD", "dtype": "f16", "arch": ["a2a3", "a5", "a5"],
                                            "rows": [0, -3, 4], "cols": [64, 64, 16], "valid_rows": [1, 1, -1],
                                            "valid_cols": [1, 1, 200]})], ignore_index=True)
    pd.testing.assert_frame_equal(sweep(frame), sweep(frame, vectorised=False), **SAME_VALUES)
    sub = frame[refused.reindex(frame.index, fill_value=False).to_numpy()].reset_index(drop=True)
    expected = sweep(sub, vectorised=False)
    _no_fallback(monkeypatch)
    pd.testing.assert_frame_equal(sweep(sub), expected, **SAME_VALUES)


def test_illegal_strategy_reasons_cover_the_first_shapes_past_the_limit(monkeypatch):
    """Past WHY_LIMIT distinct shapes naming an illegal strategy, the first ones still get their reason and only the
    rest point to `estimate` (it was all or nothing)."""
    from costmodel.vector import output

    monkeypatch.setattr(output, "WHY_LIMIT", 2)
    frame = pd.DataFrame({"op": "TADD", "dtype": "f16", "rows": 1, "cols": [4096, 2048, 1024],
                          "strategy": "1LNormSmall"})
    notes = sweep(frame)["note"].astype(str)
    given = notes.str.contains(r"not legal here: needs valid cols \(\d+\) <= 128 elements per repeat", regex=True)
    assert given.sum() == 2 and notes[~given].str.contains("`pto-cost estimate` with it says why").all()


def test_a_dtype_column_of_numpy_types_prices_like_their_names():
    """np.float16 in a dtype column is the element type estimate takes it for; several rows of numpy types raised a
    raw TypeError while grouping (QA 48a)."""
    import ml_dtypes

    frame = pd.DataFrame({"op": ["TMINS", "TMINS", "TMINS", "TCVT"], "dtype": [np.float16, np.float32, np.float64, "f32"],
                          "dst_dtype": [None, None, None, ml_dtypes.bfloat16], "rows": 64, "cols": 64})
    out = sweep(frame)
    names = pd.DataFrame({"op": ["TMINS", "TMINS", "TCVT"], "dtype": ["f16", "f32", "f32"],
                          "dst_dtype": ["", "", "bf16"], "rows": 64, "cols": 64})
    assert out["cycles"].iloc[[0, 1, 3]].tolist() == sweep(names)["cycles"].tolist()
    assert np.isnan(out["cycles"].iloc[2]) and "unknown dtype 'float64'" in out["note"].iloc[2]
    assert out["dtype"].tolist() == frame["dtype"].tolist()  # the caller's column, as given


def test_a_column_a_sweep_would_not_read_but_names_a_request_field_is_refused():
    """A trace's saturation_mode priced TCVT f32->i16 with the default saturation, 2x off, and valid_row priced the
    whole tile, both with no word (QA 48a); other columns pass through."""
    from costmodel.errors import PtoCostError

    base = {"op": "TCVT", "dtype": "f32", "dst_dtype": "i16", "rows": 64, "cols": 64}
    for extra, said in (({"saturation_mode": "on"}, "rename it saturation"),
                        ({"valid_row": 32}, "did you mean valid_rows?"),
                        ({"op_params": ""}, "pto-cost predict")):
        with pytest.raises(PtoCostError, match=re.escape(said)):
            sweep(pd.DataFrame([{**base, **extra}]))
    out = sweep(pd.DataFrame([{**base, "saturation": "on", "kernel_id": 7}]))
    assert out["kernel_id"].tolist() == [7] and out["cycles"].notna().all()


def test_a_reductions_price_in_a_sweep_does_not_depend_on_the_ops_before_it():
    """An elementwise op and a reduction on tiles of one shape share no anchor correction where the reduction's
    anchors take only the rows that fit the unified buffer (QA 51: TRSQRT before TROWSUM priced TROWSUM f32 128x192
    at 1138 cycles, estimate 1127)."""
    rows = [{"op": o, "dtype": "f32", "arch": "a5", "rows": 128, "cols": 192} for o in ("TRSQRT", "TROWSUM")]
    for order in (rows, rows[::-1]):
        out = sweep(pd.DataFrame(order))
        got = out.loc[out["op"] == "TROWSUM", "cycles"].iloc[0]
        assert got == estimate("TROWSUM", (128, 192), "f32", "a5", verify=False).cycles


def test_tsels_prices_as_the_tsel_program_it_runs():
    """TSELS runs TSEL's select programs (inferred): an f32 TSELS in 1D (the even program) takes TSEL f32's own
    rows, not the TSEL:b32 family's, which copy another program (QA 51: 289 cycles at 1x2048 against TSEL's 127)."""
    for shape in ((1, 2048), (1, 8192), (16, 256)):
        tsels, tsel = (estimate(op, shape, "f32", "a5", model="formula", verify=False) for op in ("TSELS", "TSEL"))
        assert tsels.cycles == tsel.cycles and tsels.strategy == tsel.strategy
        assert any("priced by the formula of TSEL f32" in n for n in tsels.notes)
    out = sweep(pd.DataFrame([{"op": "TSELS", "dtype": "f32", "arch": "a5", "rows": 1, "cols": 2048}]))
    assert out["cycles"].iloc[0] == estimate("TSEL", (1, 2048), "f32", "a5", model="formula", verify=False).cycles
