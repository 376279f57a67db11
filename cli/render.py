"""Render estimates, comparisons and catalogue rows as rich text or JSON (stdout)."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from costmodel.wording import counted  # noqa: F401  (render.counted: the CLI's name for it)

SCHEMA_VERSION = 1


def console(stderr: bool = False):
    """Return a rich console on stdout (or stderr); into a pipe or file, lines lose the padding tables end with."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    encoding = (getattr(stream, "encoding", None) or "utf-8").lower().replace("_", "-")
    file = stream if stream.isatty() and encoding.startswith("utf") else _TrimmedLines(stream)
    return Console(file=file, stderr=stderr, highlight=False, soft_wrap=True)


# what a stream that cannot encode them (PYTHONIOENCODING=ascii, a latin-1 terminal) gets instead; rich draws its own
# boxes in ASCII there, but titles, notes and its ellipsis carry these
_PLAIN = str.maketrans({"—": "-", "–": "-", "…": "...", "→": "->", "←": "<-", "±": "+/-", "§": "S", "≤": "<=",
                        "≥": ">=", "×": "x", "·": "*", "≈": "~", "µ": "u", "’": "'", "“": '"', "”": '"'})


class _TrimmedLines:
    """A text stream that writes each line without its trailing spaces (rich pads table cells to the column width) and
    in characters the wrapped stream can encode (`_PLAIN`, else `?`); everything else (encoding, isatty, fileno) is
    the wrapped stream's."""

    def __init__(self, stream):
        self.stream = stream
        self.pending = ""
        self.trim = not stream.isatty()

    def _encodable(self, text: str) -> str:
        encoding = getattr(self.stream, "encoding", None) or "utf-8"
        try:
            text.encode(encoding)
            return text
        except UnicodeEncodeError:
            return text.translate(_PLAIN).encode(encoding, "replace").decode(encoding)
        except LookupError:  # an encoding Python does not know: leave the stream to it
            return text

    def write(self, text: str) -> int:
        *lines, self.pending = (self.pending + text).split("\n")
        if lines:
            self.stream.write(self._encodable("".join((line.rstrip(" ") if self.trim else line) + "\n" for line in lines)))
        return len(text)

    def flush(self) -> None:
        if self.pending:
            self.stream.write(self._encodable(self.pending))
            self.pending = ""
        self.stream.flush()

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


def write(text: str) -> None:
    """Write plain text to stdout, in characters it can encode (as `console` does)."""
    out = _TrimmedLines(sys.stdout)
    out.write(text)
    out.flush()


def plain(value: Any) -> str:
    """Return str(value) escaped for rich markup, so data such as a note's '[costmodel.md §7 ...]' prints as is."""
    from rich.markup import escape

    return escape(str(value))


def emit_json(doc: dict[str, Any]) -> None:
    """Write one JSON document (with schema and tool version) to stdout."""
    from costmodel import __version__

    out = {"schema_version": SCHEMA_VERSION, "tool": f"pto-cost {__version__}", **doc}
    sys.stdout.write(json.dumps(_finite(out), indent=2, default=_default, allow_nan=False) + "\n")


def _finite(value: Any) -> Any:
    """The document with every NaN or infinite float as null (JSON has no NaN; strict parsers reject the token)."""
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if hasattr(value, "item") and not hasattr(value, "__len__"):  # numpy scalars
        return _finite(value.item())
    return value


def _default(value: Any) -> Any:
    try:
        return value.item()
    except AttributeError:
        return str(value)


def fmt_cycles(c: float, decimals: bool | None = None) -> str:
    """Return cycles as text: whole numbers without decimals, others to one decimal (never "-0.0"); `decimals` forces
    one way (a column of several values writes all of them alike)."""
    whole = abs(c - round(c)) < 1e-9 if decimals is None else not decimals
    return f"{c:,.0f}" if whole else f"{round(c, 1) + 0.0:,.1f}"


def breakdown_text(breakdown) -> str:
    """Return the breakdown's parts as "name cycles" pairs to one decimal, leaving out parts that round to zero, or
    "-"."""
    return "  ".join(f"{k} {round(v, 1) + 0.0:,.1f}" for k, v in breakdown if round(v, 1) != 0) or "-"


def _param_text(name: str, value: Any) -> str:
    """A parameter as the command line takes it (a bit mask as HI:LO in hex)."""
    if name == "mask" and isinstance(value, tuple) and len(value) == 2:
        return f"{value[0]:#x}:{value[1]:#x}"
    if name.endswith("_layout"):  # the spelling --src-layout/--dst-layout list (nd, dn), not ours (row_major)
        return {"row_major": "nd", "col_major": "dn"}.get(str(value), str(value))
    return str(value)


def params_text(req) -> str:
    """Return the request's op parameters as `name=value` words (the round mode of a conversion no mode can change
    says it rounds nothing)."""
    from costmodel.conversions import exact

    why = ""
    if req.family == "convert" and exact(req.dtype.name, req.dst.dtype.name):
        ints = req.dtype.is_integer and req.dst.dtype.is_integer
        why = (" (integer to integer: nothing to round)" if ints else
               f" ({req.dtype} -> {req.dst.dtype} is exact: nothing to round)")
    return " ".join(f"{k}={_param_text(k, v)}" + (why if k == "round_mode" else "") for k, v in req.params)


def estimate_text(e) -> None:
    """Print one estimate as a small key/value table."""
    from rich.table import Table

    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold")
    t.add_column()
    req = e.request
    t.add_row("op", plain(e.op))
    t.add_row("arch", plain(f"{e.arch} ({e.arch_source})"))
    if req is not None:
        t.add_row("tiles", plain(tiles_text(req, collapse=False)))
        if req.params:
            t.add_row("params", plain(params_text(req)))
    t.add_row("strategy", plain(f"{e.strategy} ({e.strategy_source})"))
    t.add_row("model", plain(e.model))
    t.add_row("cycles", fmt_cycles(e.cycles))
    t.add_row("breakdown", breakdown_text(e.breakdown))
    for kind, where in e.provenance.items():
        t.add_row("fitted", plain(provenance_text(kind, where)))
    verified = e.verified_text
    style = {"yes": "green", "no": "red"}.get(verified, "yellow")
    t.add_row("verified", f"[{style}]{verified}[/] ({plain(e.verify_note)})")
    for n in e.notes:
        t.add_row("note", plain(n))
    console().print(t)


def provenance_text(kind: str, where: dict) -> str:
    """Return one line on a model's parameters: kind, file and digest, the rows read, the fit that wrote them."""
    fit = str(where.get("fitted_from", ""))
    n = f", n {where['n_obs']}" if where.get("n_obs") else ""
    return (f"{kind}: {Path(where.get('table', 'in memory')).name}"
            + (f" @{where['sha256']}" if where.get("sha256") else "")
            + (f", {where['rows']}" if where.get("rows") else "") + (f" ({fit}{n})" if fit else ""))


def tiles_text(req, collapse: bool = True) -> str:
    """Return the request's tiles ("dst 64x64 f16 (dynamic valid); src ..."), with `collapse` one description where
    all are alike ("" without a request)."""
    if req is None:
        return ""
    tiles = list(req.tiles)
    if collapse and len({t.describe() for _, t in tiles}) == 1:
        return tiles[0][1].describe()
    return "; ".join(f"{k} {tile.describe()}" for k, tile in tiles)


def compare_text(ests) -> None:
    """Print one row per strategy, fastest first, with cycles, breakdown and verified; mark the fastest and the
    default."""
    from rich.table import Table

    from costmodel.api import default_and_fastest, ranked

    default, fastest = default_and_fastest(ests)
    e0 = ests[0]
    given = f" — {params_text(e0.request)}" if e0.request.params else ""
    models = sorted({e.model for e in ests})
    t = Table(title=plain(f"{e0.op} on {e0.arch} — {tiles_text(e0.request)}{given} — model "
                          f"{'/'.join(models)}"))
    for col in ("strategy", "cycles", "vs default", "breakdown", "verified"):
        t.add_column(col, justify="right" if col in ("cycles", "vs default") else "left")
    decimals = any(abs(e.cycles - round(e.cycles)) >= 1e-9 for e in ests)
    for e in ranked(ests):
        tags = []
        if e is default:
            tags.append("default")
        if e is fastest:
            tags.append("fastest")
        name = e.strategy + (f" ({', '.join(tags)})" if tags else "")
        rel = vs_default_pct(e, default)
        t.add_row(plain(name), fmt_cycles(e.cycles, decimals), f"{rel:+.1f}%", plain(breakdown_text(e.breakdown)),
                  e.verified_text)
    console().print(t)
    notes = Table.grid(padding=(0, 2))
    notes.add_column(style="bold")
    notes.add_column()
    for label, n in compare_notes(ests, default):
        notes.add_row(plain(label), plain(n))
    console().print(notes)


def compare_notes(ests, default) -> list[tuple[str, str]]:
    """Return (label, note) lines for a comparison: the default's own notes (why the implementation picks it) once,
    then each model caveat (typical error, extrapolation, correction) under the strategies it applies to, fastest
    first; a caveat every strategy shares is written once."""
    from costmodel.api import ranked

    order = ranked(ests)
    lines = [("default", n) for n in default.plan.notes]
    caveats: dict[str, list[str]] = {}
    for e in order:
        for n in e.notes[len(e.plan.notes):]:
            caveats.setdefault(n, []).append(e.strategy)
    for n, names in caveats.items():
        lines.append(("note" if len(names) == len(order) > 1 else ", ".join(names), n))
    return lines


def vs_default_pct(e, default) -> float:
    """Return how much more (positive) or less an estimate costs than the default strategy's, in percent (0 where the
    default costs nothing)."""
    return (e.cycles / default.cycles - 1) * 100 if default.cycles else 0.0


def _metrics_table(title: str, df, keys: list[str]):
    from rich.table import Table

    t = Table(title=title)
    for k in keys:
        t.add_column(k)
    for col in ("n", "MAPE %", "median %", "worst %", "within 5 %", "tau"):
        t.add_column(col, justify="right")
    for r in df.to_dict("records"):
        t.add_row(*(plain(r[k]) for k in keys), str(r["n"]), f"{r['mape']:.2f}", f"{r['median_ape']:.2f}",
                  f"{r['worst_ape']:.2f}", f"{r['within_5']:.0f}", _tau(r.get("kendall_tau")))
    return t


def _tau(tau) -> str:
    """A Kendall tau to three decimals, or - where it is undefined (fewer than two distinct values: NaN)."""
    return "-" if tau is None or tau != tau else f"{tau:.3f}"


def validation_text(rep, name: str) -> None:
    """Print the overall metrics, the per-op table and the rows that could not be modelled."""

    con = console()
    o = rep.overall
    repeats = o.get("repeats", 0)
    con.print(f"[bold]{plain(name)}[/]: {o['n'] + repeats} of {o['rows']} rows scored"
              + (f", as {counted(o['n'], 'case')}: {repeats} repeated run(s) averaged into their case" if repeats
                 else ""))
    if o["n"]:
        con.print(f"overall: MAPE {o['mape']:.2f} %, median {o['median_ape']:.2f} %, worst {o['worst_ape']:.2f} %, "
                  f"within 5 % {o['within_5']:.1f} %, Kendall tau {_tau(o['kendall_tau'])}")
        used = o.get("models_used") or {}
        if used:
            con.print("priced by: " + ", ".join(f"{m} {n}" for m, n in used.items()))
        c = o.get("strategies") or {}
        if c.get("requests"):
            con.print(f"strategies measured on one request ({counted(c['requests'], 'request')}, "
                      f"{counted(c['pairs'], 'pair')}): order tau {_tau(c['order_tau'])}; the predicted fastest is a "
                      f"measured fastest in {c['picked_fastest']:.0f} % "
                      f"of them, and costs {c['regret_mean']:.2f} % more than the measured fastest on average "
                      f"(p95 {c['regret_p95']:.2f} %, worst {c['regret_max']:.2f} %)")
        con.print(_metrics_table("per op", rep.per_op, ["arch", "op"]))
    if len(rep.not_scored):
        notes = rep.not_scored.groupby("note", sort=False)["line"].apply(lambda s: ", ".join(map(str, s))).reset_index()
        from fit.traces import CONFLICTING

        hint = _noise_hint(int(rep.not_scored["note"].astype(str).str.contains(CONFLICTING).sum()))
        con.print(f"[yellow]{len(rep.not_scored)} row(s) not scored[/]{plain(hint)}[yellow]:[/]")
        for r in notes.itertuples(index=False):
            con.print(plain(f"  {rep.unit}{'s' if ',' in r.line else ''} {r.line}: {r.note}"))


PLAIN_EVERY = 60.0  # seconds between the progress lines written where stderr is no terminal (a log, nohup, CI)


class _Progress:
    def __init__(self, label: str, total: int):
        import time

        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        tty = sys.stderr.isatty()
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                            console=console(stderr=True), transient=True,
                            disable=total < 200 or not tty)  # a bar in a log file is noise: a line a minute there
        self.task = self.bar.add_task(label, total=total)
        self.label, self.plain = label, total >= 200 and not tty
        self.start = self.last = time.monotonic()

    def __enter__(self):
        self.bar.__enter__()
        return self.tick

    def tick(self, done: int, total: int) -> None:
        import time

        self.bar.update(self.task, completed=done, total=total)
        now = time.monotonic()
        if self.plain and now - self.last >= PLAIN_EVERY and done < total:  # QA 55: a 19-minute sweep said nothing
            self.last = now
            sys.stderr.write(f"{self.label}: {done:,} of {total:,} ({100 * done / max(total, 1):.0f} %), "
                             f"{(now - self.start) / 60:.1f} min so far\n")
            sys.stderr.flush()

    def __exit__(self, *exc):
        return self.bar.__exit__(*exc)


def progress(label: str, total: int) -> _Progress:
    """Return a context manager yielding `tick(done, total)`; draws a rich progress bar on stderr for long work."""
    return _Progress(label, total)


def status(label: str):
    """Return a context manager showing `label` with a spinner and the elapsed time on stderr while long work of
    unknown length runs (nothing when stderr is not a terminal)."""
    import contextlib

    if not sys.stderr.isatty():
        return contextlib.nullcontext()
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    bar = Progress(SpinnerColumn(), TextColumn(plain(label)), TimeElapsedColumn(), console=console(stderr=True),
                   transient=True)
    bar.add_task(label, total=None)
    return bar


def _noise_hint(clash: int) -> str:
    """Say how many rows were left out as conflicting repeats, and the option that accepts them ('' for none)."""
    from fit.traces import REPEAT_HINT

    return (f" ({clash} measure a case another row measures more than the profiler's noise apart; {REPEAT_HINT})"
            if clash else "")


def written_section(sec: dict, written) -> dict:
    """Return a fit report section as written: its anchored terms emptied where the write took none of its arch's
    rows (they priced nothing)."""
    if sec.get("anchored") and written is not None and sec["arch"] not in written.arches:
        return {**sec, "anchored": [], "anchored_to": None}
    return sec


def fit_text(run, output: str, written, pipeline_output: str | None = None, *, dry_run: bool = False) -> None:
    """Print the fit report: bad rows, the model selection, parameters ± standard errors, CV accuracy, and what was
    written (with `dry_run`, what would be)."""
    from rich.table import Table

    from fit.traces import CONFLICTING, LINE, ROW_UNIT, row_where

    con = console()
    if run.problems:
        by_line: dict[str, list[str]] = {}
        for p in run.problems:
            by_line.setdefault(p.where, []).append(f"{p.column}: {p.message}")
        hint = _noise_hint(sum(p.message.startswith(CONFLICTING) for p in run.problems))
        con.print(f"[yellow]{len(by_line)} trace row(s) left out[/]{plain(hint)}[yellow]:[/]")
        for where, msgs in list(by_line.items())[:12]:
            con.print(plain(f"  {where}: {'; '.join(msgs)}"))
        if len(by_line) > 12:
            con.print(f"  … and {len(by_line) - 12} more rows")
    if run.repeats:
        con.print(plain(f"{counted(run.repeats, 'row')} repeated a case another row measured: each case is one "
                        "observation, at the mean of its runs"))
    for why in run.skipped:
        con.print(f"[yellow]skipped[/] {plain(why)}")
    for sec in run.sections:
        cv = sec["cv"]
        scores = (f"MAPE {cv['mape']:.2f} %, median {cv['median_ape']:.2f} %, worst {cv['worst_ape']:.1f} %, "
                  f"within 5 % {cv['within_5']:.0f} % over {cv['n']} rows" if cv["n"] else
                  f"no error to report: none of the {sec.get('fitted_rows', 0)} rows could be priced by a fit that did "
                  "not see it (nothing like them was in the other folds)")
        con.print(f"\n[bold]{sec['arch']} {sec['model']}[/]: " + plain(f"chose {sec['choice']}; {sec['accuracy']}: ")
                  + scores
                  + (f" ({sec['fitted_rows'] - cv['n']} more no held-out fit could price: nothing like them was in "
                     "the other folds)" if sec.get("fitted_rows", cv["n"]) > cv["n"] > 0 else ""))
        for note in sec.get("notes", []):
            con.print(f"  [yellow]{sec.get('note_label', 'skipped')}[/] {plain(note)}")
        if sec.get("kept"):
            con.print(f"  kept {plain(sec['kept'])}")
        if written_section(sec, written).get("anchored"):
            con.print(plain(f"  anchored toward {sec['anchored_to']}'s values, the shared terms of the smooth form this "
                            f"trace observed on fewer rows than that table's fit: {'; '.join(sec['anchored'])} (what "
                            "the trace does not pin stays near the table's value; --fresh fits them from the trace "
                            "alone)"))
        held = [h for h in (written.held if written else ()) if h["arch"] == sec["arch"] and sec["model"] == "formula"]
        kept = f"; {len(held)} key(s) not written, the table's values kept: see the notes below" if held else ""
        t = Table(title=f"{sec['arch']} {sec['model']} parameters (rows with observations{kept})")
        for col in ("parameter", sec.get("value_label", "value"), "± stderr", "n", "CV MAPE %"):
            t.add_column(col, justify="left" if col == "parameter" else "right")
        rep = sec["report"]
        loose = 0
        for r in rep[rep["n_obs"] > 0].to_dict("records"):
            se = r["stderr"]
            wide = se is not None and se == se and abs(se) > abs(r["value"])
            # an A5 row marks each coefficient in its text (p1 among them); others only in the ± column
            loose += r["parameter"].count("±") and r["parameter"].count(" !") or wide
            t.add_row(plain(r["parameter"]), f"{r['value']:.4g}",
                      "-" if se is None or se != se else f"{se:.3g}" + (" !" if wide else ""),
                      str(int(r["n_obs"])), "-" if r["cv_mape"] is None or r["cv_mape"] != r["cv_mape"] else f"{r['cv_mape']:.1f}")
        con.print(t)
        if sec.get("legend"):
            con.print(plain(f"  {sec['legend']}"))
        if loose:
            con.print(plain(f"  !: {loose} parameter(s) with a standard error larger than the value (every ! above): "
                            "these rows hardly pin them down (the value leans on the family, the prior or the other "
                            "terms)"))
        out = sec.get("outliers")
        if out is not None and len(out):
            con.print(f"[yellow]{len(out)} outlier row(s)[/] (in-sample error beyond 3 robust sigmas):")
            for r in out.head(15).to_dict("records"):
                shape = f"{r.get('rows')}x{r.get('cols')}" + (f" valid {r.get('valid_rows')}x{r.get('valid_cols')}"
                                                            if (r.get('valid_rows'), r.get('valid_cols')) != (r.get('rows'), r.get('cols')) else "")
                dst = f"->{r['dst_dtype']}" if r.get("dst_dtype") else ""
                where = row_where({**r, LINE: r["line"], ROW_UNIT: r.get("unit")}, len(run.traces) > 1)
                extra = f" [{r['extra']}]" if r.get("extra") else ""
                con.print(plain(f"  {where}: {r['op']} {r['dtype']}{dst} {shape}{extra} {r.get('vf_impl_kind', '') or ''} "
                                f"measured {r['measured']:g}, predicted {r['predicted']:g} ({r['error_pct']:+.1f} %)"))
    from costmodel.models import a5_pipeline_uarch, params

    if run.rows and written:
        kept = (f"; {written.kept} kept from the table: ops, classes or observations this trace does not cover"
                if written.kept else "")
        kept += f"; {written.other} of another arch, unchanged" if written.other else ""
        kept += (f"; the {written.discarded} rows {output} held {'would go' if dry_run else 'are gone'}: --fresh merges "
                 "nothing" if written.discarded else "")
        what = f"{written.rows} parameter rows to {output} ({written.refitted} refitted{kept})"
        con.print(plain(f"dry run: nothing written; it would write {what}" if dry_run else
                        f"wrote {what}{_in_use_hint(output, params.path_in_use(), 'PTO_COST_PARAMS')}"))
        for held in written.held:
            con.print(plain(f"note: {held['message']}"))
        if written.dropped:
            con.print(plain(f"note: {written.dropped_note()}"))
        if written.old_forms:
            con.print(plain(f"note: {written.old_forms_note()}"))
        for moved in written.moved:
            con.print(plain(f"note: {moved}"))
        if run.pipeline is None and any(r.arch == "a5" for r in run.rows):
            con.print(plain("note: A5 ops without formula parameters (reductions, TRSQRT, ...) are priced by the "
                            "pipeline model, whose parameters a formula fit leaves as they are (anchored ones move "
                            "with the measured ops they average): `fit --model all` refits both"))
    if dry_run:
        if run.pipeline is not None and pipeline_output:
            con.print(plain(f"dry run: nothing written; it would write the A5 pipeline parameters to {pipeline_output}"))
        elif not (run.rows and written):
            con.print("dry run: nothing written")
        return
    if pipeline_output and run.pipeline is not None:
        con.print(plain(f"wrote the A5 pipeline parameters to {pipeline_output}"
                        f"{_in_use_hint(pipeline_output, a5_pipeline_uarch.path_in_use(), 'PTO_COST_PIPELINE_PARAMS')}"))


def _in_use_hint(output: str, in_use: str, env: str) -> str:
    """Return '' when `output` is the file the models read (`in_use`), else how to make them read it."""
    target, read = Path(output).resolve(), Path(in_use).resolve()
    if target == read:
        return ""
    return f" (the models read {read}; use this one with {env}={target})"
