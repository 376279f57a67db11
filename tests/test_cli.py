"""End-to-end CLI behaviour through the installed entry point's main()."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import costmodel

from .conftest import ROOT

CLI = [sys.executable, "-m", "cli"]


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    import os

    full_env = dict(os.environ, **(env or {}))
    if "PTO_COST_ARCH" not in (env or {}):
        full_env.pop("PTO_COST_ARCH", None)
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=ROOT, env=full_env, timeout=120)


@pytest.mark.parametrize("args", [
    ("estimate", "TMINS", "--shape", "16x200", "--valid", "16x190", "--dtype", "f32", "--arch", "a5"),
    ("compare", "TMINS", "--shape", "64x64", "--dtype", "f16"),
    ("ops",),
    ("verify", "TMINS", "--shape", "64x64", "--strategy", "all"),
    ("plan", "TMINS", "--shape", "16x192", "--dtype", "f32", "--arch", "a5", "--timeline"),
    ("--help",), ("fit", "--help"),
])
def test_output_to_a_stream_that_cannot_encode_unicode_is_spelled_in_ascii(args):
    """A terminal or pipe in ASCII (PYTHONIOENCODING=ascii) gets ASCII stand-ins for dashes, arrows and sections."""
    r = run(*args, env={"PYTHONIOENCODING": "ascii", "COLUMNS": "100"})
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-500:]
    assert r.stdout.isascii() and len(r.stdout.splitlines()) > 3
    if "--help" not in args:  # typer prints its own help: there '±' becomes the encoder's '?'
        assert "?" not in r.stdout  # stand-ins, not the encoder's replacement marks


def test_readme_command_prints_every_field():
    r = run("estimate", "TMINS", "--shape", "64x64", "--dtype", "f16")
    assert r.returncode == 0, r.stderr
    for word in ("arch", "a2a3", "strategy", "model", "cycles", "breakdown", "verified", "yes"):
        assert word in r.stdout


def test_readme_example_output_is_what_the_command_prints():
    """The README shows the main command's output; a refit or a model change must not leave it stale."""
    cmd = "$ pto-cost estimate TMINS --shape 64x64 --dtype f16\n"
    text = (ROOT / "README.md").read_text()
    start = text.index(cmd) + len(cmd)
    shown = text[start:text.index("```", start)].split()
    r = run("estimate", "TMINS", "--shape", "64x64", "--dtype", "f16", env={"COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == shown


def test_help_texts_print_as_written():
    """Rich turns `:name:` in help text into emoji (A:B:STEP printed as A🅱STEP) and eats `[word]`; no command's help may."""
    import re

    from typer.testing import CliRunner

    from cli.app import app

    emoji = re.compile("[\U0001F000-\U0001FFFF\u2600-\u27BF]")
    names = [c.name or c.callback.__name__ for c in app.registered_commands]
    assert len(names) >= 10
    for name in [*names, None]:
        res = CliRunner().invoke(app, [name, "--help"] if name else ["--help"], env={"COLUMNS": "200"})
        assert res.exit_code == 0, (name, res.output)
        assert not emoji.search(res.output), (name, emoji.findall(res.output))
        flags = [ln for ln in res.output.splitlines() if "<bool>" in ln]
        assert not flags, (name, flags)  # a flag takes no value: no metavar
    sweep = CliRunner().invoke(app, ["sweep", "--help"], env={"COLUMNS": "200"}).output
    assert "pto-cost[dask]" in sweep  # square brackets in help are text, not markup


def test_notes_print_their_bracketed_citations():
    """Data is not rich markup: a note's '[costmodel.md 7 ...]' citation must reach the terminal."""
    r = run("estimate", "TMINS", "--shape", "1x64", "--dtype", "f16", "--arch", "a5", env={"COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    note = json.loads(run("estimate", "TMINS", "--shape", "1x64", "--dtype", "f16", "--arch", "a5", "--json").stdout)
    cite = next(n for n in note["notes"] if "[" in n)
    assert cite[cite.index("["):] in r.stdout


def test_estimate_json_is_one_document_with_the_keys():
    r = run("estimate", "TMINS", "--shape", "64x64", "--dtype", "f16", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert {"arch", "strategy", "model", "cycles", "breakdown", "verified"} <= set(doc)
    assert doc["verified"] == "yes" and doc["arch"] == "a2a3"
    assert doc["cycles"] == pytest.approx(sum(doc["breakdown"].values()))


def test_arch_comes_from_the_environment():
    r = run("estimate", "TMINS", "--shape", "64x64", "--dtype", "f16", "--json", env={"PTO_COST_ARCH": "a2a3"})
    assert json.loads(r.stdout)["arch_source"] == "env"


def test_bad_trace_files_are_one_line_exit_2(tmp_path):
    trace = (ROOT / "tests" / "data" / "small_trace.csv").read_text().splitlines()
    (tmp_path / "semi.csv").write_text("\n".join(ln.replace(",", ";") for ln in trace) + "\n")
    (tmp_path / "header.csv").write_text(trace[0] + "\n")
    head = trace[0].split(",")
    at = head.index("measured_cycles")
    (tmp_path / "nomeas.csv").write_text("\n".join(",".join(f for i, f in enumerate(ln.split(",")) if i != at)
                                                   for ln in trace) + "\n")
    for args, needle in [(["validate", "semi.csv"], "looks ';'-separated"),
                         (["predict", "header.csv", "-o", "p.csv"], "nothing to predict"),
                         (["fit", "header.csv", "--dry-run"], "a header and no data rows"),
                         (["fit", "nomeas.csv", "--dry-run"], "no measured_cycles column")]:
        r = subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=tmp_path, timeout=120)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and needle in lines[0], (args, r.stderr)
    assert not (tmp_path / "p.csv").exists()


@pytest.mark.parametrize("args,needle", [
    (["estimate", "TFOO", "--shape", "64x64", "--dtype", "f16"], "unknown op"),
    (["estimate", "TMINS", "--shape", "64x64", "--dtype", "u8"], "does not support u8 on a2a3"),
    (["estimate", "TMINS", "--shape", "64", "--dtype", "f16"], "malformed shape"),
    (["estimate", "TMINS", "--shape", "0x64", "--dtype", "f16"], "0x64"),
    (["estimate", "TMINS", "--shape", "64x64", "--valid", "65x64", "--dtype", "f16"], "larger than the tile 64x64; accepted: at most 64x64"),
    (["estimate", "TMINS", "--shape", "64x64", "--dtype", "f16", "--strategy", "2LNormColVLAlign"], "illegal"),
    (["estimate", "TMINS", "--shape", "64x64", "--dtype", "f16", "--strategy", "nonsense"], "unknown strategy"),
    (["estimate", "TCOLSUM", "--shape", "16x64", "--dtype", "f32", "--arch", "a5", "--strategy", "ColBinary"],
     "(legal for this request: 2d-no-post-update)"),
    (["estimate", "TMINS", "--shape", "64x64", "--dtype", "f16", "--arch", "a9"], "unknown arch"),
    (["estimate", "TMINS", "--shape", "64x64", "--dtype", "f17"], "unknown dtype"),
    (["estimate", "TDIVS", "--shape", "64x64", "--dtype", "f32", "--scalar", "0"], "divides by zero"),
    (["estimate", "TMINS", "--shape", "64x64", "--dtype", "i16", "--scalar", "1.5"], "integer scalar"),
    (["estimate", "TADDS", "--shape", "8x64", "--dtype", "i32", "--scalar", "nan"], "needs an integer scalar; got nan"),
    (["estimate", "TADDS", "--shape", "8x64", "--dtype", "i32", "--scalar", "-inf"], "needs an integer scalar"),
    (["estimate", "TDIVS", "--shape", "8x64", "--dtype", "f32", "--order", "bogus"],
     "--order 'bogus' is not accepted; accepted: tile_scalar, scalar_tile"),
    (["estimate", "TADDS", "--shape", "8x64", "--dtype", "f16", "--scalar", "1e6"], "scalar 1e+06 overflows f16 (largest 65504)"),
    (["estimate", "TADDS", "--shape", "8x64", "--dtype", "f32", "--scalar", "1e400"], "too large for a double"),
    (["estimate", "TADDS", "--shape", "8x64", "--dtype", "i32", "--scalar", "010"], "'010' has a leading zero"),
    (["fit", "x.csv", "--pipeline-output", "p.csv"], "--pipeline-output needs --model pipeline or all"),
    (["fit", "x.csv", "--model", "pipeline", "-o", "f.csv"], "-o names the formula table"),
    (["estimate", "TDIVS", "--shape", "8x64", "--dtype", "f16", "--scalar", "1e-10"], "rounds to 0 in f16 and divides by zero"),
    (["estimate", "TREMS", "--shape", "8x64", "--dtype", "i32", "--scalar", "16777217"], "must be within ±16777216"),
    (["estimate", "TMINS", "--dtype", "f16"], "--shape"),
    (["estimate", "TMINS", "--shape", "64x64", "--nonsense"], "nonsense"),
    (["ops", "--family", "nope"], "unknown family"),
    (["estimate", "TCVT", "--shape", "8x8", "--dtype", "f32", "--arch", "a5"],
     "TCVT needs a destination dtype (--dst-dtype); f32 converts to f32 f16 bf16"),
    (["estimate", "BlockReduceMin", "--dtype", "f16", "--mask", "x:y"], "expected HI:LO with two integers"),
    (["estimate", "TMINS", "--shape", "64x64", "--binary"], "binary applies to col_reduce ops, not TMINS"),
    (["verify", "TSUBS", "--shape", "8x64", "--dtype", "f32", "--order", "scalar_tile"], "order applies to TDIVS only"),
    (["plan", "TSEL", "--shape", "16x128", "--dtype", "f32", "--in-place"], "in_place is modelled on a2a3 for elementwise"),
    (["estimate", "TROWEXPAND", "--shape", "16x128", "--dtype", "f32", "--expanded", "bogus"], "expanded applies to"),
    (["estimate", "TEXP", "--shape", "16x128", "--dtype", "f32", "--arch", "a5", "--scalar", "3"], "scalar applies to"),
    (["estimate", "TCVT", "--shape", "8x256", "--dtype", "f16", "--dst-dtype", "f16"], "does not convert f16 to f16"),
    # the catalogue's pairs of the source, those without a model marked (A2/A3 f16 -> packed i4)
    (["estimate", "TCVT", "--shape", "8x256", "--dtype", "f16", "--dst-dtype", "f16"], "f16 converts to f32 i32 i16 "
     "i8 u8 i4 (not modelled) on a2a3"),
    (["estimate", "TCVT", "--shape", "8x256", "--dtype", "f16", "--arch", "a5"], "TCVT needs a destination dtype "
     "(--dst-dtype); f16 converts to f32 i32 i16 i8 u8 hif8 on a5"),
    (["estimate", "TCVT", "--shape", "8x256", "--dtype", "e8m0", "--dst-dtype", "bf16"], "f16>i4 (not modelled)"),
    (["estimate", "BlockReduceMin", "--dtype", "f16", "--mask", "0:0"], "enables no lane"),
    (["estimate", "BlockReduceSum", "--dtype", "f32", "--mask", "0x5555"], "a bit mask is written HI:LO (e.g. 0:0x5555)"),
    (["compare", "TMINS", "--shape", "64x64", "--across", "a9"], "unknown arch 'a9'"),
    (["compare", "TMINS", "--shape", "64x64", "--across", ","], "--across needs arch names"),
    (["compare", "TMINS", "--shape", "64x64", "--across", "a5", "--arch", "a2a3"], "either --arch or --across"),
    (["plan", "TADD", "--shape", "4x64", "--arch", "a5", "--timeline", "--timeline-iterations", "0"], "timeline-iterations"),
    (["plan", "TADD", "--shape", "4x64", "--arch", "a5", "--chrome-trace", "t.txt"], "give a path ending in .json"),
    (["plan", "TADD", "--shape", "4x64", "--arch", "a2a3", "--chrome-trace", "t.json"], "needs --arch a5"),
    (["plan", "TCOLMAX", "--shape", "16x16", "--dtype", "f32", "--arch", "a5", "--valid", "0x16", "--timeline"],
     "launches no VF program"),
    (["plan", "TCOLSUM", "--shape", "16x16", "--dtype", "f32", "--arch", "a5", "--valid", "16x0", "--chrome-trace",
      "e.json"], "launches no VF program"),
    (["plot", "TADD", "--rows", "99999999999999999999999", "-o", "f.png"], "too large: counts are at most"),
    (["plot", "TADD", "-o", "f.png", "--csv", ""], "--csv: the output path is empty"),
    (["validate", "tests/data/small_trace.csv", "--plot", " "], "--plot: the output path is empty"),
    (["predict", "tests/data/small_trace.csv", "-o", ""], "output path is empty"),
    (["estimate", "BlockReduceMin", "--dtype", "f16", "--repeat", "99999999999999999999999"],
     "repeat 99999999999999999999999 is out of range"),
    (["estimate", "TCOLSUM", "--shape", "9x64", "--dtype", "f16", "--arch", "a5", "--binary"],
     "accepted on a5: the linear chain"),
    (["estimate", "TADDSC", "--shape", "8x64", "--dtype", "f16"], "no A2/A3 lowering for f16 (lowered for: i32 i16 f32)"),
    (["estimate", "TADDSC", "--shape", "8x64", "--dtype", "f16", "--arch", "a5"],
     "no A5 VF lowering for f16 (lowered for: i32 i16 f32)"),
    (["estimate", "TFUSEDMULADD", "--shape", "8x64", "--dtype", "f32"], "TFUSEDMULADD has no A2/A3 lowering; see"),
    (["estimate", "TADD", "--shape", "16x64", "--src0-valid", "4x32"], "src0_valid applies to the partial ops"),
    (["estimate", "TADDC", "--shape", "8x64", "--dtype", "f32"], "the reference lists no element types for it"),
    (["estimate", "TAXPY", "--shape", "16x64", "--dtype", "i32"], "TAXPY does not support i32 on a2a3; accepted: f16 f32"),
    (["estimate", "TAXPY", "--shape", "16x64", "--dtype", "f16", "--dst-dtype", "f32"], "a read-modify-write of a wider dst"),
    (["plot", "TMINS", "--rows", "64", "--cols", "16:64:16", "-o", "fig.txt"], "unknown image format 'txt'"),
    (["plot", "TMINS", "--rows", "8:64:8", "--cols", "16:64:16", "--measured", "tests/data/small_trace.csv", "-o", "f.png"],
     "a heatmap"),
    (["plot", "TMINS", "--rows", "64", "--cols", "1:1000000:1", "-o", "fig.png"], "at most 100,000 points are evaluated"),
    (["predict", "tests/data/small_trace.csv", "-o", "out.txt"], "unknown table format '.txt'"),
    (["predict", "tests/data/small_trace.csv", "-o", "tests"], "is a directory"),
    (["validate", "tests/data/small_trace.csv", "-m", "pipeline"], "model 'pipeline' is a5 only, not a2a3"),
    (["predict", "tests/data/small_trace.csv", "-o", "out.csv", "-m", "bogus"], "unknown model 'bogus'; accepted: auto"),
])
def test_bad_input_is_one_line_exit_2(args, needle):
    r = run(*args)
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_arch_from_the_environment_is_checked():
    r = run("estimate", "TMINS", "--shape", "64x64", env={"PTO_COST_ARCH": "a9"})
    assert r.returncode == 2 and "from $PTO_COST_ARCH" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("spec, needle", [
    ("ops: [TFOO]\nrows: 4\ncols: 64\n", "unknown op 'TFOO'"),
    ("ops: [TMINS]\ndtypes: [f64]\nrows: 4\ncols: 64\n", "unknown dtype 'f64'"),
    ("ops: [TMINS]\narchs: [a9]\nrows: 4\ncols: 64\n", "unknown arch 'a9'"),
    ("ops: [TMINS]\nrows: 4\ncols: 64\nvalid_cols: 'wide'\n", "malformed valid_cols"),
    ("ops: [TMINS]\nrows: '1:4'\ncols: 64\nvalid_rows: 100\n", "larger than the tile"),
    ("ops: [TMINS]\nrows: 4\ncols: 64\nstrategies: [bogus]\n", "no point of the grid could be modelled"),
    ("ops: [TMINS]\nrows: '1:100000'\ncols: '16:100000:16'\n", "625,000,000 points"),
])
def test_bad_sweep_specs_are_one_line_exit_2_and_write_nothing(tmp_path, spec, needle):
    (tmp_path / "s.yaml").write_text(spec)
    r = run("sweep", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "out.csv"))
    assert r.returncode == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "out.csv").exists()


def test_trace_rows_with_more_fields_than_the_header_are_refused(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("arch,op,dtype,rows,cols,measured_cycles\na5,TADD,f32,1,64,55,x\na5,TADD,f32,1,64,55\n")
    r = run("validate", str(bad))
    assert r.returncode == 2 and "line 2 has 7 fields but the header has 6" in r.stderr, r.stderr


def test_outputs_get_the_usual_file_mode(tmp_path):
    import os
    import stat

    out = tmp_path / "p.csv"
    r = run("predict", "tests/data/small_trace.csv", "-o", str(out))
    assert r.returncode == 0, r.stderr
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask


def test_compare_marks_one_fastest_preferring_the_default_on_a_tie():
    r = run("compare", "TMINS", "--shape", "64x64", "--dtype", "f32", "--json")
    doc = json.loads(r.stdout)
    best = min(s["cycles"] for s in doc["strategies"])
    assert sum(s["fastest"] for s in doc["strategies"]) == 1
    tied = [s for s in doc["strategies"] if s["cycles"] == best]
    assert len(tied) > 1 and doc["fastest"] == doc["default"] and doc["fastest_saving_pct"] == 0.0


def test_compare_marks_default_and_fastest():
    r = run("compare", "TMINS", "--shape", "64x64", "--dtype", "f16", "--json")
    doc = json.loads(r.stdout)
    names = [s["strategy"] for s in doc["strategies"]]
    assert doc["default"] == "2LNormRowRpt" and "1LNorm" in names
    assert sum(s["default"] for s in doc["strategies"]) == 1
    assert all(s["verified"] == "yes" for s in doc["strategies"])
    fastest = min(doc["strategies"], key=lambda s: s["cycles"])
    assert doc["fastest"] == fastest["strategy"]


def test_compare_prints_the_caveats_of_each_strategy_and_why_the_default():
    """The table alone would hide that a strategy's price is extrapolated: every model note of the JSON is printed
    under the strategies it applies to, and the default's dispatch reasoning once."""
    args = ("compare", "TMINS", "--shape", "64x64", "--dtype", "f16", "--arch", "a5", "--no-verify")
    doc = json.loads(run(*args, "--json").stdout)
    text = " ".join(run(*args, env={"COLUMNS": "400"}).stdout.split())
    default = next(s for s in doc["strategies"] if s["default"])
    assert f"default {default['notes'][0]}" in text
    caveats = {n for s in doc["strategies"] for n in s["notes"][1:]}
    assert caveats and all(n in text for n in caveats)
    assert " as asked; the default would be" not in text  # compare's own forcing is not a caveat


def test_compare_lists_strategies_fastest_first_the_default_first_among_ties():
    for args in (("--dtype", "f16", "--arch", "a5"), ("--dtype", "f32")):
        doc = json.loads(run("compare", "TMINS", "--shape", "64x64", *args, "--no-verify", "--json").stdout)
        cycles = [s["cycles"] for s in doc["strategies"]]
        assert len(cycles) > 1 and cycles == sorted(cycles)
        assert doc["strategies"][0]["strategy"] == doc["fastest"]
        table = run("compare", "TMINS", "--shape", "64x64", *args, "--no-verify", env={"COLUMNS": "200"}).stdout
        order = [s["strategy"] for s in doc["strategies"]]
        at = [re.search(rf"│ {re.escape(name)}[ │]", table).start() for name in order]
        assert at == sorted(at)  # the table lists them in the same order


def test_estimates_name_the_parameter_table_its_digest_and_the_fit_behind_them(tmp_path):
    import hashlib

    shipped = ROOT / "data" / "formula_params.csv"
    doc = json.loads(run("estimate", "TMINS", "--shape", "64x64", "--dtype", "f16", "--arch", "a5", "--json").stdout)
    got = doc["provenance"]["formula"]
    assert Path(got["table"]).resolve() == shipped.resolve()
    assert got["sha256"] == hashlib.sha256(shipped.read_bytes()).hexdigest()[:12]
    assert got["rows"].split()[:3] == ["op", "TMINS", "f16"] and got["fitted_from"].startswith("fit:")
    # a user's refit (here: the shipped table with the source of the TMINS f16 rows changed) is named with its digest
    mine = tmp_path / "mine.csv"
    lines = shipped.read_text().splitlines()
    lines = [ln.replace(",fit: ", ",my fit: ") if ",op,TMINS,f16,," in ln else ln for ln in lines]
    mine.write_text("\n".join(lines) + "\n")
    doc = json.loads(run("estimate", "TMINS", "--shape", "64x64", "--dtype", "f16", "--arch", "a5", "--json",
                         env={"PTO_COST_PARAMS": str(mine)}).stdout)
    assert doc["provenance"]["formula"]["table"] == str(mine)
    assert doc["provenance"]["formula"]["fitted_from"].startswith("my fit:")
    assert doc["provenance"]["formula"]["sha256"] == hashlib.sha256(mine.read_bytes()).hexdigest()[:12] != got["sha256"]
    a2a3 = run("estimate", "TMINS", "--shape", "64x64", "--dtype", "f16").stdout
    assert "formula_params.csv @" + got["sha256"] in a2a3 and "vmins" in a2a3.split("fitted", 1)[1]
    pipe = json.loads(run("estimate", "TADD", "--shape", "64x64", "--dtype", "f32", "--arch", "a5", "-m", "pipeline",
                          "--json").stdout)["provenance"]
    assert set(pipe) == {"pipeline"} and Path(pipe["pipeline"]["table"]).name == "a5_pipeline_params.csv"


def test_a_table_without_a5_rows_says_why_the_pipeline_prices_alone(tmp_path, monkeypatch):
    table = tmp_path / "a2a3_only.csv"
    lines = (ROOT / "data" / "formula_params.csv").read_text().splitlines()
    table.write_text("\n".join(ln for ln in lines if ",a5," not in ln) + "\n")
    monkeypatch.setenv("PTO_COST_PARAMS", str(table))
    e = costmodel.estimate("TADD", "8x64", "f32", arch="a5", verify=False)
    assert e.model == "pipeline" and any("the formula table in use has no A5 op rows" in n for n in e.notes)


def test_a_table_refitted_in_place_is_read_again_and_named_by_its_new_digest(tmp_path, monkeypatch):
    """The notebook workflow: estimate, refit the table in place, estimate again — the cycles and the digest both
    come from the new table."""
    import hashlib
    import time

    table = tmp_path / "mine.csv"
    table.write_bytes((ROOT / "data" / "formula_params.csv").read_bytes())
    monkeypatch.setenv("PTO_COST_PARAMS", str(table))
    before = costmodel.estimate("TMINS", "64x64", "f16", verify=False)
    lines = table.read_text().splitlines()
    at = next(i for i, ln in enumerate(lines) if ",intrinsic,vmins,f16," in ln and ",head," in ln)
    cells = lines[at].split(",")
    cells[10] = str(float(cells[10]) + 100)
    lines[at] = ",".join(cells)
    time.sleep(0.01)
    table.write_text("\n".join(lines) + "\n")
    after = costmodel.estimate("TMINS", "64x64", "f16", verify=False)
    assert after.cycles > before.cycles + 50
    assert after.provenance["formula"]["sha256"] == hashlib.sha256(table.read_bytes()).hexdigest()[:12]
    assert after.provenance["formula"]["sha256"] != before.provenance["formula"]["sha256"]


def test_a_table_edited_with_its_size_and_timestamp_kept_is_read_again(tmp_path, monkeypatch):
    """`cp -p` of an edited copy over the table keeps the old modification time; same size, new value: read again."""
    import os

    table = tmp_path / "mine.csv"
    table.write_bytes((ROOT / "data" / "formula_params.csv").read_bytes())
    monkeypatch.setenv("PTO_COST_PARAMS", str(table))
    before = costmodel.estimate("TMINS", "64x64", "f16", verify=False)
    data = table.read_bytes()
    start = data.index(b",intrinsic,vmins,f16,")
    row = data[data.rindex(b"\n", 0, start) + 1:data.index(b"\n", start)]
    cells = row.split(b",")
    cells[10] = (b"9" if cells[10][:1] != b"9" else b"8") + cells[10][1:]  # same length, another leading digit
    stamp = table.stat()
    table.write_bytes(data.replace(row, b",".join(cells), 1))
    os.utime(table, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert table.stat().st_size == stamp.st_size and table.stat().st_mtime_ns == stamp.st_mtime_ns
    after = costmodel.estimate("TMINS", "64x64", "f16", verify=False)
    assert after.cycles != before.cycles


def test_version_is_the_installed_package_version():
    from importlib.metadata import version

    r = run("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"pto-cost {version('pto-cost')}"
    assert costmodel.__version__ == version("pto-cost")


def test_verify_json_is_not_ok_when_nothing_could_be_checked():
    """hif8 has no numpy form: the only result is n/a, which is not a pass."""
    r = run("verify", "TCVT", "--shape", "2x256", "--dtype", "f32", "--dst-dtype", "hif8", "--arch", "a5", "--json")
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and doc["ok"] is None and [x["verified"] for x in doc["results"]] == ["n/a"]
    assert json.loads(run("verify", "TADD", "--shape", "8x64", "--json").stdout)["ok"] is True


def test_compare_across_names_each_arch_once():
    doc = json.loads(run("compare", "TMINS", "--shape", "64x64", "--across", "a2a3,a5,A5", "--no-verify",
                         "--json").stdout)
    assert [d["arch"] for d in doc["across"]] == ["a2a3", "a5"]


def test_plan_listing_and_verify_all():
    r = run("plan", "TMINS", "--shape", "16x200", "--valid", "16x190", "--dtype", "f32")
    assert r.returncode == 0 and r.stdout.count("vmins") == 3
    r = run("verify", "TMINS", "--shape", "16x200", "--valid", "16x190", "--dtype", "f32", "--strategy", "all")
    assert r.returncode == 0 and r.stdout.count(": yes") >= 2


def test_a_sweep_spec_that_is_not_text_is_one_line_exit_2(tmp_path):
    spec = tmp_path / "s.json"
    spec.write_bytes(b"\x89PNG\xb6\xff")
    (tmp_path / "d.json").mkdir()
    for path in (spec, tmp_path / "d.json"):
        r = run("sweep", str(path), "-o", str(tmp_path / "x.csv"))
        assert r.returncode == 2 and "cannot be read as text" in r.stderr and "Traceback" not in r.stderr


def test_piped_tables_carry_no_padding():
    for args in (("estimate", "TMINS", "--shape", "64x64", "--dtype", "f16"),
                 ("compare", "TMINS", "--shape", "64x64", "--dtype", "f16")):
        r = run(*args)
        assert r.returncode == 0 and r.stdout.count("\n") > 5
        assert not [ln for ln in r.stdout.splitlines() if ln.endswith(" ")], args


def test_ops_family_is_matched_in_any_case_and_the_table_keeps_its_headers_at_80_columns():
    lower, upper = (json.loads(run("ops", "--family", f, "--json").stdout) for f in ("unary", "Unary"))
    assert lower == upper and {i["family"] for i in lower["instructions"]} == {"unary"}
    assert "modelled " in run("ops", env={"COLUMNS": "80"}).stdout


def test_ops_lists_the_catalogue():
    r = run("ops", "--arch", "a2a3", "--json")
    doc = json.loads(r.stdout)
    names = {i["name"] for i in doc["instructions"]}
    assert "TMINS" in names and "TMATMUL_MX" not in names
    # "modelled" is per op: a family's lowering may cover only some of its ops
    modelled = {i["name"]: i["a2a3_modelled"] for i in doc["instructions"]}
    assert modelled["TSEL"] and modelled["TSELS"] and modelled["TGATHER"] and not modelled["TGATHERB"]
    # data movement and row reductions lower only some of their ops on A2/A3
    assert modelled["TLOAD"] and modelled["TMOV"] and not modelled["TCONCAT"] and not modelled["TTRANS"]
    assert modelled["TROWSUM"] and not modelled["TROWPROD"] and not modelled["TPairReduceSum"]
    # ... and a modelled op may leave some of its dtypes unmodelled; those are listed, and they are exactly the
    # tokens whose estimate is refused
    covered = {i["name"]: i["a2a3_modelled_dtypes"] for i in doc["instructions"]}
    assert covered["TROWSUM"] == ["f16", "f32"] and "i8" not in covered["TROWEXPAND"] and "i16" in covered["TROWEXPAND"]
    assert "f16>i8" in covered["TCVT"] and "i32>f16" not in covered["TCVT"] and covered["TROWPROD"] == []
    for i in doc["instructions"]:
        for tok in i["a2a3_dtypes"]:
            src, _, dst = tok.partition(">")
            try:
                costmodel.estimate(i["name"], "64x64", src, arch="a2a3", verify=False, **({"dst_dtype": dst} if dst else {}))
            except costmodel.PtoCostError:
                assert tok not in covered[i["name"]], (i["name"], tok)
            else:
                assert tok in covered[i["name"]], (i["name"], tok)
    assert "i32*" in run("ops", "--arch", "a2a3").stdout
    assert costmodel.modelled_dtypes("TROWSUM", "a2a3") == ("f16", "f32")
    doc5 = json.loads(run("ops", "--arch", "a5", "--json").stdout)["instructions"]
    a5 = {i["name"]: i["a5_modelled"] for i in doc5}
    assert a5["TSEL"] and a5["TCVT"] and a5["TPARTARGMAX"] and a5["TSELS"] and not a5["TCMP"] and not a5["TGATHER"]
    # which model prices each modelled op: measured ops by their own formula, unmeasured ones by their measured
    # siblings' body, an op with no measured sibling (TRSQRT: two SFU ops per chunk) by the pipeline
    by = {i["name"]: i["a5_priced_by"] for i in doc5}  # every row has the key, as the table has the column
    assert by["TADD"] == by["TCVT"] == "formula" and by["TABS"] == by["TADDS"] == "body"
    assert by["TRSQRT"] == "anchored" and by["TSELS"] == "family" and by["TCMP"] is None


def test_compare_across_arches_lists_both():
    r = run("compare", "TMINS", "--shape", "64x64", "--dtype", "f16", "--across", "a2a3,a5", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [d["arch"] for d in doc["across"]] == ["a2a3", "a5"]
    a5 = doc["across"][1]
    assert {"1d-post-update", "2d-no-post-update"} <= {s["strategy"] for s in a5["strategies"]}
    assert all(s["verified"] == "yes" for d in doc["across"] for s in d["strategies"])
    r = run("compare", "TMINS", "--shape", "64x64", "--dtype", "u8", "--across", "a2a3,a5", "--json")
    doc = json.loads(r.stdout)
    assert "error" in doc["across"][0] and "strategies" in doc["across"][1]
    assert "warning: TMINS on a2a3" in r.stderr  # named where a script sees it, not mixed into the table
    r = run("compare", "TMINS", "--shape", "64x64", "--dtype", "u8", "--across", "a2a3,a5", "--no-verify")
    assert r.returncode == 0 and "warning: TMINS on a2a3" in r.stderr and "on a2a3" not in r.stdout


def test_breakdown_text_never_prints_minus_zero_or_empty_parts():
    """A part like -3e-6 cycles (a fitted term that cancels) reads as noise: it is left out; none prints "-0.0"."""
    from cli.render import breakdown_text, fmt_cycles

    assert fmt_cycles(-0.04) == "0.0" and fmt_cycles(-1.26) == "-1.3" and fmt_cycles(2.0) == "2"
    text = breakdown_text((("startup", 67.8), ("iterations", -3e-6), ("flat_program", 11.6)))
    assert text == "startup 67.8  flat_program 11.6"
    assert breakdown_text((("iterations", 0.01),)) == "-"


def test_a_forced_a5_strategy_says_so_and_names_the_default():
    r = run("plan", "TMINS", "--shape", "64x64", "--arch", "a5", "--strategy", "1d-post-update")
    assert r.returncode == 0, r.stderr
    assert "1d-post-update as asked; the default would be 2d-no-post-update" in r.stdout


@pytest.mark.parametrize("extra, needle", [
    (["--workers", "2"], "add --engine dask"),
    (["--engine", "dask", "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"], "not both"),
    (["--engine", "dask", "--workers", "-1"], "at least 1"),
    (["--verify-sample", "-3"], "--verify-sample"),
    (["--engine", "spark"], "unknown engine"),
])
def test_sweep_engine_options_are_checked_before_any_work(tmp_path, extra, needle):
    (tmp_path / "s.yaml").write_text("ops: [TMINS]\nrows: '1:4'\ncols: 64\n")
    r = run("sweep", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "out.csv"), *extra)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "out.csv").exists()


def test_a_verify_mismatch_exits_1(monkeypatch, capsys):
    """The exit code a command raises reaches the shell (typer returns it under standalone_mode=False)."""
    import costmodel.emulate.verify as mod
    from cli.app import main

    from dataclasses import replace

    real = mod.verify

    def failing(plan, seed=0):
        return replace(real(plan, seed=seed), ok=False, mismatches=(("dst", (0, 1), 1.0, 2.0),))

    monkeypatch.setattr(mod, "verify", failing)
    monkeypatch.setattr(sys, "argv", ["pto-cost", "verify", "TADD", "--shape", "16x16", "--json"])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False
    assert doc["results"][0]["mismatches"] == [{"tile": "dst", "index": [0, 1], "got": 1.0, "expected": 2.0}]


@pytest.mark.parametrize("sig, code, said", [("SIGINT", 130, "stopped by SIGINT"), ("SIGTERM", 143, "stopped by SIGTERM")])
def test_ctrl_c_or_kill_leaves_the_output_untouched(tmp_path, measured_dir, sig, code, said):
    import os
    import signal
    import time

    out = tmp_path / "params.csv"
    out.write_bytes((ROOT / "data" / "formula_params.csv").read_bytes())  # a table: fit checks it before fitting
    previous = out.read_bytes()
    env = {k: v for k, v in os.environ.items() if k != "PTO_COST_ARCH"}
    # a job started in the background of a non-interactive shell inherits SIGINT ignored, and so would the fit:
    # give it the default disposition a terminal's Ctrl-C meets
    proc = subprocess.Popen([*CLI, "fit", str(measured_dir / "a5_vf_cycles.csv"), "-o", str(out)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(4)  # the fit takes about 30 s
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code and said in err and "Traceback" not in err, err
    assert out.read_bytes() == previous and [p.name for p in tmp_path.iterdir()] == ["params.csv"]


def test_json_documents_never_carry_nan(tmp_path):
    r = run("validate", "tests/data/small_trace.csv", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout, parse_constant=lambda token: pytest.fail(f"{token} in the JSON"))
    assert doc["overall"]["strategies"]["order_tau"] is None


def test_long_work_shows_a_spinner_on_a_terminal_only(monkeypatch):
    """fit runs from 30 s to minutes with nothing to count: a spinner with the elapsed time on a terminal, and
    nothing in a log file."""
    import contextlib

    from cli import render

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert isinstance(render.status("fitting"), contextlib.nullcontext)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    with render.status("fitting the formula model") as bar:
        assert [t.description for t in bar.tasks] == ["fitting the formula model"] and bar.tasks[0].total is None


def test_timeline_says_when_it_shows_fewer_iterations_than_asked_and_int_casts_round_nothing():
    r = run("plan", "TADD", "--shape", "16x640", "--dtype", "f32", "--arch", "a5", "--timeline",
            "--timeline-iterations", "10")
    assert r.returncode == 0 and "loops ran at most 4 iterations in this simulation, fewer than the 10" in r.stdout
    r = run("plan", "TADD", "--shape", "16x640", "--dtype", "f32", "--arch", "a5", "--timeline")
    assert "more dynamic instructions not shown" in r.stdout and "fewer than" not in r.stdout
    for dst, note in (("i16", True), ("f32", False)):
        r = run("estimate", "TCVT", "--shape", "4x64", "--dtype", "i32", "--dst-dtype", dst)
        assert r.returncode == 0 and ("integer to integer: nothing to round" in r.stdout) is note, r.stdout


def test_json_says_what_the_text_says_of_a_timeline_and_a_comparison():
    """--json carries the estimate next to the simulation, how many instructions the timeline left out, whether trips
    were clipped, and each strategy's difference from the default (the table's `vs default`)."""
    text = run("plan", "TADD", "--shape", "16x640", "--dtype", "f32", "--arch", "a5", "--timeline").stdout
    doc = json.loads(run("plan", "TADD", "--shape", "16x640", "--dtype", "f32", "--arch", "a5", "--timeline",
                         "--json").stdout)
    assert f"gives {doc['estimate']['cycles']:.2f}" in text and f"model {doc['estimate']['model']})" in text
    tl = doc["timeline"]
    assert f"full trip counts: {doc['pipeline']['cycles']:.2f} cycles" in text
    assert f"at most {tl['shape_trips_clipped_to']} trips: its trace ends at cycle {tl['cycles']:.2f}" in text
    assert f"... {tl['not_shown']} more dynamic instructions not shown" in text and tl["not_shown"] > 0
    assert tl["dynamic_instructions"] == len(tl["rows"]) + tl["not_shown"] and tl["shape_trips_clipped_to"] == 4
    doc = json.loads(run("compare", "TADD", "--shape", "4x64", "--json").stdout)
    default = next(s for s in doc["strategies"] if s["default"])
    for s in doc["strategies"]:
        assert s["vs_default_pct"] == pytest.approx((s["cycles"] / default["cycles"] - 1) * 100)
    assert min(s["vs_default_pct"] for s in doc["strategies"]) == pytest.approx(-doc["fastest_saving_pct"])


def test_yaml_specs_read_scalars_as_yaml_does_and_colon_numbers_as_text():
    import yaml

    from cli.app import _spec_loader

    text = "a: 12\nb: -3\nc: 1_000\nd: 1.5\ne: yes\nf: [1, x]\ng: 16:32\nh: 1:16:5\ni: 0x10\nj: .inf\n"
    got = yaml.load(text, Loader=_spec_loader(yaml))
    assert got == {**yaml.safe_load(text), "g": "16:32", "h": "1:16:5"}
    assert yaml.safe_load(text)["g"] == 992  # what YAML 1.1 would have made of it


def test_predict_writes_the_inputs_own_column_names_back(tmp_path):
    (tmp_path / "c.csv").write_text("Arch, Op ,DType,rows,cols,Measured_Cycles\na5,TADD,f32,4,64,60\n")
    r = run("predict", str(tmp_path / "c.csv"), "-o", str(tmp_path / "o.csv"))
    assert r.returncode == 0, r.stderr
    header = (tmp_path / "o.csv").read_text().splitlines()[0].split(",")
    assert header == ["Arch", "Op ", "DType", "rows", "cols", "Measured_Cycles", "strategy", "predicted_cycles",
                      "model", "note"]


@pytest.mark.parametrize("arch", ["a2a3", "a5"])
def test_an_empty_select_is_refused_like_every_elementwise_op(arch):
    r = run("estimate", "TSEL", "--shape", "8x64", "--valid", "0x64", "--dtype", "f16", "--arch", arch)
    assert r.returncode == 2 and r.stderr.strip() == "error: valid region 0x64 is empty; TSEL needs at least 1x1"


def test_compare_given_a_strategy_says_estimate_prices_one():
    r = run("compare", "TMINS", "--shape", "64x64", "--dtype", "f16", "--strategy", "1LNorm")
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "takes no --strategy" in r.stderr and "pto-cost estimate TMINS ... --strategy 1LNorm" in r.stderr


def test_a_fit_no_held_out_row_could_price_reports_no_nan(tmp_path):
    trace = tmp_path / "i64.csv"
    trace.write_text("arch,op,dtype,rows,cols,measured_cycles\na5,TADD,i64,8,64,100\na5,TADD,i64,1,64,60\n")
    r = run("fit", str(trace), "-o", str(tmp_path / "p.csv"), "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "nan" not in r.stdout and "none of the 2 rows could be priced by a fit that did not see it" in r.stdout


def test_predict_that_prices_no_row_writes_the_reasons_and_exits_2(tmp_path):
    import pandas as pd

    cases = tmp_path / "c.csv"
    cases.write_text("arch,op,dtype,rows,cols\na2a3,TADD,f32,8,64\na2a3,TMINS,f16,8,64\n")
    out = tmp_path / "o.csv"
    r = run("predict", str(cases), "-o", str(out), "--model", "pipeline")
    assert r.returncode == 2 and "no row could be priced" in r.stderr and "a5 only" in r.stderr, r.stderr
    assert pd.read_csv(out)["note"].str.contains("a5 only").all()
    assert run("predict", str(cases), "-o", str(out)).returncode == 0


def test_long_work_logs_a_plain_progress_line_where_stderr_is_no_terminal(monkeypatch, capsys):
    """A bar is drawn on a terminal only; redirected (a log, nohup, CI) a 19-minute sweep printed nothing until its last
    line (QA 55): there a plain line reports the count every PLAIN_EVERY seconds."""
    from cli import render

    monkeypatch.setattr(render, "PLAIN_EVERY", 0.0)
    with render.progress("sweeping", 1000) as tick:
        for done in (250, 500, 1000):
            tick(done, 1000)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and all(line.startswith("sweeping: ") for line in lines)
    assert "250 of 1,000 (25 %)" in lines[0] and "500 of 1,000 (50 %)" in lines[1]
    with render.progress("sweeping", 100) as tick:  # short work stays quiet
        tick(50, 100)
    assert capsys.readouterr().err == ""
