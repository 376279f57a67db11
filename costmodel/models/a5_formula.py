"""A5 formula model: a closed form over the VF plan's trip counts (costmodel.md §3 generalised).

With C the chunks a program executes, R its rows, m = 1 for 2D programs whose rows hold two or more chunks
and s = 1 for 2D programs whose rows hold one chunk, f = 1 for a 1D program of one chunk (`features`):

    cycles = max(D, P), or the smooth maximum (D^q + P^q)^(1/q) for keys fitted in that form
    D = d0 + d1·C + d2·R·s + d3·R·m            dispatch bound, one per loop form (shared by every op)
    P = p0 + p1·C + p2·R·s + p3·R·m + p4·C·m + p5·f   resource bound, per (op, dtype, dst dtype, strategy, variant)

D is the cost of issuing the loop nest (about one chunk per cycle plus a row overhead when rows hold several
chunks); P is what the body's resources make it cost. Rows of one chunk have their own row term because they
run as a flat loop (costmodel.md §8: single-iteration inner loops are canonicalised away; measured 2D programs of
one-chunk rows cost the op's 1D per-iteration slope per row — TEXP fp16 3.6, fp32->fp8 12 — not the 7 cycles
a row of several chunks adds), so a key measured only on multi-chunk rows does not charge that overhead to
one-chunk rows. The upstream `linear` and `nested_loop` forms are the special cases p2 = p3 = p4 = 0 and
p2 = p3, p4 = 0; the m terms also carry the measured step of narrowing conversions between one and several
chunks per row (costmodel.md §11, §13). A 1D program of one chunk is a flat program too (its loop is
canonicalised away, §8) and f prices its difference from the loop's trend — measured for widening conversions:
bf16->fp32 1x64 costs 81 cycles, more than at 1x640 (65), fp8->fp32 1x64 92 against 88 at 1x320.

In 2D no-post-update programs every access computes its address from the row and chunk indices (costmodel.md §7),
and a third bound competes with the two: A = a0 + (al·loads + as·stores)·C over the chunk loop's explicit loads and
stores (`address_counts`), with a0, al and as shared by every op (`scope=dispatch` rows of that loop form). Measured:
TADD, TSUB and TMUL (two loads) cost 2.07 cycles a chunk in that form at 400 chunks, TMINS and TNEG (one load) about
1.2, while in 1D post-update the same bodies cost 1.2-1.3 and 1.0; the fit puts al near 1 and as near 0. It applies
to keys fitted in the smooth form.

Parameters live in data/formula_params.csv: `scope=dispatch` rows (per strategy) and `scope=op` rows (per key; a
key fitted in the smooth form, see fit/a5_smooth_fit.py, carries its own d0..d3 and q), plus `scope=family` rows
the fit writes for keys it never saw (same op and variant, per loop form) and `scope=body` rows for ops it never
saw (the body shared by measured ops that do the same work per chunk, named by the chunk's signature). A key with
none of them has no formula estimate; the `auto` model then falls back to the pipeline model.
"""
from __future__ import annotations

import math
import re

import numpy as np

from ..dtypes import all_dtypes
from ..errors import NotModelledError
from ..isa_a5 import VfProgram
from ..lower.a5.dispatch import SELECTS, select_variant
from ..lower.a5.reduce import REDUCE_FAMILIES
from ..plan import Plan
from ..request import Request
from . import provenance
from .a5_features import body_signature, vf_trips
from ..wording import counted
from .params import ParamTable, shipped

P_TERMS = ("p0", "p1", "p2", "p3", "p4", "p5")
TERMS = {"1d": ("p0", "p1", "p5"), "2d": ("p0", "p1", "p2", "p3", "p4")}  # the P terms a 1D/2D program has
D_TERMS = ("d0", "d1", "d2", "d3")
D_FEATURE = {"d0": "p0", "d1": "p1", "d2": "p2", "d3": "p3"}  # the feature each dispatch term multiplies
A_TERMS = ("a0", "al", "as")  # the address bound's start and cost per explicit load / store and chunk
OWN_ADDRESS_TERMS = ("a0", "ac")  # a key's own copy of its address bound: start, cost per chunk of its accesses
ADDRESS_FORM = "2d-no-post-update"  # the loop form whose accesses all compute their address (costmodel.md §7)
# how the breakdown names each term of the binding bound
ROLE = {"p0": "startup", "d0": "startup", "p1": "iterations", "p4": "iterations", "d1": "iterations",
        "p2": "rows", "p3": "rows", "d2": "rows", "d3": "rows", "p5": "flat_program", "a0": "startup",
        "ac": "addresses"}
BITS = {d.name: d.bits for d in all_dtypes()}  # element width by canonical name (data/dtypes.csv)


# why the formula (and its fit) leaves the reductions out: its features are the trips of one elementwise nest
NOT_ELEMENTWISE = ("the A5 formula is a closed form over elementwise loop nests, and a reduction folds its chunks into "
                   "an accumulator")


def key_of(req: Request, strategy: str) -> dict[str, str]:
    """Return the parameter key of a request: op, dtype, dst_dtype (conversions), strategy, op_params (variant)."""
    src = req.tile("src").dtype.name if any(n == "src" for n, _ in req.tiles) else req.dtype.name
    dst = req.dst.dtype.name
    return {"name": req.op, "dtype": src, "dst_dtype": dst if dst != src else "",
            "strategy": strategy, "op_params": select_variant(req, strategy) or str(req.param("precision", "") or "")}


def _family_note(key: dict[str, str], types: str, variant: str, row) -> str:
    """Say how a key no row measured is priced by its family's parameters (`family_of`): another dtype of the same op
    (the one the family's rows were fitted on, where the row's source names it), a conversion of the same widths, or
    another op's programs it runs."""
    family, name = family_of(key), key["name"]
    if name == "TCVT":
        return f"formula parameters of the family {family} ({types} was not measured)"
    if family == name or family.startswith(f"{name}:"):
        measured = family_body_dtype(row.source) if row is not None else ""
        of = f"{name} {measured}{variant}" if measured else f"the family {family}"
        return f"{name} {types}{variant} was not measured: priced by the formula of {of} (extrapolated across dtypes)"
    if row is not None and row.scope == "op":  # another op's own rows (`_sources_of`: TSELS prices as TSEL)
        return (f"{name} was not measured: priced by the formula of {row.name} {types}{variant} (inferred: it runs "
                f"{row.name}'s programs)")
    return (f"{name} was not measured: formula parameters of the family {family} (inferred: it runs that family's "
            "programs)")


FAMILY_BODY = "; smooth-form body of {dtype} (the family's most measured)"  # how a family row names its dtype


def family_body_source(source: str, dtype: str) -> str:
    """Return a family row's source: the fit's `source` naming the dtype whose body the row copies."""
    return source + FAMILY_BODY.format(dtype=dtype)


def family_body_dtype(source: str) -> str:
    """Return the dtype a family row's source (`family_body_source`) says its body was fitted on, or ''."""
    head, tail = FAMILY_BODY.split("{dtype}")
    m = re.search(re.escape(head) + r"(\S+)" + re.escape(tail), source or "")
    return m.group(1) if m else ""


def family_of(key: dict[str, str]) -> str:
    """Return the key's family: the op and variant; conversions by source and destination widths; selects by the
    mask variant (costmodel.md §3 step 6: fp32 uses the TSel_b32 programs, fp16 and int8 share TSel_b16_8)."""
    if key["name"] == "TCVT":
        return f"TCVT:{BITS.get(key['dtype'], 0)}>{BITS.get(key['dst_dtype'] or key['dtype'], 0)}"
    if key["name"] in SELECTS:  # TSELS runs TSEL's select programs (inferred): it is priced as their family
        return "TSEL:b32" if BITS.get(key["dtype"], 0) >= 32 else "TSEL:b16_8"
    return f"{key['name']}:{key['op_params']}" if key["op_params"] else key["name"]


def features(C, R, dim, flat=False) -> dict[str, np.ndarray]:
    """Return the P features for arrays of chunks and rows; `dim` is "1d"/"2d" or an array of them (1D programs
    have no row terms); `flat` marks 2D programs whose chunk loop runs at most once per row although a row holds
    two chunks (post-update: one full chunk and the tail chunk issued after the loop, a5_features.VfTrips.flat)."""
    C = np.asarray(C, dtype=float)
    R = np.asarray(R, dtype=float)
    two = (np.asarray(dim) == "2d").astype(float)
    m = ((C >= 2 * R) & (two > 0) & ~np.asarray(flat, dtype=bool)).astype(float)
    # rows of one chunk run as a flat loop (VfSim canonicalises single-iteration inner loops, costmodel.md §8; the
    # measured per-row cost of such 2D programs equals the op's 1D per-iteration slope), so they get their own term;
    # so do rows whose chunk loop runs once before their tail chunk (no measured row has one: VfSim's rule)
    return {"p0": np.ones_like(C), "p1": C, "p2": R * (two - m), "p3": R * m, "p4": C * m,
            "p5": ((C <= 1) & (two == 0)).astype(float)}


def address_counts(sig: str, strategy: str) -> tuple[int, int]:
    """Return (loads, stores) of the chunk loop that compute their address from the loop indices: those of the body
    signature (a5_features.body_signature, "ld2 st1 ...") in the ADDRESS_FORM loop form, else none."""
    m = re.match(r"ld(\d+) st(\d+)", sig or "")
    return (int(m.group(1)), int(m.group(2))) if m and strategy == ADDRESS_FORM else (0, 0)


def address_terms(shared: dict[str, float], sig: str, strategy: str) -> dict[str, float]:
    """Return a program's address bound {"a0": start, "ac": cost per chunk} from the shared a0, al, as (al and as
    per explicit load and store), or {} where no bound was fitted or the program has no explicit addresses."""
    loads, stores = address_counts(sig, strategy)
    if "a0" not in shared or not loads + stores:
        return {}
    return {"a0": shared["a0"], "ac": shared.get("al", 0.0) * loads + shared.get("as", 0.0) * stores}


def lookup(table: ParamTable, key: dict[str, str], sig: str = "") -> tuple[dict[str, float], dict[str, float], str] | None:
    """Return (P coefficients, D coefficients, where P came from: "key", "family" or "body") for a key, or None if
    it has no parameters: the key's own rows, else its family's (an unmeasured dtype of a measured op), else —
    given the plan's `sig` (a5_features.body_signature) — the body that measured ops doing the same work per chunk
    share, on the key's dtype or on any (an op nobody measured: TADDS prices like TMINS and TNEG); `_sources_of`
    lists them. Rows fitted in the smooth form carry their own d0..d3 and q."""
    sources = [(src, *where) for src in ("key", "family", "body")[:3 if sig else 2]
               for where in _sources_of(key, sig, src)]
    for src, scope, name, fields in sources:
        p: dict[str, float] = {}
        own: dict[str, float] = {}
        for t in P_TERMS + D_TERMS + ("q",) + OWN_ADDRESS_TERMS:
            row = _exact_row(table, scope, name, t, key["strategy"], fields)
            if row is not None:
                (p if t in P_TERMS else own)[t] = row.value
        if p:
            break
    else:
        return None
    dispatch = {}
    for t in D_TERMS + A_TERMS:
        row = table.lookup("a5", "vf", "dispatch", "*", t, strategy=key["strategy"])
        if row is not None and (t in D_TERMS or row.strategy == key["strategy"]):
            dispatch[t] = row.value
    d = own or {t: dispatch.get(t, 0.0) for t in D_TERMS}
    if "q" in d and "ac" not in d:  # a key without its own copy of the address bound reads the shared one
        d = {**d, **address_terms(dispatch, sig, key["strategy"])}
    return p, d, src


def source_row(table: ParamTable, key: dict[str, str], sig: str, src: str, term: str = "p1"):
    """Return the row of `term` (by default the per-chunk p1: the row whose source, n and error describe them) of the
    parameters `lookup` found for a key from `src` ("key", "family" or "body"), or None."""
    for scope, name, fields in _sources_of(key, sig, src):
        row = _exact_row(table, scope, name, term, key["strategy"], fields)
        if row is not None:
            return row
    return None


def _sources_of(key: dict[str, str], sig: str, src: str) -> list[tuple[str, str, dict[str, str]]]:
    """Return the (scope, name, fields) of the rows that may price a key from `src`, in the order tried: its own op rows
    ("key"); its family's ("family"; for TSELS first TSEL's own rows of the key's type and mask program, whose select
    programs it runs (inferred): the TSEL family rows copy one program's body, and a 1D f32 TSELS took the odd
    program's 7.8 cycles a chunk, 2.7x TSEL's even one; QA 51); the shared body's ("body")."""
    types = {"dtype": key["dtype"], "dst_dtype": key["dst_dtype"]}
    if src == "key":
        return [("op", key["name"], {**types, "op_params": key["op_params"]})]
    if src == "body":
        return [("body", sig, types)]
    runs_tsel = key["name"] in SELECTS and key["name"] != "TSEL"
    return ([("op", "TSEL", {**types, "op_params": key["op_params"]})] if runs_tsel else []) + [
        ("family", family_of(key), {})]


def _exact_row(table: ParamTable, scope: str, name: str, term: str, strategy: str, fields: dict[str, str]):
    """Return the row of exactly this scope, name, loop form and fields, or None: a wildcard row of another
    scope's shape must not stand in for it (but a body shared across element types is written for dtype '*',
    fit/a5_smooth_fit.py DTYPE_FREE_SIGS)."""
    row = table.lookup("a5", "vf", scope, name, term, strategy=strategy, **fields)
    any_dtype = scope == "body" and row is not None and row.dtype == "*"
    if row is None or row.name != name or row.strategy != strategy or any(
            getattr(row, f) != v for f, v in fields.items() if not (any_dtype and f == "dtype")):
        return None
    return row


def held_out_error(table: ParamTable, key: dict[str, str]) -> tuple[float, int] | None:
    """Return (cross-validated MAPE %, measured rows) the fit recorded for a key's own parameters, or None (a key
    priced through its family or a shared body, or a table without the figure)."""
    row = _exact_row(table, "op", key["name"], "p1", key["strategy"],
                     {"dtype": key["dtype"], "dst_dtype": key["dst_dtype"], "op_params": key["op_params"]})
    if row is None or row.cv_mape is None or not row.n_obs:
        return None
    return row.cv_mape, row.n_obs


def _other_chunk_size(table: ParamTable, key: dict[str, str], plan: Plan) -> str:
    """Return a note when a conversion priced by its family walks chunks of another size than every measured pair
    of the family (costmodel.md §3 step 3 sets the elements per iteration per type pair), else ""."""
    from ..lower.a5.table import convert_rows

    fam, dim = family_of(key), key["strategy"][:2]
    pairs = sorted({(r.dtype, r.dst_dtype) for r in table.rows
                    if r.arch == "a5" and r.scope == "op" and r.name == "TCVT" and r.term == "p1"
                    and family_of({"name": "TCVT", "dtype": r.dtype, "dst_dtype": r.dst_dtype}) == fam})
    recipes = convert_rows()
    sizes = {getattr(recipes[p], f"epr_{dim}") for p in pairs if p in recipes}
    epr = next((p.epr for p in plan.body if isinstance(p, VfProgram)), None)
    if not sizes or epr is None or epr in sizes:
        return ""
    names = ", ".join(f"{a}->{b}" for a, b in pairs)
    return (f"the measured {fam} pairs ({names}) walk {'/'.join(map(str, sorted(sizes)))}-element chunks in {dim}, "
            f"this {key['dtype']}->{key['dst_dtype']} program {epr}-element ones (costmodel.md §3 step 3): their "
            "per-chunk and per-row costs are carried over to chunks of another size")


def extent_limits(table: ParamTable, key: dict[str, str], sig: str, src: str = "key") -> tuple[int, int, int] | None:
    """Return the most (chunks, rows, chunks a row) any measured row of the key (or of the body it shares, `src`
    "body") ran in its loop form, as the fit recorded them (None: no extent recorded)."""
    most = {term: source_row(table, key, sig, src, term) for term in ("max_chunks", "max_rows", "max_row_chunks")}
    if most["max_chunks"] is None or most["max_rows"] is None:
        return None
    chunks, rows = int(most["max_chunks"].value), int(most["max_rows"].value)
    return chunks, rows, int(most["max_row_chunks"].value) if most["max_row_chunks"] is not None else chunks


def measured_source(table: ParamTable, key: dict[str, str], sig: str, src: str
                    ) -> tuple[dict[str, str], str, str] | None:
    """Return (key, source, what to call them) of the measured rows the parameters `lookup` found for `key` from `src`
    were fitted on, so their extent bounds the price too: the key's own; for a family price, the op's dtype the
    family's body copies (`family_body_dtype`) or the other op whose own rows priced it (TSELS: TSEL's); for a body
    price, the measured ops that share it. None where no such rows are named (a conversion family)."""
    dst = "->" + key["dst_dtype"] if key["dst_dtype"] else ""
    if src == "key":
        return key, "key", f"{key['name']} {key['dtype']}{dst}"
    if src == "body":
        return key, "body", f"body {sig}"
    row = source_row(table, key, sig, src) if key["name"] != "TCVT" else None
    if row is None:
        return None
    if row.scope == "op":
        return {**key, "name": row.name}, "key", f"{row.name} {key['dtype']}{dst}"
    dtype = family_body_dtype(row.source)
    family = family_of(key)
    if not dtype or not (family == key["name"] or family.startswith(key["name"] + ":")):
        return None
    return {**key, "dtype": dtype}, "key", f"{key['name']} {dtype}{dst}"


def measured_forms(row) -> re.Match | None:
    """Return the match naming the loop forms a key's body was measured in (group 1), where the row of its
    parameters (`source_row`) says it was measured in other forms only; None where it was measured in its own."""
    return re.search(r"body measured in (.+?) only", row.source) if row is not None else None


def price_limits(table: ParamTable, key: dict[str, str], sig: str, src: str) -> tuple[int, int, int] | None:
    """Return the extent (`extent_limits`) a formula price of `key` from `src` holds within: that of the measured rows
    its parameters came from (`measured_source`); (0, 0, 0), which every program passes, where its key was measured
    in other loop forms only (a 1D extent is recorded for both 1D forms, measured in one); None where none is
    recorded."""
    measured = measured_source(table, key, sig, src)
    if measured is None:
        return None
    if measured[1] == "key" and measured_forms(source_row(table, measured[0], sig, "key")):
        return 0, 0, 0  # the formula's own note: "measured in ... only: ... extrapolated from that body"
    return extent_limits(table, measured[0], sig, measured[1])


def formula_beyond(table: ParamTable, req, plan) -> bool:
    """Whether the formula price of a plan is extrapolated: it runs beyond the extent its parameters hold within
    (`price_limits`)."""
    from .a5_features import body_signature, vf_trips

    key, sig = key_of(req, plan.strategy), body_signature(plan)
    found = lookup(table, key, sig)
    limits = price_limits(table, key, sig, found[2]) if found is not None else None
    t = vf_trips(plan)
    return limits is not None and bool(beyond_extent(limits, t.chunks, t.rows, t.dim))


def beyond_extent(limits: tuple[int, int, int], chunks, rows, dim: str):
    """Return whether a program of `chunks` chunks in `rows` rows (scalars or arrays) runs beyond `limits`
    (`extent_limits`)."""
    most_chunks, most_rows, most_per_row = limits
    over = np.asarray(chunks) > most_chunks
    if dim == "2d":
        rows = np.asarray(rows)
        over = over | (rows > most_rows) | (np.asarray(chunks) > most_per_row * rows)
    return over


def _reach_of(table: ParamTable, key: dict[str, str], sig: str, forms: str) -> str:
    """Return " (up to 5 chunks in 1 row)": the most chunks and rows the key's measured loop forms (`forms`, as a
    row's source lists them) ran, or "" where the fit recorded no extent."""
    limits = [extent_limits(table, {**key, "strategy": f.strip()}, sig) for f in forms.split(",")]
    limits = [x for x in limits if x is not None]
    if not limits:
        return ""
    chunks, rows = max(x[0] for x in limits), max(x[1] for x in limits)
    return f" (up to {counted(chunks, 'chunk')} in {counted(rows, 'row')})"


def _trips_of(t) -> str:
    """Return " of 64 chunks in 256 rows" for a plan's VF trip counts."""
    return (f" of {counted(t.chunks, 'chunk')}"
            + (f" in {counted(t.rows, 'row')}" if t.dim == "2d" else ""))


# why a 2D post-update program whose rows hold one full chunk and a tail costs less than one of full rows of two chunks
FLAT_ROWS = ("each row holds one full chunk and a tail, so its chunk loop runs once: priced as a flat row without the "
             "per-row loop overhead, as VfSim canonicalises single-iteration loops (costmodel.md §8; no measured row "
             "has this form, inferred), so it can cost less than a row of two full chunks")


def _beyond_extent(table: ParamTable, measured: tuple[dict[str, str], str, str], sig: str, t) -> tuple[str, str]:
    """Return notes (naming the plan's trip counts, naming none) when the plan runs more chunks, or more rows, than
    any of the `measured` rows (`measured_source`: the extent the fit recorded), else ("", "")."""
    key, src, label = measured
    limits = extent_limits(table, key, sig, src)
    if limits is None or not beyond_extent(limits, t.chunks, t.rows, t.dim):
        return "", ""
    chunks, rows, per_row = limits
    asked = f"{t.chunks} chunks" + (f" in {t.rows} rows, {math.ceil(t.per_row)} a row," if t.dim == "2d" else "")
    reach = f"{chunks} chunks" + (f" in {counted(rows, 'row')}, {per_row} a row" if t.dim == "2d" else "")
    beyond = (f"lie beyond the measured {label} rows (up to {reach}): the formula extrapolates its per-chunk and "
              "per-row lines")
    return f"{asked} {beyond}", f"its {'chunks or rows' if t.dim == '2d' else 'chunks'} {beyond}"


def bounds(p: dict[str, float], d: dict[str, float], f: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Return (dispatch bound D, resource bound P) over features `f`."""
    P = sum(p.get(t, 0.0) * f[t] for t in P_TERMS)
    D = sum(d.get(t, 0.0) * f[D_FEATURE[t]] for t in D_TERMS)
    return D, P


def address_bound(d: dict[str, float], f: dict[str, np.ndarray]):
    """Return the address bound A = a0 + ac·C over features `f`, or 0 where `d` has none (lookup adds a0 and ac,
    the program's address cost per chunk)."""
    return d["a0"] + d["ac"] * f["p1"] if "ac" in d else 0.0


def combine(D, P, d: dict[str, float], A=0.0) -> np.ndarray:
    """Return max(D, P, A), or the smooth maximum (D^q + P^q + A^q)^(1/q) where d carries a sharpness q."""
    return smooth_max(D, P, d["q"], A) if d.get("q") else np.maximum(np.maximum(D, P), A)


def cycles(p: dict[str, float], d: dict[str, float], C, R, dim, flat=False) -> tuple[np.ndarray, np.ndarray]:
    """Return (cycles, resource bound P) for arrays of chunks and rows (`flat`: see `features`)."""
    f = features(C, R, dim, flat)
    D, P = bounds(p, d, f)
    return combine(D, P, d, address_bound(d, f)), P


def smooth_max(D, P, q: float, A=0.0) -> np.ndarray:
    """Return (D^q + P^q + A^q)^(1/q) elementwise, computed without overflow (D and P clipped at one cycle; A, a
    bound only some programs have, at zero)."""
    D = np.maximum(np.asarray(D, dtype=float), 1.0)
    P = np.maximum(np.asarray(P, dtype=float), 1.0)
    if np.ndim(A) == 0 and A <= 0.0:
        # no third bound: the larger of D and P contributes exactly 1.0 and A 0.0, so this is the sum below, bit
        # for bit, with half the powers (a sweep evaluates it on every point)
        top = np.maximum(D, P)
        return top * (1.0 + (np.minimum(D, P) / top) ** q) ** (1.0 / q)
    A = np.maximum(np.asarray(A, dtype=float), 0.0)
    top = np.maximum(np.maximum(D, P), A)
    return top * ((D / top) ** q + (P / top) ** q + (A / top) ** q) ** (1.0 / q)


class A5FormulaModel:
    """The fast A5 model: one table lookup and a max of affine bounds per estimate."""

    name = "formula"
    source = ""  # where the last plan's parameters came from when not its own key: "family" or "body"
    source_note = ""  # the same in words, for the estimate's notes
    group_note = ""  # its caveats (not the key's typical error), naming no trip count: a sweep's note
    provenance: dict = {}  # the last plan's parameter rows: table file, digest, fit (models/provenance.py)

    def __init__(self, table: ParamTable | None = None):
        self.table = table

    def covers(self, plan: Plan) -> bool:
        """Return whether the table has parameters for the plan (its key, family or body), as `cost` looks them up."""
        if plan.request.family in REDUCE_FAMILIES:
            return False
        return lookup(self.table or shipped(), key_of(plan.request, plan.strategy), body_signature(plan)) is not None

    def cost(self, plan: Plan) -> tuple[float, tuple[tuple[str, float], ...]]:
        """Return (cycles, breakdown): startup, chunk iterations and row overhead of the binding bound (plus the
        smooth form's overlap of the two bounds)."""
        if plan.request.family in REDUCE_FAMILIES:
            raise NotModelledError(f"no A5 formula for {plan.request.op}: {NOT_ELEMENTWISE}; use --model auto "
                                   "(the anchored pipeline) or pipeline")
        t = vf_trips(plan)
        key = key_of(plan.request, plan.strategy)
        sig = body_signature(plan)
        found = lookup(self.table or shipped(), key, sig)
        if found is None:
            req = plan.request
            types = f"{req.dtype}->{req.dst.dtype}" if req.family == "convert" else key["dtype"]
            raise NotModelledError(f"no A5 formula parameters for {key['name']} {types} {plan.strategy}"
                                   f"{' ' + key['op_params'] if key['op_params'] else ''}; use --model auto "
                                   "(the anchored pipeline, corrected by measured ops) or pipeline")
        p, d, src = found
        self.source = "" if src == "key" else src
        table = self.table or shipped()
        error = held_out_error(table, key) if src == "key" else None
        row = source_row(table, key, sig, src)
        self.provenance = {"formula": provenance.table(
            table.path, rows=row and " ".join(x for x in (row.scope, row.name, row.dtype, row.dst_dtype, row.strategy,
                                                          row.op_params) if x),
            fitted_from=row and row.source, n_obs=row and row.n_obs, cv_mape=row and row.cv_mape)}
        shared_bound = "ac" in d and source_row(table, key, sig, src, "ac") is None
        if "q" not in d or shared_bound:  # the shared dispatch bound (hard-max keys) or address bound is read too
            shared = table.lookup("a5", "vf", "dispatch", "*", "a0" if shared_bound else "d0", strategy=key["strategy"])
            if shared is not None:
                self.provenance["dispatch"] = provenance.table(
                    table.path, rows=f"dispatch {shared.strategy}" + (" (address bound)" if shared_bound else ""),
                    fitted_from=shared.source, n_obs=shared.n_obs)
        types = key["dtype"] + ("->" + key["dst_dtype"] if key["dst_dtype"] else "")
        variant = f" ({key['op_params']})" if key["op_params"] else ""  # TRECIP's precision, TSEL's mask variant
        elsewhere = measured_forms(row) if src == "key" else None
        if elsewhere:  # the key's error was measured on other loop forms: it does not carry over
            error = None
        def measured_elsewhere(trips: str) -> str:
            return (f"{key['name']} {types} was measured in {elsewhere.group(1)} only"
                    f"{_reach_of(table, key, sig, elsewhere.group(1))}: this {plan.strategy} program{trips} is "
                    "extrapolated from that body")

        self.source_note = {"key": measured_elsewhere(_trips_of(t)) if elsewhere else
                                   "" if error is None else
                                   f"typical error {error[0]:.1f} %: the mean error on {error[1]} measured "
                                   f"{key['name']} {types}{variant} rows, each predicted by a fit that did not see "
                                   "its tile shape" if error[1] != 1 else
                                   f"typical error {error[0]:.1f} %, from the one measured {key['name']} "
                                   f"{types}{variant} row, predicted by a fit that did not see its tile shape (one "
                                   "row: a weak guide)",
                            "family": _family_note(key, types, variant, row),
                            "body": f"{key['name']} was not measured: priced by the formula of the measured ops "
                                    f"whose chunks do the same work (body {sig})"}[src]
        chunk_size = _other_chunk_size(table, key, plan) if src == "family" and key["name"] == "TCVT" else ""
        measured = measured_source(table, key, sig, src)
        extra = _beyond_extent(table, measured, sig, t) if measured is not None else (chunk_size, chunk_size)
        if t.flat and t.per_row >= 2:  # the flat-row term, not the row overhead of rows of several chunks, priced it
            extra = ("; ".join(x for x in (extra[0], FLAT_ROWS) if x), extra[1])
        base = self.source_note
        # a key's own typical error is no caveat; a group's caveat names no trip counts (a sweep shares it)
        caveat = ("" if not elsewhere else measured_elsewhere("")) if src == "key" else base
        self.source_note, self.group_note = ("; ".join(x for x in pair if x) for pair in ((base, extra[0]),
                                                                                            (caveat, extra[1])))
        # one-element arrays: numpy's array power (SIMD) and its scalar power differ in the last bit on some values,
        # and a sweep prices the same plans through arrays
        f = features([t.chunks], [t.rows], [t.dim], [t.flat])
        D, P = bounds(p, d, f)
        A = address_bound(d, f)
        total = float(combine(D, P, d, A)[0])
        D, P, A = float(D[0]), float(P[0]), float(np.ravel(A)[0])
        f = {k: float(v[0]) for k, v in f.items()}
        if A > max(P, D):
            coeffs, feature = d, {"a0": "p0", "ac": "p1"}
        else:
            coeffs, feature = (p, {t: t for t in P_TERMS}) if P >= D else (d, D_FEATURE)
        parts: dict[str, float] = {}
        for t, col in feature.items():
            parts[ROLE[t]] = parts.get(ROLE[t], 0.0) + coeffs.get(t, 0.0) * f[col]
        # the smooth form's excess over the binding bound: the bounds compete near their crossover
        parts["bound_overlap"] = total - max(P, D, A)
        return total, tuple((k, v) for k, v in parts.items() if v)
