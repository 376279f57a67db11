"""Sweeps (local and Dask), grid specs and plots."""
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from costmodel import estimate
from costmodel.errors import PtoCostError
from costmodel.grid import expand, parse_range
from costmodel.sweep import sweep

from .conftest import ROOT


def test_parse_range():
    assert parse_range("16:64:16", "cols") == [16, 32, 48, 64]
    assert parse_range("3", "rows") == [3]
    assert parse_range([1, "4:6"], "rows") == [1, 4, 5, 6]
    for bad in ("0:4", "8:4", "a:b", "1:4:0"):
        with pytest.raises(PtoCostError, match="malformed"):
            parse_range(bad, "cols")
    # counts past any unified buffer are refused before they reach the int64 frame (99..9 overflowed it)
    assert parse_range(2**24, "cols") == [2**24]
    for big in (2**24 + 1, "99999999999999999999999", "1:99999999999999999999999:99999999999999"):
        with pytest.raises(PtoCostError, match="too large: counts are at most 16777216"):
            parse_range(big, "cols")
    with pytest.raises(PtoCostError, match="valid_rows 99999999999999999999999 is too large"):
        expand({"ops": ["TADD"], "rows": 2, "cols": 16, "valid_rows": 99999999999999999999999})


def test_a_spec_sweeps_the_valid_region_as_a_grid_dimension():
    grid = expand({"ops": ["TADD"], "rows": [4], "cols": [64, 128], "valid_cols": ["full", "60:64:2", 60]})
    # full is each tile's own width; a repeated count is one value; a count past a tile is that point's error
    assert sorted(zip(grid["cols"], grid["valid_cols"])) == sorted(
        [(64, 64), (64, 60), (64, 62), (64, 64), (128, 128), (128, 60), (128, 62), (128, 64)])
    assert (grid["valid_rows"] == 4).all()
    out = sweep(expand({"ops": ["TADD"], "archs": ["a5"], "dtypes": ["f32"], "rows": 4, "cols": 64,
                        "valid_cols": [32, 65]}))
    one = estimate("TADD", "4x64", "f32", arch="a5", valid=(4, 32), verify=False)
    assert out["cycles"].iloc[0] == one.cycles and "larger than the tile" in out["note"].iloc[1]
    for bad in ([], "0:4", [1, "wide"]):
        with pytest.raises(PtoCostError, match="valid_cols"):
            expand({"ops": ["TADD"], "rows": 4, "cols": 64, "valid_cols": bad})


def test_sweep_matches_single_estimates_and_marks_best():
    grid = expand({"ops": ["TMINS"], "dtypes": ["f16"], "strategies": ["all"], "rows": "64", "cols": "64:192:64"})
    out = sweep(grid)
    for cols, g in out.groupby("cols"):
        assert g["default"].sum() == 1
        best = g.loc[g["cycles"].idxmin(), "strategy"]
        assert (g["best"] == best).all()
        for rec in g.to_dict("records"):
            e = estimate("TMINS", f"64x{cols}", "f16", strategy=rec["strategy"], verify=False)
            assert rec["cycles"] == pytest.approx(e.cycles)


def test_sweep_marks_unmodellable_points_without_aborting():
    frame = pd.DataFrame({"op": ["TMINS", "TMINS", "TMATMUL"], "dtype": ["f16"] * 3, "rows": [64, 64, 16],
                          "cols": [64, 8192, 16], "strategy": ["2LNormColVLAlign", "default", "default"]})
    out = sweep(frame)
    assert out["cycles"].isna().all()
    assert "not legal" in out.loc[0, "note"]
    assert "unified buffer" in out.loc[1, "note"]
    assert out.loc[2, "note"]


def test_dask_engine_matches_local_row_for_row():
    pytest.importorskip("dask.distributed")
    from costmodel.sweep import sweep_dask

    grid = expand({"ops": ["TMINS", "TADD"], "dtypes": ["f16", "f32"], "strategies": ["all"], "rows": "1:33:8",
                   "cols": "16:128:16"})
    local = sweep(grid)
    dist = sweep_dask(grid, workers=1, npartitions=3)
    key = ["op", "dtype", "rows", "cols", "strategy"]
    a = local.sort_values(key).reset_index(drop=True)
    b = dist.sort_values(key).reset_index(drop=True)[a.columns]
    pd.testing.assert_frame_equal(a, b, check_dtype=False)


def run(*args, env=None):
    import os

    full = {k: v for k, v in os.environ.items() if k != "PTO_COST_ARCH"} | (env or {})
    return subprocess.run([sys.executable, "-m", "cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env=full)


def one_line_error(r, needle):
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and needle in lines[0], r.stderr


def test_plot_writes_figure_and_data(tmp_path):
    png, csv = tmp_path / "tmins.png", tmp_path / "tmins.csv"
    r = run("plot", "TMINS", "--dtype", "f16", "--rows", "64", "--cols", "16:512:16", "--strategy", "all",
            "-o", str(png), "--csv", str(csv))
    assert r.returncode == 0, r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    df = pd.read_csv(csv)
    assert set(df["cols"]) == set(range(16, 513, 16))
    assert {"2LNormRowRpt", "1LNorm", "2LCount"} <= set(df["strategy"])
    assert df.groupby("cols")["default"].sum().eq(1).all()
    # 255-repeat and repeat boundaries: 1LNorm at 64 rows adds cycles when cols cross a multiple of 128 f16 lanes
    norm = df[df["strategy"] == "1LNorm"].set_index("cols")["cycles"]
    assert norm[144] > norm[128]


def test_plot_takes_the_request_and_op_parameter_options(tmp_path):
    # a conversion needs its target; a fixed valid width and the op's parameters reach every point
    png, csv = tmp_path / "cvt.png", tmp_path / "cvt.csv"
    r = run("plot", "TCVT", "--dtype", "f16", "--dst-dtype", "i8", "--saturation", "on", "--rows", "4",
            "--cols", "64:256:64", "--valid-cols", "60", "--static-valid", "-o", str(png), "--csv", str(csv))
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(csv)
    assert df["cycles"].notna().all() and set(df["valid_cols"]) == {60}
    assert "in_place" not in df  # an option left at its default is not a parameter of the figure
    for row in df.itertuples():
        one = estimate("TCVT", f"{row.rows}x{row.cols}", "f16", dst_dtype="i8", saturation="on", valid=(4, 60),
                       static_valid=True, verify=False)
        assert row.cycles == pytest.approx(one.cycles)
    assert run("plot", "TMINS", "--rows", "4", "--cols", "64", "--shape", "4x64", "-o", str(png)).returncode == 2
    # two spellings of one type are one series
    r = run("plot", "TADD", "-t", "f16,half", "--rows", "4", "--cols", "64:128:64", "-o", str(png), "--csv", str(csv))
    assert r.returncode == 0 and len(pd.read_csv(csv)) == 2


def test_plot_overlays_measured_rows_at_their_valid_extent(tmp_path):
    """A curve point is a tile valid everywhere; a measured row with a narrower valid region sits at its valid
    cols, and matches the fixed rows by its valid rows."""
    from cli.app import _measured_points

    trace = tmp_path / "m.csv"
    pd.DataFrame({"arch": "a5", "op": "TMINS", "dtype": "fp32", "rows": [10, 10, 3, 10], "cols": [1312, 160, 1312, 160],
                  "valid_rows": [10, 10, 3, 4], "valid_cols": [1280, 128, 1280, 160],
                  "measured_cycles": [323.0, 119.0, 134.0, 90.0]}).to_csv(trace, index=False)
    curve = pd.DataFrame({"op": ["TMINS"], "dtype": ["f32"], "arch": ["a5"], "rows": [10], "cols": [64]})
    got = _measured_points(str(trace), curve, "cols", "rows", None, {})
    assert sorted(zip(got["cols"], got["measured_cycles"])) == [(128, 119.0), (1280, 323.0)]


def test_plot_overlays_only_the_measured_rows_of_its_variant(tmp_path):
    """The plot's destination type and op options pick the measured rows: TRECIP high precision is not drawn under
    the default curve, nor a conversion to another type."""
    from cli.app import _measured_points

    trace = tmp_path / "m.csv"
    pd.DataFrame({"arch": "a5", "op": ["TRECIP", "TRECIP", "TCVT", "TCVT"], "dtype": ["fp32", "fp32", "bf16", "bf16"],
                  "dst_dtype": ["", "", "fp32", "fp16"], "rows": 1, "cols": 640,
                  "op_params": ["default", "high_precision", "", ""],
                  "measured_cycles": [80.0, 3504.0, 65.0, 60.0]}).to_csv(trace, index=False)
    recip = pd.DataFrame({"op": ["TRECIP"], "dtype": ["f32"], "arch": ["a5"], "rows": [1], "cols": [64]})
    assert _measured_points(str(trace), recip, "cols", "rows", None, {})["measured_cycles"].tolist() == [80.0]
    hp = _measured_points(str(trace), recip, "cols", "rows", None, {"precision": "high_precision"})
    assert hp["measured_cycles"].tolist() == [3504.0]
    cvt = pd.DataFrame({"op": ["TCVT"], "dtype": ["bf16"], "arch": ["a5"], "rows": [1], "cols": [64]})
    assert _measured_points(str(trace), cvt, "cols", "rows", "f32", {})["measured_cycles"].tolist() == [65.0]
    # a test that says it did not run in place is the plain variant
    flagged = tmp_path / "f.csv"
    pd.DataFrame({"arch": "a2a3", "op": "TSQRT", "dtype": "fp32", "rows": [64], "cols": [64], "extra": "isInPlace=false",
                  "measured_cycles": [160.0]}).to_csv(flagged, index=False)
    sqrt = pd.DataFrame({"op": ["TSQRT"], "dtype": ["f32"], "arch": ["a2a3"], "rows": [64], "cols": [64]})
    assert _measured_points(str(flagged), sqrt, "cols", "rows", None, {})["measured_cycles"].tolist() == [160.0]
    # no row of the variant: an empty overlay; the plot's own loop form does not exclude rows
    assert _measured_points(str(trace), cvt, "cols", "rows", "i8", {}).empty
    assert _measured_points(str(trace), recip, "cols", "rows", None,
                            {"vf_impl_kind": "VFIMPL_2D_NO_POST_UPDATE"})["measured_cycles"].tolist() == [80.0]
    # a fixed valid count: its rows sit at their tile's extent, like the curve's points
    tails = tmp_path / "t.csv"
    pd.DataFrame({"arch": "a5", "op": "TADD", "dtype": "fp32", "rows": [1, 1], "cols": [64, 128],
                  "valid_rows": 1, "valid_cols": [1, 64], "measured_cycles": [55.0, 56.0]}).to_csv(tails, index=False)
    add = pd.DataFrame({"op": ["TADD"], "dtype": ["f32"], "arch": ["a5"], "rows": [1], "cols": [64]})
    got = _measured_points(str(tails), add, "cols", "rows", None, {"valid_cols": 1})
    assert list(zip(got["cols"], got["measured_cycles"])) == [(64, 55.0)]


def test_plot_svg_and_heatmap(tmp_path):
    svg = tmp_path / "h.svg"
    r = run("plot", "TADD", "--dtype", "f16,f32", "--rows", "1:32:8", "--cols", "16:128:16", "-o", str(svg))
    assert r.returncode == 0, r.stderr
    assert svg.read_text().lstrip().startswith("<?xml")


def test_sweep_command_with_spec_formats(tmp_path):
    spec = {"ops": ["TMINS"], "dtypes": ["f16"], "strategies": ["all"], "rows": "1:16:5", "cols": "16:64:16"}
    (tmp_path / "s.json").write_text(json.dumps(spec))
    (tmp_path / "s.toml").write_text('ops = ["TMINS"]\ndtypes = ["f16"]\nstrategies = ["all"]\nrows = "1:16:5"\ncols = "16:64:16"\n')
    # unquoted: YAML 1.1 would read 1:16 as 76 and 16:64 as 1024 (base 60); the spec means ranges
    (tmp_path / "s.yaml").write_text("ops: [TMINS]\ndtypes: [f16]\nstrategies: [all]\nrows: 1:16:5\ncols: 16:64:16\n")
    outs = []
    for name in ("s.json", "s.toml", "s.yaml"):
        out = tmp_path / f"{name}.csv"
        r = run("sweep", str(tmp_path / name), "-o", str(out), "--verify-sample", "5")
        assert r.returncode == 0, r.stderr
        outs.append(pd.read_csv(out))
    pd.testing.assert_frame_equal(outs[0], outs[1])
    pd.testing.assert_frame_equal(outs[0], outs[2])
    assert sorted(set(outs[0]["rows"])) == [1, 6, 11, 16]
    r = run("sweep", str(tmp_path / "missing.yaml"), "-o", str(tmp_path / "x.csv"))
    assert r.returncode == 2 and "does not exist" in r.stderr


def test_sweep_json_summary_counts_the_file_and_names_the_commonest_refusal(tmp_path):
    spec = {"ops": ["TCMP"], "dtypes": ["f16", "i32"], "rows": [16, 32], "cols": 64, "params": {"cmp_mode": ["eq", "gt"]}}
    (tmp_path / "s.json").write_text(json.dumps(spec))
    out = tmp_path / "o.csv"
    r = run("sweep", str(tmp_path / "s.json"), "-o", str(out), "--json", "--verify-sample", "3")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    df = pd.read_csv(out)
    assert doc["rows"] == len(df) == 8 and doc["not_modelled"] == int(df["cycles"].isna().sum()) == 2
    assert doc["commonest_reason"].startswith("TCMP i32 on a2a3 compares only EQ")
    # every reason with its points, most first, counting every refused row
    assert doc["reasons"][0]["reason"] == doc["commonest_reason"]
    assert sum(x["points"] for x in doc["reasons"]) == doc["not_modelled"]
    assert doc["verify_sample"]["tried"] == 3 and doc["verify_sample"]["not_verified"] == []
    # --seed picks the verified sample: alone it has nothing to choose
    r = run("sweep", str(tmp_path / "s.json"), "-o", str(tmp_path / "seeded.csv"), "--seed", "3")
    assert r.returncode == 2 and "add --verify-sample" in r.stderr and not (tmp_path / "seeded.csv").exists()
    # a grid of which no point can be modelled: exit 2 and the one-line error, and the document for a script still
    (tmp_path / "none.json").write_text(json.dumps({"ops": ["TCMP"], "archs": ["a5"], "rows": [4], "cols": [64]}))
    r = run("sweep", str(tmp_path / "none.json"), "-o", str(tmp_path / "none.csv"), "--json")
    doc = json.loads(r.stdout)
    assert r.returncode == 2 and doc["output"] is None and doc["not_modelled"] == doc["rows"] == 1
    assert "no A5 VF lowering" in doc["commonest_reason"] and not (tmp_path / "none.csv").exists()
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_commonest_notes_merge_notes_differing_in_numbers_but_not_in_type_names():
    from fit.plots import commonest_notes

    notes = pd.Series(["TSELS does not support i8 on a2a3"] * 3 + ["TSELS does not support i64 on a2a3"] * 2
                      + ["valid rows 17 exceed the tile's 16", "valid rows 40 exceed the tile's 32", "", "e4m3 0.5",
                         "e5m2 0.5", "e4m3 2.25", "dst 1x200 f16 needs 10257408 B", "dst 1x312 f16 needs 915456 B",
                         "dst 2x200 f32 needs 8 B"])
    # shapes are numbers as a whole (1x200 and 1x312 were told apart by their first digits: `Nx2N`); a number the
    # notes of a kind do not share is shown as the range they span, not as the first note's (QA 47c: "409600 B" for
    # points needing up to 1228800)
    assert commonest_notes(notes) == [("TSELS does not support i8 on a2a3", 3),
                                      ("TSELS does not support i64 on a2a3", 2),
                                      ("valid rows 17–40 exceed the tile's 16–32", 2), ("e4m3 0.5–2.25", 2),
                                      ("dst 1x200–1x312 f16 needs 915456–10257408 B", 2), ("e5m2 0.5", 1),
                                      ("dst 2x200 f32 needs 8 B", 1)]


def test_sweep_passes_the_reduce_convert_move_parameters():
    # `params` of a spec reach the request: TCOLSUM's isBinary flag picks the tree, TMOV's dst layout the moves
    linear, tree = (sweep(expand({"ops": ["TCOLSUM"], "dtypes": "f32", "rows": "16", "cols": "64",
                                  "params": params}))
                    for params in ({}, {"binary": True}))
    assert linear["strategy"].tolist() == ["ColLinear"] and tree["strategy"].tolist() == ["ColBinary"]
    assert tree["cycles"].iloc[0] == pytest.approx(estimate("TCOLSUM", "16x64", "f32", binary=True, verify=False).cycles)
    nd, nz = (sweep(expand({"ops": ["TMOV"], "dtypes": "f32", "rows": "16", "cols": "64", "params": {"dst_layout": lay}}))
              for lay in ("nd", "nz"))
    assert nz["cycles"].iloc[0] == pytest.approx(estimate("TMOV", "16x64", "f32", dst_layout="nz", verify=False).cycles)
    assert nz["cycles"].iloc[0] != nd["cycles"].iloc[0]


def test_sweep_prices_a5_conversions_in_closed_form_like_single_estimates(monkeypatch):
    """Conversions, f32 -> f32 (round to integral) included, priced over a shape grid without a plan per row: the
    same cycles, strategy and model as one estimate each."""
    import importlib

    module = importlib.import_module("costmodel.sweep")
    calls = []
    real = module._per_request
    monkeypatch.setattr(module, "_per_request", lambda *a, **k: calls.append(1) or real(*a, **k))
    for src, dst in (("f32", "f32"), ("f32", "fp8_e4m3"), ("bf16", "f32"), ("fp4_e2m1", "bf16"), ("f32", "i32")):
        grid = expand({"ops": ["TCVT"], "dtypes": [src], "archs": ["a5"], "rows": "1:7:3", "cols": "64:1024:320",
                       "dst_dtypes": [dst]})
        got = sweep(grid)
        assert not calls, (src, dst)  # no row took the per-request path
        for r in got.itertuples():
            one = estimate("TCVT", f"{r.rows}x{r.cols}", src, arch="a5", dst_dtype=dst, verify=False)
            assert (r.strategy, r.model) == (one.strategy, one.model) and r.cycles == pytest.approx(one.cycles), r


def test_a_grid_names_each_point_once():
    grid = expand({"ops": ["TADD", "tadd"], "dtypes": ["f16", "half", "f32"], "archs": ["a2a3", "A2A3"],
                   "rows": "4", "cols": "64"})
    assert grid[["op", "dtype", "arch"]].values.tolist() == [["TADD", "f16", "a2a3"], ["TADD", "f32", "a2a3"]]


def test_list_valued_params_are_grid_dimensions():
    grid = expand({"ops": ["TCVT"], "dtypes": ["f16"], "dst_dtypes": ["i8"], "rows": "4", "cols": "64:128:64",
                   "params": {"saturation": ["on", "off"], "round_mode": "rint"}})
    assert len(grid) == 4 and sorted(grid["saturation"]) == ["off", "off", "on", "on"]
    assert set(grid["round_mode"]) == {"rint"}
    out = sweep(grid)
    for r in out.itertuples():
        one = estimate("TCVT", f"{r.rows}x{r.cols}", "f16", dst_dtype="i8", saturation=r.saturation,
                       round_mode="rint", verify=False)
        assert r.cycles == pytest.approx(one.cycles)
    # flags are read as flags wherever they come from: "false" is false, unknown text is that point's error
    flags = sweep(expand({"ops": ["TMINS"], "dtypes": ["f16"], "rows": "16", "cols": "64",
                          "params": {"static_valid": ["false", "0", False, "yes", "maybe"]}}))
    plain, static = (estimate("TMINS", "16x64", "f16", static_valid=v, verify=False).cycles for v in (False, True))
    assert flags["cycles"].iloc[:3].tolist() == [plain] * 3 and flags["cycles"].iloc[3] == static != plain
    assert np.isnan(flags["cycles"].iloc[4]) and "expected true or false" in flags["note"].iloc[4]
    # a GM shape is one value made of five numbers, kept as its text; a list of them is swept, with other lists
    one = expand({"ops": ["TLOAD"], "dtypes": ["f16"], "rows": "16", "cols": "64:256:64",
                  "params": {"gm_shape": [1, 1, 1, 16, 64]}})
    assert set(one["gm_shape"]) == {"1x1x1x16x64"} and len(one) == 4
    for shapes in ([[1, 1, 1, 16, 64], [1, 1, 2, 8, 64]], ["1x1x1x16x64", "1x1x2x8x64"]):
        grid = expand({"ops": ["TLOAD"], "dtypes": ["f16"], "rows": "16", "cols": "64:128:64",
                       "params": {"gm_shape": shapes, "pad": ["zero", "null"]}})
        assert len(grid) == 8
        out = sweep(grid)
        ok = out[out["cols"] == 64]
        for r in ok.itertuples():
            one = estimate("TLOAD", "16x64", "f16", gm_shape=r.gm_shape, pad=r.pad, verify=False)
            assert r.cycles == pytest.approx(one.cycles)
        assert ok["cycles"].nunique() == 2 and out[out["cols"] == 128]["cycles"].isna().all()
    for bad, needle in (({"scalar": []}, "empty list"), ([1], "must map parameter names"),
                        ({"src1-valid": "8x32"}, "names use underscores: src1_valid"),
                        ({"saturaton": "on"}, r"unknown parameter\(s\) saturaton"),
                        ({"dst_dtype": ["i8", "f32"]}, "top-level `dst_dtypes`")):
        with pytest.raises(PtoCostError, match=needle):
            expand({"ops": ["TMINS"], "rows": "4", "cols": "64", "params": bad})


def test_a_sweep_output_is_a_cases_file_predict_reproduces(tmp_path):
    from fit.predict import predict_frame
    from fit.traces import check_trace, read_trace, trace_request

    frame = pd.DataFrame({
        "op": ["TCVT", "TCVT", "TLOAD", "TCOLSUM", "TMINS", "TDIVS", "TRECIP", "TROWEXPAND", "TPARTADD"],
        "dtype": ["f16", "f16", "f16", "f32", "f16", "f32", "f32", "f32", "f32"],
        "dst_dtype": ["i8", "i8", "", "", "", "", "", "", ""],
        "arch": ["a2a3"] * 6 + ["a5", "a2a3", "a5"], "rows": 16, "cols": 64,
        "saturation": ["on", "off", "", "", "", "", "", "", ""],
        "gm_shape": ["", "", "1x1x2x8x64", "", "", "", "", "", ""],
        "binary": ["", "", "", True, "", "", "", "", ""],
        "static_valid": [False, False, False, False, True, False, False, False, False],
        "order": ["", "", "", "", "", "scalar_tile", "", "", ""],
        "precision": ["", "", "", "", "", "", "high_precision", "", ""],
        "expand_mode": ["", "", "", "", "", "", "", 1, ""],
        "src1_valid": ["", "", "", "", "", "", "", "", "8x32"]})
    swept = sweep(frame)
    assert swept["cycles"].notna().all(), swept["note"].tolist()
    path = tmp_path / "cases.csv"
    swept.to_csv(path, index=False)
    got = predict_frame(read_trace(path))
    assert got["predicted_cycles"].to_numpy() == pytest.approx(swept["cycles"].to_numpy())
    # each parameter reached the request: without its column (and the strategy it led to) the request differs
    good, problems = check_trace(read_trace(path), require_measured=False)
    assert not problems
    for row, col in zip(good.to_dict("records"), ("saturation", "saturation", "gm_shape", "binary", "static_valid",
                                                   "order", "precision", "expand_mode", "src1_valid")):
        plain = {k: v for k, v in row.items() if k not in (col, "strategy")}
        assert trace_request(row)[0] != trace_request(plain)[0], col
    # a parameter given twice, differently, is that row's error; the same value spelled otherwise is not
    clash = read_trace(path).assign(saturation_mode=["off", "OFF"] + [""] * 7)
    out = predict_frame(clash)
    assert np.isnan(out.loc[0, "predicted_cycles"]) and "contradicts" in out.loc[0, "note"]
    assert out.loc[1, "predicted_cycles"] == pytest.approx(swept.loc[1, "cycles"])
    # typed files: a flag column with a gap reads 1.0 / 0.0, a count 2.0; Parquet keeps them, and GM shapes
    typed = swept.assign(static_valid=[0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, np.nan],
                         binary=[np.nan, np.nan, np.nan, 1.0] + [np.nan] * 5,
                         expand_mode=[np.nan] * 7 + [1.0, np.nan])
    pq = tmp_path / "cases.parquet"
    typed.to_parquet(pq, index=False)
    got = predict_frame(read_trace(pq))
    assert got["predicted_cycles"].to_numpy() == pytest.approx(swept["cycles"].to_numpy())
    assert np.isnan(predict_frame(read_trace(pq).assign(binary="maybe")).loc[3, "predicted_cycles"])


def test_parquet_outputs_are_typed_without_loss(tmp_path):
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps({"ops": ["BlockReduceSum"], "rows": 16, "cols": 64,
                                "params": {"mask": [64, "0xffff:0xffff"], "static_valid": [False, "maybe"]}}))
    out = tmp_path / "s.parquet"
    r = run("sweep", str(spec), "-o", str(out))
    assert r.returncode == 0, r.stderr
    got = pd.read_parquet(out)
    assert got["mask"].astype(str).tolist() == ["64", "64", "0xffff:0xffff", "0xffff:0xffff"]
    assert got["static_valid"].astype(str).tolist() == ["False", "maybe"] * 2 and got["cycles"].notna().sum() == 2
    cases = tmp_path / "c.csv"
    cases.write_text("arch,op,dtype,rows,cols,case_id,ver,n\na2a3,TMINS,f16,64,64,007,1.10,5\na2a3,TMINS,f16,,64,010,2.00,\n")
    out = tmp_path / "c.parquet"
    assert run("predict", str(cases), "-o", str(out)).returncode == 0
    got = pd.read_parquet(out)
    assert got["case_id"].tolist() == ["007", "010"] and got["ver"].tolist() == ["1.10", "2.00"]
    assert str(got["n"].dtype) == "Int64" and str(got["rows"].dtype) == "Int64" and got["n"].tolist()[0] == 5


def test_parquet_round_trips_of_fully_modelled_sweeps_and_cases_with_gaps(tmp_path):
    from fit.predict import predict_frame
    from fit.traces import read_trace

    spec = tmp_path / "s.json"
    spec.write_text(json.dumps({"ops": ["TADD"], "dtypes": ["f16", "f32"], "rows": 16, "cols": "64:256:64"}))
    out = tmp_path / "s.parquet"
    r = run("sweep", str(spec), "-o", str(out))  # every point modelled: single-valued categorical columns
    assert r.returncode == 0, r.stderr
    assert pd.read_parquet(out)["cycles"].notna().all()
    cases = tmp_path / "c.csv"
    cases.write_text("arch,op,dtype,rows,cols,valid_rows,valid_cols,measured_cycles,static_valid\n"
                     "a2a3,TMINS,f16,16,64,8,64,30,1\na2a3,TMINS,f16,16,128,,,40,\n")
    first, again = tmp_path / "a.parquet", tmp_path / "b.csv"
    assert run("predict", str(cases), "-o", str(first)).returncode == 0
    assert run("predict", str(first), "-o", str(again)).returncode == 0
    want = predict_frame(read_trace(cases))["predicted_cycles"]
    assert want.notna().all() and pd.read_csv(again)["predicted_cycles"].tolist() == pytest.approx(want.tolist())
    typed = pd.read_parquet(first)
    assert str(typed["valid_rows"].dtype) == "Int64" and str(typed["static_valid"].dtype) == "boolean"
    assert sweep(typed[["arch", "op", "dtype", "rows", "cols", "valid_rows", "valid_cols", "static_valid"]])[
        "cycles"].tolist() == pytest.approx(want.tolist())


def test_a_conversion_to_its_own_type_survives_the_round_trip(tmp_path):
    from fit.predict import predict_frame
    from fit.traces import read_trace

    out = sweep(expand({"ops": ["TCVT"], "dtypes": ["f32"], "dst_dtypes": ["f32", "f16"], "archs": ["a5"],
                        "rows": "4", "cols": "64"}))
    path = tmp_path / "c.csv"
    out.to_csv(path, index=False)
    got = predict_frame(read_trace(path))
    assert out["cycles"].notna().all() and got["predicted_cycles"].to_numpy() == pytest.approx(out["cycles"].to_numpy())


def test_sweep_passes_the_a5_parameters():
    # vf_impl_kind, precision and src_valid columns reach make_request: dropping one from PARAM_COLUMNS would
    # evaluate these rows as the plain request (same strategy and cycles, no note)
    frame = pd.DataFrame({"op": ["TRECIP", "TRECIP", "TMINS", "TMINS", "TMINS"], "dtype": "f32", "arch": "a5",
                          "rows": 16, "cols": 128, "valid_cols": [128, 128, 128, 128, 100],
                          "precision": ["default", "high_precision", "", "", ""],
                          "vf_impl_kind": ["", "", "", "VFIMPL_1D_POST_UPDATE", ""],
                          "src_valid": ["", "", "", "", "16x99"]})
    out = sweep(frame)
    hp = estimate("TRECIP", "16x128", "f32", arch="a5", precision="high_precision", verify=False)
    assert out["cycles"].iloc[1] == pytest.approx(hp.cycles) != out["cycles"].iloc[0]
    forced = estimate("TMINS", "16x128", "f32", arch="a5", vf_impl_kind="VFIMPL_1D_POST_UPDATE", verify=False)
    assert out["strategy"].iloc[3] == forced.strategy != out["strategy"].iloc[2]
    assert out["cycles"].iloc[3] == pytest.approx(forced.cycles)
    assert np.isnan(out["cycles"].iloc[4]) and "valid cols equal" in out["note"].iloc[4]


def test_every_cli_request_option_is_a_sweep_column():
    from cli.options import REQUEST_OPTIONS
    from costmodel.sweep import PARAM_COLUMNS, REQUEST_COLUMNS

    missing = set(REQUEST_OPTIONS) - {"shape", "valid"} - set(REQUEST_COLUMNS) - set(PARAM_COLUMNS)
    assert not missing, f"request options a sweep row cannot set: {sorted(missing)}"


def test_plot_of_the_issue_example_marks_tiles_beyond_the_unified_buffer(tmp_path):
    png, csv = tmp_path / "tmins.png", tmp_path / "tmins.csv"
    r = run("plot", "TMINS", "--dtype", "f16", "--rows", "64", "--cols", "16:2048:16", "--strategy", "all",
            "-o", str(png), "--csv", str(csv))
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(csv)
    beyond = df[df["cols"] * 64 * 2 * 2 > 196608]  # two f16 tiles of 64 rows exceed the 192 KiB A2/A3 buffer
    assert len(beyond) and beyond["cycles"].isna().all() and beyond["note"].str.contains("unified buffer").all()
    assert df[df["cols"] * 64 * 2 * 2 <= 196608]["cycles"].notna().any()


def test_curves_mark_where_one_dtype_stops_being_modelled():
    import pandas as pd

    from fit.plots import curves_figure

    rows = []
    for dt, last in (("f16", 4), ("f32", 2)):
        for c in range(1, 6):
            ok = c <= last
            rows.append({"dtype": dt, "strategy": "s", "cols": c * 16, "rows": 64, "default": True,
                         "cycles": 10.0 * c if ok else float("nan"),
                         "note": "" if ok else "operands need 1 B of unified buffer but a2a3 has 0 B"})
    fig = curves_figure(pd.DataFrame(rows), "cols", ["dtype", "strategy"])
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "f32 not modelled from cols = 48 (beyond the unified buffer)" in texts
    assert any(t.startswith("not modelled from cols = 80") for t in texts)
    assert [line.get_label() for line in fig.axes[0].get_lines() if not line.get_label().startswith("_")] == \
        ["f16 s", "f32 s"]


def test_curves_show_the_default_strategy_in_a_strip_and_ties_stay_visible():
    from fit.plots import curves_figure

    rows = [{"dtype": "f16", "strategy": s, "cols": c, "rows": 64, "cycles": 10.0 + c,
             "default": s == ("a" if c < 48 else "b"), "note": ""} for s in ("a", "b") for c in (16, 32, 48, 64)]
    fig = curves_figure(pd.DataFrame(rows), "cols", ["strategy"])
    curves, strip = fig.axes
    lines = [ln for ln in curves.get_lines() if not ln.get_label().startswith("_")]
    assert lines[0].get_linewidth() > lines[1].get_linewidth()  # the later of two tied lines is drawn inside the first
    bars = strip.collections
    assert len(bars) == 2  # a then b
    colour = {ln.get_label(): ln.get_color() for ln in lines}
    import matplotlib.colors as mcolors

    assert [mcolors.to_hex(b.get_facecolor()[0][:3]) for b in bars] == [mcolors.to_hex(colour[n]) for n in "ab"]
    spans = [b.get_paths()[0].get_extents() for b in bars]
    # a bar holds each sample's cost from the sample before; nothing precedes the first: half a step back
    assert spans[0].x0 == 8 and spans[0].x1 == 32 and spans[1].x0 == 32 and spans[1].x1 == 64
    assert [t.get_text() for t in strip.get_yticklabels()] == ["default (f16)"]
    # ... and never below the half row: a sweep from row 1 in steps of 8 starts its strip at 0.5, not at -7
    from_one = pd.DataFrame([{**r, "cols": r["cols"] // 16 * 8 - 7} for r in rows])
    first = curves_figure(from_one, "cols", ["strategy"]).axes[1].collections[0].get_paths()[0].get_extents()
    assert first.x0 == 0.5 and first.x1 == 9


def test_validation_figure_names_the_worst_rows_and_never_repeats_a_style():
    from fit.plots import validation_figure

    ops = [f"OP{i}" for i in range(25)]
    df = pd.DataFrame({"op": ops, "dtype": "f32", "measured_cycles": 100.0,
                       "predicted_cycles": [100.0] * 24 + [130.0]})
    fig = validation_figure(df)
    scatter, resid = fig.axes
    styles = {(tuple(c.get_facecolor()[0]), c.get_paths()[0].vertices.tobytes()) for c in scatter.collections[:25]}
    assert len(styles) == 25
    assert [t.get_text().strip() for t in resid.texts] == ["OP24 f32"]


def test_a_grid_with_tile_widths_the_dtype_cannot_have_marks_only_those_points():
    # f16 -> i8 on A5 is priced by the anchored pipeline; i8 rows of 16 bytes are illegal (32-byte rows, isa.md §1.2)
    grid = expand({"ops": ["TCVT"], "dtypes": ["f16"], "dst_dtypes": ["i8"], "archs": ["a5"], "rows": "8",
                   "cols": "16:128:16"})
    out = sweep(grid)
    bad = out["cols"] % 32 != 0
    assert out.loc[bad, "cycles"].isna().all() and out.loc[bad, "note"].str.contains("multiple of 32").all()
    for r in out[~bad].itertuples():
        one = estimate("TCVT", f"8x{r.cols}", "f16", arch="a5", dst_dtype="i8", verify=False)
        assert (r.model, r.cycles) == (one.model, pytest.approx(one.cycles))


@pytest.mark.parametrize("args, needle", [
    (["verify", "TADD", "--shape", "8x64", "--seed", "-1"], "-1 is out of range; accepted: 0 to 4294967295"),
    (["sweep", "SPEC", "-o", "OUT", "--verify-sample", "5", "--seed", "-5"], "accepted: 0 to 4294967295"),
    (["sweep", "SPEC", "-o", "OUT", "--verify-sample", "5", "--seed", "4294967296"], "4294967296 is out of range"),
])
def test_seeds_outside_what_numpy_takes_are_one_line_errors(tmp_path, args, needle):
    (tmp_path / "s.json").write_text(json.dumps({"ops": ["TADD"], "rows": 1, "cols": 64}))
    args = [str(tmp_path / "s.json") if a == "SPEC" else str(tmp_path / "o.csv") if a == "OUT" else a for a in args]
    one_line_error(run(*args), needle)
    assert not (tmp_path / "o.csv").exists()


def test_the_largest_seed_is_taken(tmp_path):
    (tmp_path / "s.json").write_text(json.dumps({"ops": ["TADD"], "rows": 1, "cols": 64}))
    r = run("sweep", str(tmp_path / "s.json"), "-o", str(tmp_path / "o.csv"), "--verify-sample", "1", "--seed",
            "4294967295")
    assert r.returncode == 0, r.stderr
    assert run("verify", "TADD", "--shape", "8x64", "--seed", "4294967295").returncode == 0


@pytest.mark.parametrize("address, needle", [
    ("nonsense", "missing port number"), ("http://localhost:8786", "unknown address scheme 'http'"),
    ("", "an empty address"), (" ", "an empty address"), ("tls://127.0.0.1:1", "ssl_context")])
def test_malformed_or_empty_scheduler_addresses_are_one_line_errors(tmp_path, address, needle):
    pytest.importorskip("dask.distributed")
    (tmp_path / "s.json").write_text(json.dumps({"ops": ["TADD"], "rows": 1, "cols": 64}))
    r = run("sweep", str(tmp_path / "s.json"), "-o", str(tmp_path / "o.csv"), "--engine", "dask", "--scheduler", address)
    one_line_error(r, "cannot reach the dask scheduler at")
    assert needle in r.stderr and "tcp://HOST:8786" in r.stderr
    one_line_error(run("sweep", str(tmp_path / "s.json"), "-o", str(tmp_path / "o.csv"), "--scheduler", address),
                   "add --engine dask")


@pytest.mark.parametrize("args, needle", [
    (["--dtype", "f16,u8"], "TMINS does not support u8 on a2a3; accepted: i32 i16 f16 f32"),
    (["--dtype", "f16,f32", "--strategy", "bogus"], "unknown strategy 'bogus' for TMINS f16 on a2a3; strategies: 1LCount"),
    (["--dtype", "f16", "--arch", "a5", "--dst-dtype", "f32"], "TMINS is modelled with dst of its source's type: it takes no --dst-dtype"),
])
def test_plot_rejects_a_dtype_or_strategy_the_op_does_not_have_on_the_arch(tmp_path, args, needle):
    one_line_error(run("plot", "TMINS", "--cols", "16:64:16", *args, "-o", str(tmp_path / "p.png")), needle)
    assert not (tmp_path / "p.png").exists()
    # a strategy legal at some widths only is those points' note, in any letter case
    r = run("plot", "TMINS", "--cols", "16:64:16", "--strategy", "1lnorm", "-o", str(tmp_path / "q.png"))
    assert r.returncode == 0, r.stderr


def test_sweep_takes_the_arch_from_the_environment_like_the_other_commands(tmp_path):
    spec, out = tmp_path / "s.json", tmp_path / "o.csv"
    spec.write_text(json.dumps({"ops": ["TADD"], "dtypes": ["f32"], "rows": 1, "cols": 64}))
    assert run("sweep", str(spec), "-o", str(out), env={"PTO_COST_ARCH": "a5"}).returncode == 0
    assert set(pd.read_csv(out)["arch"]) == {"a5"}
    assert run("sweep", str(spec), "-o", str(out)).returncode == 0
    assert set(pd.read_csv(out)["arch"]) == {"a2a3"}
    one_line_error(run("sweep", str(spec), "-o", str(out), env={"PTO_COST_ARCH": "a9"}), "$PTO_COST_ARCH")
    spec.write_text(json.dumps({"ops": ["TADD"], "dtypes": ["f32"], "archs": ["a2a3"], "rows": 1, "cols": 64}))
    assert run("sweep", str(spec), "-o", str(out), env={"PTO_COST_ARCH": "a5"}).returncode == 0
    assert set(pd.read_csv(out)["arch"]) == {"a2a3"}


@pytest.mark.parametrize("spec, needle", [
    ({"ops": [], "rows": 1, "cols": 64}, "`ops` is empty; give at least one op"),
    ({"ops": "", "rows": 1, "cols": 64}, "`ops` is empty"),
    ({"ops": None, "rows": 1, "cols": 64}, "`ops` is empty"),
    ({"ops": ["TADD"], "dtypes": [], "rows": 1, "cols": 64}, "`dtypes` is empty"),
    ({"ops": ["TADD"], "strategies": [], "rows": 1, "cols": 64}, "`strategies` is empty"),
    ({"ops": ["TADD"], "dst_dtypes": " , ", "rows": 1, "cols": 64}, "`dst_dtypes` is empty"),
    ({"ops": ["TADD"], "rows": [], "cols": 64}, "`rows` is empty"),
    ({"ops": ["TADD"], "rows": -3, "cols": 64}, "malformed rows -3: need N >= 1"),
    ({"ops": ["TADD"], "rows": 1, "cols": 0}, "malformed cols 0: need N >= 1"),
    ({"ops": ["TADD"], "rows": [8, "0"], "cols": 64}, "malformed rows '0': need N >= 1"),
    ({"ops": ["TADD"], "rows": 1.5, "cols": 64}, "malformed rows 1.5"),
])
def test_empty_spec_lists_and_counts_below_one_are_parse_errors(tmp_path, spec, needle):
    (tmp_path / "s.json").write_text(json.dumps(spec))
    one_line_error(run("sweep", str(tmp_path / "s.json"), "-o", str(tmp_path / "o.csv")), needle)
    assert not (tmp_path / "o.csv").exists()


def test_a_sweep_gives_each_strategy_row_once(tmp_path):
    out = tmp_path / "o.csv"
    for strategies in (["default", "all"], "All, 2LCount", ["default", "DEFAULT"]):
        (tmp_path / "s.json").write_text(json.dumps({"ops": ["TMINS"], "strategies": strategies, "rows": 8, "cols": 64}))
        assert run("sweep", str(tmp_path / "s.json"), "-o", str(out)).returncode == 0
        df = pd.read_csv(out)
        assert not df.duplicated(["rows", "cols", "strategy"]).any(), strategies
        assert df["default"].sum() == 1
    assert len(df) == 1


def test_an_explicit_model_option_overrides_the_spec_even_when_auto(tmp_path):
    spec, out = tmp_path / "s.json", tmp_path / "o.csv"
    spec.write_text(json.dumps({"ops": ["TADD"], "dtypes": ["f32"], "archs": ["a5"], "rows": 1, "cols": 64,
                                "model": "pipeline"}))
    assert run("sweep", str(spec), "-o", str(out)).returncode == 0
    assert set(pd.read_csv(out)["model"]) == {"pipeline"}
    assert run("sweep", str(spec), "-o", str(out), "--model", "auto").returncode == 0
    assert set(pd.read_csv(out)["model"]) == {estimate("TADD", "1x64", "f32", "a5", verify=False).model} != {"pipeline"}
    one_line_error(run("sweep", str(spec), "-o", str(out), "--model", "bogus"), "unknown model 'bogus'")


def test_timeline_iterations_without_a_timeline_is_an_error():
    one_line_error(run("plan", "TMINS", "--shape", "16x64", "--arch", "a5", "--timeline-iterations", "3"),
                   "--timeline-iterations sets what --timeline or --chrome-trace shows")
    r = run("plan", "TMINS", "--shape", "16x64", "--arch", "a5", "--timeline", "--timeline-iterations", "3")
    assert r.returncode == 0, r.stderr


def test_plot_help_names_every_figure_format():
    from typer.testing import CliRunner

    from cli.app import app

    out = " ".join(CliRunner().invoke(app, ["plot", "--help"], env={"COLUMNS": "300"}).output.split())
    assert "(.png or .svg)" not in out and "any format matplotlib writes" in out


def test_heatmap_cells_are_centred_on_their_values():
    from fit.plots import heatmap_figure

    rows = [{"dtype": "f16", "rows": r, "cols": c, "cycles": float(r * c), "default": True,
             "best": "a" if c < 128 else "b", "note": ""} for r in (1, 2, 3) for c in (64, 128, 192, 256)]
    fig = heatmap_figure(pd.DataFrame(rows))
    panels = [ax for ax in fig.axes if ax.get_title() in ("f16: cycles", "f16: fastest strategy")]
    assert len(panels) == 2
    for ax in panels:
        mesh = ax.collections[0].get_coordinates()
        centres_x = (mesh[0, 1:, 0] + mesh[0, :-1, 0]) / 2
        centres_y = (mesh[1:, 0, 1] + mesh[:-1, 0, 1]) / 2
        assert centres_x.tolist() == [64, 128, 192, 256] and centres_y.tolist() == [1, 2, 3]
    assert np.asarray(panels[0].collections[0].get_array()).reshape(3, 4)[1, 2] == 2 * 192


def test_a_default_strategy_heatmap_outlines_and_names_where_the_default_changes():
    """QA 55: TROWSUM's cycles had a cheap stripe that was another emission mode, and nothing on the plot said so."""
    from fit.plots import heatmap_figure

    rows = [{"dtype": "f32", "rows": r, "cols": c, "cycles": float(r * c), "default": True, "best": "x", "note": "",
             "strategy": "Narrow" if c < 128 else "Wide"} for r in (1, 2, 3, 4) for c in (64, 96, 128, 192)]
    ax = next(a for a in heatmap_figure(pd.DataFrame(rows)).axes if a.get_title() == "f32: cycles")
    assert {t.get_text() for t in ax.texts} == {"Narrow", "Wide"}
    assert len(ax.collections) > 1  # the mesh, and the outline between the two regions
    one = [dict(r, strategy="Wide") for r in rows]
    ax = next(a for a in heatmap_figure(pd.DataFrame(one)).axes if a.get_title() == "f32: cycles")
    assert not ax.texts and len(ax.collections) == 1


def test_heatmap_shows_a_faster_strategy_only_where_it_saves_more_than_noise():
    """A saving under 1 % or under 2 cycles (the profiler's ±1 cycle) is no reason to switch: the panel shows the
    plotted strategy there."""
    from fit.plots import _worth_switching

    d = pd.DataFrame({"strategy": "2LNormRowRpt", "best": "1LNorm", "cycles": [1000.0, 100.0, 100.0, 100.0],
                      "best_cycles": [995.0, 98.5, 97.0, 100.0]})
    assert _worth_switching(d).tolist() == ["2LNormRowRpt", "2LNormRowRpt", "1LNorm", "2LNormRowRpt"]
    assert _worth_switching(d.drop(columns="best_cycles")).tolist() == ["1LNorm"] * 4


def test_plot_heatmap_data_carries_the_fastest_strategys_cycles(tmp_path):
    png, csv = tmp_path / "h.png", tmp_path / "h.csv"
    r = run("plot", "TMINS", "--dtype", "f16", "--rows", "1:64:21", "--cols", "64:1024:320", "-o", str(png),
            "--csv", str(csv))
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(csv)
    assert df["cycles"].notna().sum() > 5 and (df["best"] != df["strategy"]).any()
    for row in df[df["cycles"].notna()].itertuples():
        one = estimate("TMINS", f"{row.rows}x{row.cols}", "f16", strategy=row.best, verify=False)
        assert row.best_cycles == pytest.approx(one.cycles) and row.best_cycles <= row.cycles


def test_heatmap_hatches_unmodelled_cells_and_says_why():
    from fit.plots import heatmap_figure

    rows = [{"dtype": "f32", "rows": r, "cols": c, "cycles": np.nan if r * c > 400 else float(r * c), "default": True,
             "best": "a", "note": f"operands need {r * c} B" if r * c > 400 else ""}
            for r in (1, 2, 3) for c in (64, 128, 192, 256)]
    ax = next(a for a in heatmap_figure(pd.DataFrame(rows)).axes if a.get_title() == "f32: cycles")
    assert ax.patch.get_hatch() == "///"
    holes = sum(r["cycles"] != r["cycles"] for r in rows)
    assert f"hatched: {holes} point(s) not modelled, e.g. operands need" in ax.get_xlabel()
    full = [dict(r, cycles=1.0, note="") for r in rows]
    ax = next(a for a in heatmap_figure(pd.DataFrame(full)).axes if a.get_title() == "f32: cycles")
    assert not ax.patch.get_hatch() and "hatched" not in ax.get_xlabel()


def test_plot_prices_each_measured_row_at_its_own_width_and_leaves_out_rows_outside_the_range(tmp_path):
    """A measured point between samples, or at a sample where the step line rises, is set against the model at its
    own shape; points outside the plotted range are left out, with a note."""
    from cli.app import _measured_points, _priced_at
    from costmodel.grid import expand
    from costmodel.sweep import sweep

    trace = tmp_path / "m.csv"
    pd.DataFrame({"arch": "a2a3", "op": "TADD", "dtype": "f32", "rows": 64, "cols": [56, 64, 8, 2048],
                  "measured_cycles": [170.0, 160.0, 40.0, 900.0]}).to_csv(trace, index=False)
    grid = expand({"ops": ["TADD"], "dtypes": ["f32"], "archs": ["a2a3"], "rows": "64", "cols": "16:128:16"})
    points = _measured_points(str(trace), sweep(grid), "cols", "rows", None, {})
    got = _priced_at(points, grid, "cols", "auto", str(trace), {})
    assert sorted(got["cols"]) == [56, 64]
    for row in got.itertuples():
        one = estimate("TADD", f"64x{row.cols}", "f32", strategy=row.strategy, verify=False)
        assert row.predicted_cycles == one.cycles
    # a valid count the plot fixes holds at the measured widths too, even where the first sample's width equals it
    pd.DataFrame({"arch": "a5", "op": "TADD", "dtype": "f32", "rows": 1, "cols": [640, 1280], "valid_rows": 1,
                  "valid_cols": 64, "measured_cycles": 55.0}).to_csv(trace, index=False)
    grid = expand({"ops": ["TADD"], "dtypes": ["f32"], "archs": ["a5"], "rows": "1", "cols": "64:1280:64",
                   "valid_cols": 64})
    points = _measured_points(str(trace), sweep(grid), "cols", "rows", None, {"valid_cols": 64})
    got = _priced_at(points, grid, "cols", "auto", str(trace), {"valid_cols": 64})
    for row in got.itertuples():
        one = estimate("TADD", f"1x{row.cols}", "f32", arch="a5", valid=(1, 64), strategy=row.strategy, verify=False)
        assert row.predicted_cycles == one.cycles


def test_plot_measured_rejects_a_malformed_trace_and_says_when_nothing_matches(tmp_path):
    png = str(tmp_path / "p.png")
    bad = tmp_path / "bad.csv"
    bad.write_text("arch,op,dtype,rows,cols,measured_cycles\na2a3,TMINS,f16,64,64,abc\na2a3,TMINS,f16,64,128,60\n")
    one_line_error(run("plot", "TMINS", "--measured", str(bad), "-o", png), "line 2: measured_cycles: 'abc'")
    (tmp_path / "none.csv").write_text("arch,op,dtype,rows,cols\na2a3,TMINS,f16,64,64\n")
    one_line_error(run("plot", "TMINS", "--measured", str(tmp_path / "none.csv"), "-o", png), "no measured_cycles")
    # a malformed row of another op is not the plot's business
    other = tmp_path / "other.csv"
    other.write_text("arch,op,dtype,rows,cols,measured_cycles\na2a3,TADD,f16,64,64,abc\na2a3,TMINS,f16,8,64,60\n")
    r = run("plot", "TMINS", "--measured", str(other), "-o", png)
    assert r.returncode == 0, r.stderr
    assert f"no row of {other} measures the plotted requests (TMINS f16 on a2a3 at rows = 32)" in r.stderr


def _measured_tadd(tmp_path):
    trace = tmp_path / "m.csv"
    pd.DataFrame({"arch": "a5", "op": "TADD", "dtype": "fp32", "rows": 1, "cols": [64, 640, 640],
                  "vf_impl_kind": ["VFIMPL_DEFAULT", "VFIMPL_DEFAULT", "VFIMPL_1D_NO_POST_UPDATE"],
                  "measured_cycles": [55.0, 67.0, 65.0]}).to_csv(trace, index=False)
    return trace


def test_measured_points_are_drawn_on_the_line_of_the_strategy_they_resolve_to(tmp_path):
    import matplotlib.colors as mcolors

    from cli.app import _measured_points
    from fit.plots import curves_figure

    trace = _measured_tadd(tmp_path)
    df = sweep(expand({"ops": ["TADD"], "dtypes": ["f32"], "archs": ["a5"], "strategies": ["all"], "rows": 1,
                       "cols": "64:640:64"}))
    points = _measured_points(str(trace), df, "cols", "rows", None, {})
    assert list(zip(points["cols"], points["strategy"], points["dtype"])) == [
        (64, "1d-post-update", "f32"), (640, "1d-post-update", "f32"), (640, "1d-no-post-update", "f32")]
    ax = curves_figure(df, "cols", ["strategy"], measured=points).axes[0]
    line = {ln.get_label(): mcolors.to_hex(ln.get_color()) for ln in ax.get_lines()}
    crosses = {c.get_label(): (mcolors.to_hex(c.get_facecolor()[0]), c.get_offsets()[:, 1].tolist())
               for c in ax.collections if c.get_label().startswith("measured")}
    assert crosses == {"measured 1d-post-update (at its valid extent)": (line["1d-post-update"], [55.0, 67.0]),
                       "measured 1d-no-post-update (at its valid extent)": (line["1d-no-post-update"], [65.0])}


def test_plot_leaves_out_measured_rows_of_strategies_it_draws_no_line_of(tmp_path):
    trace = _measured_tadd(tmp_path)
    args = ("plot", "TADD", "--dtype", "f32", "--arch", "a5", "--rows", "1", "--cols", "64:1280:64", "--measured",
            str(trace), "-o", str(tmp_path / "m.png"))
    r = run(*args)
    assert r.returncode == 0, r.stderr
    assert "1 measured row(s) of" in r.stderr and "(1d-no-post-update) and are left out" in r.stderr
    r = run(*args, "--strategy", "all")
    assert r.returncode == 0 and "left out" not in r.stderr, r.stderr


def test_destination_types_vary_only_the_ops_that_convert():
    """A spec's dst_dtypes gave TADD one NaN row per destination type ("TADD does not convert")."""
    grid = expand({"ops": ["TADD", "TCVT"], "dtypes": ["f16"], "dst_dtypes": ["f32", "i8"], "rows": 8, "cols": 64})
    assert grid.loc[grid["op"] == "TADD", "dst_dtype"].tolist() == [""]
    assert sorted(grid.loc[grid["op"] == "TCVT", "dst_dtype"]) == ["f32", "i8"]
    assert sweep(grid)["cycles"].notna().all()


def test_the_default_plot_models_every_point(tmp_path):
    """The default rows used to put f16 tiles of the widest default columns past the A2/A3 unified buffer."""
    r = run("plot", "TADD", "-o", str(tmp_path / "p.png"), "--csv", str(tmp_path / "p.csv"))
    assert r.returncode == 0 and "not modelled" not in r.stdout + r.stderr, r.stderr
    assert pd.read_csv(tmp_path / "p.csv")["cycles"].notna().all()


def test_plot_writes_the_figure_and_its_csv_together_or_neither(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    r = run("plot", "TADD", "-o", str(tmp_path / "q.png"), "--csv", str(tmp_path / "file" / "q.csv"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert not (tmp_path / "q.png").exists()


def test_spec_names_in_any_case_and_blanks_name_one_point_each():
    """`Default` and `default` were two strategies and the first spelling failed the sweep; an arch named A5 kept
    that spelling in the output; a blank strategy ran as the default; `true` was one row."""
    grid = expand({"ops": ["TADD"], "rows": "4,8", "cols": 64, "archs": ["A5", " a5"],
                   "strategies": ["Default", "default", " 2d-post-update", "2d-post-update"]})
    assert sorted(grid["strategy"].unique()) == ["2d-post-update", "default"] and set(grid["arch"]) == {"a5"}
    assert sorted(grid["rows"].unique()) == [4, 8]
    assert sweep(grid)["cycles"].notna().all()
    for bad in ({"strategies": [""]}, {"rows": True}):
        with pytest.raises(PtoCostError):
            expand({"ops": ["TADD"], "rows": 4, "cols": 64, **bad})


def test_plot_reads_arch_and_strategy_names_in_any_case_and_names_the_main_reason(tmp_path):
    trace = tmp_path / "m.csv"
    trace.write_text("arch,op,dtype,rows,cols,measured_cycles\na5,TADD,fp32,1,128,56\n")
    r = run("plot", "TADD", "--dtype", "f32", "--arch", "A5", "--rows", "1", "--cols", "16:256:16", "--measured",
            str(trace), "--strategy", "DEFAULT", "-o", str(tmp_path / "p.png"))
    assert r.returncode == 0 and "nothing overlaid" not in r.stderr, r.stderr
    one_line_error(run("plot", "TPOW", "--dtype", "i8", "--arch", "a5", "-o", str(tmp_path / "q.png")),
                   "TPOW has no A5 VF lowering for i8 (lowered for: f32 i16 u16 i32 u32) (32 points)")
    # reasons that differ only in their numbers are one
    r = run("plot", "TADD", "--rows", "100000", "--cols", "16:64:16", "-o", str(tmp_path / "q.png"))
    one_line_error(r, "no point of the grid could be modelled: operands need")
    assert "other reason" not in r.stderr and "point(s)" not in r.stderr
    one_line_error(run("plot", "TADD", "--dtype", "u8", "--arch", "a5", "--strategy", "bogus", "-o",
                       str(tmp_path / "q.png")), "unknown strategy 'bogus' for TADD u8 on a5")


def test_model_names_in_any_case_for_the_python_sweep():
    frame = pd.DataFrame({"op": ["TADD"], "dtype": "f16", "rows": 4, "cols": 64})
    assert sweep(frame, model="FORMULA")["model"].tolist() == ["formula"]


def test_a_verified_sample_counts_apart_the_points_the_golden_cannot_check():
    """f32 -> hif8 has no numpy type to compare in ('n/a'): such a point is not counted as verified."""
    from costmodel.sweep import verify_sample

    result = sweep(expand({"ops": ["TCVT", "TADD"], "dtypes": ["f32"], "dst_dtypes": ["hif8"], "archs": ["a5"],
                           "rows": 2, "cols": 64}))
    failures, tried, unchecked = verify_sample(result, 10)
    assert failures == [] and tried == 2 and len(unchecked) == 1 and "TCVT" in unchecked[0]


def test_a_heatmap_of_a_named_strategy_maps_it_at_every_point(tmp_path):
    """The strategy named is mapped wherever it is legal, not only where it is the default; `all` has no heatmap."""
    from fit.plots import heatmap_figure

    df = sweep(expand({"ops": ["TMINS"], "strategies": ["1LNorm"], "rows": "1:64:8", "cols": "16:512:16"}))
    assert not df["default"].all() and df["cycles"].notna().all()
    mesh = heatmap_figure(df, strategy="1LNorm").axes[0].collections[0]
    assert mesh.get_array().count() == len(df)
    r = run("plot", "TMINS", "--rows", "1:64:8", "--cols", "16:512:16", "--strategy", "all", "-o",
            str(tmp_path / "h.png"))
    one_line_error(r, "a heatmap")
    assert not (tmp_path / "h.png").exists()


def test_a_sweep_specs_null_or_blank_model_is_auto_and_the_option_overrides_it(tmp_path):
    for model, extra, ok in [(None, [], True), ("", [], True), (["formula"], [], False),
                             (["formula"], ["--model", "formula"], True)]:
        (tmp_path / "s.json").write_text(json.dumps({"ops": ["TADD"], "rows": 4, "cols": 64, "model": model}))
        r = run("sweep", str(tmp_path / "s.json"), "-o", str(tmp_path / "o.csv"), *extra)
        assert (r.returncode == 0) is ok, r.stderr
        if not ok:
            one_line_error(r, "sweep spec: `model`: unknown model")


def test_tcvt_dtype_errors_cost_no_more_than_other_refusals():
    """Every refused TCVT pair words the pairs its source converts to; they are worked out once, not per row."""
    from costmodel.api import _modelled_dtypes

    _modelled_dtypes.cache_clear()
    out = sweep(expand({"ops": ["TCVT"], "dtypes": ["f16"], "dst_dtypes": ["bf16"], "archs": ["a5"],
                        "rows": "1:40:1", "cols": 64}))
    assert out["cycles"].isna().all() and out["note"].astype(str).str.contains("f16 converts to f32").all()
    assert _modelled_dtypes.cache_info().misses == 1


def test_a_step_line_does_not_reach_back_into_a_shape_where_its_strategy_is_illegal():
    from fit.plots import curves_figure

    rows = [{"dtype": "f32", "strategy": "2d", "rows": r, "cols": 1312, "default": r > 1,
             "cycles": float("nan") if r == 1 else 40.0 * r, "note": ""} for r in range(1, 5)]
    rows += [{"dtype": "f32", "strategy": "1d", "rows": 1, "cols": 1312, "default": True, "cycles": 79.0, "note": ""}]
    ax = curves_figure(pd.DataFrame(rows), "rows", ["strategy"]).axes[0]
    drawn = {ln.get_label(): ln for ln in ax.get_lines()}
    assert drawn["2d"].get_xdata()[0] == 2 and drawn["2d"].get_drawstyle() == "steps-pre"


@pytest.mark.parametrize("args, named", [(["--dtype", "f16"], "TMINS f16 on a2a3"),
                                         (["--dtype", "f16,f32"], "TMINS on a2a3")])
def test_a_plots_title_names_the_one_dtype_it_shows(tmp_path, monkeypatch, args, named):
    """QA 55: a one-dtype curve named its dtype only in the default band under it; several dtypes are a series each."""
    from typer.testing import CliRunner

    import fit.io
    from cli.app import app

    titles = []
    real = fit.io.save_figure
    monkeypatch.setattr(fit.io, "save_figure",
                        lambda fig, *a, **k: titles.append(fig.axes[0].get_title()) or real(fig, *a, **k))
    r = CliRunner().invoke(app, ["plot", "TMINS", *args, "--rows", "32", "--cols", "16:256:16", "-o",
                                 str(tmp_path / "c.png")])
    assert r.exit_code == 0, r.output
    assert titles and titles[0].startswith(named + " — model")
