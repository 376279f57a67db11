"""Views over one A5 pipeline simulation: timeline, critical-path breakdown, bottleneck report.

They read a `Trace` (and a `PipelineResult`) and never change the simulation. Each view offers `to_text()` and
`to_dict()`.

Timeline (like llvm-mca's): one line per dynamic instruction, columns = cycles.

    [it]   dispatch  issue   done  why        0123456789012345678901234567890
    [0]        23.0   23.0   24.0  dispatched .......................DE
    [0]        23.2   23.2   29.2  dispatched .......................Deeeeee
    ...

`D` dispatch, `=` waiting to issue, `e` executing (issue .. done), `E` done. Times are rounded down to whole
cycles for the chart; the columns carry the exact (possibly fractional) stamps.
"""
from __future__ import annotations

import functools
import math
import textwrap
from dataclasses import dataclass

from ..wording import counted
from .a5_pipeline_engine import Template, Trace

# critical-path segment categories -> breakdown term
_TERM = {"dispatched": "frontend", "dispatch": "frontend", "loop_entry": "loop_overhead", "iter_gap": "loop_overhead",
         "window": "window", "operand": "latency", "pack_store": "pack_store", "exu": "exu_ports", "load": "load_ports",
         "store": "store_port", "agu": "agu", "scalar": "scalar_unit", "pred": "pred_unit", "start": "frontend"}
TERMS = ("startup", "frontend", "loop_overhead", "window", "latency", "exu_ports", "load_ports", "store_port", "agu",
         "scalar_unit", "pred_unit", "pack_store", "drain")


# what each breakdown term is the time of, in the words of the stall legend
_TERM_MEANING = {"frontend": "the front end's width", "loop_overhead": "loop entries and iteration gaps",
                 "window": "the issue window full", "latency": "instructions waiting for a source to be computed",
                 "exu_ports": "the vector ports busy", "load_ports": "the load ports busy", "store_port": "the store port busy",
                 "agu": "address generation", "pack_store": "store order"}

CHART_COLUMNS = 160  # the timeline chart's width; a longer span puts several cycles in a column
STALL_LEGEND = ("start (VF start), dispatch (the front end's width), loop_entry / iter_gap (loop overhead), window "
                "(issue window full), operand (a source not ready: latency), exu / load / store / agu / scalar / pred "
                "(that unit busy), pack_store (store order)")


def critical_path(tr: Trace) -> dict[str, float]:
    """Split the simulated cycles along the critical path into named terms that sum to the total.

    Walks back from the last-finishing instruction: each issue stamp was bound by its dispatch, an operand
    (latency), a busy port or a store-order hazard; each dispatch by the front end (width, loop bubbles,
    iteration gaps) or the window. Every step's time difference is charged to that cause.
    """
    terms = dict.fromkeys(TERMS, 0.0)
    terms["startup"] = tr.startup
    terms["drain"] = tr.drain
    if not len(tr):
        terms["frontend"] = tr.end - tr.startup - tr.drain
        return terms
    last = max(range(len(tr)), key=lambda k: (tr.done[k], k))
    terms["latency"] += tr.done[last] - tr.issue[last] - tr.hold[last]
    terms["pack_store"] += tr.hold[last]
    node, point = last, "i"
    guard = 0
    while node >= 0 and guard < 10 * len(tr) + 10:
        guard += 1
        if point == "i":
            t, why, by, at = tr.issue[node], tr.why_issue[node], tr.by_issue[node], tr.at_issue[node]
        elif point == "a":
            t, why, by, at = tr.agu[node], "agu", tr.by_agu[node], tr.at_agu[node]
        else:
            t, why, by, at = tr.dispatch[node], tr.why_dispatch[node], tr.by_dispatch[node], tr.at_dispatch[node]
        if by < 0 or (by == node and at == point):
            terms[_TERM.get(why, "frontend")] += t - tr.startup
            break
        prev = {"i": tr.issue, "a": tr.agu, "d": tr.dispatch}[at][by]
        terms[_TERM.get(why, "frontend")] += t - prev
        node, point = by, at
    return terms


@dataclass(frozen=True)
class Timeline:
    """The timeline view of a recorded simulation (first `max_iterations` iterations of each loop shown)."""

    template: Template
    trace: Trace
    max_iterations: int = 2
    max_lines: int = 200

    @functools.cached_property
    def enclosing(self) -> dict[int, tuple[int, ...]]:
        """The loops around each static instruction, outermost first (an instruction of a row loop before its chunk
        loop is not inside the chunk loop, whose counter still holds the previous row's last value)."""
        out: dict[int, tuple[int, ...]] = {}

        def walk(body, loops: tuple[int, ...]) -> None:
            for node in body:
                if node[0] == "i":
                    out[node[1]] = loops
                else:
                    walk(node[2], (*loops, node[1]))

        walk(self.template.body, ())
        return out

    def rows(self) -> list[dict]:
        """Return the shown dynamic instructions: their iteration of each enclosing loop, unit, times and stall."""
        tr, out = self.trace, []
        for k in range(len(tr)):
            its = [tr.iters[k][lp] for lp in self.enclosing[tr.static[k]]]
            if any(i >= self.max_iterations for i in its):
                continue
            ins = self.template.instrs[tr.static[k]]
            out.append({"index": k, "iterations": its, "instruction": ins.text.strip(),
                        "unit": tr.port[k], "dispatch": tr.dispatch[k], "issue": tr.issue[k], "done": tr.done[k],
                        "stall": tr.why_issue[k] if tr.why_issue[k] != "dispatched" else tr.why_dispatch[k]})
            if len(out) >= self.max_lines:
                break
        return out

    def to_dict(self) -> dict:
        rows = self.rows()
        return {"schema_version": 1, "view": "timeline", "cycles": self.trace.end, "rows": rows,
                "dynamic_instructions": len(self.trace), "not_shown": len(self.trace) - len(rows),
                "iterations_shown": self.max_iterations}

    def to_chrome(self) -> dict:
        """Return the shown instructions as a Chrome trace-event document (chrome://tracing, ui.perfetto.dev): one
        event per dynamic instruction from issue to done, on its unit's track; a pipelined unit with several
        instructions in flight gets one track per lane (`load0`, `load0 #2`, ...), as the viewers need a track's
        events to nest. The wait since dispatch is in `args`. Trace time is cycles (the viewers' microseconds)."""
        rows = sorted(Timeline(self.template, self.trace, self.max_iterations, max_lines=len(self.trace)).rows(),
                      key=lambda r: (r["issue"], r["index"]))
        lanes: dict[str, list[float]] = {}  # unit -> the time each of its lanes is free again
        tracks: dict[tuple[str, int], int] = {}
        events = []
        for r in rows:
            free = lanes.setdefault(r["unit"], [])
            lane = next((k for k, t in enumerate(free) if t <= r["issue"]), len(free))
            if lane == len(free):
                free.append(0.0)
            free[lane] = r["done"]
            tid = tracks.setdefault((r["unit"], lane), len(tracks))
            events.append({"ph": "X", "name": r["instruction"].split(";")[0].strip(), "cat": r["stall"], "pid": 0,
                           "tid": tid, "ts": r["issue"], "dur": r["done"] - r["issue"],
                           "args": {"iterations": r["iterations"], "dispatch": r["dispatch"], "stall": r["stall"],
                                    "instruction": r["instruction"]}})
        meta = [{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "A5 VF pipeline (1 us = 1 cycle)"}}]
        meta += [{"ph": "M", "name": "thread_name", "pid": 0, "tid": tid,
                  "args": {"name": unit if lane == 0 else f"{unit} #{lane + 1}"}}
                 for (unit, lane), tid in sorted(tracks.items(), key=lambda kv: kv[0])]
        meta += [{"ph": "M", "name": "thread_sort_index", "pid": 0, "tid": tid, "args": {"sort_index": k}}
                 for k, ((unit, lane), tid) in enumerate(sorted(tracks.items(), key=lambda kv: kv[0]))]
        return {"traceEvents": meta + events,
                "otherData": {"cycles": self.trace.end, "startup": self.trace.startup, "drain": self.trace.drain,
                              "iterations_shown": self.max_iterations}}

    def to_text(self) -> str:
        rows = self.rows()
        if not rows:
            return "(no instruction issued)"
        t0 = int(math.floor(min(r["dispatch"] for r in rows)))
        t1 = int(math.ceil(max(r["done"] for r in rows)))
        step = max(1, math.ceil((t1 - t0 + 1) / CHART_COLUMNS))  # cycles per column: every row's marks fit
        width = math.ceil((t1 - t0 + 1) / step)
        head = f"{'[iters]':<10}{'dispatch':>9}{'issue':>8}{'done':>8}  {'bound by':<12}{'unit':<7}"
        per = "one cycle" if step == 1 else f"{step} cycles"
        lines = [f"timeline from cycle {t0} to {t1} (each column {per}; D dispatch, = wait, e execute, E done, "
                 "* all in one column)",
                 *textwrap.wrap(f"bound by: what set the issue time: {STALL_LEGEND}", 110,
                                subsequent_indent="  "),
                 f"{'':<{len(head)}}{_cycle_labels(t0, step, width)}  cycle",
                 f"{head}{_ruler(t0, step, width)}  instruction"]
        for r in rows:
            d, i, e = ((int(math.floor(r[x])) - t0) // step for x in ("dispatch", "issue", "done"))
            chart = ["."] * width
            for c in range(max(d, 0), min(i, width)):
                chart[c] = "="
            for c in range(max(i, 0), min(e, width)):
                chart[c] = "e"
            if 0 <= e < width:
                chart[e] = "E"
            if 0 <= d < width:
                chart[d] = "*" if d == e else "D"
            it = ",".join(str(x) for x in r["iterations"]) or "-"
            lines.append(f"{'[' + it + ']':<10}{r['dispatch']:>9.2f}{r['issue']:>8.2f}{r['done']:>8.2f}  "
                         f"{r['stall']:<12}{r['unit']:<7}{''.join(chart)}  {r['instruction']}")
        shown = len(rows)
        if shown < len(self.trace):
            cap = f", and at most {self.max_lines} rows" if shown >= self.max_lines else ""
            lines.append(f"... {len(self.trace) - shown} more dynamic instructions not shown "
                         f"(first {counted(self.max_iterations, 'iteration')} of each "
                         f"loop{cap})")
        else:
            most = max((i for r in rows for i in r["iterations"]), default=-1) + 1
            if most and most < self.max_iterations:
                lines.append(f"every simulated instruction is shown: the loops ran at most {most} iteration"
                             f"{'s' if most > 1 else ''} in this simulation, fewer than the {self.max_iterations} "
                             "asked for")
        lines.append(f"the recorded trace these rows come from ends at cycle {self.trace.end:.2f} (its last done + drain "
                     f"{self.trace.drain:g})")
        return "\n".join(lines)


def _cycle_labels(t0: int, step: int, width: int) -> str:
    """Return the chart's cycle numbers, each written from a column of the ruler's `|` marks on (one every ten
    columns, where it fits before the next)."""
    out = [" "] * width
    for c in range(0, width, 10):
        label = str(t0 + c * step)
        if c + len(label) <= width:
            out[c:c + len(label)] = label
    return "".join(out)


def _ruler(t0: int, step: int, width: int) -> str:
    """Return the chart's ruler: `|` at every tenth column (where `_cycle_labels` writes the cycle), else the unit
    digit of the column's cycle when a column is one cycle, `-` when it is several."""
    return "".join("|" if c % 10 == 0 else str((t0 + c) % 10) if step == 1 else "-" for c in range(width))


@dataclass(frozen=True)
class BottleneckView:
    """Named bounds next to the simulated cycles; bounds reaching >= 98 % of it are the bottleneck."""

    cycles: float
    bounds: tuple[tuple[str, float], ...]
    bottleneck: tuple[str, ...]
    breakdown: tuple[tuple[str, float], ...] = ()  # the critical-path terms, named where no bound explains the cycles

    def to_dict(self) -> dict:
        return {"schema_version": 1, "view": "bottleneck", "cycles": self.cycles, "bounds": dict(self.bounds),
                "bottleneck": list(self.bottleneck)}

    def to_text(self) -> str:
        lines = [f"pipeline simulation {self.cycles:.2f} cycles at the full trip counts; bounds (the cycles each "
                 "limit alone would take; >= 98 % of the simulation = bottleneck):"]
        for name, v in sorted(self.bounds, key=lambda kv: -kv[1]):
            mark = "  <- bottleneck" if name in self.bottleneck else ""
            share = v / self.cycles * 100 if self.cycles else 0.0
            lines.append(f"  {name:<14}{v:>10.2f}  {share:5.1f} %{mark}")
        if not self.bottleneck:
            lines.append("  no single bound within 98 %: latency and throughput limits interact")
            term, v = max(self.breakdown, key=lambda kv: kv[1], default=("", 0.0))
            if term and self.cycles:
                why = _TERM_MEANING.get(term, "")
                lines.append(f"  along the critical path, {term}{f' ({why})' if why else ''} takes {v / self.cycles * 100:.1f} % "
                             "of the cycles, the largest share (`estimate --model pipeline` gives every term)")
        return "\n".join(lines)
