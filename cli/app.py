"""The `pto-cost` command line: parse, call the library, render. Errors: one line on stderr, exit 2."""

import json
import re
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.core import TyperCommand, TyperGroup

from .options import request_options


class _HelpFlag:
    """Shows -h/--help as the flag it is, without typer's `<bool>` type column."""

    def get_help_option(self, ctx):
        option = super().get_help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option


class _Command(_HelpFlag, TyperCommand):
    pass


class _Group(_HelpFlag, TyperGroup):
    pass


app = typer.Typer(
    name="pto-cost",
    cls=_Group,
    help="Cycle estimates, plans and emulator checks for PTO tile instructions on Ascend A2/A3 and A5.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

def _print_version(value: bool) -> None:
    if value:
        from costmodel import __version__

        typer.echo(f"pto-cost {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", metavar="", is_eager=True, callback=_print_version,
                                                help="Print the version and exit.")] = False) -> None:
    pass


JsonOpt = Annotated[bool, typer.Option("--json", metavar="", help="Print one JSON document on stdout instead of a table.")]
# measured/README.md: profiled cycles are integers, ±1 cycle noise; another profiler may read its repeats further apart
def _tolerance(value: float | None) -> float | None:
    if value is not None and not value >= 0:  # NaN fails this too
        raise typer.BadParameter(f"{value} is not a number of cycles; accepted: a number >= 0 (inf: every run of a "
                                 "case is a repeat)")
    return value


RepeatOpt = Annotated[Optional[float], typer.Option("--repeat-tolerance", callback=_tolerance, help="How many cycles apart runs of one case may read and still be repeats (averaged into one case); further apart they are conflicting duplicates, not used. Default: 2, the ±1-cycle noise of the measured files; raise it for a noisier profiler.")]
StrategyOpt = Annotated[Optional[str], typer.Option("--strategy", help="Force an emission strategy (see `compare`; `default`: the implementation's choice, as without the option).")]
def _model_name(name: str) -> str:
    from costmodel.models.registry import check_name

    return check_name(name)


ModelOpt = Annotated[str, typer.Option("--model", "-m", callback=_model_name, help="Cost model: auto (A2/A3: formula; A5: the formula where the table has parameters for the request, else the anchored pipeline, or the pipeline alone where no measured op anchors it), formula (both arches), pipeline and anchored (A5 only).")]
SEED_MAX = 2**32 - 1  # numpy's legacy seeding (a sweep's sample of points) takes 0 .. 2**32 - 1


def _seed(value: int | None) -> int | None:
    if value is not None and not 0 <= value <= SEED_MAX:
        raise typer.BadParameter(f"{value} is out of range; accepted: 0 to {SEED_MAX}")
    return value


SeedOpt = Annotated[int, typer.Option("--seed", callback=_seed, help=f"Seed of the random input data: 0 to {SEED_MAX}.")]
SweepSeedOpt = Annotated[Optional[int], typer.Option("--seed", callback=_seed, help=f"Seed of the --verify-sample points and their input data: 0 to {SEED_MAX} (default 0).")]
MAX_PLOT_POINTS = 100_000


def _model_if_given(name: Optional[str]) -> Optional[str]:
    return None if name is None else _model_name(name)


SweepModelOpt = Annotated[Optional[str], typer.Option("--model", "-m", callback=_model_if_given, help="Cost model, as in `estimate` (auto, formula, pipeline, anchored); given, it overrides the spec's `model` (default: the spec's, else auto).")]


def _kwargs(req: dict) -> dict:
    # --in-place has no negative form: off means not given (an op that reads dst, always in place, refuses off)
    return {k: v for k, v in req.items() if v is not None and not (k == "in_place" and v is False)}


@app.command(cls=_Command)
@request_options
def estimate(
    op: Annotated[str, typer.Argument(help="Instruction, e.g. TMINS, TADD, TPARTMAX, BlockReduceMin.")],
    strategy: StrategyOpt = None,
    model: ModelOpt = "auto",
    no_verify: Annotated[bool, typer.Option("--no-verify", metavar="", help="Skip the emulator check.")] = False,
    json_out: JsonOpt = False,
    req: dict = None,
) -> None:
    """Estimate the cycles of one instruction: strategy, model, breakdown, and whether its plan is verified."""
    import costmodel
    from . import render

    kw = _kwargs(req)
    e = costmodel.estimate(op, kw.pop("shape", None), kw.pop("dtype"), kw.pop("arch", None), strategy=strategy,
                           model=model, verify=not no_verify, **kw)
    if json_out:
        render.emit_json(e.to_dict())
    else:
        render.estimate_text(e)


@app.command(cls=_Command)
@request_options
def compare(
    op: Annotated[str, typer.Argument(help="Instruction name.")],
    model: ModelOpt = "auto",
    across: Annotated[Optional[str], typer.Option("--across", help="Compare on several arches side by side, e.g. a2a3,a5.")] = None,
    no_verify: Annotated[bool, typer.Option("--no-verify", metavar="", help="Skip the emulator checks.")] = False,
    json_out: JsonOpt = False,
    strategy: Annotated[Optional[str], typer.Option("--strategy", hidden=True)] = None,
    req: dict = None,
) -> None:
    """Cost every legal emission strategy of one request, fastest first; mark the default and the fastest."""
    import costmodel
    from costmodel.api import default_and_fastest, ranked
    from costmodel.arch import check_arch
    from costmodel.errors import PtoCostError

    from . import render

    if strategy is not None:  # a user's habit from `estimate`: say where it belongs, not click's option guess
        raise PtoCostError(f"compare prices every legal strategy and takes no --strategy; to price {strategy} alone, "
                           f"use `pto-cost estimate {op} ... --strategy {strategy}`")
    kw = _kwargs(req)
    shape, dtype, arch = kw.pop("shape", None), kw.pop("dtype"), kw.pop("arch", None)
    if across is not None:
        if arch:
            raise PtoCostError("give either --arch or --across (arches side by side), not both")
        arches = list(dict.fromkeys(check_arch(a) for a in across.split(",") if a.strip()))
        if not arches:
            raise PtoCostError("--across needs arch names, e.g. a2a3,a5")
    else:
        arches = [arch]
    docs, tables = [], []
    for a in arches:
        try:
            ests = costmodel.compare_estimates(op, shape, dtype, a, model=model, verify=not no_verify, **kw)
        except PtoCostError as exc:
            if not across:
                raise
            docs.append({"arch": a, "error": str(exc)})
            tables.append((a, str(exc)))
            continue
        default, fastest = default_and_fastest(ests)
        docs.append({"op": ests[0].op, "arch": ests[0].arch, "model": ests[0].model, "default": default.strategy,
                     "fastest": fastest.strategy,
                     "fastest_saving_pct": 0.0 - render.vs_default_pct(fastest, default),
                     "strategies": [dict(e.to_dict(), default=e is default, fastest=e is fastest,
                                         vs_default_pct=render.vs_default_pct(e, default)) for e in ranked(ests)]})
        tables.append((a, ests))
    if across and all(isinstance(t, str) for _, t in tables):
        raise PtoCostError("; ".join(f"{a}: {t}" for a, t in tables))
    for a, ests in tables:  # an arch that could not be compared is named on stderr, the others still shown
        if isinstance(ests, str):
            render.console(stderr=True).print(f"[yellow]{render.plain(f'warning: {op} on {a}: {ests}')}[/]")
    if json_out:
        render.emit_json(docs[0] if not across else {"op": op, "across": docs})
        return
    for a, ests in tables:
        if not isinstance(ests, str):
            render.compare_text(ests)


@app.command(cls=_Command)
@request_options
def plan(
    op: Annotated[str, typer.Argument(help="Instruction name.")],
    strategy: StrategyOpt = None,
    json_out: JsonOpt = False,
    timeline: Annotated[bool, typer.Option("--timeline", metavar="", help="A5: also print the pipeline model's cycle-by-cycle "
                                           "issue timeline (loops shown for their first iterations).")] = False,
    iterations: Annotated[Optional[int], typer.Option("--timeline-iterations", min=1, help="With --timeline or --chrome-trace (an error without them): iterations of each loop shown, default 2 (the timeline simulates at most 4 trips of a shape loop).")] = None,
    chrome_trace: Annotated[Optional[str], typer.Option("--chrome-trace", metavar="PATH.json", help="A5: write the instructions the timeline shows (as many iterations as --timeline-iterations) as a Chrome trace-event file for chrome://tracing or ui.perfetto.dev: a track per unit (a pipelined unit's overlapping instructions on lanes: load0, load0 #2, ...), 1 us = 1 cycle.")] = None,
    req: dict = None,
) -> None:
    """Print the plan (the intrinsic sequence or VF program) the implementation issues, like a disassembly."""
    import costmodel
    from costmodel.errors import PtoCostError
    from . import render

    _given_path(chrome_trace, "--chrome-trace")
    if chrome_trace and Path(chrome_trace).suffix.lower() != ".json":
        raise PtoCostError(f"--chrome-trace {chrome_trace}: a trace-event file is JSON; give a path ending in .json")
    if iterations is not None and not (timeline or chrome_trace):
        raise PtoCostError("--timeline-iterations sets what --timeline or --chrome-trace shows; add one of them")
    iterations = iterations or 2
    kw = _kwargs(req)
    shape, dtype, arch = kw.pop("shape", None), kw.pop("dtype"), kw.pop("arch", None)
    p = costmodel.plan(op, shape, dtype, arch, strategy=strategy, **kw)
    if (timeline or chrome_trace) and p.arch != "a5":
        raise PtoCostError(f"{'--timeline' if timeline else '--chrome-trace'} needs --arch a5 (the A5 VF pipeline model)")
    if timeline or chrome_trace:
        from costmodel.isa_a5 import VfProgram
        from costmodel.models.a5_pipeline import PipelineModel

        if not any(isinstance(b, VfProgram) for b in p.body):
            raise PtoCostError(f"{'--timeline' if timeline else '--chrome-trace'}: this plan launches no VF program "
                               "(an empty valid region issues nothing), so there is no pipeline to show; drop the option")
        result = PipelineModel().simulate(p)
        tl = result.timeline(max_iterations=iterations)
    if chrome_trace:
        from fit.io import write_json

        trace = tl.to_chrome()
        write_json(trace, chrome_trace)
        n = sum(e["ph"] == "X" for e in trace["traceEvents"])
        render.console(stderr=True).print(render.plain(
            f"wrote {chrome_trace}: {n} dynamic instructions (the first {iterations} iteration(s) of each loop); "
            "open it in ui.perfetto.dev or chrome://tracing"))
    if timeline:
        from costmodel.models.a5_pipeline import TIMELINE_TRIPS

        clipped = result.trace_clipped
        e = costmodel.estimate(op, shape, dtype, arch, strategy=p.strategy, verify=False, **kw)
    if json_out:
        doc = {"op": p.op, "arch": p.arch, "strategy": p.strategy, "counts": p.counts(),
               "listing": p.listing().splitlines()}
        if timeline:
            doc["pipeline"] = result.to_dict()
            # the timeline's trace runs shape loops of at most TIMELINE_TRIPS trips: its cycles and instructions are
            # that trace's; `pipeline` is the simulation at the full trip counts
            doc["timeline"] = {**tl.to_dict(), "shape_trips_clipped_to": TIMELINE_TRIPS if clipped else None}
            doc["estimate"] = {"model": e.model, "cycles": e.cycles}
        render.emit_json(doc)
        return
    render.write(p.listing() + "\n")
    if timeline:
        render.write(f"\n; pipeline simulation at the full trip counts: {result.cycles:.2f} cycles; `estimate` (model "
                     f"{e.model}) gives {e.cycles:.2f}\n")
        if clipped:
            render.write(f"; the timeline simulates shape loops of at most {TIMELINE_TRIPS} trips: its trace ends at cycle "
                         f"{tl.trace.end:.2f}\n")
        render.write(tl.to_text() + "\n")
        render.write(result.bottleneck_view().to_text() + "\n")


@app.command(cls=_Command)
@request_options
def verify(
    op: Annotated[str, typer.Argument(help="Instruction name.")],
    strategy: Annotated[Optional[str], typer.Option("--strategy", help="A strategy name, or `all` for every legal one.")] = None,
    seed: SeedOpt = 0,
    json_out: JsonOpt = False,
    req: dict = None,
) -> None:
    """Emulate the plan on random data and compare with the golden; exit 1 on a mismatch."""
    from costmodel import lower
    from costmodel.api import request
    from costmodel.emulate.verify import overall, verify as run_verify
    from . import render

    kw = _kwargs(req)
    every = strategy is not None and strategy.lower() == "all"
    r = request(op, kw.pop("shape", None), kw.pop("dtype"), kw.pop("arch", None), strategy=None if every else strategy, **kw)
    names = lower.legal_strategies(r) if every else (lower.resolve_strategy(r)[0],)
    results = []
    for s in names:
        v = run_verify(lower.lower(r, s), seed=seed)
        results.append((s, v))
    failed = any(v.ok is False for _, v in results)
    if json_out:
        render.emit_json({"op": r.op, "arch": r.arch, "ok": overall(v for _, v in results), "results": [
            {"strategy": s, "verified": v.label, "verify_note": v.note,
             "mismatches": [{"tile": where, "index": list(idx) if isinstance(idx, tuple) else idx, "got": got,
                             "expected": want} for where, idx, got, want in v.mismatches]} for s, v in results]})
    else:
        con = render.console()
        for s, v in results:
            style = {"yes": "green", "no": "red"}.get(v.label, "yellow")
            con.print(f"{r.op} {r.arch} {s}: [{style}]{v.label}[/] — {render.plain(v.note)}")
            for where, idx, got, want in v.mismatches:
                con.print(render.plain(f"    {where} {idx}: got {got!r}, expected {want!r}"))
    if failed:
        raise typer.Exit(1)


@app.command(cls=_Command)
def ops(
    arch: Annotated[Optional[str], typer.Option("--arch", "-a", help="Only instructions available on this arch (a2a3, a5).")] = None,
    family: Annotated[Optional[str], typer.Option("--family", "-f", help="Only this family (e.g. binary_scalar, partial).")] = None,
    json_out: JsonOpt = False,
) -> None:
    """List the instruction catalogue with per-arch dtype support and whether a plan is modelled."""
    from costmodel.api import modelled_dtypes
    from costmodel.arch import check_arch
    from costmodel.catalog import families, instructions
    from costmodel.errors import PtoCostError
    from costmodel.lower import modelled

    from . import render

    rows = list(instructions())
    if arch:
        arch = check_arch(arch)
        rows = [i for i in rows if i.dtypes_on(arch)]
    if family:
        known = {f.lower(): f for f in families()}
        if family.lower() not in known:
            raise PtoCostError(f"unknown family {family!r}; families: {', '.join(families())}")
        rows = [i for i in rows if i.family == known[family.lower()]]
    archs = [arch] if arch else ["a2a3", "a5"]
    covered = {(a, i.name): modelled_dtypes(i.name, a) if modelled(a, i.family, i.name) else ()
               for a in archs for i in rows}
    priced = {i.name: _a5_priced_by(i) for i in rows if covered.get(("a5", i.name))}
    if json_out:
        render.emit_json({"instructions": [
            {"name": i.name, "family": i.family, "pipe": i.pipe, "summary": i.summary,
             **{f"{a}_dtypes": list(i.dtypes_on(a)) for a in archs},
             **{f"{a}_modelled": bool(covered[a, i.name]) for a in archs},
             **{f"{a}_modelled_dtypes": list(covered[a, i.name]) for a in archs},
             **({"a5_priced_by": priced.get(i.name)} if "a5" in archs else {})} for i in rows]})
        return
    from rich.table import Table

    starred = any(covered[a, i.name] and set(i.dtypes_on(a)) - set(covered[a, i.name]) for a in archs for i in rows)
    caption = [*(["*: listed for the arch but not modelled there (the op's other dtypes are)"] if starred else []),
               *(["a5 priced by: the model of the op's f32 form (other dtypes may differ; estimate names it)"]
                 if priced else [])]
    t = Table(title=f"PTO instructions ({len(rows)})", caption="\n".join(caption) or None)
    t.add_column("name", style="bold", no_wrap=True)
    t.add_column("family", overflow="fold")
    for a in archs:
        t.add_column(f"{a} dtypes")
    t.add_column("modelled", no_wrap=True, min_width=len("modelled"))
    if priced:
        t.add_column("a5 priced by", no_wrap=True)

    def listed(a: str, i) -> str:
        ok = covered[a, i.name]
        return " ".join(tok if tok in ok or not ok else f"{tok}*" for tok in i.dtypes_on(a)) or "-"

    for i in rows:
        mod = ",".join(a for a in archs if covered[a, i.name]) or "-"
        extra = [priced.get(i.name, "-")] if priced else []
        t.add_row(i.name, i.family, *(listed(a, i) for a in archs), mod, *map(render.plain, extra))
    render.console().print(t)


def _a5_priced_by(ins) -> str:
    """Return which A5 model prices the instruction by default, judged on 8x256 of its f32 form (for a conversion,
    f32 to another type; else its first dtype): `formula` (its own measured parameters), `family` (the formula of
    another dtype of it), `body` (the formula of the measured ops whose chunks do the same work),
    `anchored` (the pipeline corrected by the measured ops on the same tiles) or `pipeline`."""
    from costmodel.api import plan
    from costmodel.errors import PtoCostError
    from costmodel.models.auto import cycles_of
    from costmodel.models.registry import model_for

    toks = ins.dtypes_on("a5")
    tok = next((t for t in toks if t.split(">")[0] == "f32" and t != "f32>f32"), toks[0])
    src, _, dst = tok.partition(">")
    m = model_for("a5")
    try:  # the cycles alone: no breakdown or bounds to simulate
        cycles_of(m, plan(ins.name, "8x256", src, arch="a5", **({"dst_dtype": dst} if dst else {})))
    except PtoCostError:
        return "-"
    source = getattr(m, "source", "")
    return source if source in ("family", "body") else m.name


@app.command(cls=_Command)
def predict(
    cases: Annotated[str, typer.Argument(help="Trace-shaped CSV or Parquet (arch, op, dtype, rows, cols, ...).")],
    output: Annotated[str, typer.Option("--output", "-o", help="Where to write the rows with predictions (.csv or .parquet).")],
    model: ModelOpt = "auto",
) -> None:
    """Add predicted_cycles, strategy, model and note to every row; rows that cannot be modelled get NaN and a reason."""
    from costmodel.errors import PtoCostError
    from fit.io import check_table_path, write_frame
    from fit.predict import predict_frame
    from fit.traces import LINE, read_trace

    from . import render

    check_table_path(output)
    _tables_in_use()
    trace = read_trace(cases)
    if trace.empty:
        raise PtoCostError(f"{cases}: a header and no rows; nothing to predict")
    with render.progress("predicting", len(trace)) as tick:
        df = predict_frame(trace, model=model, progress=tick)
    added = [c for c in trace.attrs.get("added_columns", [LINE]) if c not in ("strategy",)]
    df.attrs = {}  # bookkeeping of the reading, not the output's (a Parquet file would store it)
    write_frame(df.drop(columns=added).rename(columns=trace.attrs.get("given_names", {})), output)
    n_ok = int(df["predicted_cycles"].notna().sum())
    replaced = [c for c in ("predicted_cycles", "model", "note") if c in trace.columns]  # strategy is an input column
    render.console(stderr=True).print(render.plain(
        f"wrote {output}: {n_ok} of {len(df)} rows predicted"
        + (f", {len(df) - n_ok} with a reason in `note`" if n_ok < len(df) else "")
        + (f"; the input's own {', '.join(replaced)} column{'s' if len(replaced) > 1 else ''} replaced" if replaced
           else "")))
    if not n_ok:  # the file holds each row's reason; a script must still see that nothing was priced (as validate)
        raise PtoCostError(f"no row could be priced ({output} holds each row's reason): {_main_reason(df, 'row')}")


@app.command(cls=_Command)
def validate(
    measured: Annotated[str, typer.Argument(help="Measured trace (CSV or Parquet) with measured_cycles.")],
    model: ModelOpt = "auto",
    plot: Annotated[Optional[str], typer.Option("--plot", help="Write predicted-vs-measured and residual plots (any format matplotlib writes: .png, .svg, .pdf, ...).")] = None,
    repeat_tolerance: RepeatOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Score a model against measurements: MAPE, median and worst error, share within 5 %, Kendall tau.

    --json prints one object with the keys
    schema_version, tool, file, model, plot (the figure written, null
    without --plot);
    parameters: the formula and pipeline tables in use (table path, sha256 prefix);
    overall: n (rows scored), rows, not_scored, unmodelled (not priced), mape,
    median_ape, worst_ape, within_5 and within_10 (in %), kendall_tau,
    models_used, strategies (order and regret where one request's strategies
    were measured);
    per_op: arch, op and the metrics;
    per_group: arch, op, dtype, dst_dtype, op_params, strategy, the op parameter
    columns the trace fills (cmp_mode, scalar, ...) and the metrics;
    not_scored: line, arch, op, dtype, predicted_cycles (null: not priced), note.
    """
    from costmodel.errors import PtoCostError
    from fit.traces import read_trace
    from fit.validate import validate_frame

    from . import render

    _given_path(plot, "--plot")
    if plot:
        from fit.io import check_figure_path

        check_figure_path(plot)
    trace = read_trace(measured)
    with render.progress("predicting", len(trace)) as tick:
        rep = validate_frame(trace, model=model, progress=tick, tolerance=repeat_tolerance)
    if not rep.overall["n"]:
        notes = rep.not_scored["note"].astype(str)
        notes = notes[notes != ""]
        why = "no row has a prediction and a measurement"
        if len(notes):
            why = notes.value_counts().index[0]
            line = rep.not_scored.loc[notes.index[notes == why][0], "line"]
            why = f"{why} ({rep.unit} {line}" + (f" and {(notes == why).sum() - 1} more" if (notes == why).sum() > 1
                                                  else "") + ")"
        raise PtoCostError(f"{measured}: no row could be scored with model {model!r}: {why}")
    from costmodel.models import a5_pipeline_uarch, params, provenance

    tables = {"formula": provenance.table(params.path_in_use()),
              "pipeline": provenance.table(a5_pipeline_uarch.path_in_use())}
    if plot:
        from fit.io import save_figure
        from fit.plots import validation_figure

        title = f"{measured} — model {model} (formula table @{tables['formula']['sha256']})"
        save_figure(validation_figure(rep.predictions, title=title), plot)
    if json_out:
        render.emit_json({"file": measured, "model": model, "parameters": tables, **rep.to_dict(),
                          "plot": plot or None})
    else:
        render.validation_text(rep, measured)
        render.console().print(render.plain("parameters: " + ", ".join(
            f"{kind} {Path(t['table']).name} @{t['sha256']}" for kind, t in tables.items())), highlight=False)
        if plot:
            render.console(stderr=True).print(render.plain(f"wrote {plot}: predicted against measured, and residuals"))


@app.command(cls=_Command)
@request_options(exclude=("shape", "dtype", "valid", "arch"))
def plot(
    op: Annotated[str, typer.Argument(help="Instruction name.")],
    output: Annotated[str, typer.Option("--output", "-o", help="Figure file, in any format matplotlib writes (by its extension: .png, .svg, .pdf, ...).")],
    dtype: Annotated[str, typer.Option("--dtype", "-t", help="Element type, or a comma list for one line per dtype.")] = "f16",
    rows: Annotated[str, typer.Option("--rows", help="Rows: N, or LO:HI:STEP (LO:HI steps by 1) for a rows sweep (both ranges: heatmap); the default 32 keeps three f16 tiles of up to 1024 columns in the A2/A3 unified buffer.")] = "32",
    cols: Annotated[str, typer.Option("--cols", help="Cols: N, or LO:HI:STEP (e.g. 16:2048:16; LO:HI steps by 1, and widths that are no whole 32-byte row are not modelled).")] = "16:1024:16",
    strategy: Annotated[str, typer.Option("--strategy", help="`default`, `all` (curves: one line per legal strategy) or a name (a heatmap maps the default, or the one named, next to the fastest).")] = "default",
    arch: Annotated[Optional[str], typer.Option("--arch", "-a", help="a2a3 or a5 (default $PTO_COST_ARCH, else a2a3).")] = None,
    model: ModelOpt = "auto",
    measured: Annotated[Optional[str], typer.Option("--measured", help="Trace whose rows of the plotted requests are overlaid as points, each on the line of the strategy it resolves to (rows of a strategy without a line are left out, and counted).")] = None,
    csv: Annotated[Optional[str], typer.Option("--csv", help="Also write the data behind the figure.")] = None,
    valid_rows: Annotated[Optional[int], typer.Option("--valid-rows", min=1, help="Valid rows of every point (default: the whole tile; a smaller tile is not modelled).")] = None,
    valid_cols: Annotated[Optional[int], typer.Option("--valid-cols", min=1, help="Valid cols of every point (default: the whole tile; a smaller tile is not modelled).")] = None,
    req: dict = None,
) -> None:
    """Shape-vs-cycle curves (one line per strategy or dtype), or a heatmap when both rows and cols are ranges.

    The request and op-parameter options are those of `estimate`."""
    from costmodel.api import resolve_arch
    from costmodel.dtypes import dtype as as_dtype
    from costmodel.errors import PtoCostError
    from costmodel.grid import expand
    from costmodel.sweep import sweep
    from fit.io import atomic_paths, check_figure_path, check_table_path, save_figure, write_frame
    from fit.plots import curves_figure, heatmap_figure

    from . import render

    check_figure_path(output)
    _given_path(csv, "--csv")
    if csv:
        check_table_path(csv)
    arch_name, _ = resolve_arch(arch)
    params = _kwargs(req)
    names = [as_dtype(d.strip()).name for d in dtype.split(",") if d.strip()]  # canonical (the grid names each once)
    if not names:
        raise PtoCostError(f"--dtype {dtype!r} names no element type; give one or a comma list, e.g. f16,f32")
    dtype = ",".join(names)
    dst = params.pop("dst_dtype", None)
    dst = as_dtype(dst).name if dst else None
    for name in ("static_valid", "in_place"):  # off is the default: not a parameter of the figure or its data
        if not params.get(name):
            params.pop(name, None)
    spec = {"ops": [op], "dtypes": dtype, "archs": [arch_name], "strategies": [strategy], "rows": rows, "cols": cols,
            "valid_rows": valid_rows, "valid_cols": valid_cols, "dst_dtypes": [dst] if dst else None, "params": params}
    grid = expand(spec, limit=MAX_PLOT_POINTS, name="plot", hint="a coarser STEP, or `pto-cost sweep` for large grids")
    strategy = grid["strategy"].iloc[0]  # in the grid's spelling: default and all in lower case
    _check_plot_names(grid, strategy, dst)
    heat = grid["rows"].nunique() > 1 and grid["cols"].nunique() > 1
    if heat and strategy == "all":
        raise PtoCostError("--strategy all draws one line per strategy on curves; a heatmap (both --rows and --cols "
                           "ranges) maps the default strategy next to the fastest one, or one strategy you name")
    if heat and measured:
        raise PtoCostError("--measured overlays curves; a heatmap (both --rows and --cols ranges) has no room for "
                           "points: fix one of them")
    with render.progress("estimating", grid["rows"].nunique() * grid["cols"].nunique() * grid["dtype"].nunique()) as tick:
        df = sweep(grid, model=model, progress=tick)
    if df["cycles"].isna().all():
        raise PtoCostError(f"no point of the grid could be modelled: {_main_reason(df)}")
    fixed_valid = {k: v for k, v in (("valid_rows", valid_rows), ("valid_cols", valid_cols)) if v}
    shown = {**fixed_valid, **params}
    # the element type in the title: a conversion's pair, or the one dtype plotted (several have a series each)
    conversion = f" {dtype} -> {dst}" if dst else f" {df['dtype'].iloc[0]}" if df["dtype"].nunique() == 1 else ""
    used = df["model"].astype(str).value_counts()  # every model that priced a point, most used first
    used = used[(used.index != "") & (used > 0)]
    models = used.index[0] if len(used) == 1 else ", ".join(f"{m} ({n} points)" for m, n in used.items())
    title = (f"{df['op'].iloc[0]}{conversion} on {arch_name} — model{'s' if len(used) > 1 else ''} {models}"
             + (f"\n{', '.join(f'{k}={v}' for k, v in shown.items())}" if shown else ""))
    overlay = None  # the measured points drawn (curves only)
    if heat:
        if strategy not in ("default", "all"):  # the canonical spelling (1lcount: 1LCount)
            strategy = df.loc[df["cycles"].notna(), "strategy"].astype(str).iloc[0]
        df = _with_best_cycles(df, model)
        fig = heatmap_figure(df, title=title, strategy=strategy)
    else:
        x = "cols" if grid["cols"].nunique() > 1 or grid["rows"].nunique() == 1 else "rows"
        fixed = "rows" if x == "cols" else "cols"
        series = [c for c, multi in (("dtype", df["dtype"].nunique() > 1), ("strategy", strategy == "all")) if multi] or ["strategy"]
        if measured:
            overlay = _on_lines(_measured_points(measured, df, x, fixed, dst, {**params, **fixed_valid}), df, measured,
                                f"{fixed} = {df[fixed].iloc[0]}")
            overlay = _priced_at(overlay, grid, x, model, measured, fixed_valid)
        fig = curves_figure(df, x, series, title=f"{title}, {fixed} = {df[fixed].iloc[0]}", measured=overlay)
    with atomic_paths([output, csv] if csv else [output]) as tmps:  # both files or neither
        save_figure(fig, output, into=tmps[0])
        if csv:
            write_frame(df, csv, into=tmps[1])
    n_bad = int(df["cycles"].isna().sum())
    why = f"see `note` in {csv}" if csv else f"e.g. {df.loc[df['cycles'].isna(), 'note'].iloc[0]}" if n_bad else ""
    drawn = f" with {render.counted(len(overlay), 'measured point')}" if overlay is not None else ""
    render.console(stderr=True).print(render.plain(f"wrote {output}{drawn}" + (f" and {csv}" if csv else "")
                                      + (f"; {n_bad} point(s) not modelled ({why})" if n_bad else "")))


def _with_best_cycles(df, model: str):
    """`df` with `best_cycles`: the cycles of each point's fastest strategy (its own where it is the fastest), priced
    by a second sweep of the points whose fastest strategy is another."""
    from costmodel.sweep import sweep

    best = df["best"].astype(str)
    other = (best != df["strategy"].astype(str)) & (best != "") & df["cycles"].notna()
    out = df.assign(best_cycles=df["cycles"].astype(float))
    if other.any():
        cols = [c for c in df.columns if c not in ("cycles", "model", "default", "best", "note", "strategy")]
        again = df.loc[other, cols].assign(strategy=best[other].to_numpy())
        out.loc[other, "best_cycles"] = sweep(again, model=model)["cycles"].to_numpy()
    return out


def _tables_in_use() -> None:
    """Raise PtoCostError (at its line) where the parameter tables in use cannot be read: a command that notes a
    row's failure instead of stopping would otherwise note the damage on every row and exit 0."""
    from costmodel.models import a5_pipeline_uarch, params

    params.shipped()
    a5_pipeline_uarch.shipped()


def _reasons(df) -> list[dict]:
    """Return [{reason, points}] over the notes of `df`, most shared first (reasons that differ only in their numbers
    are one, shown by its first note)."""
    from fit.plots import commonest_notes

    return [{"reason": text, "points": n} for text, n in commonest_notes(df["note"])]


def _main_reason(df, unit: str = "point") -> str:
    """The two notes most points (or rows: `unit`) share (reasons that differ only in their numbers are one), with
    their counts, and how many other reasons there are."""
    from costmodel.wording import counted
    from fit.plots import commonest_notes

    common = commonest_notes(df["note"])
    if len(common) <= 1:
        return common[0][0] if common else "no reason given"
    shown = "; ".join(f"{text} ({counted(n, unit)})" for text, n in common[:2])
    return shown + (f" (and {len(common) - 2} other reason(s))" if len(common) > 2 else "")


def _check_plot_names(grid, strategy: str, dst: str | None = None) -> None:
    """Raise PtoCostError, as `estimate` does, for a dtype (or conversion pair, `dst`) the plotted op does not take
    on the arch at all, or a strategy name the op does not have there (one legal at some shapes only is those points'
    note)."""
    from costmodel import lower
    from costmodel.arch import check_arch
    from costmodel.catalog import instruction
    from costmodel.dtypes import dtype as as_dtype
    from costmodel.errors import PtoCostError
    from costmodel.operands import make_request
    from costmodel.sweep import request_kwargs

    first = grid.drop_duplicates("dtype")
    for rec in first.to_dict("records"):
        instruction(rec["op"]).check_dtype(check_arch(rec["arch"]), as_dtype(rec["dtype"]),
                                           as_dtype(dst) if dst else None)
    if strategy.lower() in ("default", "all"):
        return
    for _, points in grid.groupby("dtype", sort=False):
        for rec in points.head(200).to_dict("records"):  # the first point that makes a request names the strategies
            values = {k: v for k, v in rec.items() if k != "strategy"}
            try:
                names = lower.strategies(make_request(**request_kwargs(values, rec["rows"], rec["cols"],
                                                                       rec["valid_rows"], rec["valid_cols"])))[1]
            except PtoCostError:  # this point's own problem: its note
                continue
            if strategy.lower() not in {n.lower() for n in names}:
                raise PtoCostError(f"unknown strategy {strategy!r} for {rec['op']} {rec['dtype']} on {rec['arch']}; "
                                   f"strategies: {', '.join(names)}")
            break


def _priced_at(points, grid, x: str, model: str, path: str, fixed_valid: dict):
    """The measured points inside the plotted `x` range (a note on stderr counts those left out), each with
    `predicted_cycles`: the model's price of the plotted request at the point's own `x` in the point's strategy
    (valid everywhere, or with the valid counts the plot fixes: `fixed_valid`), so a point between samples, or at a
    sample where the step line rises, is set against its own prediction."""
    from costmodel.sweep import sweep

    from . import render

    lo, hi = grid[x].min(), grid[x].max()
    inside = points[x].between(lo, hi)
    if not inside.all():
        render.console(stderr=True).print(render.plain(
            f"note: {int((~inside).sum())} measured row(s) of {path} lie outside the plotted {x} ({lo}..{hi}) and "
            "are left out"))
    points = points[inside]
    if points.empty:
        return points
    template = grid.drop_duplicates("dtype").set_index("dtype")
    requests = template.loc[points["dtype"].to_numpy()].reset_index()
    requests[x] = points[x].to_numpy()
    if f"valid_{x}" not in fixed_valid:  # the curve's tiles are valid everywhere
        requests[f"valid_{x}"] = points[x].to_numpy()
    requests["strategy"] = points["strategy"].to_numpy()
    return points.assign(predicted_cycles=sweep(requests, model=model)["cycles"].to_numpy())


def _on_lines(points, df, path: str, at: str):
    """The measured points whose dtype and resolved strategy have a line in the plot; notes on stderr when no row
    of the trace is of the plotted requests, or rows of strategies without a line are left out."""
    import numpy as np

    from . import render

    con = render.console(stderr=True)
    if points.empty:
        con.print(render.plain(f"note: no row of {path} measures the plotted requests ({df['op'].iloc[0]} "
                               f"{', '.join(df['dtype'].unique())} on {df['arch'].iloc[0]} at {at}); nothing overlaid"))
        return points
    lines = set(zip(df.loc[df["cycles"].notna(), "dtype"], df.loc[df["cycles"].notna(), "strategy"]))
    on = np.array([key in lines for key in zip(points["dtype"], points["strategy"])], dtype=bool)
    if not on.all():
        off = ", ".join(dict.fromkeys(points.loc[~on, "strategy"]))
        con.print(render.plain(f"note: {int((~on).sum())} measured row(s) of {path} resolve to a strategy the plot "
                               f"draws no line of ({off}) and are left out; --strategy all draws every strategy"))
    return points[on]


# what a measured row's request keeps when the plot's op options replace its own: what no option sets (a TLOAD
# test's dynamic GM shape) besides the request itself
_REQUEST_KEYS = ("op", "shape", "dtype", "arch", "valid", "dst_dtype", "strategy", "gm_dynamic")


def _measured_points(path: str, df, x: str, fixed: str, dst: str | None, params: dict):
    """The trace's rows of the plotted op, dtypes, destination type, arch and op variant (the plot's op options; the
    loop form a row was measured in aside) at the fixed dimension. A curve point is a tile valid everywhere, so a
    row sits at its valid extent (10x1312 valid 10x1280 runs 20 chunks a row, like a 10x1280 tile, not 21); where
    the plot fixes a valid count (`valid_rows` / `valid_cols` in `params`), rows with that count sit at their tile's
    extent instead, like the curve's points. Each row gets the strategy its own request resolves to, and its dtype's
    canonical name. Raises PtoCostError where the trace has no measured_cycles or a row of the op is malformed."""
    import numpy as np

    from costmodel import lower
    from costmodel.dtypes import dtype as as_dtype
    from costmodel.errors import PtoCostError
    from costmodel.operands import make_request
    from fit.traces import LINE, check_trace, lacks_measured, read_trace, request_kwargs

    raw = read_trace(path)
    if lacks_measured(raw):
        raise PtoCostError(f"--measured {path}: no measured_cycles column; accepted: a trace of measured cycles")
    good, problems = check_trace(raw)
    op = df["op"].iloc[0].upper()
    ours = set(raw.loc[raw["op"].str.upper() == op, LINE])
    bad = [p for p in problems if p.line in ours]
    if bad:
        more = f" (and {len(bad) - 1} more problem(s) in rows of {op})" if len(bad) > 1 else ""
        raise PtoCostError(f"--measured {path}: {bad[0]}{more}")
    names = {as_dtype(d).name for d in df["dtype"].unique()}
    good = good[good["op"].str.upper() == op]
    good = good[good["dtype"].map(lambda d: as_dtype(d).name).isin(names) & (good["arch"].str.lower() == df["arch"].iloc[0])]
    good = good[good["dst_dtype"].map(lambda d: as_dtype(d).name if d else "") == (as_dtype(dst).name if dst else "")]
    at = {dim: dim if params.get(f"valid_{dim}") else f"valid_{dim}" for dim in ("rows", "cols")}
    good = good[good[at[fixed]] == df[fixed].iloc[0]]
    for dim in ("rows", "cols"):
        if params.get(f"valid_{dim}"):
            good = good[good[f"valid_{dim}"] == params[f"valid_{dim}"]]
    asked = {k: v for k, v in params.items() if not k.startswith("valid_")}

    def variant_strategy(row) -> str | None:
        """The strategy of the row's request where it is the plot's variant, else None."""
        try:
            kw = request_kwargs(row)
            theirs = make_request(**kw)
            ours = make_request(**{**{k: v for k, v in kw.items() if k in _REQUEST_KEYS}, **asked})
            same = ({k: v for k, v in theirs.params if k != "vf_impl_kind"} == {k: v for k, v in ours.params if k != "vf_impl_kind"}
                    and theirs.tiles[0][1].static_valid == ours.tiles[0][1].static_valid)
            return lower.resolve_strategy(theirs)[0] if same else None
        except PtoCostError:
            return None

    strategies = [variant_strategy(r) for r in good.to_dict("records")]
    good = good[np.array([s is not None for s in strategies], dtype=bool)]
    return good.assign(**{x: good[at[x]]}, strategy=[s for s in strategies if s is not None],
                       dtype=good["dtype"].map(lambda d: as_dtype(d).name))


@app.command("fit", cls=_Command)
def fit_cmd(
    traces: Annotated[list[str], typer.Argument(help="Measured traces (CSV or Parquet), e.g. ../shared/measured/*.csv.")],
    output: Annotated[Optional[str], typer.Option("--output", "-o", help="Formula parameter table to write (default data/formula_params.csv): fitted rows merged into the file, or into the table in use when it does not exist yet (the models read it when PTO_COST_PARAMS names the file). --model pipeline writes --pipeline-output instead.")] = None,
    cv: Annotated[int, typer.Option("--cv", min=2, help="Folds of the cross-validation (form choice and reported CV error); fewer folds train on fewer shapes, so the error rises (A2/A3: 19.4 % MAPE with 3 folds against 7.4 % with 5); at most one fold per shape (or case).")] = 5,
    cv_group: Annotated[str, typer.Option("--cv-group", help="What a fold holds out whole: shape (every op at a tile shape) or measurement (one measured case; other ops at its shape stay in).")] = "shape",
    model: Annotated[str, typer.Option("--model", "-m", help="formula, pipeline or all. The formula fit of the public A5 file takes 30-45 s on an idle 2-core machine (longer while other work runs); the pipeline fit (pipeline, all) simulates every measured program many times and takes minutes.")] = "formula",
    dry_run: Annotated[bool, typer.Option("--dry-run", metavar="", help="Report the fit and what it would write; write nothing. Exits 2 at once, as the real run does, where -o (or --pipeline-output) could not take the result.")] = False,
    pipeline_output: Annotated[str | None, typer.Option("--pipeline-output", help="Where --model pipeline/all writes the A5 pipeline parameters (the models read them when PTO_COST_PIPELINE_PARAMS names the file). [default: data/a5_pipeline_params.csv]")] = None,
    repeat_tolerance: RepeatOpt = None,
    fresh: Annotated[bool, typer.Option("--fresh", metavar="", help="Write this fit's rows alone, a whole new table: nothing merged from -o or the table in use, pipeline parameters the traces do not move at their priors, and the shared A5 formula terms fitted from the traces alone (by default a fit refines the table it replaces, and pulls the shared A5 terms it observes on fewer rows than that table's fit toward its values). Ops the traces do not cover are then not priced by the formula, unless (A5) a measured op does the same work per chunk.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Fit model parameters to measured traces: per group n, parameters ± standard error, cross-validated MAPE."""
    from costmodel.errors import PtoCostError
    from fit.params_io import write_params
    from fit.run import fit_traces

    from . import render

    from costmodel.operands import choice
    from fit.traces import CV_GROUPINGS

    model = choice(model, ("formula", "pipeline", "all"), "--model")
    cv_group = choice(cv_group, CV_GROUPINGS, "--cv-group")
    if pipeline_output is not None and model == "formula":
        raise PtoCostError("--pipeline-output needs --model pipeline or all (the formula fit writes only -o)")
    if output is not None and model == "pipeline":
        raise PtoCostError("-o names the formula table, which --model pipeline does not write; give --pipeline-output "
                           "(or --model all for both)")
    output = output or "data/formula_params.csv"
    pipeline_output = pipeline_output or "data/a5_pipeline_params.csv"
    try:  # before a fit of up to minutes: where it will write must take the result (a dry run fails as the run would)
        _check_fit_outputs(model, output, pipeline_output)
    except PtoCostError as exc:
        raise PtoCostError(f"dry run: {exc}" if dry_run else str(exc)) from None
    with render.status(f"fitting the {'formula and pipeline' if model == 'all' else model} model to "
                       f"{', '.join(Path(t).name for t in traces)}"):
        from costmodel.models.a5_pipeline_uarch import path_in_use

        # a partial trace refines the pipeline table it replaces (the one in use where that does not exist yet)
        base = None if fresh else pipeline_output if Path(pipeline_output).is_file() else path_in_use()
        from fit.params_io import merge_base

        # and the formula table it merges into: the shared A5 terms it observes less are pulled toward its values
        formula_base = None if fresh else str(merge_base(output))
        run = fit_traces(traces, k=cv, model=model, group_by=cv_group, pipeline_base=base,
                         tolerance=repeat_tolerance, formula_base=formula_base)
    written = None
    if dry_run and run.rows:  # what the write would be
        from fit.params_io import planned_table

        written = planned_table(run.rows, output, merge=not fresh)[1]
    if not dry_run:  # both tables or neither: each is written to a temporary file, renamed once both are written
        from fit.io import atomic_paths
        from fit.pipeline_fit import write_params as write_pipeline

        targets = ([output] if run.rows else []) + ([pipeline_output] if run.pipeline is not None else [])
        with atomic_paths(targets) as tmps:
            if run.rows:
                written = write_params(run.rows, output, merge=not fresh, into=tmps[0])
            if run.pipeline is not None:
                write_pipeline(run.pipeline, pipeline_output, into=tmps[-1])
    if json_out:
        # the files written, or with --dry-run those the run would write
        render.emit_json({"output": output if run.rows else None, "dry_run": dry_run,
                          "rows_written": written.rows if written else 0,
                          "rows_refitted": written.refitted if written else 0,
                          "rows_kept": written.kept if written else 0,
                          "rows_other_arch": written.other if written else 0,
                          "rows_discarded": written.discarded if written else 0,  # --fresh over an existing table
                          "kept_over_few_observations": list(written.held) if written else [],
                          "rows_removed": len(written.dropped) if written else 0,
                          "rows_removed_note": written.dropped_note() if written else "",
                          "old_forms_kept": list(written.old_forms) if written else [],
                          "families_moved": list(written.moved) if written else [],
                          "pipeline_output": None if run.pipeline is None else pipeline_output,
                          "bad_rows": [p.to_dict() for p in run.problems],
                          "repeats": run.repeats,  # rows that repeated a case, averaged into it
                          "skipped": run.skipped,  # an arch whose rows could not be fitted, while another's were
                          "fits": [{k: (v.to_dict("records") if hasattr(v, "to_dict") else v) for k, v in
                                    render.written_section(sec, written).items()} for sec in run.sections]})
    else:
        render.fit_text(run, output, written, pipeline_output, dry_run=dry_run)


def _check_fit_outputs(model: str, output: str, pipeline_output: str) -> None:
    """Raise PtoCostError unless the tables a fit of `model` writes can be written where asked."""
    from costmodel.errors import PtoCostError
    from fit.params_io import check_params_path

    if model == "all" and Path(output).resolve() == Path(pipeline_output).resolve():
        raise PtoCostError(f"-o and --pipeline-output are both {output}: the formula and pipeline tables need "
                           "a file each")
    if model in ("formula", "all"):
        check_params_path(output)
    if model in ("pipeline", "all"):
        check_params_path(pipeline_output, pipeline=True)


def _load_spec(path: str) -> dict:
    from pathlib import Path

    from costmodel.errors import PtoCostError

    p = Path(path)
    if not p.exists():
        raise PtoCostError(f"sweep spec {path} does not exist")
    suffix = p.suffix.lower()
    if suffix not in (".json", ".toml", ".yaml", ".yml"):
        raise PtoCostError(f"sweep spec {path}: unknown format {suffix!r}; accepted: .yaml .yml .toml .json")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PtoCostError(f"sweep spec {path}: cannot be read as text ({type(exc).__name__})") from None
    try:
        if suffix == ".json":
            spec = json.loads(text)
        elif suffix == ".toml":
            import tomllib

            spec = tomllib.loads(text)
        else:
            try:
                import yaml
            except ImportError:
                raise PtoCostError("YAML specs need PyYAML (pip install pyyaml); TOML and JSON work without it") from None
            spec = yaml.load(text, Loader=_spec_loader(yaml))
    except PtoCostError:
        raise
    except Exception as exc:
        raise PtoCostError(f"sweep spec {path} is malformed: {str(exc).splitlines()[0]}") from None
    if not isinstance(spec, dict):
        raise PtoCostError(f"sweep spec {path} must be a mapping of keys (ops, dtypes, archs, strategies, rows, cols)")
    return spec


def _given_path(value: Optional[str], option: str) -> None:
    """Refuse an output option given as an empty path (the shell's `--csv ""`), which would otherwise read as absent."""
    from costmodel.errors import PtoCostError

    if value is not None and not value.strip():
        raise PtoCostError(f"{option}: the output path is empty; give a file name")


def _spec_loader(yaml):
    """Return a safe YAML loader that reads `16:32` as the text of a range: YAML 1.1 resolves an unquoted
    colon-separated number as base 60 (16:32 -> 992)."""
    class SpecLoader(yaml.SafeLoader):
        pass

    SpecLoader.yaml_implicit_resolvers = {
        first: [(tag, re.compile(r"(?!.*:)(?:" + rx.pattern + ")", rx.flags) if tag.endswith((":int", ":float")) else rx)
                for tag, rx in resolvers]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    return SpecLoader


def _checked_spec(spec: dict) -> dict:
    """Return the sweep spec with its arches defaulted like `--arch` ($PTO_COST_ARCH, else a2a3)."""
    from costmodel.api import resolve_arch

    return spec if spec.get("archs") is not None else {**spec, "archs": [resolve_arch(None)[0]]}


@app.command("sweep", cls=_Command)
def sweep_cmd(
    spec: Annotated[str, typer.Argument(help="Grid spec (.yaml needs pto-cost\\[yaml], .toml, .json): ops, rows, cols (a number or a range like 16:512:16) and optionally dtypes, dst_dtypes (TCVT targets), archs (default $PTO_COST_ARCH, else a2a3), strategies (default, all or names; all covers the others), valid_rows, valid_cols (a count, full, or a list or range of them: a grid dimension), params (op parameters named like the options, with underscores: src1_valid, e.g. {saturation: \\[on, off]}: a list is a grid dimension), model (--model overrides it). A list may not be empty.")],
    output: Annotated[str, typer.Option("--output", "-o", help="Result file (.csv or .parquet).")],
    engine: Annotated[str, typer.Option("--engine", help="local, or dask (needs pto-cost\\[dask]).")] = "local",
    workers: Annotated[Optional[int], typer.Option("--workers", help="Dask workers of the local cluster.")] = None,
    scheduler: Annotated[Optional[str], typer.Option("--scheduler", help="Address of an existing dask scheduler, e.g. tcp://HOST:8786.")] = None,
    verify_sample: Annotated[int, typer.Option("--verify-sample", min=0, help="Emulate N random modelled output rows (one strategy of a point each) against the golden; fail if any disagrees.")] = 0,
    seed: SweepSeedOpt = None,
    model: SweepModelOpt = None,
    json_out: Annotated[bool, typer.Option("--json", metavar="", help="Print a JSON summary on stdout (file, rows, not modelled, the commonest reason and every reason with its point count, the verified sample) besides the file.")] = False,
) -> None:
    """Evaluate a grid of requests (vectorised): one row per point with cycles, strategy, default, best and a note.

    The note says why a point cannot be modelled, or gives the model's caveats (an unmeasured class, ...)."""
    from costmodel.errors import PtoCostError
    from costmodel.grid import expand
    from costmodel.sweep import sweep, sweep_dask, verify_sample as run_verify_sample
    from fit.io import check_table_path, write_frame

    from . import render

    check_table_path(output)
    if seed is not None and not verify_sample:
        raise PtoCostError("--seed chooses the --verify-sample points; add --verify-sample N (a sweep itself is not "
                           "random)")
    if engine not in ("local", "dask"):
        raise PtoCostError(f"unknown engine {engine!r}; accepted: local, dask")
    if engine == "local" and (workers is not None or scheduler is not None):
        raise PtoCostError("--workers and --scheduler choose the dask cluster; add --engine dask")
    if workers is not None and scheduler is not None:
        raise PtoCostError("give either --workers (a local dask cluster) or --scheduler (an existing one), not both")
    spec_doc = _checked_spec(_load_spec(spec))
    if model is None:  # --model overrides the spec's; a spec's null or blank model is auto
        given = spec_doc.get("model")
        try:
            model = _model_name(given if isinstance(given, str) or given is None else json.dumps(given, default=str))
        except PtoCostError as exc:
            raise PtoCostError(f"sweep spec: `model`: {exc}") from None
    grid = expand(spec_doc)
    con = render.console(stderr=True)
    if engine == "local":
        with render.progress("sweeping", len(grid)) as tick:
            df = sweep(grid, model=model, progress=tick)
    else:
        with render.progress("sweeping on dask", len(grid)) as tick:
            df = sweep_dask(grid, model=model, scheduler=scheduler, workers=workers, progress=tick)
    n_bad = int(df["cycles"].isna().sum())
    reasons = _reasons(df[df["cycles"].isna()]) if n_bad else []
    doc = {"output": output, "points": len(grid), "rows": len(df), "not_modelled": n_bad,
           "commonest_reason": reasons[0]["reason"] if reasons else None, "reasons": reasons, "verify_sample": None}
    if len(df) and n_bad == len(df):
        if json_out:  # a script reading stdout still gets its document; the error goes to stderr as ever
            render.emit_json({**doc, "output": None})
        raise PtoCostError(f"no point of the grid could be modelled ({output} not written): "
                           f"{_main_reason(df[df['cycles'].isna()])}")
    with render.status(f"writing {len(df):,} rows to {output}"):
        write_frame(df, output)
    con.print(render.plain(f"wrote {output}: {render.counted(len(df), 'row')}" + (f", {n_bad} not modelled (see `note`)" if n_bad else "")))
    if verify_sample:
        bad, tried, unchecked = run_verify_sample(df, verify_sample, seed=seed or 0)
        doc["verify_sample"] = {"tried": tried, "not_verified": bad, "unchecked": unchecked}
        if bad:
            for line in bad[:10]:
                con.print(f"[red]not verified[/]: {render.plain(line)}")
            if json_out:
                render.emit_json(doc)
            raise typer.Exit(1)
        con.print(render.plain(f"verified {tried - len(unchecked)} of a sample of {render.counted(tried, 'row')} (one "
                               "strategy of a point each) against the golden"
                               + (f"; {len(unchecked)} could not be checked (e.g. {unchecked[0]})" if unchecked
                                  else "")))
    if json_out:
        render.emit_json(doc)


def _after_writes() -> str:
    """What a stopped run still wrote: the files it had replaced (each complete, with the new contents), or ''."""
    from fit.io import COMMITTED

    return f" after writing {', '.join(COMMITTED)}: complete, with the new contents" if COMMITTED else ""


def main() -> None:
    """Console entry point: run the app; library errors and usage errors become one line on stderr, exit 2."""
    import signal

    from costmodel.errors import PtoCostError

    import os

    pid = os.getpid()

    def stop(signum, _frame):  # `kill`, `timeout`, a closed terminal: unwind (removing half-written files), quietly
        if os.getpid() == pid:  # a forked dask worker meets the group's signal too: the run says it once (QA 55)
            sys.stderr.write(f"stopped by {signal.Signals(signum).name}{_after_writes()}\n")
        raise SystemExit(128 + signum)

    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), stop)
    for stream in (sys.stdout, sys.stderr):  # typer's own help bypasses render's stand-ins: '?' rather than a crash
        try:
            "±—".encode(stream.encoding or "utf-8")
        except (UnicodeEncodeError, LookupError):
            stream.reconfigure(errors="replace")
        except AttributeError:
            pass
    try:
        code = app(standalone_mode=False)  # typer returns (not raises) the code of an Exit, and 130 after Ctrl-C
    except PtoCostError as exc:
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except Exception as exc:  # click usage errors and aborts
        name = type(exc).__name__
        if name in ("UsageError", "BadParameter", "MissingParameter", "NoSuchOption", "BadOptionUsage", "BadArgumentUsage"):
            sys.stderr.write(f"error: {exc.format_message() if hasattr(exc, 'format_message') else exc}\n")
            sys.exit(2)
        if name == "Abort":
            code = 130
        else:
            raise
    if code == 130:
        sys.stderr.write(f"stopped by SIGINT{_after_writes()}\n")  # worded as the SIGTERM and SIGHUP stops (QA 55)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
