"""A2/A3 elementwise families: every legal strategy of every op, emulated on the UB image, matches the golden.

Expected values come from the golden semantics (verify) or are worked out by hand in the test; the structural
limits checked on every plan (at most 255 repeats per call, strides of at most 255 blocks) are isa.md §7.1's.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from costmodel import lower, modelled_dtypes
from costmodel.catalog import SCALAR_FAMILIES, instructions
from costmodel.dtypes import dtype as as_dtype
from costmodel.emulate import a2a3 as emu
from costmodel.emulate.verify import verify
from costmodel.errors import ParamError, ShapeError
from costmodel.isa_a2a3 import SetVectorMask, VecOp
from costmodel.operands import make_request

FAMILIES = ("binary_scalar", "binary", "unary", "ternary", "tile_scalar_tile", "fused_scalar", "scalar_broadcast")
# ops with a golden kernel (TFUSEDMULADD, whose CPU reference rounds once, has none: it is not modelled)
OPS = {fam: [i for i in instructions() if i.family == fam and i.dtypes_on("a2a3") and i.kernel] for fam in FAMILIES}
# Bitwise ops work on b16 lanes (costmodel.md §6: vnot on b16 data, b8 handled as b16), so b8 data needs whole pairs;
# so does TEXPANDS, whose b8 vector_dup replicates the scalar byte into u16 lanes.
B16_LANES = {"TAND", "TOR", "TXOR", "TANDS", "TORS", "TXORS", "TNOT", "TEXPANDS"}
MAX_REPEAT = MAX_STRIDE = 255  # isa.md §7.1 REPEAT_MAX, REPEAT_STRIDE_MAX


def check_all_strategies(req) -> list[str]:
    """Verify every legal strategy of `req`; return the strategies checked."""
    names = lower.legal_strategies(req)
    assert names, "a request must have at least one legal strategy"
    for name in names:
        plan = lower.lower(req, name)
        for ins in plan.body:
            if isinstance(ins, VecOp):
                assert 0 <= ins.repeat <= MAX_REPEAT, ins.listing()
                for a in (ins.dst, *ins.srcs):
                    assert a.rep_stride <= MAX_STRIDE and a.blk_stride <= MAX_STRIDE, ins.listing()
                    assert a.offset % 32 == 0, ins.listing()
        v = verify(plan)
        assert v.ok is True, f"{req.describe()} strategy {name}: {v.note} {v.mismatches[:4]}"
    return list(names)


def _scalar(draw, inst, dt):
    k = inst.kernel
    if k in ("shl", "shr"):
        return draw(st.integers(0, dt.bits - 1))
    if k == "pow":
        return draw(st.sampled_from([0, 1, 2, 3, 5, -1] if dt.is_float else [0, 1, 2, 3, 4]))
    if k == "lrelu":
        return draw(st.sampled_from([0.01, 0.125, 0.5]))
    lo = 0 if dt.kind == "uint" else -100
    if dt.is_integer:
        value = draw(st.integers(lo, 100))
    else:
        value = draw(st.sampled_from([-37.5, -2.0, -0.75, 0.5, 1.5, 3.0, 13.25]))
    if k in ("div", "rem", "fmod") and value == 0:
        value = 7
    return value


def _dtypes(inst, family) -> list[str]:
    """The dtypes to draw: all the catalogue lists, except where a family leaves some out on purpose (TADDSC/TSUBSC
    f16, whose CPU reference rounds once; TAXPY f16 into f32, a mixed-type read-modify-write)."""
    if family == "tile_scalar_tile":
        return list(modelled_dtypes(inst.name, "a2a3"))
    if family == "fused_scalar":
        return [t.partition(">")[0] for t in modelled_dtypes(inst.name, "a2a3")]
    return list(inst.dtypes_on("a2a3"))


@st.composite
def elementwise_requests(draw, family):
    inst = draw(st.sampled_from(OPS[family]))
    dt = as_dtype(draw(st.sampled_from(_dtypes(inst, family))))
    epb = 256 // dt.bits  # elements per 32-byte block
    rows = draw(st.integers(1, 24))
    blocks = draw(st.integers(1, 64 if rows == 1 else 16))
    cols = blocks * epb
    vr = draw(st.integers(1, rows))
    # Bias towards padded rows (vc < cols) and tails (vc not a multiple of the elements per repeat).
    vc = draw(st.one_of(st.just(cols), st.integers(1, cols), st.integers(max(1, cols - epb), cols)))
    params = {"static_valid": draw(st.booleans())}
    if family in SCALAR_FAMILIES:
        params["scalar"] = _scalar(draw, inst, dt)
    if inst.name == "TDIVS":
        params.update(draw(st.sampled_from([{}, {"order": "scalar_tile"}, {"in_place": True}])))
    elif family != "scalar_broadcast" and draw(st.integers(0, 3)) == 0:
        params["in_place"] = True  # dst over the first source (src, src0)
    return inst, dt, (rows, cols), (vr, vc), params


def _run_property(case):
    inst, dt, shape, valid, params = case
    try:
        req = make_request(inst.name, shape, dt.name, valid=valid, **params)
        check_all_strategies(req)
    except ParamError as exc:
        # an in-place request whose sequence writes dst before it has read all of the aliased source is refused
        assert params.get("in_place") and "has no in-place form on a2a3: its sequence writes dst before" in str(exc), str(exc)
    except ShapeError as exc:
        # The only shape a modelled elementwise op refuses: b8 data on b16 lanes with an odd valid column count.
        assert inst.name in B16_LANES and dt.bits == 8 and valid[1] % 2 == 1, str(exc)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(elementwise_requests("binary_scalar"))
def test_binary_scalar_every_strategy_verifies(case):
    _run_property(case)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(elementwise_requests("binary"))
def test_binary_every_strategy_verifies(case):
    _run_property(case)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(elementwise_requests("unary"))
def test_unary_every_strategy_verifies(case):
    _run_property(case)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(elementwise_requests("tile_scalar_tile"))
def test_tile_scalar_tile_every_strategy_verifies(case):
    _run_property(case)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(elementwise_requests("fused_scalar"))
def test_fused_scalar_every_strategy_verifies(case):
    _run_property(case)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(elementwise_requests("scalar_broadcast"))
def test_scalar_broadcast_every_strategy_verifies(case):
    _run_property(case)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(elementwise_requests("ternary"))
def test_ternary_every_strategy_verifies_with_dst_read_in_place(case):
    inst, dt, shape, valid, params = case
    req = make_request(inst.name, shape, dt.name, valid=valid, **params)
    plan = lower.lower(req, lower.resolve_strategy(req)[0])
    assert plan.buffers[1].name == "dst_in" and plan.buffers[1].offset == plan.buffers[0].offset
    _run_property(case)


# --- explicit shapes (isa.md §8 test shapes, costmodel.md §6 worked examples) ---------------------------------

EXPLICIT = [  # (shape, valid, dtype)
    ((64, 64), None, "f16"),
    ((16, 200), (16, 190), "f32"),
    ((1, 3600), None, "f16"),
    ((256, 16), None, "f32"),
    ((7, 448), None, "f32"),
    ((7, 512), (7, 448), "f32"),
]


def _ops_for(dt: str):
    return [i.name for fam in FAMILIES for i in OPS[fam] if dt in _dtypes(i, fam)]


@pytest.mark.parametrize("shape,valid,dt", EXPLICIT, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_explicit_shapes_every_op(shape, valid, dt):
    for op in _ops_for(dt):
        check_all_strategies(make_request(op, shape, dt, valid=valid))


TFMODS_CASES = [((32, 64), None), ((7, 448), None), ((256, 16), None), ((32, 128), (32, 64)), ((1, 8192), None),
                ((7, 512), (7, 448)), ((256, 32), (256, 16))]  # isa.md §8 NPU a2a3 tfmods cases


@pytest.mark.parametrize("shape,valid", TFMODS_CASES)
def test_tfmods_f32_test_cases(shape, valid):
    check_all_strategies(make_request("TFMODS", shape, "f32", valid=valid))
    check_all_strategies(make_request("TFMOD", shape, "f32", valid=valid))


@pytest.mark.parametrize("op,dt", [("TMINS", "f16"), ("TEXP", "f16"), ("TDIVS", "f16"), ("TNEG", "f16"),
                                   ("TRECIP", "f16"), ("TNOT", "i16"), ("TSHRS", "i16"), ("TANDS", "i16")])
def test_single_row_beyond_255_repeats(op, dt):
    # 1x40000 f16 is 313 repeats of 128 lanes: two 80000-byte tiles fit the 192 KiB UB.
    req = make_request(op, (1, 40000), dt)
    names = check_all_strategies(req)
    assert {"1LCount", "1LNorm"} <= set(names)
    plan = lower.lower(req, "1LNorm")
    reps = [i.repeat for i in plan.body if isinstance(i, VecOp) and i.intrinsic != "vector_dup"]
    assert reps[-3:] == [255, 57, 1]  # 40000 = 312 * 128 + 64: chunks of 255 and 57, then the masked tail


# --- sequences the random domain does not reach -----------------------------------------------------------------

def emulate(plan, inputs):
    """Run a plan on given input tiles (other buffers zero) and return the dst tile."""
    full = {b.name: inputs.get(b.name, np.zeros(b.tile.shape, b.tile.dtype.np)) for b in plan.buffers if not b.scratch}
    _, after = emu.run(plan, full)
    return after.tile(plan.buffers[0].offset, plan.buffers[0].tile)


@pytest.mark.parametrize("strategy", ["2LNormRowRpt", "1LCount", "2LCount"])
def test_tpows_sign_fix_for_negative_base(strategy):
    base = np.full((2, 64), 2.0, np.float32)
    base[0, :4] = [-2.0, -0.5, 3.0, -1.0]
    cube = emulate(lower.lower(make_request("TPOWS", (2, 64), "f32", scalar=3), strategy), {"src": base})
    assert cube[0, :4] == pytest.approx([-8.0, -0.125, 27.0, -1.0], rel=1e-5)
    square = emulate(lower.lower(make_request("TPOWS", (2, 64), "f32", scalar=2), strategy), {"src": base})
    assert square[0, :4] == pytest.approx([4.0, 0.25, 9.0, 1.0], rel=1e-5)
    assert np.all(emulate(lower.lower(make_request("TPOWS", (2, 64), "f32", scalar=0), strategy), {"src": base}) == 1.0)


def test_tpow_sign_fix_per_element():
    base = np.full((1, 64), -2.0, np.float32)
    expo = np.tile(np.array([1, 2, 3, -1, 0.5, 4, -2, 5], np.float32), 8)[None, :]
    got = emulate(lower.lower(make_request("TPOW", (1, 64), "f32"), "1LNorm"), {"src0": base, "src1": expo})
    want = [-2.0, 4.0, -8.0, -0.5, np.sqrt(2.0), 16.0, 0.25, -32.0]  # (-2)^0.5: the NPU path gives |b|^e (isa.md §4)
    assert got[0, :8] == pytest.approx(want, rel=1e-5)


def test_integer_tdivs_strategies_and_exactness_limits():
    req = make_request("TDIVS", (1, 32), "i16", scalar=3)
    default, _ = lower.strategies(req)
    assert default == "ScalarLoop" and set(lower.legal_strategies(req)) == {"ScalarLoop", "ViaFloat"}
    a = np.zeros((1, 32), np.int16)
    a[0, :6] = [-7, 7, 2047, 2049, 32767, -32768]
    loop = emulate(lower.lower(req, "ScalarLoop"), {"src": a})
    via = emulate(lower.lower(req, "ViaFloat"), {"src": a})
    assert loop[0, :6].tolist() == [-2, 2, 682, 683, 10922, -10922]  # C truncation toward zero
    # Through f16 (isa.md §4): exact while |a| < 2^11; 2049 rounds to 2048 and 32767 to 32768 on conversion,
    # 32768/3 rounds to 10920 in f16.
    assert via[0, :6].tolist() == [-2, 2, 682, 682, 10920, -10920]
    b = np.zeros((1, 16), np.int32)
    b[0, :3] = [-7, 2**24 - 1, 2**31 - 1]
    via32 = emulate(lower.lower(make_request("TDIVS", (1, 16), "i32", scalar=3), "ViaFloat"), {"src": b})
    assert via32[0, :2].tolist() == [-2, 5592405]  # exact below 2^24
    assert via32[0, 2] != (2**31 - 1) // 3  # 2^31-1 is not an f32: the float path is off by rounding


def test_integer_trecip_is_tdivs_one_over_src():
    req = make_request("TRECIP", (1, 16), "i32")
    assert lower.strategies(req)[0] == "ScalarLoop"
    a = np.zeros((1, 16), np.int32)
    a[0, :5] = [1, -1, 2, -3, 100]
    for name in ("ScalarLoop", "ViaFloat"):
        assert emulate(lower.lower(req, name), {"src": a})[0, :5].tolist() == [1, -1, 0, 0, 0]


def test_in_place_binary_ops_write_dst_over_src0_as_on_a5():
    for arch in ("a2a3", "a5"):
        plan = lower.lower(make_request("TADD", (8, 64), "f32", arch=arch, in_place=True))
        assert plan.buffer("dst").offset == plan.buffer("src0").offset != plan.buffer("src1").offset
        assert verify(plan).ok
    with pytest.raises(ParamError, match="writes dst before it has finished reading src0"):
        lower.legal_strategies(make_request("TPOW", (4, 64), "f32", in_place=True))


def test_in_place_tdivs_multiplies_by_the_reciprocal():
    plan = lower.lower(make_request("TDIVS", (16, 64), "f32", scalar=4.0, in_place=True))
    assert plan.buffer("dst").offset == plan.buffer("src").offset
    calls = [i for i in plan.body if isinstance(i, VecOp)]
    assert [c.intrinsic for c in calls] == ["vmuls"] and calls[0].scalar == 0.25
    with pytest.raises(ParamError):  # s / src cannot broadcast s into dst before src is read
        lower.legal_strategies(make_request("TDIVS", (16, 64), "f32", scalar=4.0, in_place=True, order="scalar_tile"))


def test_b8_bitwise_ops_run_on_b16_lanes():
    plan = lower.lower(make_request("TANDS", (4, 64), "u8", valid=(4, 62), scalar=0x0F), "2LNormRowRpt")
    dup = next(i for i in plan.body if isinstance(i, VecOp) and i.intrinsic == "vector_dup")
    assert dup.dtype == "u16" and dup.scalar == 0x0F0F
    masks = [i for i in plan.body if isinstance(i, SetVectorMask)]
    assert masks[0].lo == (1 << 31) - 1  # 62 bytes = 31 b16 lanes
    with pytest.raises(ShapeError):
        lower.legal_strategies(make_request("TNOT", (4, 64), "i8", valid=(4, 61)))


def test_trsqrt_three_argument_form_reads_a_ones_block():
    plan = lower.lower(make_request("TRSQRT", (8, 64), "f32"), "HighPrecision")
    assert plan.buffer("tmp").nbytes == 32
    divs = [i for i in plan.body if isinstance(i, VecOp) and i.intrinsic == "vdiv"]
    assert len(divs) == 8 and all(d.srcs[0].blk_stride == 0 and d.srcs[0].rep_stride == 0 for d in divs)
    assert verify(plan).ok is True


# --- the checker must be able to fail ----------------------------------------------------------------------------

def _base_plan():
    return lower.lower(make_request("TMINS", (16, 200), "f32", valid=(16, 190)), "2LNormRowRpt")


def test_broken_repeat_stride_is_not_verified():
    plan = _base_plan()
    assert verify(plan).ok is True
    i = next(k for k, ins in enumerate(plan.body) if isinstance(ins, VecOp))
    bad = plan.body[i]
    bad = dataclasses.replace(bad, dst=dataclasses.replace(bad.dst, rep_stride=bad.dst.rep_stride - 1))
    broken = dataclasses.replace(plan, body=plan.body[:i] + (bad,) + plan.body[i + 1:])
    assert verify(broken).ok is False


def test_missing_masked_tail_call_is_not_verified():
    plan = _base_plan()
    last = max(k for k, ins in enumerate(plan.body) if isinstance(ins, VecOp))
    broken = dataclasses.replace(plan, body=plan.body[:last] + plan.body[last + 1:])
    v = verify(broken)
    assert v.ok is False and v.mismatches


def test_unmasked_tail_clobbering_padding_is_not_verified():
    plan = _base_plan()
    body = tuple(i for i in plan.body if not (isinstance(i, SetVectorMask) and i.lo != (1 << 64) - 1))
    v = verify(dataclasses.replace(plan, body=body))
    assert v.ok is False and any(m[0] == "dst outside valid" for m in v.mismatches)


def test_dropped_step_of_a_sequence_is_not_verified():
    plan = lower.lower(make_request("TFMODS", (32, 64), "f32", scalar=3.0))
    body = tuple(i for i in plan.body if not (isinstance(i, VecOp) and i.intrinsic.startswith("vconv")))
    assert len(body) < len(plan.body)
    assert verify(dataclasses.replace(plan, body=body)).ok is False


def test_every_intrinsic_kind_in_the_table_has_an_executor():
    # one dispatch table: each kind of data/a2a3_intrinsics.csv (elementwise, compare, select, brcb, block and
    # whole-repeat reductions) maps to the function that executes it
    kinds = {kind for kind, _ in emu.intrinsic_table().values()}
    assert {"unary", "binary", "convert", "compare", "select", "brcb", "block_reduce", "whole_reduce"} <= kinds
    assert kinds <= set(emu.KIND_HANDLERS)


def test_an_in_place_estimate_says_in_place_is_not_priced_differently():
    from costmodel import api

    out_of_place = api.estimate("TSQRT", (64, 64), "f32")
    in_place = api.estimate("TSQRT", (64, 64), "f32", in_place=True)
    assert in_place.cycles == out_of_place.cycles  # the same intrinsics
    assert any("in place is priced like the out-of-place plan" in n for n in in_place.notes)
    assert not any("in place" in n for n in out_of_place.notes)


@pytest.mark.parametrize("op", ["TMINS", "TADDS", "TADD", "TEXP"])
@pytest.mark.parametrize("shape", [(64, 64), (16, 256), (256, 128), (2, 4096), (1, 3600)])
def test_the_default_modes_note_says_why_and_what_a_static_valid_shape_would_emit(op, shape):
    """An estimate notes the §6 rule behind its default mode; where it says a static valid shape would emit
    another mode, that is the mode the same request with a static valid shape picks."""
    from costmodel import estimate

    e = estimate(op, shape, "f16", verify=False)
    (why,) = [n for n in e.notes if "costmodel.md §6" in n]
    assert why.startswith(f"{e.strategy} by costmodel.md §6: ")
    if "declared dynamic" in why:
        static = estimate(op, shape, "f16", static_valid=True, verify=False)
        assert why.endswith(f"with a static valid shape the kernel emits {static.strategy}")
        assert static.strategy != e.strategy
    forced = next(s for s in lower.legal_strategies(e.request) if s != e.strategy)
    other = estimate(op, shape, "f16", strategy=forced, verify=False)
    assert any(n.startswith(f"{forced} as asked; the default would be {e.strategy} by costmodel.md §6")
               for n in other.notes)


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_taxpy_reads_two_tiles_a_repeat_and_is_priced_so(dtype):
    """costmodel.md §5 gives vaxpy the binary class's 2 cycles a repeat: it reads src0 and dst as vadd reads two tiles,
    so TAXPY (one vaxpy) grows with the repeats as TADD does and never costs less than TMULS, which reads one tile
    with the same scalar (QA 52: priced with the tile-scalar ops, TAXPY f32 16x200 sat 18 % below TMULS)."""
    from costmodel import estimate

    def cycles(op, shape, **kw):
        return estimate(op, shape, dtype, verify=False, **kw).cycles

    for shape in ((64, 64), (16, 208), (8, 512), (1, 1024), (128, 128)):
        assert cycles("TAXPY", shape, scalar=0.5) >= cycles("TMULS", shape, scalar=0.5), shape
    rise = {op: cycles(op, (128, 128), **kw) - cycles(op, (64, 128), **kw)
            for op, kw in (("TAXPY", {"scalar": 0.5}), ("TADD", {}), ("TMULS", {"scalar": 0.5}))}
    assert abs(rise["TAXPY"] - rise["TADD"]) < abs(rise["TAXPY"] - rise["TMULS"])
