"""Golden semantics of the elementwise families against hand-computed values and isa.md §4's edge cases."""
from __future__ import annotations

import numpy as np
import pytest

from costmodel.golden import golden

NAN = float("nan")


def row(values, dt):
    return np.array([values], dtype=dt)


@pytest.mark.parametrize("dt", [np.int32, np.int16])
def test_integer_division_truncates_toward_zero(dt):
    src = row([-7, 7, -8, 0, 1], dt)
    assert golden("TDIVS", src, scalar=2).tolist() == [[-3, 3, -4, 0, 0]]
    assert golden("TDIVS", src, scalar=-2).tolist() == [[3, -3, 4, 0, 0]]
    # scalar / tile order: 7 / src
    assert golden("TDIVS", row([2, -2, 3, -7, 8], dt), scalar=7, order="scalar_tile").tolist() == [[3, -3, 2, -1, 0]]


def test_integer_reciprocal_truncates():
    assert golden("TRECIP", row([1, -1, 2, -3, 100], np.int32)).tolist() == [[1, -1, 0, 0, 0]]
    assert golden("TRECIP", row([4.0, -0.5], np.float32)).tolist() == [[0.25, -2.0]]


def test_fmod_takes_the_sign_of_the_dividend():
    src = row([-7.0, 7.0, -7.0, 7.5, 6.0], np.float32)
    assert golden("TFMODS", src, scalar=3.0).tolist() == [[-1.0, 1.0, -1.0, 1.5, 0.0]]
    assert golden("TFMODS", src, scalar=-3.0).tolist() == [[-1.0, 1.0, -1.0, 1.5, 0.0]]
    divisor = row([3.0, -3.0, -3.0, 2.0, 4.0], np.float32)
    assert golden("TFMOD", src, divisor).tolist() == [[-1.0, 1.0, -1.0, 1.5, 2.0]]


@pytest.mark.parametrize("dt", [np.int32, np.float32])
def test_rem_takes_the_sign_of_the_divisor(dt):
    src = row([-7, 7, 7, -7, 6], dt)
    assert golden("TREMS", src, scalar=3).tolist() == [[2, 1, 1, 2, 0]]
    assert golden("TREMS", src, scalar=-3).tolist() == [[-1, -2, -2, -1, 0]]
    divisor = row([3, -3, 3, -3, 4], dt)
    assert golden("TREM", src, divisor).tolist() == [[2, -2, 1, -1, 2]]


def test_integer_arithmetic_wraps():
    assert golden("TADD", row([32767, -32768], np.int16), row([1, -1], np.int16)).tolist() == [[-32768, 32767]]
    assert golden("TSUB", row([-2**31], np.int32), row([1], np.int32)).tolist() == [[2**31 - 1]]
    assert golden("TMULS", row([65536, 3], np.int32), scalar=65536).tolist() == [[0, 196608]]
    assert golden("TNEG", row([-32768, 5], np.int16)).tolist() == [[-32768, -5]]
    assert golden("TADDS", row([250], np.uint8), scalar=10).tolist() == [[4]]


def test_shifts_are_arithmetic_for_signed_and_logical_for_unsigned():
    assert golden("TSHRS", row([-8, -1, 8], np.int16), scalar=1).tolist() == [[-4, -1, 4]]
    assert golden("TSHRS", row([-1], np.int16), scalar=15).tolist() == [[-1]]
    assert golden("TSHRS", row([0x8000, 0xFFF0], np.uint16), scalar=4).tolist() == [[0x0800, 0x0FFF]]
    assert golden("TSHLS", row([1, 3], np.int16), scalar=15).tolist() == [[-32768, -32768]]
    assert golden("TSHL", row([1, 1, -1], np.int8), row([0, 7, 1], np.int8)).tolist() == [[1, -128, -2]]
    assert golden("TSHR", row([-128, 128], np.int32), row([7, 7], np.int32)).tolist() == [[-1, 1]]


def _same(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


def test_max_min_follow_std_argument_order_with_nan():
    a = row([NAN, 1.0, NAN], np.float32)
    b = row([1.0, NAN, NAN], np.float32)
    # std::max(a, b) returns a unless a < b; std::min(a, b) returns b only when b < a (isa.md §4)
    assert _same(golden("TMAX", a, b), [[NAN, 1.0, NAN]])
    assert _same(golden("TMIN", a, b), [[NAN, 1.0, NAN]])
    assert _same(golden("TMAXS", row([NAN, -2.0], np.float32), scalar=1.0), [[NAN, 1.0]])
    assert _same(golden("TMINS", row([NAN, 2.0], np.float32), scalar=1.0), [[NAN, 1.0]])
    assert golden("TMAX", row([3, -4], np.int16), row([-3, 4], np.int16)).tolist() == [[3, 4]]


def test_valid_region_is_honoured_and_the_rest_is_zero():
    src = np.arange(32, dtype=np.float32).reshape(4, 8)
    out = golden("TADDS", src, valid=(2, 3), scalar=100.0)
    want = np.zeros((4, 8), np.float32)
    want[:2, :3] = [[100, 101, 102], [108, 109, 110]]
    assert np.array_equal(out, want)
    prior = np.full((4, 8), -1.0, np.float32)
    kept = golden("TNEG", src, valid=(1, 2), out=prior)
    assert kept[0, :2].tolist() == [0.0, -1.0] and np.all(kept[1:] == -1.0) and np.all(kept[0, 2:] == -1.0)


def test_pow_values_and_signs():
    assert golden("TPOWS", row([-2.0, 2.0, -2.0, 4.0], np.float32), scalar=3.0).tolist() == [[-8.0, 8.0, -8.0, 64.0]]
    assert golden("TPOWS", row([-2.0, 4.0], np.float32), scalar=-1.0).tolist() == [[-0.5, 0.25]]
    assert golden("TPOWS", row([3, -2, 0], np.int32), scalar=4).tolist() == [[81, 16, 0]]
    assert golden("TPOWS", row([5], np.int8), scalar=4).tolist() == [[113]]  # 625 wraps to 625 - 512
    assert golden("TPOW", row([2, -3, 7], np.int16), row([10, 3, 0], np.int16)).tolist() == [[1024, -27, 1]]


def test_bitwise_and_unary_values():
    assert golden("TNOT", row([5, 0, -1], np.int8)).tolist() == [[-6, -1, 0]]
    assert golden("TNOT", row([0, 0xF0], np.uint8)).tolist() == [[255, 0x0F]]
    assert golden("TXORS", row([0b1100, 0xFF], np.uint8), scalar=0b1010).tolist() == [[0b0110, 0xF5]]
    assert golden("TXOR", row([-1, 6], np.int32), row([0, 3], np.int32)).tolist() == [[-1, 5]]
    assert golden("TANDS", row([0x1234], np.uint16), scalar=0x00FF).tolist() == [[0x34]]
    assert golden("TORS", row([0x1200], np.int16), scalar=0x34).tolist() == [[0x1234]]
    assert golden("TABS", row([-3.5, 2.0], np.float32)).tolist() == [[3.5, 2.0]]
    assert golden("TRELU", row([-5, 7], np.int32)).tolist() == [[0, 7]]
    assert golden("TRSQRT", row([4.0, 0.25], np.float32)).tolist() == [[0.5, 2.0]]


def test_leaky_relu_forms():
    assert golden("TLRELU", row([-4.0, 3.0, 0.0], np.float32), scalar=0.5).tolist() == [[-2.0, 3.0, 0.0]]
    assert golden("TPRELU", row([-4.0, 3.0], np.float16), row([0.25, 9.0], np.float16)).tolist() == [[-1.0, 3.0]]


def test_subrelu_clips_the_difference_at_zero_in_the_type():
    # isa.md §3 row 142: max(src0 - src1, 0); 2050 - 1 = 2049 is not an f16 (spacing 2 above 2048): 2048
    out = golden("TSUBRELU", row([2050.0, 1.0, 5.5, -0.0], np.float16), row([1.0, 2.0, 0.25, 0.0], np.float16))
    assert out.dtype == np.float16 and out.tolist() == [[2048.0, 0.0, 5.25, 0.0]]


def test_ternary_ops_read_dst_and_round_the_product_first():
    # isa.md §4: TMULADDDST = round(round(s0*s1) + dst), TFUSEDMULADDRELU = relu(round(round(s0*dst) + s1)); the
    # operands are (dst before the op, src0, src1). (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20 rounds to 1 + 2^-9 in f16, so
    # adding -(1 + 2^-9) gives exactly 0 where a single rounding would keep 2^-20
    a = row([1 + 2**-10, 2.0], np.float16)
    d = row([-(1 + 2**-9), 3.0], np.float16)
    assert golden("TMULADDDST", d, a, a).tolist() == [[0.0, 7.0]]
    out = golden("TFUSEDMULADDRELU", a, a, d)  # src0*dst + src1 with dst = a, src0 = a, src1 = d
    assert out.dtype == np.float16 and out.tolist() == [[0.0, 7.0]]
    assert golden("TFUSEDMULADDRELU", row([1.0], np.float32), row([2.0], np.float32), row([-5.0], np.float32)).tolist() == [[0.0]]



def test_tile_scalar_tile_adds_the_scalar_to_src0_first():
    # C++ `src0 + scalar + src1` (isa.md §3 rows 14, 144): 1e8 + 1 rounds back to 1e8 in f32 before src1 comes in
    a, b = row([1e8, 2.0], np.float32), row([-1e8, 0.5], np.float32)
    assert golden("TADDSC", a, b, scalar=1.0).tolist() == [[0.0, 3.5]]
    assert golden("TSUBSC", a, b, scalar=1.0).tolist() == [[0.0, 1.5]]
    assert golden("TADDSC", row([32767], np.int16), row([5], np.int16), scalar=1).tolist() == [[-32763]]  # wraps
    # half: the C++ expression is computed in float and rounded once (isa.md §4), so 1e-4 survives 1 - 1
    out = golden("TADDSC", row([1.0], np.float16), row([-1.0], np.float16), scalar=1e-4)
    assert out.dtype == np.float16 and out[0, 0] == np.float16(1e-4)


def test_a_ternary_op_is_always_in_place():
    from costmodel.errors import ParamError
    from costmodel.operands import make_request

    assert make_request("TMULADDDST", "4x64", "f32").param("in_place") is True
    with pytest.raises(ParamError, match="always in place; in_place=False is not accepted"):
        make_request("TMULADDDST", "4x64", "f32", in_place=False)


def test_axpy_rounds_the_product_before_adding_dst():
    # isa.md §4: TAXPY (f16) = round(dst + round(src * scalar)); operands (dst before the op, src0)
    a = row([1 + 2**-10, 2.0], np.float16)
    d = row([-(1 + 2**-9), 1.0], np.float16)
    out = golden("TAXPY", d, a, scalar=1 + 2**-10)
    assert out.dtype == np.float16 and out.tolist() == [[0.0, np.float16(1.0) + np.float16(2.0 * (1 + 2**-10))]]



def test_expands_fills_the_valid_region_of_out_with_the_scalar_in_dst_type():
    from costmodel.errors import ParamError
    from costmodel.operands import make_request

    before = np.arange(12, dtype=np.float16).reshape(3, 4)
    out = golden("TEXPANDS", out=before, valid=(2, 3), scalar=1 + 2**-12)  # rounds to 1 in f16
    assert out.dtype == np.float16 and out.tolist() == [[1, 1, 1, 3], [1, 1, 1, 7], [8, 9, 10, 11]]
    assert before[0, 0] == 0  # out= is read, not written
    assert golden("TEXPANDS", out=np.zeros((1, 3), np.int8), scalar=-5).tolist() == [[-5, -5, -5]]
    with pytest.raises(ParamError, match="no source tile: pass out="):
        golden("TEXPANDS", scalar=1)
    with pytest.raises(ParamError, match="takes 0 source tiles, got 1"):
        golden("TEXPANDS", before, out=before, scalar=1)
    with pytest.raises(ParamError, match="no in-place form"):
        make_request("TEXPANDS", "4x64", "f32", scalar=1, in_place=True)
