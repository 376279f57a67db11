"""The Python API refuses bad input with one-line PtoCostError messages instead of ignoring it or failing deep inside."""
import numpy as np
import pandas as pd
import pytest

import costmodel
from costmodel.errors import ParamError, PtoCostError, ShapeError


@pytest.mark.parametrize("call", [
    lambda: costmodel.estimate("TMINS", "64x64", "f16", scalr=7.0),
    lambda: costmodel.plan("TCOLSUM", "9x64", "f16", binray=True),
    lambda: costmodel.compare("TMINS", "64x64", "f16", foo=1),
    lambda: costmodel.best_strategy("TMINS", "64x64", "f16", foo=1),
])
def test_a_mistyped_keyword_is_an_error_naming_it(call):
    with pytest.raises(ParamError, match="unknown parameter"):
        call()


@pytest.mark.parametrize("kw, error, words", [
    ({"strategy": 5}, "StrategyError", "strategy 5 is not a name"),
    ({"scalar": [1]}, "ParamError", r"scalar \[1\] is not a number"),
    ({"scalar": 1j}, "ParamError", "is not a number"),
    ({"scalar": True}, "ParamError", "is not a number"),
    ({"verify": "maybe"}, "ParamError", "verify 'maybe': expected true or false"),
    ({"arch": ""}, "ParamError", "unknown arch"),
])
def test_values_of_the_wrong_kind_are_named_errors_not_python_ones(kw, error, words):
    with pytest.raises(PtoCostError, match=words) as exc:
        costmodel.estimate("TMINS", "64x64", "f32", **kw)
    assert type(exc.value).__name__ == error


def test_api_values_as_a_frame_or_a_user_gives_them():
    # a frame's missing strategy (NaN) is the default; verify="no" is no; ml_dtypes' own name of a type is that type
    plain = costmodel.estimate("TMINS", "64x64", "f32", verify=False)
    assert costmodel.estimate("TMINS", "64x64", "f32", strategy=float("nan"), verify=False).strategy == plain.strategy
    assert costmodel.estimate("TMINS", "64x64", "f32", verify="no").verified is None
    e = costmodel.estimate("TCVT", "16x64", "f32", arch="a5", dst_dtype="float8_e4m3fn", verify=False)
    assert e.request.tiles[0][1].dtype.name == "fp8_e4m3"
    # compare prices every strategy: it refuses a named one and takes `all`; its verified column is Estimate's
    with pytest.raises(costmodel.errors.StrategyError, match="compare prices every legal strategy"):
        costmodel.compare("TADD", "64x64", "f32", arch="a5", strategy="1d-post-update")
    df = costmodel.compare("TADD", "64x64", "f32", arch="a5", strategy="all")
    assert df["verified"].dtype == "boolean" and len(df[df["verified"]]) == len(df) == 4
    hif8 = costmodel.compare("TCVT", "4x64", "f32", arch="a5", dst_dtype="hif8")
    assert hif8["verified"].isna().all() and len(hif8[hif8["verified"]]) == 0
    assert (hif8["verify_note"].str.contains("hif8")).all()


def test_the_error_suggests_the_close_name():
    with pytest.raises(ParamError, match="did you mean scalar"):
        costmodel.estimate("TMINS", "64x64", "f16", scalr=7.0)


def test_numpy_types_name_element_types():
    assert costmodel.estimate("TMINS", "64x64", np.float16, verify=False).cycles == \
        costmodel.estimate("TMINS", "64x64", "f16", verify=False).cycles


def test_golden_checks_its_operands():
    a = np.ones((16, 16), np.float32)
    with pytest.raises(ParamError, match="takes 2 source tiles, got 1"):
        costmodel.golden("TADD", a)
    with pytest.raises(ShapeError, match="one shape"):
        costmodel.golden("TADD", a, np.ones((8, 16), np.float32))
    for valid, said in (((5, 40), "does not fit the 16x16 tile"), ((-1, 4), "rows and cols must be ≥ 0"),
                        ([(4, 4)], "malformed valid region"), ("4by4", "expected RxC")):
        with pytest.raises(ShapeError, match=said):
            costmodel.golden("TADD", a, a, valid=valid)
    # the forms estimate takes: a pair, "RxC" text, a numpy array
    for valid in ((4, 4), "4x4", np.array([4, 4])):
        out = costmodel.golden("TADD", a, a, valid=valid)
        assert out[:4, :4].sum() == 32 and out.sum() == 32


@pytest.mark.parametrize("frame, kw, needle", [
    (pd.DataFrame({"op": ["TADD"], "dtype": ["f16"]}), {}, "lacks column(s) rows, cols"),
    (pd.DataFrame({"op": ["TADD"], "dtype": ["f16"], "rows": ["a"], "cols": [64]}), {}, "'a' (row 0) is not a whole"),
    ([1, 2], {}, "takes a pandas DataFrame"),
    (pd.DataFrame({"op": ["TADD"], "dtype": ["f16"], "rows": [4], "cols": [64]}), {"model": "bogus"}, "unknown model"),
])
def test_sweep_refuses_frames_it_cannot_read(frame, kw, needle):
    with pytest.raises(PtoCostError) as exc:
        costmodel.sweep(frame, **kw)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_a_pipeline_parameter_file_must_be_one(tmp_path, monkeypatch):
    from costmodel.models.a5_pipeline_uarch import read_params

    junk = tmp_path / "junk.csv"
    junk.write_text("a,b\n1,2\n")
    with pytest.raises(PtoCostError, match="not an A5 pipeline parameter table"):
        read_params(junk)
    _, rows = read_params()
    partial = tmp_path / "partial.csv"
    partial.write_text("name,value\n" + "".join(f"{n},{r['value']}\n" for n, r in list(rows.items())[:3]))
    with pytest.raises(PtoCostError, match="missing"):
        read_params(partial)
    monkeypatch.setenv("PTO_COST_PIPELINE_PARAMS", str(junk))
    with pytest.raises(PtoCostError):
        costmodel.estimate("TADD", "8x640", "f32", arch="a5", model="pipeline", verify=False)


def test_predict_keeps_shape_columns_numeric(tmp_path):
    from fit.predict import predict_frame

    trace = pd.DataFrame({"arch": ["a2a3"], "op": ["TMINS"], "dtype": ["f16"], "rows": [64], "cols": [64]})
    out = predict_frame(trace)
    assert out["rows"].dtype == np.int64 and out["cols"].dtype == np.int64 and out["predicted_cycles"].notna().all()


def test_counts_are_whole_numbers_named_when_malformed():
    assert costmodel.estimate("BlockReduceSum", None, "f16", repeat="2.0", verify=False).cycles == \
        costmodel.estimate("BlockReduceSum", None, "f16", repeat=2, verify=False).cycles
    for bad in ("abc", 2.5):
        with pytest.raises(costmodel.PtoCostError, match=f"repeat {bad!r}: expected a whole number"):
            costmodel.estimate("BlockReduceSum", None, "f16", repeat=bad, verify=False)


def test_predict_writes_the_input_columns_plus_its_own(tmp_path):
    import subprocess
    import sys

    cases = tmp_path / "cases.csv"
    cases.write_text("arch,op,dtype,rows,cols,id\na2a3,TMINS,f16,64,64,7\na5,TADD,f32,16,64,8\n")
    for name in ("out.csv", "out.parquet"):
        r = subprocess.run([sys.executable, "-m", "cli", "predict", str(cases), "-o", str(tmp_path / name)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        out = pd.read_csv(tmp_path / name) if name.endswith(".csv") else pd.read_parquet(tmp_path / name)
        assert list(out.columns) == ["arch", "op", "dtype", "rows", "cols", "id", "strategy", "predicted_cycles",
                                     "model", "note"]
        assert out["id"].tolist() == [7, 8] and out["predicted_cycles"].notna().all()
        assert "replaced" not in r.stderr
    again = subprocess.run([sys.executable, "-m", "cli", "predict", str(tmp_path / "out.csv"), "-o",
                            str(tmp_path / "again.csv")], capture_output=True, text=True)
    assert again.returncode == 0 and "own predicted_cycles, model, note columns replaced" in again.stderr
    assert pd.read_csv(tmp_path / "again.csv").columns.tolist() == list(out.columns)


def test_compare_frame_marks_one_fastest_preferring_the_default_on_a_tie():
    df = costmodel.compare("TMINS", "64x64", "f32", verify=False)
    best = df["cycles"].min()
    assert (df["cycles"] == best).sum() > 1 and df["fastest"].sum() == 1
    assert df.loc[df["fastest"], "strategy"].item() == df.loc[df["default"], "strategy"].item()
    assert costmodel.best_strategy("TMINS", "64x64", "f32")[0] == df.loc[df["fastest"], "strategy"].item()


def test_verified_says_skipped_when_not_asked_and_na_when_no_emulation_exists():
    assert costmodel.estimate("TMINS", "64x64", "f16", verify=False).to_dict()["verified"] == "skipped"
    assert costmodel.estimate("TMINS", "64x64", "f16").to_dict()["verified"] == "yes"
    hif8 = costmodel.estimate("TCVT", "4x64", "f32", arch="a5", dst_dtype="hif8")
    assert hif8.verified is None and hif8.to_dict()["verified"] == "n/a"


def test_a_sweep_frames_valid_count_may_say_full_as_a_spec_does():
    from costmodel.sweep import sweep

    df = pd.DataFrame({"op": "TADD", "dtype": "f32", "arch": "a5", "rows": 4, "cols": [64, 64, 64],
                       "valid_cols": ["full", " FULL", 32]})
    out = sweep(df)
    assert out["valid_cols"].tolist() == [64, 64, 32] and out["cycles"].notna().all()
    assert out["cycles"].iloc[0] == costmodel.estimate("TADD", "4x64", "f32", arch="a5", verify=False).cycles
    with pytest.raises(PtoCostError, match=r"valid_cols: 12.5 \(row 1\) is not a whole number or `full`"):
        sweep(df.assign(valid_cols=["full", 12.5, 3]))


def test_sweep_frames_with_pandas_nullable_columns():
    """convert_dtypes() / nullable readers put pandas' NA in string, Int64 and boolean columns: a sweep reads those
    gaps as blanks, on frames large enough to take the grouped path; a missing shape is a one-line error."""
    n = 40
    frame = pd.DataFrame({"op": ["TCVT", "TMINS"] * n, "dtype": "f16", "dst_dtype": ["i8", ""] * n,
                          "rows": np.arange(2 * n) % 7 + 4, "cols": 64,
                          "saturation": pd.array(["on", None] * n, dtype="string")})
    plain = costmodel.sweep(frame.astype({"saturation": object}))["cycles"].to_numpy()
    assert np.isfinite(plain).all()
    assert costmodel.sweep(frame.convert_dtypes())["cycles"].to_numpy() == pytest.approx(plain)
    typed = frame.assign(tag=pd.array([1, None] * n, dtype="Int64"), static_valid=pd.array([True, None] * n, dtype="boolean"))
    out = costmodel.sweep(typed.convert_dtypes())
    assert out["cycles"].to_numpy() == pytest.approx(costmodel.sweep(typed.astype(object))["cycles"].to_numpy())
    # the caller's columns come back in their own types, gaps and all
    assert str(out["tag"].dtype) == "Int64" and out["tag"].isna().sum() == n
    assert str(out["static_valid"].dtype) == "boolean" and str(out["saturation"].dtype) == "string"
    with pytest.raises(costmodel.PtoCostError, match="rows: <NA>"):
        costmodel.sweep(pd.DataFrame({"op": ["TADD"], "dtype": ["f16"], "rows": pd.array([None], dtype="Int64"),
                                      "cols": [64]}))


def test_enumerated_parameters_are_checked_and_read_in_any_letter_case():
    """--order used to be matched case-insensitively by the plan but exactly by the golden (a mismatch), and any
    other value was silently the default order."""
    from costmodel import lower
    from costmodel.emulate.verify import verify
    from costmodel.models.registry import check_name
    from costmodel.operands import make_request

    for arch in ("a2a3", "a5"):
        req = make_request("TDIVS", "1x64", "f32", arch=arch, scalar=4.0, order=" Scalar_Tile")
        assert req.param("order") == "scalar_tile" and verify(lower.lower(req)).ok
    with pytest.raises(ParamError, match="accepted: tile_scalar, scalar_tile"):
        make_request("TDIVS", "1x64", "f32", scalar=4.0, order="bogus")
    assert make_request("TROWEXPANDADD", "16x64", "f16", expanded="SRC0").param("expanded") == "src0"
    assert check_name("FORMULA") == "formula"


def test_integer_scalars_are_exact_beyond_two_to_the_53():
    from costmodel.operands import make_request

    top = 2 ** 64 - 1
    assert make_request("TMINS", "8x64", "u64", arch="a5", scalar=str(top)).param("scalar") == top
    assert make_request("TMAXS", "8x64", "i64", arch="a5", scalar="9007199254740993").param("scalar") == 2 ** 53 + 1
    with pytest.raises(ParamError, match="does not fit u64"):
        make_request("TMINS", "8x64", "u64", arch="a5", scalar=str(top + 1))
    # the a2a3 limit of TREMS i32 is that arch's (its algorithm goes through f32); A5 takes the full range
    assert make_request("TREMS", "8x64", "i32", arch="a5", scalar=2 ** 24 + 1).param("scalar") == 2 ** 24 + 1


def test_a_float_scalar_is_held_in_the_tiles_type():
    from costmodel.operands import make_request

    # the instruction takes its scalar in the tile's type: what the plan lists and the emulator reads
    assert make_request("TMINS", "8x64", "f16", scalar="1.0001").param("scalar") == 1.0
    assert make_request("TMINS", "8x64", "f32", scalar="1.0001").param("scalar") == float(np.float32(1.0001))
    assert make_request("TMAXS", "8x64", "bf16", arch="a5", scalar="1.01").param("scalar") == 1.0078125
    assert make_request("TSELS", "8x64", "f16", scalar="1e-12").param("scalar") == 0.0
    assert make_request("TMINS", "8x64", "f16", scalar="-inf").param("scalar") == -np.inf
    with pytest.raises(ParamError, match="overflows f16"):  # a finite scalar the type cannot hold
        make_request("TMINS", "8x64", "f16", scalar="65520")


def test_a_dividend_scalar_may_be_zero_and_a_huge_integer_is_an_error_on_floats():
    from costmodel import lower
    from costmodel.emulate.verify import verify
    from costmodel.operands import make_request

    for arch in ("a2a3", "a5"):  # s / src: the scalar is the dividend
        req = make_request("TDIVS", "16x64", "f32", arch=arch, scalar=0, order="scalar_tile")
        assert verify(lower.lower(req)).ok
    with pytest.raises(ParamError, match="divides by zero"):
        make_request("TDIVS", "16x64", "f32", scalar=0)
    with pytest.raises(ParamError, match="too large for a double"):
        make_request("TADDS", "16x64", "f32", scalar=10 ** 400)


def test_integer_power_data_has_negative_exponents_and_overflow_is_a_named_divergence():
    """verify draws negative exponents for signed types (a broken sign fix is caught by `verify` itself, not only
    by the unit tests), and where b^e passes 2^53 the golden's double is inexact: named, not a bare mismatch."""
    from costmodel import lower
    from costmodel.emulate.verify import make_inputs, verify
    from costmodel.operands import make_request

    plan = lower.lower(make_request("TPOW", "16x64", "i32", arch="a5"))
    expo = make_inputs(plan, 0)["src1"]
    assert expo.min() < 0 and expo.max() > 4
    assert make_inputs(lower.lower(make_request("TPOW", "16x64", "u16", arch="a5")), 0)["src1"].max() < 12
    for arch in ("a2a3", "a5"):
        assert verify(lower.lower(make_request("TPOW", "16x64", "i16", arch=arch))).ok
        v = verify(lower.lower(make_request("TPOWS", "8x64", "i32", arch=arch, scalar=40)))
        assert v.ok is False and "passes 2^53" in v.note and "isa.md §4" in v.note


def test_a_shape_or_valid_region_of_fractions_or_bools_is_an_error_not_truncated():
    import costmodel
    from costmodel.errors import ShapeError

    for shape in ((8.9, 16.2), (True, 16)):
        with pytest.raises(ShapeError, match="whole numbers"):
            costmodel.estimate("TADD", shape, "f16", verify=False)
    with pytest.raises(ShapeError, match="whole numbers"):
        costmodel.estimate("TADD", "8x16", "f16", valid=(4.7, 8), verify=False)
    assert costmodel.estimate("TADD", (8.0, 16), "f16", verify=False).request.dst.rows == 8  # a float column's 8.0


@pytest.mark.parametrize("vectorised", [True, False])
@pytest.mark.parametrize("gap", [None, "", float("nan")])
def test_a_sweep_row_without_an_op_or_dtype_is_that_rows_error(gap, vectorised):
    """One empty cell neither aborts the sweep nor falls back to a default element type."""
    import pandas as pd

    from costmodel import estimate, sweep

    frame = pd.DataFrame({"op": ["TADD", gap, "TADD"], "dtype": ["f32", "f32", gap], "rows": 4, "cols": 64})
    out = sweep(frame, vectorised=vectorised)
    assert out["cycles"].iloc[0] == estimate("TADD", "4x64", "f32", verify=False).cycles
    assert out["cycles"].iloc[1:].isna().all()
    assert out["note"].iloc[1] == "the row has no op (its op cell is empty)"
    assert out["note"].iloc[2] == "the row has no dtype (its dtype cell is empty)"


def test_a_sweep_takes_the_default_arch_as_estimate_does(monkeypatch):
    import pandas as pd

    from costmodel import estimate, sweep

    monkeypatch.setenv("PTO_COST_ARCH", "a5")
    want = estimate("TADD", "4x64", "f32", verify=False)
    out = sweep(pd.DataFrame({"op": "TADD", "dtype": "f32", "rows": [4], "cols": [64]}))
    assert (out["arch"].iloc[0], out["strategy"].iloc[0], out["cycles"].iloc[0]) == ("a5", want.strategy, want.cycles)
    gaps = sweep(pd.DataFrame({"op": "TADD", "dtype": "f32", "arch": ["a2a3", None, ""], "rows": 4, "cols": 64}))
    assert gaps["arch"].tolist() == ["a2a3", "a5", "a5"] and (gaps["cycles"].iloc[1:] == want.cycles).all()
    # dask workers get the client's default arch with the rows, not their own environment's
    from costmodel.sweep import Frame, _slim

    shipped = _slim(Frame(pd.DataFrame({"op": "TADD", "dtype": "f32", "rows": [4, 8], "cols": 64})))
    assert shipped["arch"].tolist() == ["a5", "a5"]



def test_vf_impl_kind_default_is_no_request_on_a2a3_and_any_other_is_refused():
    """A profiler writing one trace for both arches fills VFIMPL_DEFAULT on every row: on A2/A3 it asks for nothing,
    while a kind that picks a loop form has nothing to pick there (QA 47a)."""
    import costmodel
    from costmodel.errors import ParamError

    plain = costmodel.estimate("TADD", "8x64", "f32", verify=False)
    for kind in ("VFIMPL_DEFAULT", "default", 0):
        asked = costmodel.estimate("TADD", "8x64", "f32", verify=False, vf_impl_kind=kind)
        assert (asked.cycles, asked.strategy) == (plain.cycles, plain.strategy)
    for kind in ("VFIMPL_1D_POST_UPDATE", 2):
        with pytest.raises(ParamError, match="a2a3 has no VF"):
            costmodel.estimate("TADD", "8x64", "f32", verify=False, vf_impl_kind=kind)


def test_golden_refuses_a_misspelt_parameter_as_estimate_does():
    """A typo was silently ignored: valdi=(8, 8) computed the whole tile, round_mod= kept the default mode (QA 48a)."""
    a = np.ones((16, 32), np.float32)
    with pytest.raises(ParamError, match="unknown parameter 'valdi'; did you mean valid"):
        costmodel.golden("TADD", a, a, valdi=(8, 8))
    with pytest.raises(ParamError, match="unknown parameter 'round_mod'; did you mean round_mode"):
        costmodel.golden("TCVT", a, dst_dtype="i16", round_mod="round")
    assert costmodel.golden("TCVT", a, dst_dtype="i16", round_mode="round").dtype == np.int16


def test_every_refusal_is_a_named_error_class_the_package_exports():
    """A script catches what it can fix by class: an unknown arch or model is a ParamError, like any bad option, and
    every class (and the result types) can be imported from `costmodel` (QA 48a)."""
    for kw in ({"arch": "a6"}, {"model": "nope"}, {"model": "pipeline"}):
        with pytest.raises(costmodel.ParamError):
            costmodel.estimate("TMINS", "64x64", "f16", **kw)
    with pytest.raises(costmodel.UnknownOpError):
        costmodel.estimate("TFOO", "64x64", "f16")
    for name in ("UnknownOpError", "UnsupportedDtypeError", "ShapeError", "StrategyError", "ParamError",
                 "NotModelledError", "TraceError"):
        assert issubclass(getattr(costmodel, name), costmodel.PtoCostError)
    assert isinstance(costmodel.estimate("TMINS", "64x64", "f16", verify=False), costmodel.Estimate)
    assert isinstance(costmodel.plan("TMINS", "64x64", "f16"), costmodel.Plan)


def test_estimates_are_equal_when_they_price_the_same_request_alike():
    """How the call named the arch or the strategy does not change an estimate; another request does (QA 48a)."""
    e = costmodel.estimate("TMINS", "64x64", "f16", verify=False)
    same = [costmodel.estimate("TMINS", "64x64", "f16", arch="a2a3", verify=False),
            costmodel.estimate("TMINS", "64x64", "f16", strategy=e.strategy, verify=False)]
    assert all(s == e and hash(s) == hash(e) for s in same)
    assert costmodel.estimate("TMINS", "64x64", "f16", scalar=2.0, verify=False) != e


def test_modelled_dtypes_takes_the_arch_as_estimate_does(monkeypatch):
    monkeypatch.delenv("PTO_COST_ARCH", raising=False)
    assert costmodel.modelled_dtypes("TROWSUM") == costmodel.modelled_dtypes("TROWSUM", "a2a3") == ("f16", "f32")
    monkeypatch.setenv("PTO_COST_ARCH", "a5")
    assert "i32" in costmodel.modelled_dtypes("TROWSUM")


def test_numpy_arrays_are_shapes_and_valid_regions_as_tuples_are():
    by_tuple = costmodel.estimate("TMINS", (64, 64), "f16", valid=(32, 32), verify=False)
    by_array = costmodel.estimate("TMINS", np.array([64, 64]), "f16", valid=np.array([32, 32]), verify=False)
    assert by_array == by_tuple
