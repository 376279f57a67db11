"""Golden semantics of the part and expand families on hand-computed cases (isa.md §4.1, §4.2, §8)."""
import numpy as np
import pytest

from costmodel import golden


def _grid(rows, cols, start=0.0, dtype=np.float32):
    return (np.arange(rows * cols, dtype=np.float64).reshape(rows, cols) + start).astype(dtype)


def test_tpartmax_src1_corner_is_max_and_src0_elsewhere():
    # the upstream tpartmax case: 64x64 tiles, src0 and dst valid 64x64, src1 valid 32x32 (isa.md §8)
    src0 = np.full((64, 64), 5.0, np.float32)
    src1 = np.full((64, 64), 1.0, np.float32)
    src1[:16, :] = 9.0  # larger than src0 in the top half of the corner (and beyond it, where it is not valid)
    out = golden("TPARTMAX", src0, src1, valid=[(64, 64), (64, 64), (32, 32)])
    assert (out[:16, :32] == 9.0).all()
    assert (out[16:32, :32] == 5.0).all()
    assert (out[:, 32:] == 5.0).all() and (out[32:, :] == 5.0).all()


@pytest.mark.parametrize("v0,v1", [((0, 8), (4, 8)), ((4, 0), (4, 8)), ((4, 8), (0, 8)), ((4, 8), (4, 0))])
def test_tpartadd_empty_source_copies_the_other(v0, v1):
    src0 = _grid(4, 8, 1.0)
    src1 = _grid(4, 8, 100.0)
    out = golden("TPARTADD", src0, src1, valid=[(4, 8), v0, v1])
    expected = src1 if 0 in v0 else src0
    assert np.array_equal(out, expected)


def test_tpart_neither_valid_is_zero_and_outside_dst_untouched():
    src0 = np.full((4, 8), 2, np.int32)
    src1 = np.full((4, 8), 3, np.int32)
    before = np.full((4, 8), -7, np.int32)
    out = golden("TPARTMUL", src0, src1, valid=[(3, 6), (3, 2), (1, 6)], out=before)
    assert out[0, 0] == 6 and out[0, 4] == 3 and out[2, 1] == 2
    assert out[2, 4] == 0  # inside dst, outside both sources: 0 (CPU rule)
    assert (out[3, :] == -7).all() and (out[:, 6:] == -7).all()


def test_tpartargmax_strict_compare_ties_to_src1():
    v0 = np.array([[3.0, 2.0, 5.0, 1.0]], np.float16)
    v1 = np.array([[1.0, 2.0, 7.0, 9.0]], np.float16)
    i0 = np.array([[10, 11, 12, 13]], np.int32)
    i1 = np.array([[20, 21, 22, 23]], np.int32)
    vals, idx = golden("TPARTARGMAX", v0, v1, i0, i1, valid=[(1, 4), (1, 4), (1, 3)])
    assert vals.tolist() == [[3.0, 2.0, 7.0, 1.0]]
    assert idx.tolist() == [[10, 21, 22, 13]]  # tie at column 1 -> src1; column 3 only src0 valid
    vals, idx = golden("TPARTARGMIN", v0, v1, i0, i1, valid=[(1, 4), (1, 4), (1, 4)])
    assert vals.tolist() == [[1.0, 2.0, 5.0, 1.0]] and idx.tolist() == [[20, 21, 12, 13]]


def test_tpartargmax_neither_valid_gives_value_and_index_zero():
    v = np.ones((2, 2), np.float32)
    i = np.full((2, 2), 5, np.int32)
    vals, idx = golden("TPARTARGMAX", v, v, i, i, valid=[(2, 2), (1, 2), (2, 1)])
    assert vals[1, 1] == 0 and idx[1, 1] == 0 and idx[0, 0] == 5


def test_tcolexpand_repeats_row_zero():
    src = np.array([[1, 2, 3, 4], [9, 9, 9, 9]], np.int16)
    out = golden("TCOLEXPAND", src, valid=(3, 3), dst_shape=(4, 4))
    assert out.tolist() == [[1, 2, 3, 0], [1, 2, 3, 0], [1, 2, 3, 0], [0, 0, 0, 0]]


def test_tcolexpandadd_reads_src1_row_zero():
    src0 = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    src1 = np.array([[10.0, 20.0], [500.0, 600.0]], np.float32)  # row 1 must never be read
    out = golden("TCOLEXPANDADD", src0, src1, valid=(2, 2))
    assert out.tolist() == [[11.0, 22.0], [13.0, 24.0]]


def test_tcolexpanddiv_integer_truncates_toward_zero():
    src0 = np.array([[-7, 7]], np.int32)
    src1 = np.array([[2, -2]], np.int32)
    assert golden("TCOLEXPANDDIV", src0, src1, valid=(1, 2)).tolist() == [[-3, -3]]


def test_tcolexpandexpdif_is_exp_of_the_difference():
    src0 = np.array([[1.0, 3.0]], np.float32)
    src1 = np.array([[1.0, 1.0]], np.float32)
    out = golden("TCOLEXPANDEXPDIF", src0, src1, valid=(1, 2))
    assert out[0, 0] == 1.0 and out[0, 1] == pytest.approx(7.389056, rel=1e-6)


def test_trowexpand_repeats_column_zero():
    src = np.array([[4], [5], [6]], np.float16)
    out = golden("TROWEXPAND", src, valid=(2, 3), dst_shape=(3, 4))
    assert out.tolist() == [[4, 4, 4, 0], [5, 5, 5, 0], [0, 0, 0, 0]]


def test_trowexpanddiv_keeps_argument_order():
    s = np.array([[8.0], [9.0]], np.float32)  # mode 1: one scalar per row, src0 expanded
    src1 = np.array([[2.0, 4.0], [3.0, 9.0]], np.float32)
    assert golden("TROWEXPANDDIV", s, src1, valid=(2, 2)).tolist() == [[4.0, 2.0], [3.0, 1.0]]
    assert golden("TROWEXPANDDIV", src1, s, valid=(2, 2)).tolist() == [[0.25, 0.5], [np.float32(1 / 3), 1.0]]


def test_trowexpand_mode2_uses_column_j_mod_block_width():
    full = np.zeros((1, 16), np.float32)
    block = np.arange(8, dtype=np.float32).reshape(1, 8)  # f32: one 32-byte block = 8 values per row
    out = golden("TROWEXPANDSUB", full, block, valid=[(1, 16), (1, 16), (1, 8)])
    assert out.tolist() == [[-float(j % 8) for j in range(16)]]
