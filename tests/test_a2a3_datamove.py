"""A2/A3 TLOAD / TSTORE / Vec->Vec TMOV: copy structure (costmodel.md §4), GM image, pad fill (isa.md §1.4,
§4.8), §1.5 index mapping, layout moves, trace mapping of the measured rows, broken plans reported."""
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from costmodel import lower
from costmodel.api import request
from costmodel.emulate.verify import verify
from costmodel.errors import ParamError, ShapeError
from costmodel.golden import golden
from costmodel.isa_a2a3 import CopyGmToUb, CopyUB, ScalarMove, TransposeMove
from costmodel.models.a2a3_intrinsic import IntrinsicModel
from costmodel.models.params import ParamRow, ParamTable
from fit.predict import predict_frame
from fit.traces import read_trace, request_kwargs

from .helpers_a2a3 import emulate

ELEMS_PER_BLOCK = {"f32": 8, "f16": 16, "i16": 16, "i8": 32, "u8": 32, "i32": 8, "bf16": 16, "i64": 4}


def _finding_model() -> IntrinsicModel:
    """costmodel.md §4 'our own finding': 262 cycles per copy_gm_to_ubuf_align plus bytes / 127.4."""
    def row(term, value):
        return ParamRow("a2a3", "intrinsic", "intrinsic", "copy_gm_to_ubuf_align", "*", "", "*", "", term, value,
                        None, 0, None, "costmodel.md §4")
    return IntrinsicModel(ParamTable([row("per_call", 262.0), row("per_byte", 1 / 127.4)]))


@settings(max_examples=50, deadline=None)
@given(dt=st.sampled_from(list(ELEMS_PER_BLOCK)), outer=st.tuples(*[st.integers(1, 3)] * 3), s3=st.integers(1, 6),
       s4=st.integers(1, 70), extra_rows=st.integers(0, 3), extra_blocks=st.integers(0, 2),
       pad=st.sampled_from(["null", "zero", "max", "min"]))
def test_tload_verifies_and_issues_one_copy_per_outer_index(dt, outer, s3, s4, extra_rows, extra_blocks, pad):
    epb = ELEMS_PER_BLOCK[dt]
    vr = outer[0] * outer[1] * outer[2] * s3
    cols = -(-s4 // epb) * epb + extra_blocks * epb
    req = request("TLOAD", f"{vr + extra_rows}x{cols}", dt, valid=f"{vr}x{s4}", gm_shape=(*outer, s3, s4), pad=pad)
    p = lower.lower(req)
    copies = [i for i in p.body if isinstance(i, CopyGmToUb)]
    assert len(copies) == outer[0] * outer[1] * outer[2]
    assert all(c.n_burst == s3 and c.len_burst == s4 * (64 // epb) // 2 for c in copies)
    v = verify(p, seed=vr + s4)
    assert v.ok is True, (v.note, v.mismatches[:3])


@settings(max_examples=40, deadline=None)
@given(dt=st.sampled_from(list(ELEMS_PER_BLOCK)), outer=st.tuples(*[st.integers(1, 3)] * 3), s3=st.integers(1, 5),
       s4=st.integers(1, 70), extra_rows=st.integers(0, 3), extra_blocks=st.integers(0, 2))
def test_tstore_verifies(dt, outer, s3, s4, extra_rows, extra_blocks):
    epb = ELEMS_PER_BLOCK[dt]
    vr = outer[0] * outer[1] * outer[2] * s3
    cols = -(-s4 // epb) * epb + extra_blocks * epb
    req = request("TSTORE", f"{vr + extra_rows}x{cols}", dt, valid=f"{vr}x{s4}", gm_shape=(*outer, s3, s4))
    v = verify(lower.lower(req), seed=s4)
    assert v.ok is True, (v.note, v.mismatches[:3])


def test_tload_pad_max_fills_the_tile():
    gm = np.arange(8 * 13, dtype=np.float32).reshape(8, 13)
    p = lower.lower(request("TLOAD", "8x16", "f32", valid="8x13", pad="PadValue::Max"))
    tile = emulate(p, {"src": gm})
    assert np.array_equal(tile[:, :13], gm)
    assert np.all(tile[:, 13:] == np.inf)  # f32 Max = 0x7f800000 (isa.md §1.4)
    # the burst of 13 floats (52 B) pads to 64 B: the 3 pad elements come from the copy itself
    assert [type(i).__name__ for i in p.body] == ["CopyGmToUb"] and p.body[0].right_pad == 3


def test_tload_pad_values_per_type():
    gm16 = np.ones((4, 7), np.int16)
    t = emulate(lower.lower(request("TLOAD", "6x32", "i16", valid="4x7", pad="max")), {"src": gm16})
    assert np.all(t[:4, 7:] == 32767) and np.all(t[4:] == 32767)  # rows the bursts cannot reach: vector_dup fill
    gm8 = np.ones((4, 7), np.int8)
    t = emulate(lower.lower(request("TLOAD", "4x32", "i8", valid="4x7", pad="min")), {"src": gm8})
    assert np.all(t[:, 7:] == -128)  # i8 Min is 0x80 in the code (isa.md §1.4)
    t = golden("TLOAD", np.ones((2, 3), np.uint8), valid=(2, 3), tile_shape=(2, 32), pad="min")
    assert np.all(t[:, 3:] == 0)


def test_tload_null_pad_leaves_the_rest_untouched():
    p = lower.lower(request("TLOAD", "8x16", "f32", valid="8x13"))
    before = np.full((8, 16), 5.0, np.float32)
    t = emulate(p, {"src": np.zeros((8, 13), np.float32), "dst": before})
    assert np.all(t[:, 13:] == 5.0) and np.all(t[:, :13] == 0.0)


def test_gm_index_mapping_is_little_endian_over_outer_dims():
    gm = np.arange(2 * 3 * 1 * 2 * 4).reshape(2, 3, 1, 2, 4).astype(np.float32)
    t = golden("TLOAD", gm, valid=(12, 4), tile_shape=(12, 8))
    # tile row r = i3 + 2*(i2 + 1*(i1 + 3*i0)): row 5 is (i0, i1, i2, i3) = (0, 2, 0, 1)
    assert t[5, :4].tolist() == gm[0, 2, 0, 1].tolist()
    assert t[7, :4].tolist() == gm[1, 0, 0, 1].tolist()
    with pytest.raises(ShapeError, match="shape0"):
        request("TLOAD", "16x8", "f32", valid="12x4", gm_shape=(1, 1, 1, 11, 4))


@pytest.mark.parametrize("shape,dt,valid,gm,copies,cycles", [
    ("128x128", "f32", None, (1, 1, 1, 128, 128), 1, 262 + 65536 / 127.4),
    ("256x64", "f32", None, (2, 2, 2, 32, 64), 8, 8 * 262 + 65536 / 127.4),
    ("64x128", "i16", None, (1, 1, 32, 2, 128), 32, 32 * 262 + 16384 / 127.4),
    ("128x128", "f32", "128x127", (1, 1, 1, 128, 127), 1, 262 + 128 * 508 / 127.4),
])
def test_measured_tload_plans_and_the_section4_model(shape, dt, valid, gm, copies, cycles):
    p = lower.lower(request("TLOAD", shape, dt, valid=valid, gm_shape=gm))
    assert p.counts() == {"copy_gm_to_ubuf_align": copies}
    assert _finding_model().cost(p)[0] == pytest.approx(cycles)


def test_tmov_same_layout_is_one_burst_and_layout_change_is_a_transpose():
    p = lower.lower(request("TMOV", "64x128", "f32"))
    assert p.strategy == "UbCopy" and p.body == (CopyUB(p.body[0].dst, p.body[0].src, 1, 64 * 128 * 4 // 32),)
    p = lower.lower(request("TMOV", "64x128", "f32", src_layout="nd", dst_layout="dn"))
    assert p.strategy == "Transpose" and isinstance(p.body[0], TransposeMove) and p.body[0].blocks == 64 * 128 * 4 // 32
    p = lower.lower(request("TMOV", "64x128", "f32", src_layout="nd", dst_layout="dn", strategy="ScalarMove"))
    assert type(p.body[0]) is ScalarMove
    assert lower.strategies(request("TMOV", "64x128", "f32", src_layout="nd", dst_layout="dn"))[1]["UbCopy"]
    # ND -> Nz moves whole 32-byte blocks: one call per 8-column strip, 64 one-block bursts each
    p = lower.lower(request("TMOV", "64x128", "f32", dst_layout="ColMajor/RowMajor"))
    assert p.strategy == "UbCopy" and len(p.body) == 16
    assert {(c.n_burst, c.len_burst, c.src_gap, c.dst_gap) for c in p.body} == {(64, 1, 15, 0)}


@settings(max_examples=40, deadline=None)
@given(src=st.sampled_from(["nd", "dn", "nz", "zn", "zz"]), dst=st.sampled_from(["nd", "dn", "nz", "zn", "zz"]),
       dt=st.sampled_from(["f32", "f16", "i8"]), rb=st.integers(1, 3), cb=st.integers(1, 3), data=st.data())
def test_tmov_every_layout_pair_verifies(src, dst, dt, rb, cb, data):
    epb = ELEMS_PER_BLOCK[dt]
    rows, cols = 16 * rb * (2 if dt == "i8" else 1), max(16, epb) * cb
    vr = data.draw(st.integers(1, rows), label="vr")
    vc = data.draw(st.integers(1, cols), label="vc")
    req = request("TMOV", f"{rows}x{cols}", dt, valid=f"{vr}x{vc}", src_layout=src, dst_layout=dst)
    for s in lower.legal_strategies(req):
        v = verify(lower.lower(req, s), seed=vr * vc)
        assert v.ok is True, (s, v.note, v.mismatches[:3])


def test_tmov_rejects_non_vec_and_type_changes():
    with pytest.raises(ParamError, match="Vec->Vec"):
        request("TMOV", "16x16", "f16", src_loc="Mat")
    with pytest.raises(ParamError, match="keeps the element type"):
        request("TMOV", "16x16", "f16", dst_dtype="f32")
    # a pair the catalogue lists for Acc/Mat tiles and one it does not get the same answer, for GM too
    for op, src, dst in (("TMOV", "f32", "f16"), ("TSTORE", "f32", "f16"), ("TSTORE", "f16", "f32")):
        with pytest.raises(ParamError, match=rf"keeps the element type; the only conversions the catalogue lists for {op} \(.*\) run on Acc/Mat-tile paths"):
            request(op, "16x16", src, dst_dtype=dst)
    with pytest.raises(ParamError, match="TSTORE from a Vec tile to GM keeps"):
        request("TSTORE", "16x16", "f32", dst_dtype="f16")


@pytest.mark.parametrize("op, key, value, readers", [
    ("TLOAD", "src_layout", "dn", "TMOV"), ("TLOAD", "dst_layout", "nz", "TMOV"), ("TSTORE", "pad", "max", "TLOAD"),
    ("TSTORE", "gm_dynamic", True, "TLOAD"), ("TMOV", "pad", "max", "TLOAD"),
    ("TMOV", "gm_shape", "1x1x1x16x64", "TLOAD, TSTORE")])
def test_a_data_movement_parameter_another_op_reads_is_refused(op, key, value, readers):
    """A DN source given to TLOAD was echoed in the request and priced as the ND load (QA 53): the data-movement ops
    share a family, so the family check let every one of them take the others' parameters."""
    with pytest.raises(ParamError, match=rf"^{key} is read by {readers} among the data movement ops, not {op}$"):
        request(op, "16x64", "f32", **{key: value})
    frame = predict_frame(pd.DataFrame([{"op": op, "arch": "a2a3", "dtype": "f32", "rows": 16, "cols": 64, key: value}]))
    assert np.isnan(frame.loc[0, "predicted_cycles"]) and f"{key} is read by {readers}" in frame.loc[0, "note"]


def test_a_transpose_says_its_sequence_and_price_are_inferred():
    import costmodel

    moved = costmodel.estimate("TMOV", "64x128", "f32", src_layout="nd", dst_layout="dn", verify=False)
    copied = costmodel.estimate("TMOV", "64x128", "f32", dst_layout="nz", verify=False)
    assert moved.strategy == "Transpose" and any("Transpose is one scatter_vnchwconv pass" in n and "inferred" in n
                                                for n in moved.notes)
    assert not any("scatter_vnchwconv" in n for n in copied.notes)


def test_broken_tload_plan_is_reported():
    p = lower.lower(request("TLOAD", "16x64", "f32", valid="16x60", pad="max"))
    copy = p.body[0]
    assert verify(p).ok is True
    assert verify(replace(p, body=(replace(copy, dst_gap=1),))).ok is False  # rows land in the wrong place
    assert verify(replace(p, body=(replace(copy, right_pad=0),))).ok is False  # pad columns left unfilled


# --- the measured trace ------------------------------------------------------------------------------

def test_trace_rows_map_gm_shape_pad_and_layouts():
    row = {"arch": "a2a3", "op": "TLOAD", "dtype": "fp32", "dst_dtype": "", "rows": 256, "cols": 64,
           "valid_rows": 256, "valid_cols": 60, "op_params": "", "round_mode": "", "saturation_mode": "",
           "extra": "shape0=2;shape1=2;shape2=2;shape3=256;shape4=60;dyn=1;PadVal=PadValue::Max"}
    kw = request_kwargs(row)
    assert kw["gm_shape"] == (2, 2, 2, 32, 60) and kw["pad"] == "PadValue::Max" and kw["gm_dynamic"] is True
    row.update(op="TMOV", extra="srcLoc=Vec;srcBL=ColMajor;srcSL=RowMajor;dstLoc=Vec;dstBL=ColMajor;dstSL=NoneBox",
               valid_cols=64)
    kw = request_kwargs(row)
    assert kw["src_layout"] == "ColMajor/RowMajor" and kw["dst_layout"] == "ColMajor/NoneBox"
    r = request(**kw)
    assert (r.tile("src").layout, r.dst.layout) == ("nz", "col_major")


MINE = {"TROWSUM", "TROWMAX", "TCOLSUM", "TCOLMAX", "TCVT", "TLOAD", "TMOV"}


def test_every_measured_row_of_these_ops_is_predicted(measured_dir):
    out = predict_frame(read_trace(measured_dir / "a2a3_cycles.csv"))
    mine = out[out["op"].isin(MINE)]
    assert len(mine) > 0 and mine["predicted_cycles"].notna().all(), mine[mine["predicted_cycles"].isna()]["note"]
    conv = out[out["op"] == "TLOADCONV"]
    assert conv["predicted_cycles"].isna().all() and conv["note"].str.contains("no catalogue entry").all()


def test_cli_passes_the_new_op_parameters():
    import json
    import subprocess
    import sys

    from .conftest import ROOT

    def run(*args):
        r = subprocess.run([sys.executable, "-m", "cli", *args, "--json"], capture_output=True, text=True, cwd=ROOT,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    doc = run("plan", "TLOAD", "--shape", "64x128", "--dtype", "i16", "--gm-shape", "1x1x32x2x128", "--pad", "max")
    assert doc["counts"] == {"copy_gm_to_ubuf_align": 32}
    doc = run("estimate", "TCVT", "--shape", "4x64", "--dtype", "f16", "--dst-dtype", "i8", "--round-mode", "floor",
              "--saturation", "on")
    assert doc["params"] == {"round_mode": "floor", "saturation": "on"} and doc["verified"] == "yes"
    doc = run("compare", "TCOLSUM", "--shape", "9x64", "--dtype", "f16", "--binary")
    assert doc["default"] == "ColBinary" and {s["strategy"] for s in doc["strategies"]} == {"ColBinary", "ColLinear"}
    doc = run("estimate", "TMOV", "--shape", "64x128", "--dtype", "f32", "--src-layout", "nd", "--dst-layout", "dn")
    assert doc["strategy"] == "Transpose" and doc["tiles"]["dst"]["layout"] == "col_major"
