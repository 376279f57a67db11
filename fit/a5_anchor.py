"""The table values a partial trace's A5 smooth fit pulls its shared terms toward.

Every A5 op in the smooth form reads the same dispatch bound per 1D/2D shape of loop (d0..d3 and the loop-form
offsets), the same sharpness q and the same address bound (fit/a5_smooth_fit.py). A trace of one op observes them
on its own few shapes only, and so it does the body it shares with the ops doing the same work per chunk (TADD's is
TSUB's and TMUL's). Fitted freely from the very rows the table was fitted from, they moved TMINS f32 64x64
(2D, 64 rows of one chunk, where the TMINS rows have at most 20) by 32 % and TEXP f32 by 13 %: the per-row dispatch
term, which those rows hardly see, went where the solver left it. Where the trace observed a group of them on fewer
rows than the table's fit did, the fit pulls that group toward the table's values (a prior: PENALTY "anchor"), so
what the trace does not pin stays where the table's fit put it, and what it does pin follows it. Held fixed instead,
a trace of TMINS measured 15 % faster could not go below the table's dispatch bound (8.9 % CV MAPE against 1.3 %).
A shared body observed on fewer rows than the table's is pulled toward the table's the same way: the op's own
deviation from it (fit/a5_smooth_fit.py MEMBER_TERMS) and what its rows pin are the trace's.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from costmodel.models.a5_formula import A_TERMS, ADDRESS_FORM, D_TERMS, P_TERMS
from costmodel.models.params import ParamRow

from .a5_smooth_fit import BODY_TERMS, LOWER, OFFSET_PRIOR, UPPER, readable

SMOOTH_SHARED = (*D_TERMS, "q")  # the dispatch terms and q every smooth-form key row carries


@dataclass(frozen=True)
class TableShared:
    """The shared smooth-form values of a table: per loop form (d0..d3, q) and the rows its fit observed in that form;
    the address bound (a0 with its form's offset, al, as) and the rows it was fitted on; per shared body (its
    a5_smooth_fit `body_of` name) its coefficients per loop form and rows; `source`, the table's name."""

    dispatch: dict[str, tuple[float, ...]]
    observed: dict[str, int]
    address: dict[str, float]
    address_obs: int
    source: str = ""
    bodies: dict[str, tuple[dict[str, dict[str, float]], int]] = field(default_factory=dict)


def table_shared(rows: list[ParamRow], source: str = "") -> TableShared:
    """Return the shared smooth-form values of a table's A5 rows: per loop form the (d0..d3, q) carried by the op
    keys of most observations (keys a partial refit wrote carry their own), the rows observed per form and of the
    address bound as its shared `dispatch` rows record them."""
    carried: dict[tuple, dict[str, float]] = {}
    n_of: dict[tuple, int] = {}
    observed, address, address_obs = {}, {}, 0
    bodies: dict[str, tuple[dict[str, dict[str, float]], int]] = {}
    for r in rows:
        if r.arch != "a5" or r.form != "vf":
            continue
        if r.scope == "body" and r.term in P_TERMS:
            forms, _ = bodies.setdefault("|".join([r.name, r.dtype, r.dst_dtype]), ({}, r.n_obs))
            forms.setdefault(r.strategy, {})[r.term] = r.value
        if r.scope == "op" and r.term in SMOOTH_SHARED:
            group = (r.name, r.dtype, r.dst_dtype, r.op_params, r.strategy)
            carried.setdefault(group, {})[r.term] = r.value
            n_of[group] = r.n_obs
        elif r.scope == "dispatch" and r.term == "d0":
            observed[r.strategy] = r.n_obs
        elif r.scope == "dispatch" and r.term in A_TERMS and r.strategy == ADDRESS_FORM:
            address[r.term], address_obs = r.value, r.n_obs
    votes: dict[str, Counter] = {}
    for group, values in carried.items():
        if len(values) == len(SMOOTH_SHARED):
            votes.setdefault(group[-1], Counter())[tuple(values[t] for t in SMOOTH_SHARED)] += n_of[group]
    # the most observed values; ties to the smallest, whatever the table's row order
    dispatch = {s: max(sorted(v.items()), key=lambda kv: kv[1])[0] for s, v in votes.items()}
    return TableShared(dispatch, observed, address if len(address) == len(A_TERMS) else {}, address_obs, source,
                       bodies)


def anchor_values(table: TableShared, strategies: np.ndarray, addressed: int,
                  bodies: Counter | None = None) -> tuple[dict[str, float], list[str]]:
    """Return ({smooth-fit parameter name: the table's value}, what is anchored and why) for a trace whose fitted rows
    have loop forms `strategies`, of which `addressed` price the address bound, and whose rows measure `bodies`
    ({`body_of` name: rows}): per 1D/2D shape the dispatch terms and offsets of its loop forms where the trace has
    fewer rows of that shape than the table's fit; q where it has fewer rows in all; the address bound where fewer
    rows price it; a shared body's start and per-chunk, per-row and multi-chunk terms where fewer rows measure it."""
    anchor: dict[str, float] = {}
    said: list[str] = []
    measured = Counter(str(s) for s in strategies)
    n_trace = sum(measured.values())
    for dim in ("1d", "2d"):
        forms = sorted(s for s in table.dispatch if s[:2] == dim)
        here = sum(n for s, n in measured.items() if s[:2] == dim)
        there = sum(table.observed.get(s, 0) for s in forms)
        if not forms or not here or here >= there:
            continue
        ref = table.dispatch[forms[0]]
        d0 = float(np.clip(ref[0] - OFFSET_PRIOR[forms[0]], LOWER["d0"], UPPER["d0"]))
        anchor[f"d0|{dim}"] = d0
        anchor.update({f"{t}|{dim}": float(np.clip(v, LOWER[t], UPPER[t])) for t, v in zip(D_TERMS[1:], ref[1:4])})
        anchor.update({f"off|{s}": float(np.clip(table.dispatch[s][0] - d0, LOWER["off"], UPPER["off"]))
                       for s in forms})
        said.append(f"the {dim.upper()} dispatch bound and loop-form offsets ({here} rows here, {there} there)")
    there = sum(table.observed.values())
    if table.dispatch and n_trace < there:
        q = Counter(v[-1] for v in table.dispatch.values()).most_common(1)[0][0]
        anchor["lq"] = float(np.log(q))
        said.append(f"the sharpness q ({n_trace} rows here, {there} there)")
    if table.address and addressed and addressed < table.address_obs:
        off = anchor.get(f"off|{ADDRESS_FORM}", OFFSET_PRIOR[ADDRESS_FORM])
        anchor.update(a0=table.address["a0"] - off, al=table.address["al"], **{"as": table.address["as"]})
        said.append(f"the address bound ({addressed} rows here, {table.address_obs} there)")
    named = []
    for body, here in sorted((bodies or {}).items()):
        forms, there = table.bodies.get(body, ({}, 0))
        if not forms or here >= there:
            continue
        ref = min(forms, key=lambda s: (f"off|{s}" not in anchor, s))  # a form whose offset is anchored too
        anchor[f"a|{body}"] = forms[ref]["p0"] - anchor.get(f"off|{ref}", OFFSET_PRIOR[ref])
        for s, values in forms.items():  # 1D forms carry p0, p1, p5; 2D forms p0..p4
            anchor.update({f"{t}|{body}": values[p] for t, p in zip(BODY_TERMS[1:5], P_TERMS[1:5]) if p in values})
        named.append(f"{readable(body)} ({here} rows here, {there} there)")
    if named:
        said.append(f"the shared bod{'ies' if len(named) > 1 else 'y'} {', '.join(named)}")
    return anchor, said
