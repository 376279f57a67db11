"""TCVT parameters and numerics are one rule on both arches (isa.md §4.4): the same request parameters, the same
golden, and both emulators agree with it on the pairs the arches share."""
import numpy as np
import pytest

from costmodel import lower
from costmodel.catalog import instruction
from costmodel.conversions import conversion, modelled
from costmodel.emulate import a2a3, a5
from costmodel.golden import golden
from costmodel.operands import make_request

TCVT = instruction("TCVT")
SHARED_PAIRS = [p for p in TCVT.dtypes_on("a2a3") if p in TCVT.dtypes_on("a5") and modelled(*p.split(">"))]


@pytest.mark.parametrize("pair", SHARED_PAIRS)
def test_both_arches_build_the_same_tcvt_parameters(pair):
    src, dst = pair.split(">")
    modes = [None, "none", *conversion(src, dst).modes]
    for mode in modes:
        for sat in (None, "on", "off", "SAT_OFF"):
            a, b = (make_request("TCVT", "2x64", src, arch=arch, dst_dtype=dst, round_mode=mode, saturation=sat)
                    for arch in ("a2a3", "a5"))
            assert a.params == b.params, (pair, mode, sat)


@pytest.mark.parametrize("pair, mode, sat", [("f32>f32", "rint", "on"), ("f32>i32", "trunc", "on"),
                                             ("i32>f32", "rint", "on"), ("f16>i8", "trunc", "off"),
                                             ("bf16>fp4_e2m1", "rint", "on"), ("f32>fp8_e4m3", "rint", "on")])
def test_none_stands_for_the_npu_default(pair, mode, sat):
    # isa.md §4.4: CAST_NONE is `r` for float targets and `z` for float -> integer; the default saturation per pair
    src, dst = pair.split(">")
    req = make_request("TCVT", "1x128", src, arch="a5", dst_dtype=dst)
    assert (req.param("round_mode"), req.param("saturation")) == (mode, sat)


@pytest.mark.parametrize("value", ["0", "1", 0, 1, " 1 "])
def test_a_numeric_saturation_mode_is_refused_as_ambiguous(value):
    # isa.md §4.4: SaturationMode {ON=0, OFF=1}, the reverse of a 0/1 flag
    from costmodel.errors import ParamError

    with pytest.raises(ParamError, match="ambiguous.*accepted: on, off"):
        make_request("TCVT", "1x64", "f32", dst_dtype="i16", saturation=value)
    for word, sat in (("ON", "on"), ("SaturationMode::OFF", "off"), ("yes", "on")):
        assert make_request("TCVT", "1x64", "f32", dst_dtype="i16", saturation=word).param("saturation") == sat


def test_f32_to_f32_rounds_to_an_integral_value_on_both_arches():
    x = np.zeros((1, 64), np.float32)
    x[0, :5] = [2.5, -0.5, 7.25, 3.5, -2.75]
    want = {None: [2.0, -0.0, 7.0, 4.0, -3.0], "floor": [2.0, -1.0, 7.0, 3.0, -3.0], "odd": [3.0, -1.0, 7.0, 3.0, -3.0]}
    for mode, expected in want.items():
        assert golden("TCVT", x, dst_dtype="f32", round_mode=mode)[0, :5].tolist() == expected
        for arch, emu in (("a2a3", a2a3), ("a5", a5)):
            plan = lower.lower(make_request("TCVT", "1x64", "f32", arch=arch, dst_dtype="f32", round_mode=mode))
            _, after, *_ = emu.run(plan, {"src": x, "dst": np.zeros_like(x)})
            d = plan.buffer("dst")
            got = after.tile(d.offset, d.tile)[0, :5]
            assert got.tolist() == expected and np.signbit(got[1]), (arch, mode)


def test_float_targets_take_the_mode_on_both_arches():
    # 1 + 2**-11 is an exact f16 tie, 1 + 2**-11 + 2**-13 lies above it: floor/ceil/round/rint differ (isa.md §9.6)
    x = np.zeros((1, 64), np.float32)
    x[0, :2] = [1 + 2**-11, 1 + 2**-11 + 2**-13]
    want = {"floor": [1.0, 1.0], "ceil": [1 + 2**-10] * 2, "rint": [1.0, 1 + 2**-10], "round": [1 + 2**-10] * 2}
    for mode, expected in want.items():
        for arch, emu in (("a2a3", a2a3), ("a5", a5)):
            plan = lower.lower(make_request("TCVT", "1x64", "f32", arch=arch, dst_dtype="f16", round_mode=mode))
            _, after, *_ = emu.run(plan, {"src": x, "dst": np.zeros((1, 64), np.float16)})
            d = plan.buffer("dst")
            assert after.tile(d.offset, d.tile)[0, :2].astype(np.float64).tolist() == expected, (arch, mode)


def test_integer_sources_round_to_float_targets_with_the_mode():
    # 2**24 + 1 lies between two f32 values; A5 takes any mode (inferred), A2/A3 i32>f32 rounds to nearest only
    x = np.zeros((1, 64), np.int32)
    x[0, :2] = [2**24 + 1, -(2**24 + 1)]
    got = {m: golden("TCVT", x, dst_dtype="f32", round_mode=m)[0, :2].tolist() for m in ("rint", "floor", "ceil", "trunc")}
    assert got == {"rint": [2**24, -2**24], "floor": [2**24, -2**24 - 2], "ceil": [2**24 + 2, -2**24],
                   "trunc": [2**24, -2**24]}
    plan = lower.lower(make_request("TCVT", "1x64", "i32", arch="a5", dst_dtype="f32", round_mode="ceil"))
    _, after, _ = a5.run(plan, {"src": x, "dst": np.zeros((1, 64), np.float32)})
    assert after.tile(plan.buffer("dst").offset, plan.buffer("dst").tile)[0, :2].tolist() == got["ceil"]


def _pairs():
    import csv
    from pathlib import Path

    rows = csv.DictReader(open(Path(__file__).resolve().parent.parent / "data" / "a5_convert.csv"))
    return sorted({(r["src"], r["dst"]) for r in rows})


@pytest.mark.parametrize("pair", _pairs())
def test_a_conversion_called_exact_is_one_no_round_mode_changes(pair):
    """`exact` (a round mode rounds nothing) holds where every mode converts the same values alike; a pair it calls
    inexact has some value that floor and ceil take apart."""
    from costmodel.conversions import exact
    from costmodel.dtypes import dtype as as_dtype
    from costmodel.golden.convert import convert, finite_range

    src, dst = (as_dtype(t) for t in pair)
    if not (src.emulatable and dst.emulatable):
        assert not exact(*pair)
        return
    rng = np.random.default_rng(7)
    lo, hi = finite_range(src)
    raw = np.concatenate([rng.uniform(lo, hi, 2000), rng.uniform(-3, 3, 2000), rng.normal(0, 1e-3, 500)])
    if src.is_integer:
        raw = np.round(raw)
    values = np.clip(raw, lo, hi).astype(src.np)
    out = {m: convert(values, src, dst, m).tobytes() for m in ("rint", "floor", "ceil", "trunc", "round", "odd")}
    if exact(*pair):
        assert len(set(out.values())) == 1, pair
    elif not dst.is_integer:
        assert out["floor"] != out["ceil"], pair


def test_tcvt_plans_say_what_their_modes_leave_unknown():
    odd = lower.lower(make_request("TCVT", "4x64", "f32", arch="a5", dst_dtype="f16", round_mode="odd",
                                   saturation="off"))
    assert any("round=odd as the CPU reference defines CAST_ODD" in n for n in odd.notes)
    assert any("this round=odd and saturation off program issues the same vcvt" in n for n in odd.notes)
    for arch, dst, mode in (("a5", "f16", "none"), ("a5", "f16", "rint"), ("a2a3", "f16", "odd"), ("a5", "f32", "floor")):
        plan = lower.lower(make_request("TCVT", "4x64", "f32" if dst != "f32" else "f16", arch=arch, dst_dtype=dst,
                                        round_mode=mode))
        assert not any("measured A5 TCVT rows" in n for n in plan.notes), (arch, dst, mode)
        assert any("CAST_ODD" in n for n in plan.notes) == (mode == "odd"), (arch, dst, mode)
