"""A2/A3 TCVT: every modelled pair and strategy verifies; round modes, saturation and defaults by hand
(isa.md §4.4); the measured shapes' plans; errors for unmodelled pairs; a broken plan is reported."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from costmodel import lower
from costmodel.api import request
from costmodel.conversions import conversion
from costmodel.dtypes import dtype
from costmodel.emulate.verify import verify
from costmodel.errors import NotModelledError, ParamError
from costmodel.golden import golden
from costmodel.isa_a2a3 import SetSaturation

from .helpers_a2a3 import emulate, vec_ops

PAIRS = ["f32>f16", "f32>f32", "f32>bf16", "f32>i16", "f32>i32", "f32>i64", "f16>f32", "f16>i32", "f16>i16",
         "f16>i8", "f16>u8", "bf16>f32", "bf16>i32", "i16>f16", "i16>f32", "i32>f32", "i32>i16", "i32>i64",
         "i64>f32", "i64>i32", "u8>f16", "i8>f16"]
COL_UNIT = 32  # a multiple of 32 columns keeps every type's rows 32-byte aligned


@settings(max_examples=60, deadline=None)
@given(pair=st.sampled_from(PAIRS), rows=st.integers(1, 12), col_units=st.integers(1, 6),
       mode=st.sampled_from([None, "rint", "round", "floor", "ceil", "trunc", "odd"]),
       sat=st.sampled_from([None, "on", "off"]), data=st.data())
def test_every_pair_and_strategy_verifies(pair, rows, col_units, mode, sat, data):
    src, dst = pair.split(">")
    conv = conversion(src, dst)
    if mode is not None and mode not in conv.modes and (conv.rounds or conv.modes):
        mode = None
    cols = col_units * COL_UNIT
    vr = data.draw(st.integers(1, rows), label="vr")
    vc = data.draw(st.integers(1, cols), label="vc")
    req = request("TCVT", f"{rows}x{cols}", src, dst_dtype=dst, valid=f"{vr}x{vc}", round_mode=mode, saturation=sat)
    for s in lower.legal_strategies(req):
        v = verify(lower.lower(req, s), seed=rows + vc)
        assert v.ok is True, (s, v.note, v.mismatches[:3])


HALVES = np.array([0.5, -0.5, 1.5, -1.5, 2.5, -2.5], np.float32)
ROUNDED = {  # isa.md §4.4 RoundMode definitions applied by hand
    "rint": [0, 0, 2, -2, 2, -2],      # nearest, ties to even
    "round": [1, -1, 2, -2, 3, -3],    # nearest, ties away from zero
    "floor": [0, -1, 1, -2, 2, -3],
    "ceil": [1, 0, 2, -1, 3, -2],
    "trunc": [0, 0, 1, -1, 2, -2],
    "odd": [1, -1, 1, -1, 3, -3],      # nearest, exact ties to the odd neighbour
}


@pytest.mark.parametrize("mode", list(ROUNDED))
def test_round_modes_on_halves(mode):
    src = np.zeros((1, 64), np.float32)
    src[0, :6] = HALVES
    assert golden("TCVT", src, dst_dtype="i32", round_mode=mode)[0, :6].tolist() == ROUNDED[mode]
    plan = lower.lower(request("TCVT", "1x64", "f32", dst_dtype="i32", round_mode=mode))
    assert vec_ops(plan)[0].intrinsic == "vconv_f322s32" + {"rint": "r", "round": "a", "floor": "f", "ceil": "c",
                                                             "trunc": "z", "odd": "o"}[mode]
    assert emulate(plan, {"src": src})[0, :6].tolist() == ROUNDED[mode]


def test_saturation_300_to_int8():
    src = np.full((1, 32), 300.0, np.float16)
    on = lower.lower(request("TCVT", "1x32", "f16", dst_dtype="i8", saturation="on"))
    off = lower.lower(request("TCVT", "1x32", "f16", dst_dtype="i8", saturation="off"))
    assert emulate(on, {"src": src})[0, 0] == 127  # clamped
    assert emulate(off, {"src": src})[0, 0] == 44  # 300 - 256: the low 8 bits kept
    assert golden("TCVT", src, dst_dtype="i8", saturation="on")[0, 0] == 127
    assert golden("TCVT", src, dst_dtype="i8")[0, 0] == 44  # f16->i8 defaults to OFF (isa.md §4.4)
    # the OFF path goes f16 -> (sat) s32 -> wrap s16 -> wrap s8 through two scratch tiles
    # (1LNorm issues a 0-repeat call before the masked one, costmodel.md §6, hence the de-duplication)
    assert list(dict.fromkeys(o.intrinsic for o in vec_ops(off))) == ["vconv_f162s32z", "vconv_s322s16", "vconv_s162s8"]
    assert [b.name for b in off.buffers if b.scratch] == ["tmp", "tmp2"]
    assert SetSaturation(False) in off.body and off.body[-1] == SetSaturation(True)


def test_defaults_per_pair():
    big = np.zeros((1, 32), np.float32)
    big[0, :4] = [3e9, -3e9, 2.7, -2.7]
    assert golden("TCVT", big, dst_dtype="i32")[0, :4].tolist() == [2**31 - 1, -2**31, 2, -2]  # ON, trunc
    assert golden("TCVT", big, dst_dtype="i16")[0, 2:4].tolist() == [2, -2]
    # f32 -> i16 defaults to OFF: 70000 -> 70000 - 65536 = 4464
    assert golden("TCVT", np.full((1, 32), 70000.0, np.float32), dst_dtype="i16")[0, 0] == 4464
    assert golden("TCVT", np.full((1, 32), 70000, np.int32), dst_dtype="i16")[0, 0] == 4464  # i32->i16 OFF
    assert golden("TCVT", np.full((1, 32), -1.0, np.float16), dst_dtype="u8")[0, 0] == 255  # f16->u8 OFF
    assert golden("TCVT", np.full((1, 32), -1.0, np.float16), dst_dtype="u8", saturation="on")[0, 0] == 0
    assert request("TCVT", "1x64", "f32", dst_dtype="f16").param("round_mode") == "rint"
    assert request("TCVT", "1x64", "f32", dst_dtype="i32").param("round_mode") == "trunc"


def test_float_targets_honour_round_modes_and_saturation():
    one_and_a_bit = 1 + 2**-11 + 2**-13  # between 1 and the next half 1 + 2**-10, above the midpoint
    x = np.zeros((1, 64), np.float32)
    x[0, :3] = [one_and_a_bit, 1 + 2**-11, 70000.0]  # the second is an exact tie
    f16 = lambda **kw: golden("TCVT", x, dst_dtype="f16", **kw)[0, :3].astype(np.float64).tolist()
    assert f16(round_mode="floor")[:2] == [1.0, 1.0]
    assert f16(round_mode="ceil")[:2] == [1 + 2**-10, 1 + 2**-10]
    assert f16(round_mode="rint")[:2] == [1 + 2**-10, 1.0]  # tie to even
    assert f16(round_mode="round")[1] == 1 + 2**-10  # tie away from zero
    assert f16()[2] == 65504.0 and f16(saturation="off")[2] == np.inf
    y = np.zeros((1, 64), np.float32)
    y[0, :3] = [2.5, -0.5, 7.25]
    assert golden("TCVT", y, dst_dtype="f32")[0, :3].tolist() == [2.0, -0.0, 7.0]  # integral, ties to even
    assert golden("TCVT", y, dst_dtype="f32", round_mode="floor")[0, :3].tolist() == [2.0, -1.0, 7.0]


def test_measured_shapes_are_one_1lnorm_call():
    # 4x64, dynamic valid, valid cols == cols: runtime-contiguous unary rule, 4*64/64 = 4 repeats <= 255 -> 1LNorm
    for src, dst, name in (("f32", "f16", "vconv_f322f16r"), ("f16", "f32", "vconv_f162f32")):
        p = lower.lower(request("TCVT", "4x64", src, dst_dtype=dst))
        assert p.strategy == "1LNorm" and [(o.intrinsic, o.repeat) for o in vec_ops(p)] == [(name, 4)]
        assert len(p.body) == 1


def test_width_change_walks_the_wider_type():
    p = lower.lower(request("TCVT", "1x256", "f16", dst_dtype="f32"))  # EPR = 256 B / 4 B = 64
    assert vec_ops(p)[0].repeat == 4 and vec_ops(p)[0].dst.rep_stride == 8 and vec_ops(p)[0].srcs[0].rep_stride == 4


def test_unmodelled_pairs_and_bad_modes():
    with pytest.raises(NotModelledError, match="dequantising"):
        lower.lower(request("TCVT", "4x64", "i32", dst_dtype="f16"))
    with pytest.raises(ParamError, match="odd is not available"):
        request("TCVT", "4x64", "f16", dst_dtype="i32", round_mode="odd")
    with pytest.raises(ParamError, match="nearest only"):
        request("TCVT", "4x64", "i32", dst_dtype="f32", round_mode="floor")
    with pytest.raises(ParamError, match="unknown round mode"):
        request("TCVT", "4x64", "f32", dst_dtype="f16", round_mode="sideways")
    assert request("TCVT", "4x64", "f32", dst_dtype="f16", round_mode="CAST_FLOOR").param("round_mode") == "floor"


def test_broken_convert_plan_is_reported():
    p = lower.lower(request("TCVT", "8x64", "f32", dst_dtype="i32", round_mode="round"))
    call = vec_ops(p)[0]
    wrong = replace(call, intrinsic="vconv_f322s32z", mode="trunc")
    assert verify(p).ok is True
    assert verify(replace(p, body=tuple(wrong if i is call else i for i in p.body))).ok is False
    off = lower.lower(request("TCVT", "8x64", "f16", dst_dtype="u8"))
    no_wrap = tuple(i for i in off.body if not isinstance(i, SetSaturation))  # clamps instead of wrapping
    assert verify(off).ok is True and verify(replace(off, body=no_wrap)).ok is False


def test_conversion_numerics_by_dtype_bits():
    f32 = dtype("f32")
    from costmodel.golden.convert import convert

    out = convert(np.array([3.4e38, -3.4e38], np.float32), f32, dtype("bf16"), "ceil", True)
    assert np.isfinite(out.astype(np.float64)).all()  # saturation clamps to the bf16 range


@pytest.mark.parametrize("intrinsic, rounded", [("vconv_f162s16z", [2, -2, 0]), ("vconv_f162s16f", [2, -3, -1]),
                                                ("vconv_f162s16a", [3, -3, -1])])
@pytest.mark.parametrize("saturate, big", [(True, 32767), (False, 40000 - 65536)])
def test_table_intrinsics_round_by_their_letter_and_follow_the_saturation_bit(intrinsic, rounded, saturate, big):
    # A call with no mode of its own (as the elementwise sequences issue it) takes the round mode from the suffix
    # letter in data/a2a3_intrinsics.csv (isa.md §7.1); CTRL bit 59 clamps or wraps 40000 -> i16 (isa.md §4.4).
    from costmodel.isa_a2a3 import Addr, VecOp

    p = lower.lower(request("TCVT", "1x128", "f16", dst_dtype="i16"))
    call = VecOp(intrinsic, "f16", Addr("dst"), (Addr("src"),), 1, dst_dtype="i16")
    src = np.zeros((1, 128), np.float16)
    src[0, :4] = [2.7, -2.7, -0.5, 40000.0]
    got = emulate(replace(p, body=(SetSaturation(saturate), call, SetSaturation(True))), {"src": src})
    assert got[0, :4].tolist() == rounded + [big]


@pytest.mark.parametrize("shape, valid, dst", [("64x64", None, "f32"), ("16x128", "16x100", "f32"), ("4x64", None, "i8")])
def test_a_conversion_says_why_its_default_mode_was_chosen(shape, valid, dst):
    """TCVT takes the unary §6 rule (QA 53: compare and estimate said nothing of why the default); a forced mode says
    what the default would have been."""
    import costmodel

    e = costmodel.estimate("TCVT", shape, "f16", dst_dtype=dst, valid=valid, verify=False)
    assert e.strategy == lower.resolve_strategy(request("TCVT", shape, "f16", dst_dtype=dst, valid=valid))[0]
    (why,) = [n for n in e.notes if "costmodel.md §6" in n]
    assert why.startswith(f"{e.strategy} by costmodel.md §6: ")
    other = next(s for s in lower.legal_strategies(e.request) if s != e.strategy)
    forced = costmodel.estimate("TCVT", shape, "f16", dst_dtype=dst, valid=valid, strategy=other, verify=False)
    assert any(n.startswith(f"{other} as asked; the default would be {e.strategy} by costmodel.md §6")
               for n in forced.notes)
