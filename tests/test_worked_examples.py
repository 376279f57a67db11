"""The A2/A3 worked examples of costmodel.md §6: mode, intrinsic calls, repeats, masks and stub cycles.

Every expected value is copied from the reference table. Count-mode rows use its "count-aware" cycles, since the
formula model charges a counter-mode call the ceil(n / lanes) repeats the hardware walks.
"""
from __future__ import annotations

import pytest

import costmodel
from costmodel.isa_a2a3 import FULL_MASK, SetMaskMode, SetVectorMask, VecOp, continuous_mask

CASES = [
    # id, (op, shape, dtype, kwargs), mode, [(intrinsic, repeat), ...], stub cycles
    ("TMINS f16 64x64 dynamic", ("TMINS", "64x64", "f16", {}), "2LNormRowRpt", [("vmins", 64)], 96),
    ("TMINS f16 64x64 static", ("TMINS", "64x64", "f16", {"static_valid": True}), "1LNorm", [("vmins", 32)], 62),
    ("TMINS f32 16x200 valid 16x190", ("TMINS", "16x200", "f32", {"valid": "16x190"}), "2LNormRowRpt",
     [("vmins", 16)] * 3, 80),
    ("TADD f32 16x200 valid 16x190", ("TADD", "16x200", "f32", {"valid": "16x190"}), "2LNormRowRpt",
     [("vadd", 16)] * 3, 138),
    ("TMINS f16 1x3600", ("TMINS", "1x3600", "f16", {}), "1LCount", [("vmins", 0)], 63),
    ("TADD f16 1x3600", ("TADD", "1x3600", "f16", {}), "1LCount", [("vadd", 0)], 102),
    ("TEXP f16 1x3600", ("TEXP", "1x3600", "f16", {}), "1LNorm", [("vexp", 28), ("vexp", 1)], 91),
]


def _estimate(args):
    op, shape, dt, kw = args
    return costmodel.estimate(op, shape, dt, arch="a2a3", **kw)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_mode_calls_and_repeats(case):
    _, args, mode, calls, _ = case
    e = _estimate(args)
    assert e.strategy == mode and e.strategy_source == "default"
    assert [(i.intrinsic, i.repeat) for i in e.plan.body if isinstance(i, VecOp)] == calls
    assert e.verified is True


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_stub_cycles(case, stub_params):
    """With the upstream stub's constants (not the refitted shipped table) the plans reproduce §6's cycles."""
    from costmodel.models.a2a3_intrinsic import IntrinsicModel

    _, args, _, _, cycles = case
    assert IntrinsicModel(stub_params).cost(_estimate(args).plan)[0] == pytest.approx(cycles)


def test_tmins_f16_dynamic_masks_64_lanes_around_the_call():
    body = _estimate(CASES[0][1]).plan.body
    assert body[0] == SetVectorMask(*continuous_mask(64)) and body[-1] == SetVectorMask(*FULL_MASK)
    call = body[1]
    assert call.dst.rep_stride == 4 and call.srcs[0].rep_stride == 4  # stride 4 blocks = one 64-element f16 row


def test_tmins_f32_16x190_row_repeat_tail_mask_and_stride():
    body = _estimate(CASES[2][1]).plan.body
    calls = [i for i in body if isinstance(i, VecOp)]
    assert all(c.dst.rep_stride == 25 for c in calls)  # 200 f32 = 25 blocks per row
    masks = [i for i in body if isinstance(i, SetVectorMask)]
    assert masks == [SetVectorMask(*continuous_mask(62)), SetVectorMask(*FULL_MASK)]  # 190 mod 64 = 62
    assert sum(c.repeat for c in calls) == 48


@pytest.mark.parametrize("op", ["TMINS", "TADD"])
def test_1x3600_count_mode_sequence(op):
    body = _estimate((op, "1x3600", "f16", {})).plan.body
    kinds = [type(i).__name__ for i in body]
    assert kinds == ["SetMaskMode", "SetVectorMask", "VecOp", "SetMaskMode", "SetVectorMask"]
    assert body[0] == SetMaskMode("count") and body[1] == SetVectorMask(0, 3600)
    assert body[3] == SetMaskMode("norm") and body[4] == SetVectorMask(*FULL_MASK)


def test_texp_1x3600_masked_remainder_of_16():
    body = _estimate(CASES[6][1]).plan.body
    masks = [i for i in body if isinstance(i, SetVectorMask)]
    assert masks == [SetVectorMask(*continuous_mask(16)), SetVectorMask(*FULL_MASK)]  # 3600 = 28 * 128 + 16
