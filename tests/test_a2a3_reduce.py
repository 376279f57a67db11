"""A2/A3 row and column reductions: plan structure (costmodel.md §6), emulator vs golden (isa.md §4.3),
hand-computed summation orders, and broken plans that must be reported."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from costmodel import lower
from costmodel.api import request
from costmodel.emulate.verify import verify
from costmodel.errors import NotModelledError, ParamError
from costmodel.golden import golden
from costmodel.isa_a2a3 import CopyUB, PipeBarrier, SetMaskMode, SetVectorMask
from costmodel.models.a2a3_intrinsic import IntrinsicModel

from .helpers_a2a3 import emulate, vec_ops

EPR = {"f32": 64, "f16": 128}  # 256-byte repeat / element size (costmodel.md §4 ISA constants)
ALIGN = {"f32": 8, "f16": 16, "i16": 16, "i32": 8}  # elements per 32-byte block


def _cols_for(dt: str, band: str, data) -> int:
    """A valid column count in one band of the row-reduce structure (relative to EPR)."""
    e = EPR[dt]
    lo, hi = {"below": (1, e - 1), "equal": (e, e), "between": (e + 1, 2 * e - 1), "above": (2 * e, 5 * e + 7)}[band]
    return data.draw(st.integers(lo, hi), label="vc")


@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from(["TROWSUM", "TROWMAX", "TROWMIN"]), dt=st.sampled_from(["f16", "f32"]),
       band=st.sampled_from(["below", "equal", "between", "above"]), rows=st.integers(1, 40),
       layout=st.sampled_from(["dn", "nd"]), data=st.data())
def test_row_reduce_plans_verify(op, dt, band, rows, layout, data):
    vc = _cols_for(dt, band, data)
    pad = data.draw(st.integers(0, 3), label="pad blocks")
    cols = -(-vc // ALIGN[dt]) * ALIGN[dt] + pad * ALIGN[dt]
    vr = data.draw(st.integers(1, rows), label="vr")
    if layout == "dn" and (rows * (4 if dt == "f32" else 2)) % 32:
        layout = "nd"
    req = request(op, f"{rows}x{cols}", dt, valid=f"{vr}x{vc}", dst_layout=layout)
    for s in lower.legal_strategies(req):
        v = verify(lower.lower(req, s), seed=rows + vc)
        assert v.ok is True, (s, v.note, v.mismatches[:3])


@pytest.mark.parametrize("dt,vc,expected", [
    ("f32", 63, "RowReduceMask"), ("f32", 64, "RowReduceCount"), ("f32", 65, "RowReduceCopyTail"),
    ("f32", 127, "RowReduceCopyTail"), ("f32", 128, "RowReduceAccumulate"), ("f16", 127, "RowReduceMask"),
    ("f16", 128, "RowReduceCount"), ("f16", 200, "RowReduceCopyTail"), ("f16", 256, "RowReduceAccumulate"),
])
def test_row_reduce_structure_follows_valid_cols(dt, vc, expected):
    req = request("TROWSUM", f"4x{-(-vc // 16) * 16 + 16}", dt, valid=f"4x{vc}")
    default, table = lower.strategies(req)
    assert default == expected
    assert [k for k, why in table.items() if why is None] == [expected]


def test_measured_trowsum_f32_64x64_is_one_count_mode_vcadd(stub_params):
    p = lower.lower(request("TROWSUM", "64x64", "f32"))
    assert [type(i).__name__ for i in p.body] == ["SetMaskMode", "SetVectorMask", "VecOp", "PipeBarrier",
                                                   "SetMaskMode", "SetVectorMask"]
    call = p.body[2]
    assert call.intrinsic == "vcadd" and call.repeat == 0
    assert p.body[1] == SetVectorMask(0, 64 * 64)  # count = rows * EPR
    assert call.srcs[0].rep_stride == 64 * 4 // 32  # one row of 64 floats = 8 blocks
    assert call.dst.rep_stride == 1  # DN Rx1 dst: consecutive results (isa.md §5, dst Cols = 1)
    # stub constants (costmodel.md §5): vcadd head 14 + 7/repeat x 64 repeats + tail 32; 4 mask writes; 1 barrier
    assert IntrinsicModel(stub_params).cost(p)[0] == pytest.approx(14 + 7 * 64 + 32 + 4 + 1)


def test_measured_trowsum_f16_and_trowmax_f32_structures():
    p = lower.lower(request("TROWSUM", "64x128", "f16"))
    assert p.counts() == {"set_mask_count": 1, "set_mask_norm": 1, "set_vector_mask": 2, "vcadd": 1, "pipe_barrier": 1}
    assert p.body[1] == SetVectorMask(0, 64 * 128)
    p = lower.lower(request("TROWMAX", "64x64", "f32"))
    assert p.counts() == {"set_mask_count": 1, "set_mask_norm": 1, "set_vector_mask": 2, "vcmax": 1, "pipe_barrier": 1}


def test_accumulate_order_and_counts_f32_16x200():
    # vc = 200 = 3 full repeats of 64 + 8: (r0 + r1) in count mode, the 8-lane tail, then r2, then vcadd
    p = lower.lower(request("TROWSUM", "16x200", "f32"))
    adds = vec_ops(p, "vadd")
    assert [a.srcs[1].offset for a in adds] == [64 * 4, 192 * 4, 128 * 4]
    assert adds[0].srcs[0].offset == 0 and adds[0].dst.buf == "tmp"
    assert [a.repeat for a in adds] == [0, 16, 0]
    assert SetVectorMask(0, 0xFF) in p.body  # the tail: a contiguous mask of 8 lanes
    assert p.counts()["pipe_barrier"] == 4  # every elementwise call and the reduce


def test_copy_tail_structure_f32_6x96():
    p = lower.lower(request("TROWMAX", "6x96", "f32"))
    copy = p.body[0]
    assert isinstance(copy, CopyUB) and (copy.n_burst, copy.len_burst, copy.src_gap) == (6, 8, 4)
    assert isinstance(p.body[1], PipeBarrier)
    assert [o.intrinsic for o in vec_ops(p)] == ["vmax", "vcmax"]


def test_more_than_255_rows_are_chunked():
    req = request("TROWMAX", "300x16", "f32")  # 300 rows x 4 B is not 32-byte aligned: ND dst 300x8
    p = lower.lower(req)
    calls = vec_ops(p, "vcmax")
    assert [c.repeat for c in calls] == [255, 45]
    assert calls[1].dst.offset == 255 * 8 * 4 and calls[1].dst.rep_stride == 8
    assert calls[1].srcs[0].offset == 255 * 16 * 4
    assert verify(p).ok is True
    req = request("TROWSUM", "260x72", "f32", valid="260x70")  # copy+tail with a 2-chunk masked tail
    assert [c.repeat for c in vec_ops(lower.lower(req), "vadd")] == [255, 5]
    assert verify(lower.lower(req)).ok is True


def test_row_stride_above_255_blocks_falls_back_to_one_call_per_row():
    p = lower.lower(request("TROWSUM", "2x4096", "f32", valid="2x4000"))
    assert any("one call per row" in n for n in p.notes)
    assert verify(p).ok is True


def test_trowsum_f16_golden_accumulates_in_float():
    src = np.zeros((1, 16), np.float16)
    src[0, :5] = [2048, 1, 1, 1, 1]
    out = golden("TROWSUM", src, valid=(1, 5))
    assert out[0, 0] == 2052  # float accumulation; a sequential f16 sum would stay at 2048


def test_row_reduce_golden_hand_values():
    src = np.array([[3, -1, 7, 2], [-5, -9, -2, -8]], np.float32)
    assert golden("TROWMAX", src, valid=(2, 3))[:, 0].tolist() == [7, -2]
    assert golden("TROWMIN", src, valid=(2, 4))[:, 0].tolist() == [-1, -9]
    assert golden("TROWSUM", src, valid=(2, 2))[:, 0].tolist() == [2, -14]


def test_integer_row_reduce_is_not_modelled():
    with pytest.raises(NotModelledError, match="integer row-reduce"):
        lower.lower(request("TROWSUM", "16x64", "i32"))
    with pytest.raises(ParamError, match="dn, nd"):
        request("TROWSUM", "16x64", "f32", dst_layout="zz")


# --- column reductions -------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from(["TCOLMAX", "TCOLMIN", "TCOLSUM", "TCOLPROD"]),
       dt=st.sampled_from(["f16", "f32", "i16", "i32"]), rows=st.integers(1, 70), col_blocks=st.integers(1, 24),
       data=st.data())
def test_col_reduce_plans_verify(op, dt, rows, col_blocks, data):
    cols = col_blocks * ALIGN[dt]
    vr = data.draw(st.integers(0, rows), label="vr")
    vc = data.draw(st.integers(0, cols), label="vc")
    req = request(op, f"{rows}x{cols}", dt, valid=f"{vr}x{vc}")
    for s in lower.legal_strategies(req):
        plan = lower.lower(req, s)
        v = verify(plan, seed=rows * 7 + vc)
        assert v.ok is True, (s, v.note, v.mismatches[:3])
        assert (not plan.body) == any("returns early" in n for n in plan.notes) == (vr * vc == 0)


def test_col_reduce_more_than_255_rows_verifies():
    for binary in (False, True):
        req = request("TCOLSUM", "300x16", "f16", valid="299x9", binary=binary)
        assert verify(lower.lower(req)).ok is True


def test_measured_tcolmax_structures():
    p = lower.lower(request("TCOLMAX", "64x64", "f32"))
    assert isinstance(p.body[0], CopyUB) and p.body[0].len_burst == 64 * 4 // 32
    assert p.counts()["vmax"] == 63 and p.counts()["pipe_barrier"] == 64
    assert SetMaskMode("count") in p.body and SetVectorMask(0, 64) in p.body  # elementsPerLine = 64
    p = lower.lower(request("TCOLMAX", "64x64", "f16"))  # 64 < EPR 128: all in the masked remainder loop
    assert not {"set_mask_count", "set_mask_norm"} & set(p.counts()) and [c.repeat for c in vec_ops(p, "vmax")] == [1] * 63
    p = lower.lower(request("TCOLMAX", "1x3072", "f32"))  # one row: only the copy of 384 blocks
    assert [type(i).__name__ for i in p.body] == ["CopyUB", "PipeBarrier"] and p.body[0].len_burst == 384


def _tcolsum_plan(binary: bool, rows: int = 5):
    req = request("TCOLSUM", f"{rows}x16", "f16", valid=f"{rows}x1", binary=binary)
    return lower.lower(req)


def test_tcolsum_binary_and_linear_orders_on_an_odd_row_count():
    src = np.zeros((5, 16), np.float16)
    src[:, 0] = [2048, 1, 1, 1, 1]
    # linear (sequential in f16, like the golden): 2048+1 -> 2048 (ties to even) four times -> 2048
    linear = emulate(_tcolsum_plan(False), {"src": src})
    # binary: (2048+1)->2048, (1+1)=2, odd row 4 folded into row 0: 2048+1 -> 2048, then 2048+2 = 2050
    tree = emulate(_tcolsum_plan(True), {"src": src})
    assert linear[0, 0] == 2048 and tree[0, 0] == 2050
    assert golden("TCOLSUM", src, valid=(5, 1))[0, 0] == 2048
    assert lower.strategies(request("TCOLSUM", "5x16", "f16", binary=True))[0] == "ColBinary"
    assert lower.strategies(request("TCOLSUM", "5x16", "f16"))[0] == "ColLinear"


def test_tcolsum_binary_tree_has_log2_passes():
    p = _tcolsum_plan(True, rows=64)
    assert [o.repeat for o in vec_ops(p, "vadd")] == [32, 16, 8, 4, 2, 1]  # row pairs per pass
    assert vec_ops(p, "vadd")[0].srcs[0].rep_stride == 2 * 16 * 2 // 32  # two source rows per repeat


def test_col_reduce_golden_hand_values():
    src = np.array([[1, 5, -3], [4, 2, -7], [2, 9, 1]], np.int32)
    assert golden("TCOLMAX", src, valid=(3, 3))[0].tolist() == [4, 9, 1]
    assert golden("TCOLMIN", src, valid=(2, 3))[0].tolist() == [1, 2, -7]
    assert golden("TCOLSUM", src, valid=(3, 2))[0].tolist() == [7, 16, 0]
    assert golden("TCOLPROD", src, valid=(3, 3))[0].tolist() == [8, 90, 21]
    with pytest.raises(ParamError, match="TCOLSUM only"):
        request("TCOLMAX", "4x16", "f32", binary=True)


# --- broken plans are reported -----------------------------------------------------------------------

def test_broken_row_reduce_plan_is_not_verified():
    p = lower.lower(request("TROWSUM", "16x200", "f32"))
    body = [i for i in p.body if not (getattr(i, "intrinsic", "") == "vadd" and i.repeat == 16)]  # drop the tail
    assert verify(p).ok is True
    assert verify(replace(p, body=tuple(body))).ok is False


def test_broken_col_reduce_plan_writing_past_the_block_is_reported():
    p = lower.lower(request("TCOLMAX", "8x64", "f32", valid="8x20"))
    first = p.body[0]
    wide = replace(first, len_burst=first.len_burst + 1)  # one block beyond the padding of the valid columns
    v = verify(replace(p, body=(wide,) + p.body[1:]))
    assert v.ok is False and any(m[0] == "dst outside valid" for m in v.mismatches)
