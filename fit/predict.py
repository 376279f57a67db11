"""Predict cycles for every row of a trace-shaped frame; a row that cannot be modelled gets NaN and a reason."""
from __future__ import annotations

import numpy as np
import pandas as pd

from costmodel.errors import PtoCostError
from costmodel.grid import MAX_COUNT

from .traces import (LINE, cell_text, check_trace, extra_note, normalise_trace, request_kwargs, trace_request,
                     trace_wording)


def predict_frame(df: pd.DataFrame, *, model: str = "auto", progress=None,
                  tolerance: float | None = None) -> pd.DataFrame:
    """Return `df` (normalised as `read_trace` does) plus `predicted_cycles`, `strategy`, `model` and `note`
    columns (never raises per row); `progress(done, total)` is called as rows are priced."""
    from costmodel import lower
    from costmodel.models.auto import cycles_of
    from costmodel.sweep import Models

    models = Models(model)  # one instance per arch for all rows: the pipeline's simulations are shared

    df = normalise_trace(df)
    good, problems = check_trace(df, require_measured=False, tolerance=tolerance)
    # a row's measured_cycles problem, then its first other one (later ones can be echoes of it: a valid_rows
    # defaulted from a bad rows)
    measured_notes: dict = {}
    first: dict = {}
    for p in problems:
        if p.column == "measured_cycles":
            measured_notes.setdefault(p.line, []).append(f"{p.column}: {p.message}")
        else:
            first.setdefault(p.line, f"{p.column}: {p.message}")
    notes = {line: "; ".join([*measured_notes.get(line, []), *([first[line]] if line in first else [])])
             for line in {*measured_notes, *first}}
    out = df.copy()
    pred = np.full(len(out), np.nan)
    # a row that is not priced keeps the strategy it named (a second predict of the output asks it again)
    strat = (out["strategy"].astype(object).to_numpy(copy=True) if "strategy" in out
             else np.array([""] * len(out), dtype=object))
    used = np.array([""] * len(out), dtype=object)
    note = np.array([""] * len(out), dtype=object)
    pos = {line: i for i, line in enumerate(out[LINE])}
    for line, msg in notes.items():
        note[pos[line]] = msg
    cache: dict[tuple, tuple] = {}
    for done, row in enumerate(good.to_dict("records")):  # dicts: a Series lookup per cell cost half the time
        if progress is not None:
            progress(done, len(good))
        i = pos[row[LINE]]
        measured = note[i]  # the row's measured_cycles problem, if any: predicting does not read it
        try:
            kw = request_kwargs(row)
            unread = extra_note(row)
        except PtoCostError as exc:
            note[i] = "; ".join(x for x in (measured, trace_wording(str(exc))) if x)
            continue
        # a measured row that overflows the unified buffer ran in place (trace_request); an unmeasured one is as given
        key = (tuple(sorted((k, str(v)) for k, v in kw.items())), cell_text(row.get("measured_cycles", "")) != "")
        if key not in cache:
            try:
                req, how = trace_request(row, kw)
                strategy = lower.resolve_strategy(req)[0]
                plan = lower.lower(req, strategy)
                m = models.get(req.arch)
                price = cycles_of(m, plan)
                caveat = getattr(m, "source_note", "")  # the model's caveats, as `estimate` notes them
                cache[key] = (price, strategy, m.name, "; ".join(x for x in (how, caveat) if x))
            except PtoCostError as exc:
                cache[key] = (np.nan, _spelled(kw), "", trace_wording(str(exc)))
            except Exception as exc:  # a bulk path never aborts on one row
                cache[key] = (np.nan, "", "", f"internal error: {type(exc).__name__}: {exc}")
        got, strategy, used[i], why = cache[key]
        pred[i] = got
        if strategy:
            strat[i] = strategy
        note[i] = "; ".join(x for x in (measured, why, unread if got == got else "") if x)  # its own problem first
    if progress is not None:
        progress(len(good), len(good))
    # a refused `default` is blank, as a sweep leaves it, whatever refused it (the trace check, the request, the
    # model); `all`, which predict does not read, stays as named
    unpriced_default = np.isnan(pred) & np.array([str(v).strip().lower() == "default" for v in strat], dtype=bool)
    strat[unpriced_default] = ""
    for col in ("rows", "cols", "valid_rows", "valid_cols"):  # read as text to be checked; numbers again when all are
        num = pd.to_numeric(out[col], errors="coerce")
        if num.notna().all() and (num == num.round()).all() and (num.abs() <= MAX_COUNT).all():
            out[col] = num.astype(np.int64)
    out["predicted_cycles"] = pred
    out["strategy"] = strat
    out["model"] = used
    out["note"] = note
    # rows whose measured_cycles is wrong or conflicts with a duplicate's: priced, but nothing to score against
    out.attrs["measured_problems"] = sorted({p.line for p in problems if p.column == "measured_cycles"})
    out.attrs["measured_notes"] = {line: "; ".join(msgs) for line, msgs in measured_notes.items()}
    return out


def _spelled(kw: dict) -> str:
    """The strategy a refused row names, as its op spells it: matched among the op's strategies at the
    representative shape, as a sweep matches it; "" where the row names none the op has there."""
    from costmodel import lower
    from costmodel.operands import make_request
    from costmodel.vector import representative

    try:
        return lower.spelled(representative(lambda r, c, vr, vc: make_request(**{**kw, "shape": (r, c),
                                                                                  "valid": (vr, vc)})))
    except PtoCostError:
        return ""
