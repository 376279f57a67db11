"""Vectorised sweeps: closed forms == plan path, the pipeline path's batched simulation, the sweep contract."""
import math

import numpy as np
import pytest

from costmodel import api
from costmodel.models.a5_pipeline import PipelineModel


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

from hypothesis import given, settings, strategies as st  # noqa: E402

from costmodel import lower  # noqa: E402
from costmodel.api import catalog  # noqa: E402
from costmodel.errors import PtoCostError  # noqa: E402
from costmodel.models.a2a3_intrinsic import IntrinsicModel  # noqa: E402
from costmodel.models.a5_formula import A5FormulaModel  # noqa: E402
from costmodel.operands import make_request  # noqa: E402
from costmodel.sweep import Models, request_kwargs  # noqa: E402
from costmodel.vector import VECTOR_FAMILIES, Shapes, closed_form  # noqa: E402

BITS = {"f16": 16, "bf16": 16, "f32": 32, "i8": 8, "u8": 8, "i16": 16, "u16": 16, "i32": 32, "u32": 32, "i64": 64,
        "u64": 64}
UB = {"a2a3": 196608, "a5": 262144}


def _ops(arch):
    c = catalog()
    rows = c[c["family"].isin(VECTOR_FAMILIES)]
    return [(r["name"], d) for r in rows.to_dict("records") for d in r[f"{arch}_dtypes"].split()]


def _a5_fitted():
    """The A5 ops the shipped table has formula parameters for (per key or per family)."""
    from costmodel.models.params import shipped

    return {r.name.split(":")[0] for r in shipped().rows if r.arch == "a5" and r.scope in ("op", "family")}


OPS = {arch: _ops(arch) for arch in ("a2a3", "a5")}
A5_FITTED = [(op, d) for op, d in OPS["a5"] if op in _a5_fitted()]


@st.composite
def groups(draw, arch, max_rows=300, max_shapes=6, ops=None):
    """One sweep group (op, dtype, parameters) and a handful of shapes, some beyond the UB or malformed."""
    op, dtype = draw(st.sampled_from(ops or OPS[arch]))
    bits = BITS[dtype]
    params = {"static_valid": draw(st.booleans())}
    if arch == "a2a3" and draw(st.integers(0, 3)) == 0:
        params["in_place"] = True
    if op == "TRECIP" and arch == "a5" and dtype in ("f16", "f32"):
        params["precision"] = draw(st.sampled_from(["default", "high_precision"]))
    shapes = []
    for _ in range(draw(st.integers(1, max_shapes))):
        rows = draw(st.integers(1, max_rows))
        # columns: whole 32-byte rows, mostly within about the UB for three tiles, sometimes far beyond it
        unit = 256 // bits
        cap = max(1, UB[arch] * 8 // (3 * rows * unit * bits))
        units = draw(st.one_of(st.integers(1, cap), st.integers(1, 4 * cap)))
        cols = unit * units + draw(st.sampled_from([0] * 12 + [1]))  # a misaligned row now and then
        vr = draw(st.one_of(st.just(rows), st.integers(1, rows), st.just(1)))
        vc = draw(st.one_of(st.just(cols), st.integers(1, cols), st.integers(1, min(cols, 300))))
        shapes.append((rows, cols, vr, vc))
    return arch, op, dtype, params, shapes


def _maker(arch, op, dtype, params):
    values = {"op": op, "dtype": dtype, "arch": arch, "dst_dtype": "", **params}
    return lambda r, c, vr, vc: make_request(**request_kwargs(values, r, c, vr, vc))


def _plan_path(req, model_cls):
    """Every legal strategy's cycles on the plan path, the default, or None if the request cannot be costed."""
    try:
        default = lower.resolve_strategy(req)[0]
        out = {}
        for s in lower.legal_strategies(req):
            out[s] = model_cls().cost(lower.lower(req.with_strategy(s)))[0]
        return out, default
    except PtoCostError:
        return None


def _check_group(group, model: str, model_cls):
    arch, op, dtype, params, shapes = group
    make = _maker(arch, op, dtype, params)
    sh = Shapes(*(np.array(col, dtype=np.int64) for col in zip(*shapes)))
    block = closed_form(make, sh, Models(model))
    expected = [_plan_path_or_none(make, s, model_cls) for s in shapes]
    if block is None:  # a group without closed form: only the documented kinds
        assert all(e is None for e in expected) or _documented_fallback(make), group
        return 0
    covered = 0
    for i, (shape, exp) in enumerate(zip(shapes, expected)):
        if block.fallback[i]:
            assert exp is None, f"{op} {dtype} {arch} {shape} can be costed but the closed form does not cover it"
            continue
        assert exp is not None, f"{op} {dtype} {arch} {shape}: the plan path rejects it, the closed form costs it"
        table, default = exp
        names = block.strategies
        d = int(block.default[i])
        legal = [names[d]] + [s for j, s in enumerate(names) if block.legal[i, j] and j != d]
        assert names[d] == default and tuple(legal) == tuple(table), (shape, legal, table)
        for s, cycles in table.items():
            assert block.cycles[i, names.index(s)] == cycles, (op, dtype, arch, shape, s)
        assert block.models[d] == model_cls.name
        covered += 1
    return covered


def _plan_path_or_none(make, shape, model_cls):
    try:
        req = make(*shape)
    except PtoCostError:
        return None
    return _plan_path(req, model_cls)


def _documented_fallback(make) -> bool:
    """A2/A3 scalar loops and `@hook` sequences have no closed form (costmodel/vector/a2a3.py)."""
    from costmodel.lower.a2a3.table import alternatives, lowering_row

    try:
        req = make(2, 256, 2, 256)
    except PtoCostError:
        return True
    if req.arch != "a2a3":
        return False
    rows = [lowering_row(req), *alternatives(req).values()]
    return any(r.rule == "scalar_loop" or r.hook for r in rows)


@given(groups("a2a3"))
def test_a2a3_closed_form_equals_the_plan_path(group):
    _check_group(group, "formula", IntrinsicModel)


@given(st.one_of(groups("a5", ops=A5_FITTED), groups("a5")))
def test_a5_formula_closed_form_equals_the_plan_path(group):
    _check_group(group, "formula", A5FormulaModel)


@given(groups("a5", max_rows=40, max_shapes=3))
def test_a5_pipeline_cycles_for_equals_the_plan_path(group):
    _check_group(group, "pipeline", PipelineModel)
