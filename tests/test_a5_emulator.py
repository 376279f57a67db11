"""A5 VF emulator: every strategy of every family agrees with the semantics; TCVT rounding and saturation."""
import functools
from dataclasses import replace
from decimal import ROUND_CEILING, ROUND_DOWN, ROUND_FLOOR, ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import costmodel
from costmodel import lower
from costmodel.catalog import instruction
from costmodel.dtypes import dtype as as_dtype
from costmodel.emulate import a5 as emu
from costmodel.emulate.verify import compare, make_inputs, verify
from costmodel.errors import NotModelledError, ParamError
from costmodel.golden import golden
from costmodel.golden.convert import convert
from costmodel.isa_a5 import (Affine, Addr, Loop, Plt, PostAddr, Pset, PtrAdd, SetPtr, SetScalar, VfProgram, Vlds,
                               VOp, Vsts)
from costmodel.operands import make_request

SETTINGS = settings(max_examples=40, deadline=None)
OPS = {
    "unary": ["TABS", "TNEG", "TEXP", "TLOG", "TSQRT", "TRSQRT", "TRECIP", "TRELU", "TNOT"],
    "binary": ["TADD", "TSUB", "TMUL", "TDIV", "TMAX", "TMIN", "TAND", "TOR", "TXOR", "TSHL", "TSHR", "TPRELU",
               "TSUBRELU", "TFMOD", "TREM", "TPOW"],
    "binary_scalar": ["TADDS", "TSUBS", "TMULS", "TDIVS", "TMAXS", "TMINS", "TANDS", "TORS", "TXORS", "TSHLS",
                      "TSHRS", "TLRELU", "TFMODS", "TREMS", "TPOWS"],
    "partial": ["TPARTADD", "TPARTMAX", "TPARTMIN", "TPARTMUL"],
    "col_expand": ["TCOLEXPAND"],
    "col_expand_binary": ["TCOLEXPANDADD", "TCOLEXPANDSUB", "TCOLEXPANDMUL", "TCOLEXPANDDIV", "TCOLEXPANDMAX",
                          "TCOLEXPANDMIN", "TCOLEXPANDEXPDIF"],
    "row_expand": ["TROWEXPAND"],
    "row_expand_binary": ["TROWEXPANDADD", "TROWEXPANDSUB", "TROWEXPANDMUL", "TROWEXPANDDIV", "TROWEXPANDMAX",
                          "TROWEXPANDMIN", "TROWEXPANDEXPDIF"],
    "compare_select": ["TSEL", "TSELS"],
    "ternary": ["TMULADDDST", "TFUSEDMULADDRELU"],
    "tile_scalar_tile": ["TADDSC", "TSUBSC"],
    "fused_scalar": ["TAXPY"],
    "scalar_broadcast": ["TEXPANDS"],
}
NUMPY_OP = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _div(a, b):
    if np.issubdtype(a.dtype, np.integer):
        q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
        return (np.sign(a.astype(np.int64)) * np.sign(b.astype(np.int64)) * q).astype(a.dtype)
    return (a.astype(np.float64) / b.astype(np.float64)).astype(a.dtype)


def _apply(kernel, a, b):
    if kernel == "copy":
        return a
    if kernel == "div":
        return _div(a, b)
    if kernel == "expdif":
        return np.exp((a - b).astype(a.dtype).astype(np.float64)).astype(a.dtype)
    with np.errstate(all="ignore"):
        return NUMPY_OP[kernel](a, b).astype(a.dtype)


def reference(req, inputs):
    """Independent numpy statement of isa.md §4.1 (TPART*) and §4.2 (col / row expand) over the dst valid region."""
    kernel = instruction(req.op).kernel
    vr, vc = req.dst.valid
    out = inputs["dst"].copy()
    if req.family == "partial":
        s0, s1 = inputs["src0"], inputs["src1"]
        (r0, c0), (r1, c1) = req.tile("src0").valid, req.tile("src1").valid
        for i in range(vr):
            for j in range(vc):
                in0, in1 = i < r0 and j < c0, i < r1 and j < c1
                if in0 and in1:
                    out[i, j] = _apply(kernel, s0[i:i + 1, j:j + 1], s1[i:i + 1, j:j + 1])[0, 0]
                elif in0 or in1:
                    out[i, j] = (s0 if in0 else s1)[i, j]
        return out
    if req.family == "col_expand":
        out[:vr, :vc] = inputs["src"][0, :vc]
    elif req.family == "col_expand_binary":
        out[:vr, :vc] = _apply(kernel, inputs["src0"][:vr, :vc], np.broadcast_to(inputs["src1"][0, :vc], (vr, vc)))
    elif req.family == "row_expand":
        out[:vr, :vc] = np.broadcast_to(inputs["src"][:vr, :1], (vr, vc))
    else:
        def operand(name):
            t = req.tile(name)
            cols = np.arange(vc) % t.valid_cols
            return inputs[name][:vr][:, cols]

        out[:vr, :vc] = _apply(kernel, operand("src0"), operand("src1"))
    return out


def emulate_against(plan, expected_fn, seed=0):
    """Run the plan; return (valid-region mismatches, changed elements outside the dst valid region)."""
    inputs = make_inputs(plan, seed)
    before, after, _ = emu.run(plan, inputs, seed)
    dst = plan.buffer("dst")
    got = after.tile(dst.offset, dst.tile)
    initial = before.tile(dst.offset, dst.tile)
    inputs = dict(inputs, dst=initial)
    want = expected_fn(plan.request, inputs)
    vr, vc = dst.tile.valid
    eps = 0.0 if dst.tile.dtype.is_integer else instruction(plan.op).eps
    bad = compare(got[:vr, :vc], want[:vr, :vc], eps)
    outside = np.ones(dst.tile.shape, dtype=bool)
    outside[:vr, :vc] = False
    size = got.dtype.itemsize
    changed = outside & (got.view(f"u{size}") != initial.view(f"u{size}"))
    return int(bad.sum()), int(changed.sum())


ALIGN_BITS = 256


@functools.cache
def _modelled(op: str) -> tuple[str, ...]:
    """The op's A5 dtypes with a VF lowering (TPOW's 8-bit and 16-bit float forms have none; TAXPY's are src>dst
    pairs of one type)."""
    return tuple(t.partition(">")[0] for t in costmodel.modelled_dtypes(op, "a5"))


@st.composite
def requests(draw, family, **extra):
    op = draw(st.sampled_from(OPS[family]))
    dt = as_dtype(draw(st.sampled_from(_modelled(op))))
    align = ALIGN_BITS // dt.bits
    epr = 2048 // max(dt.bits, 8)
    cols = align * draw(st.integers(1, max(1, 3 * epr // align)))
    kw = {}
    rows = draw(st.integers(1, 5))
    if family == "row_expand_binary":
        kw["expand_mode"] = draw(st.sampled_from([1, 2]))
        kw["expanded"] = draw(st.sampled_from(["src0", "src1"]))
        if kw["expand_mode"] == 1:
            rows = (ALIGN_BITS // dt.bits) * draw(st.integers(1, 2))
    vr, vc = draw(st.integers(1, rows)), draw(st.integers(1, cols))
    if family == "partial":
        inner = (draw(st.integers(0, vr)), draw(st.integers(0, vc)))
        kw["src0_valid" if draw(st.booleans()) else "src1_valid"] = inner
    if draw(st.booleans()) and vr == rows and vc == cols:
        kw["static_valid"] = True
    return make_request(op, (rows, cols), dt.name, arch="a5", valid=(vr, vc), **kw, **extra)


def legal_strategies(req):
    return [s for s, why in lower.strategies(req)[1].items() if why is None]


@pytest.mark.parametrize("family", ["unary", "binary", "binary_scalar", "ternary", "tile_scalar_tile", "fused_scalar",
                                    "scalar_broadcast"])
@SETTINGS
@given(data=st.data())
def test_elementwise_strategies_match_the_golden(family, data):
    req = data.draw(requests(family))
    for strategy in legal_strategies(req):
        v = verify(lower.lower(req, strategy), seed=3)
        assert v.ok, (req.describe(), strategy, v.note, v.mismatches[:4])


@pytest.mark.parametrize("family", ["unary", "binary", "binary_scalar"])
@SETTINGS
@given(data=st.data())
def test_in_place_strategies_overwrite_the_first_source_and_match_the_golden(family, data):
    req = data.draw(requests(family, in_place=True))
    for strategy in legal_strategies(req):
        plan = lower.lower(req, strategy)
        dst, first = plan.buffers[0], plan.buffers[1]
        assert first.offset == dst.offset and first.name in ("src", "src0")
        assert all(b.offset != dst.offset for b in plan.buffers[2:])
        v = verify(plan, seed=3)
        assert v.ok, (req.describe(), strategy, v.note, v.mismatches[:4])


def test_in_place_needs_a_source_of_the_destination_width():
    with pytest.raises(ParamError, match="in-place"):
        lower.lower(make_request("TCVT", (4, 64), "f32", arch="a5", dst_dtype="f16", in_place=True))


@pytest.mark.parametrize("family", ["partial", "col_expand", "col_expand_binary", "row_expand", "row_expand_binary"])
@SETTINGS
@given(data=st.data())
def test_partial_and_expand_strategies_match_the_semantics(family, data):
    req = data.draw(requests(family))
    for strategy in legal_strategies(req):
        plan = lower.lower(req, strategy)
        assert emulate_against(plan, reference) == (0, 0), (req.describe(), strategy)
        v = verify(plan, seed=3)
        assert v.ok, (req.describe(), strategy, v.note, v.mismatches[:4])


@SETTINGS
@given(data=st.data())
def test_value_and_index_part_ops_pick_pairs_like_the_golden(data):
    """TPARTARGMAX/MIN: both outputs (values and indices) checked against the golden, with the full source either
    one, over random regions including tails; ties go to src1 (small integer-valued data makes them common)."""
    op = data.draw(st.sampled_from(["TPARTARGMAX", "TPARTARGMIN"]))
    dt = data.draw(st.sampled_from(["f16", "f32"]))
    idx = data.draw(st.sampled_from(["i16", "u16", "i32", "u32"]))  # of another width: 64 pairs a chunk
    narrow = min(int(dt[1:]), int(idx[1:])) // 8
    epr = 2048 // max(int(dt[1:]), int(idx[1:]))
    rows, cols = data.draw(st.integers(1, 5)), (32 // narrow) * data.draw(st.integers(1, 2 * epr // 8))
    vr, vc = data.draw(st.integers(1, rows)), data.draw(st.integers(1, cols))
    inner = (data.draw(st.integers(0, vr)), data.draw(st.integers(0, vc)))
    side = data.draw(st.sampled_from(["src0_valid", "src1_valid"]))
    req = make_request(op, (rows, cols), dt, arch="a5", valid=(vr, vc), idx_dtype=idx, **{side: inner})
    for strategy in legal_strategies(req):
        v = verify(lower.lower(req, strategy), seed=data.draw(st.integers(0, 3)))
        assert v.ok and "dst_idx" in v.note, (req.describe(), strategy, v.note, v.mismatches[:4])


def test_a_float_modulo_that_departs_from_the_golden_says_why():
    """isa.md §4: a - trunc(a/b)*b with a rounded quotient is not exact fmod (a divisor like 0.3); verify says so."""
    v = verify(lower.lower(make_request("TFMODS", "8x64", "f32", arch="a5", scalar=0.3)), seed=0)
    assert not v.ok and "known divergence" in v.note and "isa.md §4" in v.note
    v = verify(lower.lower(make_request("TADD", "8x64", "f32", arch="a5")), seed=0)
    assert v.ok and "divergence" not in v.note


def test_value_and_index_part_ops_take_indices_of_any_width_on_a5_only():
    """isa.md §3: A5 lists f16 and f32 values with i16/u16/i32/u32 indices; A2/A3 pairs f32 with 32-bit indices."""
    plan = lower.lower(make_request("TPARTARGMAX", "4x64", "f16", arch="a5", idx_dtype="i32"))
    assert plan.body[0].epr == 64  # the 16-bit values are unpacked into the indices' 32-bit lanes
    with pytest.raises(ParamError, match="i32/u32"):
        make_request("TPARTARGMAX", "4x64", "f32", idx_dtype="i16")
    assert costmodel.modelled_dtypes("TPARTARGMAX", "a5") == ("f16", "f32")


@SETTINGS
@given(data=st.data())
def test_tsel_with_full_range_masks(data):
    req = data.draw(requests("compare_select"))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    for strategy in legal_strategies(req):
        plan = lower.lower(req, strategy)
        inputs = make_inputs(plan, 1)
        inputs["mask"] = rng.integers(0, 256, size=req.tile("mask").shape, dtype=np.uint8)
        before, after, _ = emu.run(plan, inputs, 1)
        dst = plan.buffer("dst")
        got = after.tile(dst.offset, dst.tile)
        srcs = [inputs[n] for n, _ in req.sources]  # TSEL (src0, src1, mask), TSELS (src, mask) and its scalar
        want = golden(req.op, *srcs, valid=req.dst.valid, out=before.tile(dst.offset, dst.tile), **dict(req.params))
        assert got.tobytes() == want.tobytes(), (req.describe(), strategy)


def test_tsel_row_layout_equals_the_cpu_stream_when_rows_are_whole_bytes():
    rng = np.random.default_rng(5)
    mask = rng.integers(0, 256, size=(4, 32), dtype=np.uint8)
    a, b = rng.normal(size=(4, 64)).astype(np.float32), rng.normal(size=(4, 64)).astype(np.float32)
    row = golden("TSEL", a, b, mask, valid=(4, 64))
    stream = golden("TSEL", a, b, mask, valid=(4, 64), mask_layout="stream")
    assert np.array_equal(row, stream)
    assert row[0, 0] == (a[0, 0] if mask[0, 0] & 1 else b[0, 0])
    assert row[1, 9] == (a[1, 9] if mask[1, 1] & 2 else b[1, 9])


# TCVT ---------------------------------------------------------------------------------------------------------

VERIFIABLE_PAIRS = [t.split(">") for t in instruction("TCVT").dtypes_on("a5")
                    if not ({"hif8", "fp4_e1m2"} & set(t.split(">")))]
MODES = ["none", "rint", "round", "floor", "ceil", "trunc", "odd"]


def tcvt_inputs(src, dst, shape, rng):
    s, d = as_dtype(src), as_dtype(dst)
    if s.is_integer:
        info = np.iinfo(s.np)
        return rng.integers(int(info.min), int(info.max) + 1, size=shape, dtype=np.int64).astype(s.np)
    top = float(ml_dtypes.finfo(s.np).max)
    span = min(top, 1.5 * (float(np.iinfo(d.np).max) if d.is_integer else float(ml_dtypes.finfo(d.np).max)))
    halves = np.round(rng.uniform(-span, span, size=shape) * 2) / 2  # many exact .5 ties
    spread = rng.uniform(-span, span, size=shape)
    return np.where(rng.random(shape) < 0.5, halves, spread).astype(s.np)


@settings(max_examples=60, deadline=None)
@given(pair=st.sampled_from(VERIFIABLE_PAIRS), mode=st.sampled_from(MODES), sat=st.sampled_from(["on", "off"]),
       rows=st.integers(1, 3), units=st.integers(1, 6), data=st.data())
def test_tcvt_emulation_matches_the_golden_for_every_pair_mode_and_saturation(pair, mode, sat, rows, units, data):
    src, dst = pair
    cols = 64 * units
    vr, vc = data.draw(st.integers(1, rows)), data.draw(st.integers(1, cols))
    req = make_request("TCVT", (rows, cols), src, arch="a5", dst_dtype=dst, valid=(vr, vc), round_mode=mode, saturation=sat)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    for strategy in legal_strategies(req):
        plan = lower.lower(req, strategy)
        inputs = make_inputs(plan, 2)
        inputs["src"] = tcvt_inputs(src, dst, (rows, cols), rng)
        before, after, _ = emu.run(plan, inputs, 2)
        d = plan.buffer("dst")
        got = after.tile(d.offset, d.tile)
        want = golden("TCVT", inputs["src"], valid=(vr, vc), dst_dtype=dst, round_mode=mode, saturation=sat,
                      out=before.tile(d.offset, d.tile))
        assert got.tobytes() == want.tobytes(), (pair, mode, sat, strategy)


def _wrapping_plt(st, ins):
    """plt with a uint32 counter that wraps below zero (the alternative isa.md §7.2 leaves open)."""
    lanes = emu.VL * 8 // ins.bits
    n = int(st.s[ins.counter]) % 2**32
    pred = np.zeros(emu.VL, dtype=bool)
    pred[:min(n, lanes) * ins.bits // 8] = True
    st.p[ins.dst] = pred
    st.s[ins.counter] = (n - lanes) % 2**32


@settings(max_examples=40, deadline=None)
@given(op=st.sampled_from([("TCVT", "f32", "f16"), ("TCVT", "f16", "f32"), ("TCVT", "f32", "fp8_e4m3"),
                           ("TADD", "f32", ""), ("TEXP", "f16", ""), ("TROWSUM", "f32", "")]),
       rows=st.integers(1, 3), units=st.integers(1, 5), data=st.data())
def test_a_plan_not_flagged_as_relying_on_plt_saturation_runs_the_same_with_a_wrapping_counter(op, rows, units, data):
    name, src, dst = op
    cols = 64 * units
    valid = (data.draw(st.integers(1, rows)), data.draw(st.integers(1, cols)))
    req = make_request(name, (rows, cols), src, arch="a5", valid=valid, **({"dst_dtype": dst} if dst else {}))
    for strategy in legal_strategies(req):
        plan = lower.lower(req, strategy)
        inputs = make_inputs(plan, 3)
        _, saturating, read_spent = emu.run(plan, inputs, 3)
        with pytest.MonkeyPatch.context() as m:
            m.setattr(emu, "_plt", _wrapping_plt)
            _, wrapping, _ = emu.run(plan, inputs, 3)
        if not read_spent:
            assert np.array_equal(saturating.bytes, wrapping.bytes), (op, valid, strategy)


def test_a_tcvt_tail_that_reads_a_spent_counter_says_it_assumes_plt_saturates():
    tail = costmodel.estimate("TCVT", "1x128", "f32", arch="a5", dst_dtype="f16", valid="1x20",
                              strategy="2d-no-post-update")
    full = costmodel.estimate("TCVT", "1x128", "f32", arch="a5", dst_dtype="f16", strategy="2d-no-post-update")
    assert tail.verified and "plt stops its counter at 0" in tail.verify_note
    assert full.verified and "plt stops its counter at 0" not in full.verify_note


DECIMAL_MODE = {"rint": ROUND_HALF_EVEN, "round": ROUND_HALF_UP, "floor": ROUND_FLOOR, "ceil": ROUND_CEILING,
                "trunc": ROUND_DOWN, "none": ROUND_DOWN}


def decimal_round(x: float, mode: str) -> int:
    d = Decimal(float(x))
    if mode == "odd":
        lo = int(d.to_integral_value(ROUND_FLOOR))
        if d - lo == Decimal("0.5"):
            return lo if lo % 2 else lo + 1
        return int(d.to_integral_value(ROUND_HALF_EVEN))
    return int(d.to_integral_value(DECIMAL_MODE[mode]))


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.one_of(st.floats(-200, 200, width=32), st.integers(-200, 200).map(lambda v: v + 0.5)),
                       min_size=1, max_size=40),
       mode=st.sampled_from(MODES))
def test_float_to_int_rounding_agrees_with_decimal_arithmetic(values, mode):
    x = np.array(values, dtype=np.float32)
    got = convert(x, "f32", "i32", mode, saturate=True)
    assert got.tolist() == [decimal_round(v, mode) for v in x.tolist()]


def test_saturation_clamps_on_and_wraps_off():
    f16 = np.array([300.0, -300.0, 127.6, -128.6], dtype=np.float16)
    assert convert(f16, "f16", "i8", "rint", saturate=True).tolist() == [127, -128, 127, -128]
    assert convert(f16[:1], "f16", "i8", "trunc", saturate=False).tolist() == [44]  # isa.md §4.4: 300.0 -> 44
    assert convert(np.array([1e10], np.float32), "f32", "i16", "none", saturate=False).tolist() == [-1]  # via s32 0x7fffffff
    assert convert(np.array([70000], np.int32), "i32", "i16", "none", saturate=True).tolist() == [32767]
    assert convert(np.array([70000], np.int32), "i32", "i16", "none", saturate=False).tolist() == [70000 - 65536]
    big = np.array([1e6, -1e6], dtype=np.float32)
    assert convert(big, "f32", "f16", "none", saturate=True).tolist() == [65504.0, -65504.0]
    assert np.isinf(convert(big, "f32", "f16", "none", saturate=False)).all()
    e4m3 = convert(np.array([500.0], np.float32), "f32", "fp8_e4m3", "none", saturate=True)
    assert float(e4m3[0]) == 448.0
    assert np.isnan(convert(np.array([500.0], np.float32), "f32", "fp8_e4m3", "none", saturate=False).astype(np.float32)).all()


@functools.cache
def finite_grid(to: str) -> tuple[np.ndarray, np.ndarray]:
    """(values, codes) of every finite non-negative value of a <= 16-bit float type, ascending (decoded by numpy)."""
    t = as_dtype(to)
    codes = np.arange(1 << (t.bits - 1), dtype=np.uint16 if t.bits == 16 else np.uint8)
    with np.errstate(invalid="ignore"):  # the NaN codes of fp8 e4m3
        values = codes.view(t.np).astype(np.float64)
    keep = np.isfinite(values)
    return values[keep], codes[keep]


def npu_round(x: float, to: str, mode: str) -> float:
    """Round x onto the grid of `to` by the isa.md §4.4 RoundMode definitions, in exact rational arithmetic."""
    values, codes = finite_grid(to)
    mag = Fraction(abs(x))
    i = int(np.searchsorted(values, float(mag), side="right")) - 1
    lo, hi = i, min(i + 1, len(values) - 1)
    if Fraction(values[lo]) == mag:
        pick = lo
    else:
        below, above = mag - Fraction(values[lo]), Fraction(values[hi]) - mag
        away = {"floor": x < 0, "ceil": x > 0, "trunc": False}.get(mode)
        if away is None:  # nearest; ties: even code (rint, none), away from zero (round), odd code (odd)
            tie_hi = {"round": True, "odd": codes[hi] % 2 == 1}.get(mode, codes[hi] % 2 == 0)
            away = above < below or (above == below and tie_hi)
        pick = hi if away else lo
    return float(np.copysign(values[pick], x))


@settings(max_examples=60, deadline=None)
@given(x=st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False), min_size=1, max_size=30),
       ties=st.lists(st.integers(0, 2**14), max_size=10),
       to=st.sampled_from(["f16", "bf16", "fp8_e4m3", "fp8_e5m2"]), mode=st.sampled_from(MODES))
def test_float_to_float_honours_the_round_mode(x, ties, to, mode):
    # The NPU honours RoundMode for float targets (isa.md §4.4, §9 item 6; the CPU reference would round to
    # nearest even whatever the mode). `ties` adds exact midpoints between neighbouring values of the target.
    values, _ = finite_grid(to)
    mids = [(values[k % (len(values) - 1)] + values[k % (len(values) - 1) + 1]) / 2 * (-1) ** k for k in ties]
    arr = np.array(x + mids, dtype=np.float32)
    top = float(ml_dtypes.finfo(as_dtype(to).np).max)
    got = convert(arr, "f32", to, mode, saturate=True).astype(np.float64)
    want = [npu_round(v, to, "rint" if mode == "none" else mode) for v in np.clip(arr, -top, top).astype(np.float64)]
    assert got.tolist() == want
    assert (np.signbit(got) == np.signbit(arr)).all()  # a zero result keeps the sign of its source


@pytest.mark.parametrize("x,mode,want", [
    (1.25, "rint", 1.0), (1.25, "round", 1.5), (1.25, "odd", 1.5), (2.5, "rint", 2.0), (2.5, "odd", 3.0),
    (5.0, "rint", 4.0), (5.0, "round", 6.0), (-1.2, "floor", -1.5), (-1.2, "ceil", -1.0), (5.9, "trunc", 4.0),
    (7.5, "rint", 6.0), (-0.2, "rint", -0.0), (0.3, "ceil", 0.5),
])
def test_fp4_e2m1_rounds_on_its_value_grid(x, mode, want):
    got = convert(np.array([x], dtype=ml_dtypes.bfloat16), "bf16", "fp4_e2m1", mode, saturate=True)
    assert float(got[0]) == want and np.signbit(float(got[0])) == np.signbit(want)


def test_fp4_twin_layout_low_nibble_is_the_even_element():
    from costmodel.emulate.ub import UnifiedBuffer
    from costmodel.tiles import Tile

    ub = UnifiedBuffer(64, np.random.default_rng(0))
    tile = Tile.make((1, 64), "fp4_e2m1")
    vals = np.zeros((1, 64), dtype=ml_dtypes.float4_e2m1fn)
    vals[0, 0], vals[0, 1] = 1.0, -6.0  # codes 0x2 and 0xF
    ub.load_tile(0, tile, vals)
    assert ub.bytes[0] == 0xF2
    assert np.array_equal(ub.tile(0, tile), vals)


@pytest.mark.parametrize("src,dst", [("f32", "hif8"), ("hif8", "f32"), ("bf16", "fp4_e1m2"), ("fp4_e1m2", "bf16")])
def test_hif8_and_fp4_e1m2_are_estimate_only(src, dst):
    plan = lower.lower(make_request("TCVT", "1x128", src, arch="a5", dst_dtype=dst))
    v = verify(plan)
    assert v.ok is None and "isa.md §2" in v.note
    with pytest.raises(NotModelledError):
        convert(np.zeros(2, np.float32), "f32", "hif8")


# high-precision reciprocal ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", ["f32", "f16"])
def test_high_precision_recip_is_correctly_rounded(dt):
    rng = np.random.default_rng(11)
    req = make_request("TRECIP", "2x128", dt, arch="a5", precision="high_precision", valid="2x100")
    plan = lower.lower(req)
    inputs = make_inputs(plan, 4)
    x = rng.uniform(0.01, 300.0, size=(2, 128)) * rng.choice([-1, 1], size=(2, 128))
    x[0, :8] = [1, 2, 0.5, -4, 8, 0.25, 1.5, 3]
    inputs["src"] = x.astype(as_dtype(dt).np)
    _, after, _ = emu.run(plan, inputs, 4)
    got = after.tile(plan.buffer("dst").offset, plan.buffer("dst").tile)[:, :100]
    want = (1.0 / inputs["src"].astype(np.float64)).astype(as_dtype(dt).np)[:, :100]
    assert got.tobytes() == want.tobytes()


# integer power -----------------------------------------------------------------------------------------------

def _wrapped_pow(b: int, e: int, bits: int, signed: bool) -> int:
    """b**e in a `bits`-wide integer: products wrap; a negative exponent truncates 1 / b**|e| toward zero."""
    if e < 0:
        return 0 if b == 0 else int(Fraction(1, b ** -e))
    v = b ** e % (1 << bits)
    return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v


@pytest.mark.parametrize("dt", ["i16", "u16", "i32", "u32"])
def test_integer_power_wraps_and_truncates_negative_exponents(dt):
    """isa.md §4: the integer path is an exact power loop; pow in double cast to T truncates 1/b^|e| (±1 for b = ±1,
    0 otherwise). Every exponent bit is walked, so exponents past the type's half width still wrap correctly."""
    t = as_dtype(dt)
    signed = dt.startswith("i")
    rng = np.random.default_rng(5)
    base = rng.integers(-6 if signed else 0, 7, size=(2, 128))
    expo = rng.integers(-3 if signed else 0, 2 * t.bits, size=(2, 128))
    base[0, :6], expo[0, :6] = [1, -1 if signed else 3, 0, 2, 3, 5], [-3 if signed else 9, 5, 4, t.bits - 1, 9, 13]
    req = make_request("TPOW", "2x128", dt, arch="a5", valid="2x120")
    for strategy in legal_strategies(req):
        plan = lower.lower(req, strategy)
        inputs = make_inputs(plan, 4) | {"src0": base.astype(t.np), "src1": expo.astype(t.np)}
        _, after, _ = emu.run(plan, inputs, 4)
        got = after.tile(plan.buffer("dst").offset, plan.buffer("dst").tile)[:, :120]
        want = [[_wrapped_pow(int(b), int(e), t.bits, signed) for b, e in zip(br, er)] for br, er in
                zip(base[:, :120], expo[:, :120])]
        assert got.astype(np.int64).tolist() == want, strategy


@pytest.mark.parametrize("scalar", [-1, 0, 7, 31])
def test_integer_power_by_a_scalar_matches_the_golden(scalar):
    req = make_request("TPOWS", "3x64", "i32", arch="a5", scalar=scalar, valid="3x50")
    for strategy in legal_strategies(req):
        v = verify(lower.lower(req, strategy), seed=scalar % 4)
        assert v.ok, (strategy, v.note)


# emulator semantics and broken programs ----------------------------------------------------------------------

def test_zeroing_and_predicated_stores():
    from costmodel.emulate.ub import UnifiedBuffer

    ub = UnifiedBuffer(1024, np.random.default_rng(1))
    ub.bytes[:256] = np.arange(64, dtype=np.float32).view(np.uint8)
    keep = ub.bytes[256:512].copy()
    prog = (SetScalar("s_n", 10), SetScalar("s1", 100.0, "f32"), Plt("p0", "s_n", 32), Pset("pall", 32),
            Vlds("v0", Addr("a", 32, Affine(0)), "f32"), VOp("vadds", "f32", "v1", ("v0",), "p0", "s1"),
            Vsts("v1", Addr("a", 32, Affine(128)), "f32", "NORM_B32", "pall"),
            Vsts("v1", Addr("a", 32, Affine(64)), "f32", "NORM_B32", "p0"))
    emu.execute(prog, emu.VfState({"a": 0}), ub)
    zeroed = ub.bytes[512:768].view(np.float32)
    assert zeroed[:10].tolist() == [100.0 + i for i in range(10)] and not zeroed[10:].any()
    assert np.array_equal(ub.bytes[256 + 40:512], keep[40:])  # lanes 10.. of the predicated store were not written


def test_post_update_pointers_and_loop_indices():
    from costmodel.emulate.ub import UnifiedBuffer

    ub = UnifiedBuffer(2048, np.random.default_rng(2))
    ub.bytes[:512] = np.arange(128, dtype=np.float32).view(np.uint8)
    body = (Plt("p0", "s_n", 32), Vlds("v0", Addr("a", 32, Affine(0, (("i", 64),))), "f32"),
            Vsts("v0", PostAddr("pd", 64), "f32", "NORM_B32", "p0"))
    prog = (SetScalar("s_n", 100), SetPtr("pd", "a", 32, 256), Loop("i", 2, body), PtrAdd("pd", 1))
    st_ = emu.VfState({"a": 0})
    emu.execute(prog, st_, ub)
    assert ub.bytes[1024:1024 + 400].view(np.float32).tolist() == list(range(100))
    assert st_.a["pd"] == ((256 + 128 + 1) * 32, 32)


def _mutate(plan, fn):
    prog = plan.body[0]
    return replace(plan, body=(replace(prog, body=fn(prog.body)),))


def _deep(body, fn):
    out = []
    for ins in body:
        if isinstance(ins, Loop):
            out.append(replace(ins, body=tuple(_deep(ins.body, fn))))
        else:
            out.extend(fn(ins))
    return tuple(out)


def test_broken_programs_are_reported_not_verified():
    req = make_request("TMINS", "16x200", "f32", arch="a5", valid="16x190")
    good = lower.lower(req, "2d-post-update")
    assert verify(good).ok
    no_tail_pred = _mutate(good, lambda b: _deep(b, lambda i: [replace(i, pred="p0_full")] if isinstance(i, Vsts) else [i]))
    v = verify(no_tail_pred)
    assert v.ok is False and any(m[0] == "dst outside valid" for m in v.mismatches)
    no_row_adjust = _mutate(good, lambda b: _deep(b, lambda i: [] if isinstance(i, PtrAdd) else [i]))
    assert verify(no_row_adjust).ok is False
    wrong_op = _mutate(good, lambda b: _deep(b, lambda i: [replace(i, op="vmaxs")] if isinstance(i, VOp) else [i]))
    assert verify(wrong_op).ok is False


def test_a5_plans_never_touch_bytes_outside_their_buffers():
    plan = lower.lower(make_request("TCVT", "3x256", "bf16", arch="a5", dst_dtype="fp4_e2m1", valid="3x201"))
    v = verify(plan, seed=9)
    assert v.ok, v.mismatches
    assert isinstance(plan.body[0], VfProgram)


def test_fp4_outputs_are_checked_nibble_by_nibble_under_the_check_spec():
    # An odd valid width puts the first padding element in the high nibble of the last valid byte: a store that
    # writes every lane changes padding (reported outside the valid region), a wrong round mode changes values.
    plan = lower.lower(make_request("TCVT", "2x128", "bf16", arch="a5", dst_dtype="fp4_e2m1", valid="2x101",
                                    round_mode="rint"))
    ok = verify(plan, seed=3)
    assert ok.ok and ok.note.startswith("2x101 elements match the golden (eps 0)")
    all_lanes = _mutate(plan, lambda b: _deep(b, lambda i: [replace(i, pred="p0_full")] if isinstance(i, Vsts) else [i]))
    v = verify(all_lanes, seed=3)
    assert v.ok is False and {m[0] for m in v.mismatches} == {"dst outside valid"}
    assert min(m[1][1] for m in v.mismatches) == 101
    trunc = _mutate(plan, lambda b: _deep(b, lambda i: [replace(i, attrs=tuple((k, "trunc" if k == "round" else a)
                                                                                for k, a in i.attrs))]
                                         if isinstance(i, VOp) else [i]))
    v = verify(trunc, seed=3)
    assert v.ok is False and {m[0] for m in v.mismatches} == {"dst"}
