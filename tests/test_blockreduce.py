"""BlockReduceMax/Min/Sum (isa.md §5): golden on the reference's worked examples, the A2/A3 plan, and
emulated plans against the golden over repeats, masks and strides."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from costmodel import golden, lower
from costmodel.api import request
from costmodel.emulate.verify import verify
from costmodel.isa_a2a3 import SetVectorMask, VecOp

F32_ALL = (0, (1 << 64) - 1)


def test_blocksum_f16_saturates_partial_sums():
    # isa.md §5: [60000, 60000, -30000, 100] -> 35604; 60000 + 60000 saturates at 65504 instead of overflowing
    src = np.zeros(128, np.float16)
    src[:4] = [60000, 60000, -30000, 100]
    out = golden("BlockReduceSum", src, repeat=1, mask=((1 << 64) - 1, (1 << 64) - 1))
    assert np.isfinite(out[0])
    # 35604 is not an f16 value; the catalogue tolerance (eps 1e-3, isa.md §8) absorbs the f16 rounding
    assert float(out[0]) == pytest.approx(35604, rel=1e-3)
    assert (out[1:8] == 0).all()


def test_blockmin_partial_mask_block_stride_2_dst_stride_2():
    # f32, 8 lanes per block; mask = lanes 0..3 of every block; block b of repeat r starts at (16 r + 2 b) * 8
    src = -np.arange(40 * 8, dtype=np.float32)
    lo = int("0f" * 8, 16)
    before = np.full(24, 7.0, np.float32)
    out = golden("BlockReduceMin", src, repeat=2, mask=(0, lo), dst_rep_stride=2, src_blk_stride=2,
                 src_rep_stride=16, out=before)
    # the minimum of lanes 0..3 of a block starting at s is -(s + 3)
    assert out[:8].tolist() == [-3, -19, -35, -51, -67, -83, -99, -115]
    assert out[16:24].tolist() == [-131, -147, -163, -179, -195, -211, -227, -243]
    assert (out[8:16] == 7.0).all()  # dst stride 2 leaves a gap of one repeat's results


def test_fully_masked_block_is_not_written():
    src = np.arange(64, dtype=np.float32)
    out = golden("BlockReduceMax", src, repeat=1, mask=(0, (1 << 32) - 1), out=np.full(8, -1.0, np.float32))
    assert out.tolist() == [7, 15, 23, 31, -1, -1, -1, -1]


def test_plan_is_one_call_with_the_request_parameters():
    req = request("BlockReduceMin", None, "f16", repeat=4, mask="64", src_blk_stride=1, src_rep_stride=8,
                  dst_rep_stride=1)
    p = lower.lower(req)
    calls = [i for i in p.body if isinstance(i, VecOp)]
    assert p.strategy == "vcg" and len(calls) == 1
    c = calls[0]
    assert (c.intrinsic, c.repeat, c.dst.rep_stride, c.srcs[0].blk_stride, c.srcs[0].rep_stride) == ("vcgmin", 4, 1, 1, 8)
    assert SetVectorMask(0, (1 << 64) - 1) in p.body  # first 64 of 128 f16 lanes
    assert verify(p).ok


def test_full_mask_needs_no_mask_write():
    p = lower.lower(request("BlockReduceSum", None, "f32", repeat=2))
    assert not any(isinstance(i, SetVectorMask) for i in p.body)


@settings(max_examples=50, deadline=None)
@given(op=st.sampled_from(["BlockReduceMax", "BlockReduceMin", "BlockReduceSum"]), dt=st.sampled_from(["f16", "f32"]),
       repeat=st.integers(1, 12), blk=st.integers(0, 3), rep=st.integers(0, 20), dst_rep=st.integers(0, 3),
       mask_bits=st.integers(1, (1 << 128) - 1), seed=st.integers(0, 3))
def test_emulated_plan_matches_golden(op, dt, repeat, blk, rep, dst_rep, mask_bits, seed):
    lanes = 128 if dt == "f16" else 64
    mask_bits &= (1 << lanes) - 1
    if not mask_bits:
        mask_bits = 1
    mask = f"{mask_bits >> 64}:{mask_bits & ((1 << 64) - 1)}"
    req = request(op, None, dt, repeat=repeat, mask=mask, src_blk_stride=blk, src_rep_stride=rep,
                  dst_rep_stride=dst_rep)
    v = verify(lower.lower(req), seed=seed)
    assert v.ok, (v.note, v.mismatches)


def test_a_valid_region_is_refused_and_a_derived_repeat_says_where_it_came_from():
    """BlockReduce reads a raw buffer (isa.md §5): a valid region or a static one would be echoed and ignored (QA 53);
    one equal to the whole tile, as a trace row carries, says nothing and is taken."""
    from costmodel.errors import ParamError

    for kw in ({"valid": "2x64"}, {"valid": "0x3"}, {"static_valid": True}):
        with pytest.raises(ParamError, match="has no valid region; drop --valid and --static-valid"):
            request("BlockReduceMax", "4x128", "f16", **kw)
    whole = request("BlockReduceMax", "4x128", "f16", valid="4x128")
    assert whole == request("BlockReduceMax", "4x128", "f16")
    with pytest.raises(ParamError, match=r"repeat 300 is out of range.*the 300x128 src holds 300 repeats of 128"):
        request("BlockReduceMax", "300x128", "f16")
    with pytest.raises(ParamError, match=r"repeat 300 is out of range: BlockReduce takes 1..255 repeats$"):
        request("BlockReduceMax", "300x128", "f16", repeat=300)
