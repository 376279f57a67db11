"""`validate`: metrics against measurements, rows it cannot score, the command's JSON and plot."""
import json

import numpy as np
import pandas as pd
import pytest

from costmodel.errors import TraceError
from fit.predict import predict_frame
from fit.validate import validate_frame

from .test_cli import run

CASES = pd.DataFrame({"arch": "a5", "op": ["TADD", "TMINS", "TEXP", "TSQRT", "TADD"], "dtype": "fp32",
                      "rows": [1, 2, 3, 10, 1], "cols": [64, 224, 672, 160, 128],
                      "valid_cols": [64, 192, 640, 128, 128]})


def _measured(errors):
    """The cases with measured cycles that the model misses by the given relative errors (None: unmeasured)."""
    pred = predict_frame(CASES)["predicted_cycles"].to_numpy()
    meas = [p * (1 + e) if e is not None else np.nan for p, e in zip(pred, errors)]
    return CASES.assign(measured_cycles=meas), pred


def test_metrics_follow_from_the_errors_planted_in_the_measurements():
    errors = [0.0, 0.02, -0.10, 0.04, None]
    trace, _ = _measured(errors)
    rep = validate_frame(trace)
    ape = [abs(e) / (1 + e) * 100 for e in errors if e is not None]
    assert rep.overall["n"] == 4 and rep.overall["rows"] == 5
    assert rep.overall["mape"] == pytest.approx(np.mean(ape))
    assert rep.overall["worst_ape"] == pytest.approx(max(ape))
    assert rep.overall["within_5"] == pytest.approx(75.0)
    assert list(rep.not_scored["line"]) == [6] and "no measured_cycles" in rep.not_scored["note"].iloc[0]
    assert rep.overall["not_scored"] == 1 and rep.overall["unmodelled"] == 0 and rep.unmodelled.empty
    assert set(rep.per_op["op"]) == {"TADD", "TMINS", "TEXP", "TSQRT"}


def test_rows_whose_measurements_conflict_or_are_wrong_are_not_scored():
    trace, pred = _measured([0.0, 0.02, -0.10, 0.04, 0.0])
    twin = trace.iloc[[0]].assign(measured_cycles=pred[0] * 1.5)  # the same case measured 50 % apart
    trace = pd.concat([trace, twin], ignore_index=True).astype({"measured_cycles": object})
    trace.loc[1, "measured_cycles"] = "abc"
    rep = validate_frame(trace)
    assert rep.overall["n"] == 3 and rep.overall["worst_ape"] == pytest.approx(10 / 0.9)
    notes = dict(zip(rep.not_scored["line"], rep.not_scored["note"]))
    assert "conflicting duplicates" in notes[2] and "conflicting duplicates" in notes[7]
    assert "'abc' is not a cycle count" in notes[3]


def test_per_group_keeps_conversions_apart_by_target_type():
    cases = pd.DataFrame({"arch": "a5", "op": "TCVT", "dtype": "fp32", "dst_dtype": ["fp16", "bf16"], "rows": 1,
                          "cols": 640, "round_mode": "CAST_RINT"})
    pred = predict_frame(cases)["predicted_cycles"].to_numpy()
    rep = validate_frame(cases.assign(measured_cycles=pred * 1.1))
    assert list(rep.per_group["dst_dtype"]) == ["bf16", "fp16"] and list(rep.per_group["n"]) == [1, 1]


def test_a_trace_without_any_measurement_is_an_error():
    with pytest.raises(TraceError, match="measured_cycles"):
        validate_frame(CASES)


def test_validate_command_json_plot_and_exit_codes(tmp_path):
    trace, _ = _measured([0.0, 0.01, -0.01, 0.03, 0.0])
    trace.to_csv(tmp_path / "m.csv", index=False)
    r = run("validate", str(tmp_path / "m.csv"), "--json", "--plot", str(tmp_path / "v.png"))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["overall"]["n"] == 5 and doc["overall"]["worst_ape"] == pytest.approx(3 / 1.03, rel=1e-3)
    assert (tmp_path / "v.png").stat().st_size > 0 and doc["plot"] == str(tmp_path / "v.png")
    # which tables priced it, so a before/after pair of runs can be told apart
    from costmodel.models import params, provenance

    assert doc["parameters"]["formula"] == provenance.table(params.path_in_use())
    assert {"dst_dtype", "op_params", "strategy"} <= set(doc["per_group"][0])
    assert json.loads(run("validate", str(tmp_path / "m.csv"), "--json").stdout)["plot"] is None  # listed, empty
    r = run("validate", str(tmp_path / "m.csv"), "--plot", str(tmp_path / "w.svg"))
    assert r.returncode == 0 and f"wrote {tmp_path / 'w.svg'}" in " ".join(r.stderr.split())
    digest = doc["parameters"]["formula"]["sha256"]  # ... and the text names them too
    assert f"parameters: formula formula_params.csv @{digest}" in " ".join(r.stdout.split())
    CASES.to_csv(tmp_path / "cases.csv", index=False)
    r = run("validate", str(tmp_path / "cases.csv"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "measured_cycles" in r.stderr


def test_strategy_choice_scores_order_and_regret():
    """Two requests measured in two strategies each: one predicted in the right order, one in the wrong one."""
    import numpy as np
    import pandas as pd

    from fit.metrics import strategy_choice

    df = pd.DataFrame({"arch": "a5", "op": "TADD", "dtype": "f32", "rows": [1, 1, 2, 2, 3],
                       "cols": 64, "vf_impl_kind": ["A", "B", "A", "B", "A"],
                       "measured_cycles": [100.0, 110.0, 100.0, 120.0, 50.0],
                       "predicted_cycles": [90.0, 95.0, 130.0, 125.0, 55.0]})
    c = strategy_choice(df)
    assert c["requests"] == 2 and c["pairs"] == 2 and c["order_tau"] == 0.0
    assert c["picked_fastest"] == 50.0
    assert np.isclose(c["regret_mean"], 10.0) and np.isclose(c["regret_max"], 20.0)
    assert np.isnan(strategy_choice(df.iloc[[0, 2, 4]])["order_tau"])
    # repeated runs of one strategy are one strategy (their mean), not a pair of strategies
    runs = df.assign(strategy=df["vf_impl_kind"])
    runs = pd.concat([runs, runs.iloc[[0]].assign(measured_cycles=104.0, predicted_cycles=92.0)], ignore_index=True)
    c = strategy_choice(runs)
    assert c["requests"] == 2 and c["pairs"] == 2 and np.isclose(c["regret_max"], 20.0)
    assert strategy_choice(runs.iloc[[0, 5]])["requests"] == 0


def test_repeated_runs_are_one_scored_case_and_a_bad_measurement_says_only_that():
    trace, pred = _measured([0.0, 0.02, -0.10, 0.04, 0.0])
    again = trace.iloc[[0, 1]].assign(measured_cycles=lambda d: d["measured_cycles"] + 1)  # within the noise
    bad = trace.iloc[[2]].assign(measured_cycles=-60.0)
    rep = validate_frame(pd.concat([trace, again, bad], ignore_index=True))
    assert rep.overall["rows"] == 8 and rep.overall["repeats"] == 2 and rep.overall["n"] == 5
    assert rep.overall["not_scored"] == 1
    # the repeated case is scored once, at the mean of its runs
    m = trace["measured_cycles"].to_numpy() + np.array([0.5, 0.5, 0, 0, 0])  # runs of cases 0 and 1 were 1 apart
    want = np.mean(np.abs(pred - m) / m) * 100
    assert rep.overall["mape"] == pytest.approx(want)
    note = rep.not_scored["note"].iloc[0]
    assert "is not a cycle count" in note and "typical error" not in note


def test_repeats_are_found_whatever_the_spelling_and_without_valid_columns():
    # no valid_rows/valid_cols columns (they default to the tile) and the dtype or mode spelt two ways: one case each
    trace = pd.DataFrame({"arch": "a2a3", "op": ["TADD", "TADD", "TCMP", "TCMP", "TCMP"],
                          "dtype": ["f32", "fp32", "f16", "f16", "f16"], "rows": [64, 64, 16, 16, 16], "cols": 64,
                          "cmp_mode": ["", "", "ne", "NE", "eq"], "measured_cycles": [160.0, 162.0, 50.0, 52.0, 40.0]})
    rep = validate_frame(trace)
    assert rep.overall["repeats"] == 2 and rep.overall["n"] == 3


def test_a_noisier_profiler_widens_what_counts_as_a_repeat(tmp_path):
    trace = pd.DataFrame({"arch": "a2a3", "op": "TADD", "dtype": "f32", "rows": 64, "cols": 64,
                          "measured_cycles": [160.0, 165.0]})
    with pytest.raises(TraceError, match="conflicting duplicates"):  # 5 cycles apart (the files' noise: ±1 cycle)
        validate_frame(trace)
    rep = validate_frame(trace, tolerance=6)
    assert rep.overall["n"] == 1 and rep.overall["repeats"] == 1
    trace.to_csv(tmp_path / "t.csv", index=False)
    r = run("validate", str(tmp_path / "t.csv"), "--repeat-tolerance", "6", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["overall"]["repeats"] == 1
    for bad in ("-1", "nan"):
        r = run("fit", str(tmp_path / "t.csv"), "--repeat-tolerance", bad, "--dry-run")
        assert r.returncode == 2 and "repeat-tolerance" in r.stderr and "accepted: a number >= 0" in r.stderr


def test_strategies_are_paired_only_on_one_request_and_a_predicted_tie_is_each_pick_in_turn():
    # EQ and NE compares are two requests, whatever strategies they ran: no pair between them
    base = {"arch": "a2a3", "dtype": "f16", "rows": 16, "cols": 256}
    cmp = pd.DataFrame([{**base, "op": "TCMP", "strategy": "1LCount", "cmp_mode": "eq", "measured_cycles": 120.0},
                        {**base, "op": "TCMP", "strategy": "2LCount", "cmp_mode": "ne", "measured_cycles": 60.0}])
    rep = validate_frame(cmp)
    assert rep.overall["strategies"]["requests"] == 0
    assert sorted(rep.per_group["cmp_mode"]) == ["eq", "ne"]  # and a group each
    from fit.metrics import strategy_choice

    # three strategies, two tied at the predicted minimum: one of them is the measured fastest (regret 0), the other
    # costs 50 % more; the pick is half right and its regret the mean over the tie
    tie = pd.DataFrame({"op": "TADD", "strategy": ["A", "B", "C"], "predicted_cycles": [10.0, 10.0, 12.0],
                        "measured_cycles": [100.0, 150.0, 200.0]})
    c = strategy_choice(tie, by=["op"])
    assert c["picked_fastest"] == 50.0 and c["regret_mean"] == pytest.approx(25.0) and c["pairs"] == 3
    assert c["order_tau"] == pytest.approx(2 / 2)  # the tied pair counts neither way; the two others concord


def test_a_header_only_trace_says_so():
    with pytest.raises(TraceError, match="a header and no rows"):
        validate_frame(CASES.iloc[:0].assign(measured_cycles=[]))


def test_rows_left_out_as_noisy_repeats_name_the_option_that_takes_them(tmp_path):
    trace = tmp_path / "noisy.csv"
    trace.write_text("arch,op,dtype,rows,cols,measured_cycles\na5,TADD,f32,1,64,55\na5,TADD,f32,1,64,60\n"
                     "a5,TADD,f32,1,640,67\n")
    r = run("validate", str(trace))
    assert r.returncode == 0 and "2 measure a case another row measures more than the profiler's noise apart; " \
        "--repeat-tolerance CYCLES" in " ".join(r.stdout.split())
