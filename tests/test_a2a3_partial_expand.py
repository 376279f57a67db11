"""A2/A3 plans of the part, col-expand and row-expand families: every legal strategy, emulated on random data,
agrees with the golden and touches nothing outside the dst valid region (costmodel.emulate.verify)."""
import json
from dataclasses import replace

import pytest
from hypothesis import given, settings, strategies as st

import costmodel
from costmodel import lower
from costmodel.api import request
from costmodel.catalog import instruction
from costmodel.emulate.verify import verify
from costmodel.errors import NotModelledError, StrategyError
from costmodel.isa_a2a3 import CopyUB, PipeBarrier, VecOp
from costmodel.lower.a2a3 import expand

from .test_cli import run

EPB = {8: 32, 16: 16, 32: 8}  # elements per 32-byte block
BITS = {"i8": 8, "u8": 8, "i16": 16, "u16": 16, "f16": 16, "bf16": 16, "i32": 32, "u32": 32, "f32": 32}
PART = ["TPARTADD", "TPARTMAX", "TPARTMIN", "TPARTMUL"]
COLEXP = ["TCOLEXPANDADD", "TCOLEXPANDSUB", "TCOLEXPANDMUL", "TCOLEXPANDDIV", "TCOLEXPANDMAX", "TCOLEXPANDMIN",
          "TCOLEXPANDEXPDIF"]
ROWEXP = ["TROWEXPANDADD", "TROWEXPANDSUB", "TROWEXPANDMUL", "TROWEXPANDDIV", "TROWEXPANDMAX", "TROWEXPANDMIN",
          "TROWEXPANDEXPDIF"]


def a2a3_dtypes(op):
    return list(instruction(op).dtypes_on("a2a3"))


def assert_all_strategies_verify(req, seed=0):
    for s in lower.legal_strategies(req):
        v = verify(lower.lower(req, s), seed=seed)
        assert v.ok, (req.describe(), s, v.note, v.mismatches)


@st.composite
def op_dtype(draw, ops):
    op = draw(st.sampled_from(ops))
    return op, draw(st.sampled_from(a2a3_dtypes(op)))


@st.composite
def shape_and_valid(draw, bits, max_rows=24, max_blocks=12, row_multiple=1):
    """A tile (cols a multiple of 32 bytes) and a valid region, often with padding columns and ragged tails."""
    rows = row_multiple * draw(st.integers(1, max(1, max_rows // row_multiple)))
    cols = EPB[bits] * draw(st.integers(1, max_blocks))
    vr = draw(st.integers(1, rows))
    vc = draw(st.one_of(st.just(cols), st.integers(1, cols)))
    return (rows, cols), (vr, vc)


@settings(max_examples=60, deadline=None)
@given(od=op_dtype(PART), data=st.data())
def test_part_ops_verify_in_every_strategy(od, data):
    op, dt = od
    (rows, cols), (vr, vc) = data.draw(shape_and_valid(BITS[dt]))
    small = (data.draw(st.integers(0, vr)), data.draw(st.integers(0, vc)))
    regions = data.draw(st.sampled_from([((vr, vc), small), (small, (vr, vc)), ((vr, vc), (vr, vc))]))
    req = request(op, f"{rows}x{cols}", dt, valid=f"{vr}x{vc}", src0_valid="x".join(map(str, regions[0])),
                  src1_valid="x".join(map(str, regions[1])))
    assert_all_strategies_verify(req, seed=data.draw(st.integers(0, 5)))


@settings(max_examples=40, deadline=None)
@given(op=st.sampled_from(["TPARTARGMAX", "TPARTARGMIN"]), dt=st.sampled_from(["f16", "f32"]), data=st.data())
def test_part_arg_ops_verify_values_and_indices(op, dt, data):
    idx = data.draw(st.sampled_from(["i16", "u16", "i32", "u32"] if dt == "f16" else ["i32", "u32"]))
    (rows, cols), (vr, vc) = data.draw(shape_and_valid(BITS[dt], max_blocks=8))
    small = (data.draw(st.integers(0, vr)), data.draw(st.integers(0, vc)))
    regions = data.draw(st.sampled_from([((vr, vc), small), (small, (vr, vc)), ((vr, vc), (vr, vc))]))
    req = request(op, f"{rows}x{cols}", dt, valid=f"{vr}x{vc}", idx_dtype=idx,
                  src0_valid="x".join(map(str, regions[0])), src1_valid="x".join(map(str, regions[1])))
    assert_all_strategies_verify(req, seed=data.draw(st.integers(0, 5)))


def test_part_arg_ties_go_to_src1_in_the_emulated_plan():
    # equal values everywhere: every index must come from src1 (strict compare, isa.md §4.1)
    from costmodel.emulate import a2a3 as emu
    import numpy as np

    req = request("TPARTARGMAX", "4x64", "f16", idx_dtype="i32")
    plan = lower.lower(req)
    vals = np.full((4, 64), 3.0, np.float16)
    inputs = {"dst": vals * 0, "src0": vals, "src1": vals, "dst_idx": np.zeros((4, 64), np.int32),
              "src0_idx": np.full((4, 64), 1, np.int32), "src1_idx": np.full((4, 64), 2, np.int32)}
    _, after = emu.run(plan, inputs)
    idx_buf = plan.buffer("dst_idx")
    assert (after.tile(idx_buf.offset, idx_buf.tile) == 2).all()


def test_tpartmax_seed_case_plan_shape():
    p = lower.lower(request("TPARTMAX", "64x64", "f32", src1_valid="32x32"))
    kinds = [type(i).__name__ for i in p.body]
    assert kinds.index("PipeBarrier") > kinds.index("VecOp")  # copy pass, barrier, then the overlap pass
    ops = [i for i in p.body if isinstance(i, VecOp)]
    assert ops[0].intrinsic == "vcopy" and ops[0].srcs[0].buf == "src0"
    assert ops[-1].intrinsic == "vmax" and ops[-1].repeat == 32  # 32 rows of the 32x32 corner
    assert verify(p).ok


@pytest.mark.parametrize("v0,v1", [("0x64", None), ("64x0", None), (None, "0x64"), (None, "64x0")])
def test_empty_source_region_is_copy_only(v0, v1):
    req = request("TPARTADD", "64x64", "f32", src0_valid=v0, src1_valid=v1)
    assert lower.legal_strategies(req) == ("CopyOnly",)
    p = lower.lower(req)
    assert {i.intrinsic for i in p.body if isinstance(i, VecOp)} == {"vcopy"}
    assert verify(p).ok


def test_equal_regions_is_a_single_binary_pass():
    p = lower.lower(request("TPARTMUL", "16x64", "i32", valid="10x50"))
    assert {i.intrinsic for i in p.body if isinstance(i, VecOp)} == {"vmul"}
    assert not any(isinstance(i, PipeBarrier) for i in p.body)


@settings(max_examples=50, deadline=None)
@given(dt=st.sampled_from(a2a3_dtypes("TCOLEXPAND")), data=st.data())
def test_colexpand_verifies_or_says_why_not(dt, data):
    (rows, cols), (vr, vc) = data.draw(shape_and_valid(BITS[dt]))
    req = request("TCOLEXPAND", f"{rows}x{cols}", dt, valid=f"{vr}x{vc}")
    copy_exact = (vc * BITS[dt]) % 256 == 0
    if BITS[dt] == 8 and vc % 2:
        with pytest.raises(NotModelledError):
            lower.strategies(req)
        return
    default, table = lower.strategies(req)
    assert (table["copy"] is None) == copy_exact
    assert (default == "copy") == copy_exact  # the reference's copy_ubuf_to_ubuf wherever it is exact
    assert_all_strategies_verify(req)


def test_colexpand_row_copy_is_one_copy_per_row_with_ceil_blocks():
    p = lower.lower(request("TCOLEXPAND", "16x128", "f16", valid="10x96"))
    copies = [i for i in p.body if isinstance(i, CopyUB)]
    assert p.strategy == "copy" and len(copies) == 10
    assert {(c.n_burst, c.len_burst) for c in copies} == {(1, 6)}  # 96 f16 = 192 B = 6 blocks


def test_colexpand_copy_refused_where_it_would_clobber_padding():
    req = request("TCOLEXPAND", "16x128", "f16", valid="10x100", strategy="copy")
    with pytest.raises(StrategyError, match="padding"):
        lower.resolve_strategy(req)


def test_broken_plan_is_reported_not_verified():
    # the row copy at 32-byte granularity on 100 f16 columns overwrites 12 padding columns of every row
    req = request("TCOLEXPAND", "16x128", "f16", valid="10x100")
    good = lower.lower(req)
    broken = replace(good, body=tuple(expand._copy_rows(req)))
    v = verify(broken)
    assert v.ok is False and any(m[0] == "dst outside valid" for m in v.mismatches)
    # a src1 repeat stride of 8 blocks reads rows of src1 below row 0 instead of re-reading row 0
    p = lower.lower(request("TCOLEXPANDADD", "8x64", "f32"), "2LNormRowRpt")
    body = tuple(replace(i, srcs=(i.srcs[0], replace(i.srcs[1], rep_stride=8))) if isinstance(i, VecOp) else i
                 for i in p.body)
    assert verify(replace(p, body=body)).ok is False


@settings(max_examples=60, deadline=None)
@given(od=op_dtype(COLEXP), data=st.data())
def test_colexpand_binary_verifies_in_every_strategy(od, data):
    op, dt = od
    (rows, cols), (vr, vc) = data.draw(shape_and_valid(BITS[dt]))
    req = request(op, f"{rows}x{cols}", dt, valid=f"{vr}x{vc}")
    default, table = lower.strategies(req)
    assert table["2LNormRowRpt"] is None and table["2LCount"] is None
    assert_all_strategies_verify(req, seed=data.draw(st.integers(0, 5)))


def test_colexpand_binary_modes_broadcast_src1():
    req = request("TCOLEXPANDADD", "16x128", "f32")
    rowrpt = [i for i in lower.lower(req, "2LNormRowRpt").body if isinstance(i, VecOp)]
    assert len(rowrpt) == 2 and all(i.repeat == 16 and i.srcs[1].rep_stride == 0 for i in rowrpt)
    count = [i for i in lower.lower(req, "2LCount").body if isinstance(i, VecOp)]
    assert len(count) == 16 and {i.srcs[1].offset for i in count} == {0}


def test_colexpand_binary_above_255_rows_falls_back_and_verifies():
    req = request("TCOLEXPANDMAX", "300x80", "f32", valid="290x70")
    assert_all_strategies_verify(req)


@settings(max_examples=40, deadline=None)
@given(dt=st.sampled_from(a2a3_dtypes("TROWEXPAND")), mode=st.sampled_from([1, 2]), data=st.data())
def test_rowexpand_verifies_or_says_why_not(dt, mode, data):
    bits = BITS[dt]
    (rows, cols), (vr, vc) = data.draw(shape_and_valid(bits, row_multiple=EPB[bits] if mode == 1 else 1))
    req = request("TROWEXPAND", f"{rows}x{cols}", dt, valid=f"{vr}x{vc}", expand_mode=mode)
    if bits == 8:
        with pytest.raises(NotModelledError):
            lower.strategies(req)
        return
    default, table = lower.strategies(req)
    assert default == "RowDup"
    assert (table["2LNormRowRpt"] is None) == (mode == 1)
    assert_all_strategies_verify(req)


def test_rowexpand_rowdup_is_one_call_per_row():
    p = lower.lower(request("TROWEXPAND", "64x64", "f32"))
    calls = [i for i in p.body if isinstance(i, VecOp)]
    assert len(calls) == 64 and {c.intrinsic for c in calls} == {"vector_dup"}
    assert [c.scalar.offset for c in calls[:3]] == [0, 32, 64]  # src[i, 0] of a row-major 64x8 f32 block tile


@settings(max_examples=60, deadline=None)
@given(od=op_dtype(ROWEXP), mode=st.sampled_from([1, 2]), expanded=st.sampled_from(["src0", "src1"]), data=st.data())
def test_rowexpand_binary_verifies_in_every_strategy(od, mode, expanded, data):
    op, dt = od
    bits = BITS[dt]
    (rows, cols), (vr, vc) = data.draw(shape_and_valid(bits, row_multiple=EPB[bits] if mode == 1 else 1))
    req = request(op, f"{rows}x{cols}", dt, valid=f"{vr}x{vc}", expand_mode=mode, expanded=expanded)
    assert_all_strategies_verify(req, seed=data.draw(st.integers(0, 5)))


def test_rowexpand_mode1_over_256_rows_uses_window_passes():
    req = request("TROWEXPANDSUB", "304x16", "f32", valid="300x13", expand_mode=1, expanded="src0")
    p = lower.lower(req)
    assert [i.repeat for i in p.body if isinstance(i, VecOp) and i.intrinsic == "vbrcb"] == [32, 6]
    assert p.buffer("tmp").offset == 184 * 1024
    assert_all_strategies_verify(req)


def test_rowexpand_mode2_reads_one_block_per_row():
    p = lower.lower(request("TROWEXPANDMUL", "16x64", "f32", expand_mode=2), "2LNormRowRpt")
    (call,) = [i for i in p.body if isinstance(i, VecOp)]
    src1 = call.srcs[1]
    assert (src1.buf, src1.blk_stride, src1.rep_stride) == ("src1", 0, 1)


@pytest.mark.parametrize("args", [
    ("TPARTMAX", "--shape", "64x64", "--src1-valid", "32x32", "--dtype", "f32"),
    ("TCOLEXPANDADD", "--shape", "16x128", "--dtype", "f32"),
    ("BlockReduceMin", "--dtype", "f16", "--repeat", "4", "--mask", "64", "--src-blk-stride", "1",
     "--src-rep-stride", "8", "--dst-rep-stride", "1"),
])
def test_cli_seed_examples_are_verified(args):
    r = run("estimate", *args, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["verified"] == "yes" and doc["cycles"] > 0


SEEDS = [
    ("TPARTMAX", {"shape": "64x64", "src1_valid": "32x32"}),
    ("TCOLEXPANDADD", {"shape": "16x128"}),
    ("BlockReduceMin", {"repeat": 4, "mask": "64", "src_blk_stride": 1, "src_rep_stride": 8, "dst_rep_stride": 1}),
]


@pytest.mark.parametrize("op,kw,dt", [(op, kw, dt) for op, kw in SEEDS for dt in ("f16", "f32", "i16", "i32")
                                      if dt in a2a3_dtypes(op)])
def test_seed_examples_over_dtypes(op, kw, dt):
    kw = dict(kw)
    e = costmodel.estimate(op, kw.pop("shape", None), dt, "a2a3", **kw)
    assert e.verified is True, e.verify_note


@pytest.mark.parametrize("op,kw", [
    ("TPARTADD", {"valid": "0x64"}),
    ("TCOLEXPAND", {"valid": "0x64"}),
    ("TCOLEXPANDSUB", {"valid": "8x0"}),
    ("TROWEXPAND", {"valid": "8x0"}),
    ("TROWEXPANDMUL", {"valid": "0x64", "expand_mode": 2}),
])
def test_empty_dst_region_issues_nothing(op, kw):
    req = request(op, "8x64", "f32", **kw)
    for s in lower.legal_strategies(req):
        p = lower.lower(req, s)
        assert p.body == () and verify(p).ok


@pytest.mark.parametrize("op,kw", [
    ("TPARTMIN", {"src0_valid": "5x20"}), ("TPARTARGMIN", {"src1_valid": "3x64"}), ("TCOLEXPAND", {"valid": "7x40"}),
    ("TCOLEXPANDEXPDIF", {}), ("TROWEXPAND", {"expand_mode": 1}), ("TROWEXPANDDIV", {"expanded": "src0"}),
])
def test_cost_model_prices_every_strategy(op, kw):
    from costmodel.models.a2a3_intrinsic import IntrinsicModel

    req = request(op, "16x64", "f32", **kw)
    for s in lower.legal_strategies(req):
        p = lower.lower(req, s)
        cycles, breakdown = IntrinsicModel().cost(p)
        assert cycles > 0 and cycles == pytest.approx(sum(v for _, v in breakdown))


@settings(max_examples=60, deadline=None)
@given(dt=st.sampled_from(a2a3_dtypes("TSEL")), data=st.data())
def test_tsel_verifies_in_every_strategy_with_the_mask_restarting_per_row(dt, data):
    (rows, cols), (vr, vc) = data.draw(shape_and_valid(BITS[dt]))
    req = request("TSEL", (rows, cols), dt, "a2a3", valid=(vr, vc))
    assert_all_strategies_verify(req, seed=data.draw(st.integers(0, 3)))
    default = lower.strategies(req)[0]
    calls = [i for i in lower.lower(req, default).body if isinstance(i, VecOp)]
    # one vsel per row unless the rows form one run of mask bits
    assert len(calls) == (1 if default == "1LCount" else vr) and {c.intrinsic for c in calls} == {"vsel"}


def test_tsel_in_one_call_only_when_the_mask_rows_are_exactly_the_valid_width():
    assert lower.strategies(request("TSEL", (1, 256), "f32", "a2a3"))[0] == "1LCount"
    default, legal = lower.strategies(request("TSEL", (4, 64), "f32", "a2a3"))  # mask rows: 32 bytes for 64 bits
    assert default == "2LCount" and "mask rows" in legal["1LCount"]


@settings(max_examples=60, deadline=None)
@given(dt=st.sampled_from(a2a3_dtypes("TGATHER")), idx=st.sampled_from(["i32", "u32"]), data=st.data())
def test_tgather_index_form_verifies_with_one_vgather_per_row(dt, idx, data):
    (rows, cols), (vr, vc) = data.draw(shape_and_valid(BITS[dt]))
    req = request("TGATHER", (rows, cols), dt, "a2a3", valid=(vr, vc), idx_dtype=idx)
    assert_all_strategies_verify(req, seed=data.draw(st.integers(0, 3)))
    calls = [i.intrinsic for i in lower.lower(req, lower.strategies(req)[0]).body if isinstance(i, VecOp)]
    assert calls == ["vmuls", "vgather"] * vr


def test_tgather_costs_about_the_recorded_cycles_per_row_and_needs_four_byte_indices():
    # costmodel.md 5: TGATHER measured at about 46.6 cycles per row (vmuls + barrier + one vgather per row)
    e = costmodel.estimate("TGATHER", "8x128", "f32", arch="a2a3")
    assert 40 <= e.cycles / 8 <= 52 and e.verified
    with pytest.raises(Exception, match="index dtype i32/u32"):
        request("TGATHER", (8, 128), "f32", "a2a3", idx_dtype="i16")
