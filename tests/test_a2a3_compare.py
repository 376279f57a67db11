"""A2/A3 TCMP and TCMPS: packed-mask compares (isa.md §4.5), their plans in every strategy against the golden,
the legality rules of isa.md §4 and the stub classes of costmodel.md §5."""
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import costmodel
from costmodel import lower
from costmodel.api import request
from costmodel.emulate.verify import verify
from costmodel.errors import NotModelledError, ParamError
from costmodel.golden import golden
from costmodel.isa_a2a3 import VecOp
from costmodel.models.a2a3_intrinsic import cost_class
from costmodel.plan import Plan

from .test_a2a3_partial_expand import BITS, shape_and_valid
from .test_cli import run

MODES = ["eq", "ne", "lt", "le", "gt", "ge"]
MODELLED = {"TCMP": ["f32", "f16", "i32"], "TCMPS": ["f32", "f16", "i32"]}


@st.composite
def compare_request(draw):
    op = draw(st.sampled_from(sorted(MODELLED)))
    dt = draw(st.sampled_from(MODELLED[op]))
    mode = "eq" if dt == "i32" else draw(st.sampled_from(MODES))
    (rows, cols), (vr, vc) = draw(shape_and_valid(BITS[dt]))
    return request(op, (rows, cols), dt, "a2a3", valid=(vr, vc), cmp_mode=mode)


@settings(max_examples=80, deadline=None)
@given(req=compare_request(), seed=st.integers(0, 3))
def test_compares_verify_in_every_strategy_on_ragged_regions(req, seed):
    for s in lower.legal_strategies(req):
        v = verify(lower.lower(req, s), seed=seed)
        assert v.ok, (req.describe(), s, v.note, v.mismatches)


@settings(max_examples=30, deadline=None)
@given(req=compare_request())
def test_one_compare_call_per_row_unless_the_mask_rows_are_one_run(req):
    default = lower.strategies(req)[0]
    calls = [i for i in lower.lower(req, default).body if isinstance(i, VecOp)]
    vr = req.tile("src0").valid_rows
    per_step = 1 if default == "1LCount" else vr
    ne_scalar = req.op == "TCMPS" and req.param("cmp_mode") == "ne"
    assert len(calls) == per_step * (2 if ne_scalar else 1)
    assert calls[0].intrinsic.startswith("vcmpvs_" if req.op == "TCMPS" else "vcmpv_")


def test_golden_packs_bits_lsb_first_per_row_and_zeroes_the_rest():
    a = np.array([[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]], dtype=np.float32)
    b = np.full_like(a, 5)
    got = golden("TCMP", a, b, cmp_mode="lt", dst_shape=(1, 32))
    # elements 0..3 are below 5: bits 0-3 of byte 0; byte 1 (elements 8, 9) none
    assert got[0, 0] == 0b00001111 and got[0, 1] == 0 and not got[0, 2:].any()
    got = golden("TCMPS", a, scalar=5, cmp_mode="ge", dst_shape=(1, 32))
    assert got[0, 0] == 0b11110000 and got[0, 1] == 0b11


def test_golden_nan_compares_as_the_reference_says():
    a = np.array([[np.nan, 1.0]], dtype=np.float32)
    assert golden("TCMP", a, a.copy(), cmp_mode="eq")[0, 0] == 0b10  # NaN == NaN is false
    assert golden("TCMP", a, a.copy(), cmp_mode="ne")[0, 0] == 0b01
    assert golden("TCMPS", a, scalar=1.0, cmp_mode="ne")[0, 0] == 0b01  # NaN: NE true


def test_golden_scalar_eq_uses_the_cpu_tolerance():
    a = np.array([[2.0, 2.0 + 1e-12, 2.0 + 1e-6]], dtype=np.float64)
    assert golden("TCMPS", a, scalar=2.0, cmp_mode="eq")[0, 0] == 0b011  # |a - b| < 1e-9 (isa.md §4)


def _swap_mode(plan: Plan, old: str, new: str) -> Plan:
    body = tuple(VecOp(new, i.dtype, i.dst, i.srcs, i.repeat, i.scalar, i.dst_dtype, i.mode)
                 if isinstance(i, VecOp) and i.intrinsic == old else i for i in plan.body)
    return Plan(plan.arch, plan.op, plan.strategy, plan.request, plan.buffers, body, plan.notes)


def test_verify_catches_a_plan_with_the_wrong_predicate():
    req = request("TCMP", (8, 64), "f32", "a2a3", cmp_mode="lt")
    plan = lower.lower(req, lower.strategies(req)[0])
    assert verify(plan).ok
    assert verify(_swap_mode(plan, "vcmpv_lt", "vcmpv_le")).ok is False


def test_tcmps_ne_is_not_of_eq_over_the_packed_words():
    req = request("TCMPS", (4, 64), "f16", "a2a3", valid=(3, 37), cmp_mode="ne")
    plan = lower.lower(req, "2LCount")
    calls = [i for i in plan.body if isinstance(i, VecOp)]
    assert [c.intrinsic for c in calls] == ["vcmpvs_eq"] * 3 + ["vnot"] * 3
    assert verify(plan).ok
    listing = plan.listing()
    assert "set_vector_mask(0, 37)" in listing  # elements
    assert "set_vector_mask(0, 3)" in listing  # 16-bit words holding 37 bits, a count even where it reads as a mask


def test_a2a3_rules_of_the_reference():
    with pytest.raises(ParamError, match="only EQ.*--cmp-mode eq"):
        costmodel.estimate("TCMPS", "16x64", "i32", arch="a2a3", cmp_mode="lt")
    with pytest.raises(ParamError, match="only EQ"):
        costmodel.estimate("TCMP", "16x64", "i32", arch="a2a3", cmp_mode="gt")
    with pytest.raises(NotModelledError, match="as if they were f16"):
        costmodel.estimate("TCMPS", "16x64", "i16", arch="a2a3")
    with pytest.raises(ParamError, match="accepted: eq, ne, lt, le, gt, ge"):
        request("TCMP", (16, 64), "f32", "a2a3", cmp_mode="less")
    with pytest.raises(ParamError, match="cmp_mode applies to TCMP, TCMPS only"):
        request("TADD", (16, 64), "f32", "a2a3", cmp_mode="eq")
    with pytest.raises(NotModelledError):
        costmodel.estimate("TCMP", "16x64", "f16", arch="a5")
    # dst is the mask: its type may be named, as the arch's mask type (isa.md §3 row 22)
    assert request("TCMP", (16, 64), "f32", "a2a3", dst_dtype="u8").dst.dtype.name == "u8"
    with pytest.raises(costmodel.PtoCostError, match="writes a u8 mask on a2a3"):
        request("TCMP", (16, 64), "f32", "a2a3", dst_dtype="f32")


def test_compare_classes_follow_the_stub_table():
    # costmodel.md §5: vcmpv_ge/ne 14/2/22, the other compares in the default class
    assert cost_class("vcmpv_ge") == cost_class("vcmpv_ne") == "vcmpv"
    assert {cost_class(n) for n in ("vcmpv_eq", "vcmpv_lt", "vcmpv_gt", "vcmpv_le", "vcmpvs_eq")} == {"default"}
    ne = costmodel.estimate("TCMP", "16x64", "f32", arch="a2a3", cmp_mode="ne")
    lt = costmodel.estimate("TCMP", "16x64", "f32", arch="a2a3", cmp_mode="lt")
    assert ne.cycles > lt.cycles  # the larger head and tail of vcmpv_ne's own class


def test_cli_estimate_names_the_mode_and_the_bits_it_checked():
    out = json.loads(run("estimate", "TCMPS", "--shape", "16x64", "--valid", "13x37", "--dtype", "f16",
                         "--cmp-mode", "NE", "--json").stdout)
    assert out["params"]["cmp_mode"] == "ne" and out["verified"] == "yes"
    assert out["tiles"]["dst"]["dtype"] == "u8" and out["tiles"]["dst"]["valid"] == [13, 5]
    assert "bit for bit" in out["verify_note"]
    bad = run("estimate", "TCMPS", "--shape", "16x64", "--dtype", "i32", "--cmp-mode", "lt")
    assert bad.returncode == 2 and "only EQ" in bad.stderr and "Traceback" not in bad.stderr


def test_sweep_takes_the_mode_column():
    df = pd.DataFrame({"op": ["TCMP", "TCMP", "TCMPS"], "dtype": ["f32", "i32", "f16"], "rows": 16, "cols": 64,
                       "cmp_mode": ["gt", "gt", "ne"], "arch": "a2a3"})
    out = costmodel.sweep(df)
    assert np.isfinite(out["cycles"][[0, 2]]).all() and np.isnan(out["cycles"][1])
    assert "only EQ" in out["note"][1]
    one = costmodel.estimate("TCMP", "16x64", "f32", arch="a2a3", cmp_mode="gt", verify=False)
    assert out["cycles"][0] == pytest.approx(one.cycles)


@settings(max_examples=60, deadline=None)
@given(dt=st.sampled_from(["i16", "u16", "i32", "u32", "f16", "bf16", "f32"]), data=st.data())
def test_tsels_verifies_in_every_strategy_with_the_scalar_broadcast_first(dt, data):
    (rows, cols), (vr, vc) = data.draw(shape_and_valid(BITS[dt]))
    req = request("TSELS", (rows, cols), dt, "a2a3", valid=(vr, vc), scalar=data.draw(st.integers(0, 3)))
    for s in lower.legal_strategies(req):
        plan = lower.lower(req, s)
        v = verify(plan, seed=data.draw(st.integers(0, 3)))
        assert v.ok, (req.describe(), s, v.note, v.mismatches)
        calls = [i.intrinsic for i in plan.body if isinstance(i, VecOp)]
        n = 1 if s == "1LCount" else vr
        assert calls == ["vector_dup"] * n + ["vsel"] * n
        assert plan.buffer("tmp").scratch


def test_tsels_golden_takes_the_scalar_where_the_bit_is_clear():
    src = np.arange(10, dtype=np.int32).reshape(1, 10)
    mask = np.array([[0b10100101, 0b01]], dtype=np.uint8)
    got = golden("TSELS", src, mask, scalar=-1)
    assert got.tolist() == [[0, -1, 2, -1, -1, 5, -1, 7, 8, -1]]


def test_tcmps_scalar_is_of_the_tile_type():
    """The CPU's scalar is a T: 0.1 compared with f16 data holding f16(0.1) is equal, in every mode that says so."""
    a = np.full((1, 16), np.float16(0.1), dtype=np.float16)
    got = {m: golden("TCMPS", a, scalar=0.1, cmp_mode=m)[0, 0] for m in ("eq", "ne", "le", "ge", "lt")}
    assert got == {"eq": 255, "ne": 0, "le": 255, "ge": 255, "lt": 0}


def test_the_cpu_eq_tolerance_is_a_named_divergence(monkeypatch):
    """Values within 1e-9 of the scalar but not equal to it: the CPU's EQ says equal, the NPU's exact vcmpvs does not
    (isa.md §4); verify fails and says why."""
    import costmodel.emulate.verify as ver

    req = request("TCMPS", (1, 64), "f32", "a2a3", scalar=0.0)
    plan = lower.lower(req, lower.strategies(req)[0])
    real = ver.make_inputs

    def tiny(plan, seed):
        inputs = real(plan, seed)
        inputs["src0"] = np.full_like(inputs["src0"], 1e-10)
        return inputs

    monkeypatch.setattr(ver, "make_inputs", tiny)
    v = verify(plan)
    assert v.ok is False and "CPU TCMPS's EQ is |a - s| < 1e-9" in v.note


def test_only_the_scalar_mask_ops_take_a_scalar_and_shape_errors_name_the_source():
    with pytest.raises(ParamError, match="scalar applies to TCMPS, TSELS in compare_select, not TSEL"):
        request("TSEL", (16, 64), "f16", "a2a3", scalar=3)
    with pytest.raises(ParamError, match="not TCMP"):
        request("TCMP", (16, 64), "f16", "a2a3", scalar=3)
    with pytest.raises(costmodel.PtoCostError, match="^src0 64x1 f32"):
        request("TCMP", (64, 1), "f32", "a2a3")


def test_plans_say_why_their_default():
    one = lower.lower(request("TCMP", (4, 256), "f32", "a2a3"), "1LCount")
    assert one.notes[0].startswith("1LCount by default: the data and the mask are each one contiguous run")
    per_row = lower.lower(request("TCMP", (16, 64), "f32", "a2a3"), "2LCount")
    assert per_row.notes[0].startswith("2LCount by default: one call per row: 1LCount needs mask rows of exactly")


def test_a5_tsels_is_priced_as_the_tsel_family_it_runs():
    """A5 TSELS runs TSEL's select programs (inferred): priced by the TSEL family's fitted formula, near TSEL's own
    cost (one load fewer), far above an add's body (QA: it was priced as TADD, a third of TSEL)."""
    tsel = costmodel.estimate("TSEL", "10x672", "f32", arch="a5", valid=(10, 640), verify=False)
    tsels = costmodel.estimate("TSELS", "10x672", "f32", arch="a5", valid=(10, 640), verify=False)
    tadd = costmodel.estimate("TADD", "10x672", "f32", arch="a5", valid=(10, 640), verify=False)
    assert tsels.strategy == tsel.strategy and abs(tsels.cycles / tsel.cycles - 1) < 0.25
    assert tsels.cycles > 2 * tadd.cycles
    assert any("TSELS was not measured: priced by the formula of TSEL f32" in n for n in tsels.notes)
