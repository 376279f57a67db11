"""Trace reading and checking: bad rows reported by line number, predict never aborts."""
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, strategies as st

from costmodel.errors import ParamError, TraceError
from costmodel.operands import make_request
from fit.predict import predict_frame
from fit.traces import LINE, average_repeats, check_trace, parse_extra, read_trace, request_kwargs, trace_request, trace_wording

HEADER = "arch,op,dtype,dst_dtype,rows,cols,valid_rows,valid_cols,vf_impl_kind,measured_cycles\n"


def write(tmp_path, body: str, header: str = HEADER):
    p = tmp_path / "t.csv"
    p.write_text(header + body)
    return p


def test_bad_rows_are_reported_by_line(tmp_path):
    p = write(tmp_path, "a2a3,TMINS,f16,,64,64,64,64,,55\n"      # line 2 ok
                        "a2a3,TMINS,f16,,64,64,65,64,,55\n"      # 3 valid > tile
                        "a2a3,TNOPE,f16,,64,64,64,64,,55\n"      # 4 unknown op
                        "a2a3,TMINS,u8,,64,64,64,64,,55\n"       # 5 dtype unsupported on a2a3
                        "a2a3,TMINS,f16,,x,64,64,64,,55\n"       # 6 rows not an integer
                        "a2a3,TMINS,f16,,64,64,64,64,,-3\n"      # 7 negative cycles
                        "a5,TMINS,f16,,64,64,64,64,VFIMPL_3D,55\n"  # 8 unknown vf_impl_kind
                        "a9,TMINS,f16,,64,64,64,64,,55\n")       # 9 unknown arch
    good, problems = check_trace(read_trace(p))
    assert list(good[LINE]) == [2]
    by_line = {pr.line: pr for pr in problems}
    assert set(by_line) == {3, 4, 5, 6, 7, 8, 9}
    assert "larger than the tile" in by_line[3].message
    assert "unknown op" in by_line[4].message
    assert "u8" in by_line[5].message
    assert by_line[6].column == "rows"
    assert by_line[7].column == "measured_cycles"
    assert "VFIMPL_3D" in by_line[8].message
    assert "unknown arch" in by_line[9].message


def test_conflicting_duplicates_flagged_but_identical_ones_kept(tmp_path):
    p = write(tmp_path, "a2a3,TMINS,f16,,64,64,64,64,,55\n" * 2 + "a2a3,TADD,f32,,64,64,64,64,,160\na2a3,TADD,f32,,64,64,64,64,,170\n")
    good, problems = check_trace(read_trace(p))
    assert list(good[LINE]) == [2, 3]
    assert [p.line for p in problems] == [4, 5] and all("conflicting duplicates (lines 4, 5)" in p.message for p in problems)


def test_repeated_runs_within_the_profilers_noise_are_kept(tmp_path):
    """measured/README.md: ±1 cycle is noise; two runs 2 cycles apart are repeats, 3 apart a conflict."""
    p = write(tmp_path, "a2a3,TMINS,f16,,64,64,64,64,,55\na2a3,TMINS,f16,,64,64,64,64,,57\n"
                        "a2a3,TADD,f32,,64,64,64,64,,160\na2a3,TADD,f32,,64,64,64,64,,163\n")
    good, problems = check_trace(read_trace(p))
    assert list(good[LINE]) == [2, 3] and [pr.line for pr in problems] == [4, 5]


def test_duplicates_are_the_same_request_however_spelled(tmp_path):
    header = "arch,op,dtype,dst_dtype,rows,cols,valid_rows,valid_cols,vf_impl_kind,round_mode,saturation_mode,measured_cycles\n"
    p = write(tmp_path, "a5,TCVT,fp32,fp16,1,64,1,64,VFIMPL_1D_NO_POST_UPDATE,CAST_RINT,ON,53\n"   # 2
                        "A5,tcvt,float32,half,1,64,1,64,vfimpl_1d_no_post_update,rint,on,60\n"   # 3 the same, spelled apart
                        "a5,TCVT,fp32,fp16,1,64,1,64,VFIMPL_1D_NO_POST_UPDATE,CAST_TRUNC,ON,61\n"  # 4 another round mode
                        "a5,TMINS,fp32,,1,64,1,64,VFIMPL_1D_POST_UPDATE,,,58\n"                 # 5
                        "a5,TMINS,f32,,1,64,1,64,VFIMPL_1D_NO_POST_UPDATE,,,50\n", header)      # 6 another loop form
    good, problems = check_trace(read_trace(p))
    assert list(good[LINE]) == [4, 5, 6]
    assert [p.line for p in problems] == [2, 3] and all("conflicting duplicates (lines 2, 3)" in p.message for p in problems)


def test_runs_that_emit_the_same_loop_are_one_case(tmp_path):
    # VFIMPL_DEFAULT on a contiguous 1x640 TADD dispatches to 1d-post-update: the same program as asking for it, so
    # the two runs are one case (7 cycles apart: a conflict); the no-post-update run is another loop, another case
    header = "arch,op,dtype,rows,cols,vf_impl_kind,strategy,measured_cycles\n"
    p = write(tmp_path, "a5,TADD,f32,1,640,VFIMPL_DEFAULT,,67\na5,TADD,f32,1,640,VFIMPL_1D_POST_UPDATE,,60\n"
                        "a5,TADD,f32,1,640,VFIMPL_1D_NO_POST_UPDATE,,61\n"
                        "a2a3,TMINS,f16,64,64,,,55\na2a3,TMINS,f16,64,64,,2LNormRowRpt,56\n", header)
    good, problems = check_trace(read_trace(p))
    assert sorted({p.line for p in problems}) == [2, 3] and list(good[LINE]) == [4, 5, 6]
    # ... and a blank A2/A3 strategy and the default named are one case too: repeats, averaged
    assert average_repeats(good)[1] == 1


def test_a_column_named_line_is_the_callers_data(tmp_path):
    """A profiler's own `line` column (source lines) neither numbers the rows nor hides a bad one."""
    p = write(tmp_path, "a2a3,TMINS,f16,,64,64,64,64,,55,kern.cpp:12\n"
                        "a2a3,TMINS,f16,,64,128,64,128,,-1,kern.cpp:40\n", header=HEADER.strip() + ",line\n")
    good, problems = check_trace(read_trace(p))
    assert [pr.line for pr in problems] == [3] and list(good[LINE]) == [2]
    out = predict_frame(read_trace(p))
    assert list(out["line"]) == ["kern.cpp:12", "kern.cpp:40"] and out["predicted_cycles"].notna().all()
    assert "not a cycle count" in out.loc[1, "note"]  # predicting reads no measurement: priced, the problem noted


def test_measured_cycles_must_be_finite_whole_counts(tmp_path):
    p = write(tmp_path, "".join(f"a2a3,TMINS,f16,,64,{64 * (i + 1)},64,{64 * (i + 1)},,{v}\n"
                                for i, v in enumerate(["55", "inf", "1e400", "0.5", "-Infinity", "nan", "56.5"])))
    good, problems = check_trace(read_trace(p))
    assert list(good[LINE]) == [2, 8] and sorted(pr.line for pr in problems) == [3, 4, 5, 6, 7]
    assert all("not a cycle count" in pr.message for pr in problems)


def test_line_numbers_are_the_files_own_across_blank_lines(tmp_path):
    p = write(tmp_path, "\na2a3,TMINS,f16,,64,64,64,64,,55\n\n\na2a3,TNOPE,f16,,64,64,64,64,,55\n"
                        'a2a3,"TMINS",f16,,64,128,64,128,,56\n')
    good, problems = check_trace(read_trace(p))
    assert [pr.line for pr in problems] == [6] and list(good[LINE]) == [3, 7]


def test_parquet_rows_are_named_rows_counted_from_one(tmp_path):
    pytest.importorskip("pyarrow")
    df = pd.DataFrame({"arch": "a2a3", "op": ["TMINS", "TNOPE"], "dtype": "f16", "rows": 64, "cols": 64,
                       "measured_cycles": [55.0, 56.0]})
    df.to_parquet(tmp_path / "t.parquet")
    _, problems = check_trace(read_trace(tmp_path / "t.parquet"))
    assert [p.where for p in problems] == ["row 2"]


def test_a_parquet_trace_of_concatenated_frames_validates(tmp_path):
    # pd.concat without ignore_index stores repeated index labels; validate recombines its per-arch scores by row
    pytest.importorskip("pyarrow")
    from fit.validate import validate_frame

    a5 = pd.DataFrame({"arch": "a5", "op": "TADD", "dtype": "f32", "rows": 1, "cols": [64, 640],
                       "measured_cycles": [55.0, 66.0]})
    a2a3 = pd.DataFrame({"arch": "a2a3", "op": ["TMINS", "TMINS", "TABS"], "dtype": "f16", "rows": [16, 64, 8000],
                         "cols": 64, "measured_cycles": [40.0, 55.0, 60.0]})  # TABS 8000x64 overflows: unmodelled
    pd.concat([a5, a2a3]).to_parquet(tmp_path / "mixed.parquet")
    trace, problems = check_trace(read_trace(tmp_path / "mixed.parquet"))
    assert not problems
    for frame in (trace, trace.set_axis([0, 1, 0, 1, 2])):  # read from the file, or handed over with repeated labels
        report = validate_frame(frame)
        assert list(report.predictions["arch"]) == ["a5", "a5", "a2a3", "a2a3", "a2a3"]
        assert report.overall["unmodelled"] == 1 and report.predictions["predicted_cycles"].notna().sum() == 4


def test_a_column_named_twice_in_a_header_is_an_error(tmp_path):
    with pytest.raises(TraceError, match="column rows appears more than once"):
        read_trace(write(tmp_path, "a2a3,TMINS,f16,64,64,32\n", header="arch,op,dtype,rows,cols,rows\n"))
    # names are read without case, so op and OP are one column given twice, in CSV and in Parquet alike
    with pytest.raises(TraceError, match="column op / OP appears more than once"):
        read_trace(write(tmp_path, "a2a3,TMINS,f16,64,64,TSUB\n", header="arch,op,dtype,rows,cols,OP\n"))
    pytest.importorskip("pyarrow")
    pd.DataFrame({"arch": ["a2a3"], "op": ["TADD"], "dtype": ["f32"], "rows": [16], "cols": [64],
                  "Rows": [32]}).to_parquet(tmp_path / "t.parquet")
    with pytest.raises(TraceError, match="column rows / Rows appears more than once"):
        read_trace(tmp_path / "t.parquet")


def test_extra_keys_the_mapping_does_not_read_are_named_and_misspelt_ones_refused(tmp_path):
    p = tmp_path / "cases.csv"
    p.write_text("arch,op,dtype,rows,cols,extra\n"
                 "a2a3,TCOLSUM,f16,9,64,isBinary=true\n"
                 "a2a3,TCOLSUM,f16,9,64,isbinary=true\n"      # a case slip would silently give the linear sum
                 "a2a3,TSQRT,f32,64,64,inPlace=1\n"           # part of isInPlace
                 "a5,TPARTMAX,f32,64,64,src1_valid=32x32\n"   # an op parameter belongs in its own column
                 "a2a3,TMINS,f16,64,64,warmup=10\n"           # the user's own test parameter: kept, named
                 "a2a3,TMINS,f16,64,64,TAG=t;N=2\n")          # the measured file's unused keys: silent
    out = predict_frame(read_trace(p))
    cycles, note, strategy = (out[c].tolist() for c in ("predicted_cycles", "note", "strategy"))
    assert strategy[0] == "ColBinary" and "extra" not in note[0]  # read: only the model's caveat, if any
    assert np.isnan(cycles[1]) and "did you mean 'isBinary'" in note[1]
    assert np.isnan(cycles[2]) and "did you mean 'isInPlace'" in note[2]
    assert np.isnan(cycles[3]) and "column named src1_valid" in note[3]
    # the unread key is named after the model's own note (its typical error), which the silent keys leave alone
    assert cycles[4] == cycles[5] and note[4] == f"{note[5]}; extra key not read: warmup"
    assert note[5].startswith("typical error")


@pytest.mark.parametrize("extra, op_params, message", [
    ("isBinary", "", "extra part 'isBinary' is not key=value"),
    ("=true", "", "extra part '=true' is not key=value"),
    ("PadVal=", "", "extra part 'PadVal=' is not key=value"),
    ("isBinary=true;isBinary=false", "", "extra key 'isBinary' is given twice"),  # which one was measured?
    ("variant=xyz", "", "extra variant 'xyz' is not one the mapping reads; accepted: TileScalar, ScalarTile"),
    ("", "high_precision", "op_params 'high_precision' not read (TRECIP takes a precision, TSEL names its mask "
                           "program)"),
])
def test_extra_and_op_params_the_mapping_cannot_read_say_so(extra, op_params, message):
    from fit.traces import extra_note

    row = {"op": "TCOLSUM", "extra": extra, "op_params": op_params}
    if op_params:
        assert extra_note(row) == message
    else:
        with pytest.raises(TraceError, match=re.escape(message)):
            extra_note(row)
    assert extra_note({"op": "TCOLSUM", "extra": ";;isBinary=true;", "op_params": ""}) == ""  # empty parts: nothing
    # a TSEL's op_params names the mask program the lowering picks by element width (costmodel.md §3 step 6)
    assert extra_note({"op": "TSEL", "dtype": "fp16", "extra": "", "op_params": "TSel_b16_8"}) == ""
    assert extra_note({"op": "TSEL", "dtype": "fp32", "extra": "", "op_params": "TSel_b16_8"}) == (
        "op_params 'TSel_b16_8' is not a TSEL mask program for fp32 (TSel_b32_even, TSel_b32_odd): priced by the "
        "program the lowering picks")


def test_a_partial_gm_shape_is_refused(tmp_path):
    p = write(tmp_path, "a2a3,TLOAD,f32,128,128,shape1=7\n", header="arch,op,dtype,rows,cols,extra\n")
    out = predict_frame(read_trace(p))
    assert np.isnan(out.loc[0, "predicted_cycles"]) and "needs all of shape0..shape4" in out.loc[0, "note"]


def test_missing_columns_and_unreadable_files(tmp_path):
    with pytest.raises(TraceError, match="missing column"):
        read_trace(write(tmp_path, "TMINS,f16\n", header="op,dtype\n"))
    with pytest.raises(TraceError, match="does not exist"):
        read_trace(tmp_path / "nope.csv")
    bad = tmp_path / "b.parquet"
    bad.write_bytes(b"not parquet")
    with pytest.raises(TraceError, match="not a readable Parquet trace") as err:
        read_trace(bad)
    assert str(err.value).count(str(bad)) == 1
    header = "arch,op,dtype,rows,cols\n"
    for text, said in ((header + "a5,TADD,f32,8\n", "line 2 has 4 fields but the header has 5; give every column"),
                       (header + "a5,TADD,f32,8,64,1\n", "quote fields that contain commas"),
                       ("# profiled\n" + header + "a5,TADD,f32,8,64\n", "line 1 is a comment, not the header")):
        with pytest.raises(TraceError, match=re.escape(said)):
            read_trace(write(tmp_path, text, header=""))
    for encoding, said in (("utf-16", "not UTF-8 text (it looks UTF-16)"), ("latin-1", "line 2 is not UTF-8 text")):
        f = tmp_path / f"{encoding}.csv"
        f.write_bytes((header + "a5,TADD,f32,8,64 é\n").encode(encoding))
        with pytest.raises(TraceError, match=re.escape(said)):
            read_trace(f)


def test_predict_gives_nan_and_reason_never_aborts(tmp_path):
    p = write(tmp_path, "a2a3,TMINS,f16,,64,64,64,64,,55\na2a3,TMATMUL,f16,f32,16,16,16,16,,54\na2a3,TNOPE,f16,,1,16,1,16,,3\n")
    out = predict_frame(read_trace(p))
    assert np.isfinite(out.loc[0, "predicted_cycles"]) and out.loc[0, "strategy"] == "2LNormRowRpt"
    assert np.isnan(out.loc[1, "predicted_cycles"]) and "TMATMUL" in out.loc[1, "note"]
    assert np.isnan(out.loc[2, "predicted_cycles"]) and "unknown op" in out.loc[2, "note"]


def test_predict_notes_name_the_trace_column_not_the_cli_option(tmp_path):
    p = write(tmp_path, "a5,TADDS,f32,8,64,010,100\na5,TCVT,f32,8,64,,100\n",
              header="arch,op,dtype,rows,cols,scalar,measured_cycles\n")
    notes = predict_frame(read_trace(p))["note"].tolist()
    assert notes[0].startswith("scalar '010' has a leading zero"), notes
    assert "(dst_dtype)" in notes[1] and "--" not in "".join(notes), notes


def test_predict_blames_the_cell_at_fault_and_reads_op_params_as_name_value(tmp_path):
    p = write(tmp_path, "a5,TCVT,f32,bogus,16,64,,\na5,TCVT,bf16,i4,16,64,,\na5,TCVT,bogus,f16,16,64,,\n"
                        "a5,TRECIP,f32,,16,64,precision=high_precision,\na5,TRECIP,f32,,16,64,high_precision,\n"
                        "a5,TSELS,f32,,16,64,scalar=2,\na5,TADD,f32,,16,64,,all\n",
              header="arch,op,dtype,dst_dtype,rows,cols,op_params,strategy\n")
    out = predict_frame(read_trace(p))
    notes = out["note"].tolist()
    # an unknown target, or a target the source type does not convert to there, is dst_dtype's fault
    assert notes[0].startswith("dst_dtype: unknown dtype 'bogus'") and notes[1].startswith("dst_dtype:"), notes
    assert notes[2].startswith("dtype: unknown dtype 'bogus'")
    # TRECIP's precision written as name=value is read; a parameter with a column of its own is pointed there
    assert out.loc[3, "predicted_cycles"] == out.loc[4, "predicted_cycles"] > 0
    assert "op_params 'scalar=2' not read: give scalar a column of its own" in notes[5]
    assert np.isnan(out.loc[6, "predicted_cycles"]) and "strategy 'all' names no one strategy" in notes[6]


def test_counts_beyond_any_buffer_are_row_errors_and_kept_as_written(tmp_path):
    from fit.validate import validate_frame

    p = write(tmp_path, "a2a3,TADD,f16,,99999999999999999999999,16,16,16,,10\na2a3,TADD,f16,,1e30,16,16,16,,10\n"
                        "a2a3,TADD,f16,,16,16,16,16,,10\n")
    out = predict_frame(read_trace(p))
    assert out["rows"].tolist() == ["99999999999999999999999", "1e30", "16"]
    assert all("is too large: counts are at most 16777216" in n for n in out["note"][:2])
    assert out["predicted_cycles"][:2].isna().all() and out["predicted_cycles"][2] > 0
    bad = write(tmp_path, "a2a3,TADD,f16,,16,16,16,16,,abc\n")
    with pytest.raises(TraceError, match=r"no row has a usable measured_cycles value \(line 2: measured_cycles: 'abc'"):
        validate_frame(read_trace(bad))


@pytest.mark.parametrize("message, expected", [
    ("--scalar '010' has a leading zero", "scalar '010' has a leading zero"),
    ("needs a destination dtype (--dst-dtype)", "needs a destination dtype (dst_dtype)"),
    ("--saturation on", "saturation_mode on"),
    ("unknown round mode '--rint'; accepted: rint", "unknown round mode '--rint'; accepted: rint"),  # a value
    ("use --model pipeline; run `pto-cost fit --model pipeline`", "use --model pipeline; run `pto-cost fit --model pipeline`"),
    ("--scalar-ish and --strategy", "--scalar-ish and strategy"),
])
def test_trace_wording_renames_request_options_only(message, expected):
    assert trace_wording(message) == expected


def test_parquet_roundtrip(tmp_path):
    df = pd.DataFrame({"arch": ["a2a3"], "op": ["TMINS"], "dtype": ["fp16"], "rows": [64], "cols": [64],
                       "measured_cycles": [55.0]})
    df.to_parquet(tmp_path / "t.parquet")
    good, problems = check_trace(read_trace(tmp_path / "t.parquet"))
    assert not problems and good.loc[0, "valid_rows"] == 64


def test_parquet_nulls_and_plain_frames_read_like_empty_csv_cells(tmp_path):
    df = pd.DataFrame({"arch": ["a5", "a5"], "op": ["TCVT", "TADD"], "dtype": ["fp16", "fp32"],
                       "dst_dtype": ["fp32", None], "rows": [1, 2], "cols": [64, 64], "valid_rows": [1, None],
                       "measured_cycles": [60.0, 55.0]})
    df.to_parquet(tmp_path / "t.parquet")
    good, problems = check_trace(read_trace(tmp_path / "t.parquet"))
    assert not problems and good.loc[1, "dst_dtype"] == "" and good.loc[1, "valid_rows"] == 2
    out = predict_frame(df.assign(dst_dtype=[np.nan if d is None else d for d in df.dst_dtype]))
    assert out.predicted_cycles.notna().all(), out.note.tolist()
    assert list(out[LINE]) == [2, 3]


def test_measured_files_map_to_requests(measured_dir):
    for name in ("a2a3_cycles.csv", "a5_vf_cycles.csv"):
        good, problems = check_trace(read_trace(measured_dir / name))
        assert len(good) > 0.85 * (len(good) + len({p.line for p in problems}))
    row = {"arch": "a2a3", "op": "TDIVS", "dtype": "fp16", "dst_dtype": "", "rows": 63, "cols": 64, "valid_rows": 63,
           "valid_cols": 64, "extra": "variant=ScalarTile", "op_params": "", "round_mode": "", "saturation_mode": ""}
    assert request_kwargs(row)["order"] == "scalar_tile"


@given(st.dictionaries(st.text("abcdefgh", min_size=1, max_size=5), st.text("xyz0123", max_size=5), max_size=5))
def test_parse_extra_roundtrip(d):
    text = ";".join(f"{k}={v}" for k, v in d.items())
    assert parse_extra(text) == {k: v.strip() for k, v in d.items()}


def test_trace_round_modes_are_named_by_the_conversion_table():
    # CAST_* (isa.md §4.4 RoundMode) from a trace names the same mode as the CLI's `rint` / the letter `r`
    row = {"arch": "a5", "op": "TCVT", "dtype": "fp32", "dst_dtype": "fp16", "rows": 1, "cols": 64, "valid_rows": 1,
           "valid_cols": 64, "extra": "", "op_params": "", "round_mode": "CAST_RINT", "saturation_mode": ""}
    for mode in ("CAST_RINT", "rint", "r"):
        assert make_request(**request_kwargs(dict(row, round_mode=mode))).param("round_mode") == "rint"
    with pytest.raises(ParamError, match="unknown round mode"):
        make_request(**request_kwargs(dict(row, round_mode="CAST_SIDEWAYS")))


def test_rows_whose_tiles_overflow_the_ub_are_modelled_in_place(tmp_path):
    # three 20x1312 fp32 tiles need 3 x 104960 B > 256 KiB (isa.md 1.2), yet the row was measured
    p = write(tmp_path, "a5,TADD,fp32,,20,1312,20,1280,VFIMPL_DEFAULT,869\na5,TADD,fp32,,10,1312,10,1280,VFIMPL_DEFAULT,449\n"
                        "a5,TCVT,fp32,fp16,20,2560,20,2560,VFIMPL_DEFAULT,500\n")
    good, _ = check_trace(read_trace(p))
    rows = good.to_dict("records")
    big, note = trace_request(rows[0])
    assert big.param("in_place") and "in place" in note and "src0" in note
    small, note = trace_request(rows[1])
    assert not small.param("in_place") and note == ""
    out = predict_frame(read_trace(p))
    assert np.isfinite(out.loc[0, "predicted_cycles"]) and "in place" in out.loc[0, "note"]
    # a conversion to a narrower type cannot overwrite its source: the row keeps its UB error
    assert np.isnan(out.loc[2, "predicted_cycles"]) and "unified buffer" in out.loc[2, "note"]
    # a case nobody measured is priced as given, like `estimate` and `sweep`: it does not fit
    cases = read_trace(p).assign(measured_cycles="")
    out = predict_frame(cases)
    assert np.isnan(out.loc[0, "predicted_cycles"]) and "unified buffer" in out.loc[0, "note"]
    assert np.isfinite(out.loc[1, "predicted_cycles"])


def test_cv_groups_by_shape_and_by_measured_case():
    from fit.traces import cv_groups

    df = pd.DataFrame({"op": ["TADD", "TADD", "TMUL", "TADD"], "dtype": "fp32", "dst_dtype": "",
                       "rows": [1, 1, 1, 2], "cols": [640, 640, 640, 640], "valid_cols": [640, 577, 640, 640],
                       "vf_impl_kind": "VFIMPL_DEFAULT"})
    shape = cv_groups(df, "shape")
    case = cv_groups(df, "measurement")
    assert shape[0] == shape[1] == shape[2] != shape[3]
    assert case[0] == case[1] != case[2]  # a tail mirror stays with its full-width row; TMUL is its own case
    assert len(set(case)) == 3
    with pytest.raises(TraceError, match="accepted: shape, measurement"):
        cv_groups(df, "op")


@given(st.lists(st.tuples(st.sampled_from(["fp32", "fp16", None, float("nan"), ""]),
                          st.sampled_from(["VFIMPL_DEFAULT", None, float("nan"), "", " VFIMPL_1D_POST_UPDATE "]),
                          st.sampled_from([55.0, None, float("nan"), ""])),
                min_size=1, max_size=6))
def test_missing_values_normalise_like_empty_csv_cells(cells):
    """A missing cell (None/NaN from a DataFrame or Parquet) and an empty CSV cell check the same."""
    from fit.traces import normalise_trace

    def frame(blank):
        fill = lambda v: blank if v is None or (isinstance(v, float) and v != v) else v  # noqa: E731
        return pd.DataFrame({"arch": "a5", "op": "TCVT", "dtype": "fp16", "rows": 1, "cols": 64,
                             "dst_dtype": [fill(d) for d, _, _ in cells], "vf_impl_kind": [fill(k) for _, k, _ in cells],
                             "measured_cycles": [fill(m) for _, _, m in cells]})

    got = normalise_trace(frame(np.nan))
    cols = ["dst_dtype", "vf_impl_kind", "measured_cycles"]
    assert got[cols].astype(str).equals(normalise_trace(frame(""))[cols].astype(str))
    assert not got["dst_dtype"].str.contains("nan").any() and list(got[LINE]) == list(range(2, len(cells) + 2))


def test_a_sweep_column_and_the_tests_extra_must_agree():
    row = {"arch": "a2a3", "op": "TADD", "dtype": "f16", "dst_dtype": "", "rows": 16, "cols": 64, "valid_rows": 16,
           "valid_cols": 64, "op_params": "", "round_mode": "", "saturation_mode": "", "extra": "isInPlace=false"}
    with pytest.raises(TraceError, match="contradicts"):
        request_kwargs(dict(row, in_place="True"))
    assert request_kwargs(dict(row, in_place="0"))["in_place"] is False
    with pytest.raises(ParamError, match="isBinary"):
        request_kwargs(dict(row, op="TCOLSUM", extra="isBinary=maybe"))


def test_rows_saying_not_in_place_and_typed_flag_columns(tmp_path):
    # a measured row whose tiles overflow the UB runs in place whatever its test flag says; a float flag column with
    # gaps (read by pandas) means what its 1.0 / 0.0 say; a malformed GM shape in extra is that row's note
    p = write(tmp_path, "a5,TADD,fp32,,20,1312,20,1280,VFIMPL_DEFAULT,869\n")
    body = read_trace(p).assign(extra=["isInPlace=false"])
    out = predict_frame(body)
    assert np.isfinite(out.loc[0, "predicted_cycles"]) and "in place" in out.loc[0, "note"]
    from costmodel import sweep

    frame = pd.DataFrame({"op": "TADD", "dtype": "f32", "arch": "a5", "rows": 16, "cols": 64,
                          "static_valid": [1.0, np.nan, 0.0]})
    got = sweep(frame)["cycles"].tolist()
    from costmodel import estimate

    static, plain = (estimate("TADD", "16x64", "f32", arch="a5", static_valid=v, verify=False).cycles
                     for v in (True, None))
    assert got == pytest.approx([static, plain, plain], rel=1e-12) and static != plain
    bad = read_trace(write(tmp_path, "a2a3,TLOAD,fp32,,16,64,16,64,,100\n")).assign(
        extra=["shape0=1;shape1=1;shape2=1;shape3=16;shape4=abc"])
    out = predict_frame(bad)
    assert np.isnan(out.loc[0, "predicted_cycles"]) and "extra shape4 'abc': expected a whole number" in out.loc[0, "note"]


def test_predict_prices_rows_whose_measurement_is_wrong_and_keeps_the_asked_strategy(tmp_path):
    # predicting reads no measurement: a bad or conflicting measured_cycles is the row's note, not a refusal; a row
    # that cannot be priced keeps the strategy it asked for (spelled as the op spells it, so a group-by sees one
    # strategy), so predicting the output again asks the same; `default` in any case is the implementation's choice
    p = write(tmp_path, "a5,TADD,fp32,4,64,4,64,abc,\na5,TADD,fp32,8,64,8,64,60,\na5,TADD,fp32,8,64,8,64,70,\n"
                        "a5,TADD,fp32,4,64,4,60,55,1D-Post-Update\na5,TADD,fp32,4,64,4,60,,Default\n",
              header="arch,op,dtype,rows,cols,valid_rows,valid_cols,measured_cycles,strategy\n")
    out = predict_frame(read_trace(p))
    assert np.isfinite(out["predicted_cycles"][:3]).all()
    assert "'abc' is not a cycle count" in out.loc[0, "note"]
    assert "conflicting duplicates" in out.loc[1, "note"] and "conflicting duplicates" in out.loc[2, "note"]
    assert np.isnan(out.loc[3, "predicted_cycles"]) and "illegal" in out.loc[3, "note"]
    assert out.loc[3, "strategy"] == "1d-post-update"
    assert out.loc[4, "strategy"] == "2d-no-post-update" and np.isfinite(out.loc[4, "predicted_cycles"])
    # refused before its request exists (the unified buffer): spelled, or left blank for `default`, as a sweep does
    big = write(tmp_path, "a2a3,TMINS,f16,1024,1024,1lnorm\na2a3,TMINS,f16,1024,1024,DEFAULT\n"
                          "a2a3,TMINS,f16,64,64,bogus\na2a3,TMINS,fq16,64,64,default\n",
                header="arch,op,dtype,rows,cols,strategy\n")
    from costmodel import sweep

    refused = predict_frame(read_trace(big))
    swept = sweep(pd.read_csv(big, dtype=str).astype({"rows": int, "cols": int}))
    assert refused["predicted_cycles"].isna().all() and "unified buffer" in refused.loc[0, "note"]
    assert "unknown dtype" in refused.loc[3, "note"]  # refused by the trace check, before any request: blank too
    assert refused["strategy"].tolist() == swept["strategy"].astype(str).tolist() == ["1LNorm", "", "bogus", ""]
    again = predict_frame(out.drop(columns=["line"], errors="ignore"))
    assert np.isnan(again.loc[3, "predicted_cycles"]) and again.loc[3, "strategy"] == "1d-post-update"


def test_an_unmeasured_row_is_not_priced_in_place_like_its_measured_twin(tmp_path):
    p = write(tmp_path, "a5,TADD,fp32,1,32768,700\na5,TADD,fp32,1,32768,\n",
              header="arch,op,dtype,rows,cols,measured_cycles\n")
    out = predict_frame(read_trace(p))
    assert np.isfinite(out.loc[0, "predicted_cycles"]) and "in place" in out.loc[0, "note"]
    assert np.isnan(out.loc[1, "predicted_cycles"]) and "unified buffer" in out.loc[1, "note"]


def test_vf_impl_kind_by_enum_value_and_whitespace_lines(tmp_path):
    p = write(tmp_path, "a5,TADD,fp32,4,64,3,60\n   \na5,TADD,fp32,4,64,1d_no_post_update,61\na5,TADD,fp32,4,64,9,62\n",
              header="arch,op,dtype,rows,cols,vf_impl_kind,measured_cycles\n")
    good, problems = check_trace(read_trace(p))
    assert list(good["vf_impl_kind"]) == ["VFIMPL_1D_POST_UPDATE", "VFIMPL_1D_NO_POST_UPDATE"]
    assert [(pr.line, pr.column) for pr in problems] == [(5, "vf_impl_kind")] and "(or 0..4)" in problems[0].message
    p.write_text(p.read_text() + "# a comment\n")
    with pytest.raises(TraceError, match="line 6 has 1 fields .* no comment lines"):
        read_trace(p)


def test_a_row_saying_an_op_that_reads_dst_ran_out_of_place_names_its_extra_key(tmp_path):
    p = write(tmp_path, "a2a3,TMULADDDST,f32,4,64,isInPlace=0\na2a3,TMULADDDST,f32,4,64,isInPlace=1\n",
              header="arch,op,dtype,rows,cols,extra\n")
    out = predict_frame(read_trace(p))
    assert out.loc[0, "note"] == "extra isInPlace=0: TMULADDDST reads and overwrites dst, so it always runs in place"
    assert np.isfinite(out.loc[1, "predicted_cycles"])


def test_predict_notes_the_models_caveats_as_estimate_does():
    """A priced row's note carries what the model says of its price (a borrowed row, an anchored correction, an
    in-place caveat): the caveat `estimate` shows for the same request."""
    from costmodel.api import estimate

    cases = pd.DataFrame({"op": ["TEXPANDS", "TRSQRT", "TSQRT"], "dtype": ["u16", "f32", "f32"],
                          "arch": ["a2a3", "a5", "a2a3"], "rows": [64] * 3, "cols": [128, 64, 64],
                          "extra": ["", "", "isInPlace=1"]})
    out = predict_frame(cases)
    assert out["predicted_cycles"].notna().all()
    for row, req in zip(out.itertuples(), [dict(op="TEXPANDS", shape=(64, 128), dtype="u16", arch="a2a3", scalar=1),
                                           dict(op="TRSQRT", shape=(64, 64), dtype="f32", arch="a5"),
                                           dict(op="TSQRT", shape=(64, 64), dtype="f32", arch="a2a3", in_place=True)]):
        e = estimate(**req, verify=False)
        caveat = e.notes[-1]
        assert caveat and caveat in row.note and row.predicted_cycles == e.cycles, (row.note, e.notes)


def test_a_rejected_rows_note_names_its_measured_problem_first_and_no_echo(tmp_path):
    """A bad rows count is one problem: valid_rows, absent and defaulted from it, is not a second one."""
    p = tmp_path / "t.csv"
    p.write_text("arch,op,dtype,rows,cols,measured_cycles\na2a3,TADD,f16,-3,64,-5\n")
    note = predict_frame(read_trace(p))["note"].iloc[0]
    assert note.startswith("measured_cycles: '-5'") and "rows: '-3'" in note and "valid_rows" not in note


def test_conflicting_duplicates_that_differ_in_extra_say_so(tmp_path):
    header = "arch,op,dtype,dst_dtype,rows,cols,valid_rows,valid_cols,extra,measured_cycles\n"
    p = write(tmp_path, "a2a3,TMINS,fp16,,16,64,16,64,cmpMode=EQ,40\n"
                        "a2a3,TMINS,fp16,,16,64,16,64,cmpMode=GE,50\n", header)
    _, problems = check_trace(read_trace(p))
    assert [pr.line for pr in problems] == [2, 3]
    assert all("their `extra` differs (cmpMode=EQ | cmpMode=GE), which is not read" in pr.message for pr in problems)
