"""The A5 formula's second candidate form: a smooth maximum of the bounds, one resource form per op body.

    cycles = smax_q(D, P, A),  smax_q(a, b, c) = (a^q + b^q + c^q)^(1/q)
    D   = off_s + d0 + d1·C + d2·R·s + d3·R·m                per 1D/2D shape (dispatch, shared by every op)
    P   = off_s + a_b + p_b·C + r_b·R·s + (mr_b·R + mc_b·C)·m + (f_b + f0)·f  per op body b (op, dtype, dst dtype,
                                                          variant); f0 shared by all but widening conversions
    A   = off_s + a0 + (al·loads + as·stores)·C              2D no-post-update only (addresses, shared by every op)

s and m mark 2D programs whose rows hold one chunk and several, f a 1D program of one chunk (models/a5_formula.py); off_s is a start offset
per loop form s (post-update or not: the same loop nest, addressed differently).

Two things differ from the hard-max form of a5_formula_fit.py. The body's resource cost is shared by every
loop form it is measured in (the body's loads, ops and stores do not change with the loop form; a loop form
only shifts the start by `off_s`), so a key measured in one form predicts the others, and a held-out shape
is predicted from every shape the body was measured at in any form. And near the crossover of the dispatch
and resource bounds the measured cycles exceed both (10x672 TMINS fp32 costs more than either bound
extrapolated from either side), which a hard max cannot express; q is fitted globally.

Bodies of the ops in PER_FORM_BODIES are per family (equal widths share a curve, costmodel.md §9) and 1D/2D
form, with free multi-chunk terms m: a TCVT program differs between its 1D and 2D forms (costmodel.md §7:
DEFAULT resolves to no-post-update in 1D, post-update in 2D) and its 2D cost steps between one and several
chunks per row (costmodel.md §13); their flat-program terms f are only lightly pulled toward zero (measured:
a one-chunk widening conversion costs more than its loop's trend, models/a5_formula.py). A narrowing or
same-width conversion writes at most one destination vector per source chunk, so a 2D row of one chunk does
the work of one 1D iteration: its 2D body's cost of such a row (p + r) is pulled toward its 1D body's cost per
chunk (measured: fp32→fp8 and bf16→fp4 cost 12 cycles a one-chunk row in 2D and 12 an iteration in 1D). A
widening one writes several vectors per chunk, cut differently in 1D and 2D (costmodel.md §3 step 3), so its
1D per-chunk cost is pulled toward its 2D one only where its 1D body is measured at fewer than two loop
lengths, which cannot split a start from a slope (otherwise free: fp4→bf16 with only its one-chunk 1D row in
training went to 413 cycles at 1x2560 for 99 measured). Always pulling them together was worse: fp8→fp32's 1D
rows (92, 88, 126 cycles at 1, 2, 3 chunks) then dragged its 2D slope up.
Other bodies' m, f and row terms are pulled toward zero. (A per-form body for fp32 TSEL, whose 1D and 2D
programs also differ, §3 step 6, was worse under grouped CV: six rows cannot pin two bodies.)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import least_squares
from scipy.sparse import lil_matrix

from costmodel.models.a5_formula import A_TERMS as ADDRESS_TERMS, BITS, P_TERMS, address_counts, cycles, family_of, features, smooth_max

PER_FORM_BODIES = ("TCVT",)
# chunks of one simple op on whole vectors between plain loads and a store issue the same instructions whatever the
# element type, and measure alike: TADD f16 1x1280 and f32 1x640 (ten 256-byte chunks each) both cost 67 cycles, TMINS
# 64 and 64 (upstream prices these ops' f16 with their f32 curve, costmodel.md §9). Their bodies are shared across
# dtypes (a dtype measured once takes the slope of the others), unlike SFU ops (f16 II 8 against f32 4, §8), TSEL
# (its mask load differs per width, §3 step 6) and TRECIP high precision (its step count differs per width).
DTYPE_FREE_SIGS = ("ld1 st1 simple1", "ld2 st1 simple1")
# a variant whose chunk does the work of another type's body: fp32 TSEL in 1D with an even trip count (TSel_b32_even,
# costmodel.md §3 step 6) costs what a TSel_b16_8 chunk costs (measured: 1x1280 fp32, 20 chunks, 97 cycles; the b16/8
# curve of §9 gives 52.5 + 2.10·20 = 94.5), while odd trip counts cost ~7.8 cycles a chunk (60 and 91 at 1 and 5).
# Sharing that body took grouped-CV TSEL MAPE from 35 % to 11 % (by shape) and 55 % to 24 % (by measured case).
BODY_DTYPE = {"TSel_b32_even": "i8"}
DISPATCH_TERMS = ("d0", "d1", "d2", "d3")
BODY_TERMS = ("a", "p", "r", "mr", "mc", "f")
MEMBER_TERMS = ("da", "dp")  # an op body's start and per-chunk deviation from the body it shares
# penalty weights (per unit of the parameter, against relative residuals): row terms, multi-chunk and flat-program
# terms of bodies that should not have them (f: of those that may), loop-form offsets away from their priors,
# dispatch slope away from one chunk per cycle (costmodel.md §8 iteration dispatch), and an op body's deviation from
# the body it shares (da, dp: chosen by cross-validation, grouped by measurement and by shape), and a narrowing
# conversion's one-chunk 2D row cost away from its 1D chunk cost, and an unidentified widening 1D slope away from its
# 2D one (tie, tie_w: chosen by CV grouped by shape and by measured case; 0.01-0.05, and 0.003-0.05, do alike), and a
# shared term away from the table a partial trace refines (anchor, per unit relative to the value, fit/a5_anchor.py;
# at 0.1, 0.3 and 1: TEXP's own rows refitted into the table they came from moved shapes they do not measure by at
# most 3.4, 1.5 and 1.2 %; TADD's measured 5 % slower moved them by 2.4-12.1, 3.0-7.1 and 2.6-4.8 %; TMINS's measured
# 15 % faster had 1.48, 1.50 and 1.95 % CV MAPE, 1.26 % free)
PENALTY = {"tie": 0.05, "tie_w": 0.05, "r": 0.004, "m": 0.2, "off": 0.05, "d1": 0.02, "f": 0.004, "da": 0.05, "dp": 1.0,
           "anchor": 0.3, "neg": 1.0}
# priors of the loop-form offsets, also those of a5_formula_fit's hard-max form: 2D no-post-update is the reference;
# post-update addressing costs 1-2 cycles more than no-post-update at 10 iterations (costmodel.md §7 table, 1x640
# fp32). That table is 1D; 2D post-update gets the same prior, since only TCVT's rows measure it and TCVT's 2D
# bodies have their own starts, which leave the offset all but unidentified (free, it fell to -5 cycles and made
# a 2-row 1D_POST_UPDATE TMINS cheaper than its 1-row one).
OFFSET_PRIOR = {"2d-no-post-update": 0.0, "1d-no-post-update": 0.0, "1d-post-update": 1.5, "2d-post-update": 1.5}
# bounds: dispatch start at least VF startup + drain (23 + 12, costmodel.md §8); no negative per-chunk or per-row
# cost (mc changes the per-chunk cost of multi-chunk rows and may be negative, but not below -p: a chunk is never
# free; PENALTY "neg" pulls p + mc back to zero where it would go below. Without it TCVT's own rows refitted into the
# table gave f16->f32 -3.5 cycles a chunk in multi-chunk rows and moved 1x8192 by -14 %; the shipped fit has no body
# below zero: with it, its prices moved by at most 0.03 %)
LOWER = {"d0": 35.0, "d1": 0.5, "d2": 0.0, "d3": 0.0, "off": -20.0, "a": 0.0, "p": 0.0, "r": 0.0, "mr": 0.0, "mc": -500.0,
         "f": -50.0, "da": -30.0, "dp": -5.0}
UPPER = {"d0": 120.0, "d1": 3.0, "d2": 30.0, "d3": 30.0, "off": 20.0, "a": 500.0, "p": 1000.0, "r": 500.0, "mr": 500.0, "mc": 500.0,
         "f": 500.0, "da": 30.0, "dp": 5.0}
START = {"d0": 50.0, "d1": 1.0, "d2": 1.0, "d3": 4.0, "off": 0.0, "a": 40.0, "p": 1.0, "r": 0.0, "mr": 0.0, "mc": 0.0, "f": 0.0, "da": 0.0, "dp": 0.0}
Q_START, Q_RANGE = 8.0, (1.5, 200.0)
# what each fitted parameter (`SmoothFit.terms` names, before the `|`) is, as a fit report names it
PART_NAMES = {"fg": "the one-chunk term all ops share", "f": "the body's one-chunk term", "off": "the loop-form offset",
              "a": "the body's start", "p": "the body's per-chunk cost", "r": "the body's per-row cost",
              "mr": "the body's per-row cost of multi-chunk rows", "mc": "the body's per-chunk change in multi-chunk rows",
              "da": "the op's start off its shared body", "dp": "the op's per-chunk cost off its shared body",
              "d0": "the dispatch start", "d1": "the dispatch per chunk", "d2": "the dispatch per row",
              "d3": "the dispatch per multi-chunk row", "a0": "the address start", "al": "the address cost per load",
              "as": "the address cost per store"}
# FLAT_NOTE: a 1D program of one chunk runs its loop once, and a loop of one iteration is flattened (VfSim canonicalises
# single-iteration loops, costmodel.md §8): it skips the loop's entry, so it costs a few cycles less than its body's
# trend. The term is shared by every body (its own f deviates from it, pulled toward zero): one-chunk rows all sit in
# a few shapes, so a held-out one learns it from the others (measured: TADD fp32 1x64 55 cycles against 58 on the
# trend of 1x192-1x640; fp32->fp8 1x64 67 against 72). Widening conversions do not take it: their one-chunk programs
# measure dearer than their trend instead (bf16->fp32 1x64 81 cycles, 1x640 65), which their own f carries.
# Shared by all but those, grouped 5-fold CV by shape over five fold assignments went from 2.20 to 2.06 % MAPE, and by
# measured case from 1.75 to 1.68 % (shared by all: 2.13 and 1.70 %).
FLAT_RANGE = (-20.0, 20.0)
# the address bound (models/a5_formula.py): start, cost per explicit load and per explicit store and chunk
ADDRESS_START, ADDRESS_LOWER, ADDRESS_UPPER = (30.0, 0.7, 0.7), (0.0, 0.0, 0.0), (200.0, 4.0, 4.0)


def member_of(key: dict[str, str]) -> str:
    """Return the op body a key measures: op, dtype, dst dtype, variant."""
    return "|".join([key["name"], key["dtype"], key["dst_dtype"], key["op_params"]])


def tied_bodies(keys: list[dict[str, str]], widening: bool = False) -> list[tuple[str, str]]:
    """Return (2D body, 1D body) pairs of the conversions among `keys` (see the module docstring): of the narrowing
    or same-width ones, whose one-chunk 2D row costs what a 1D chunk does, or with `widening` of the widening ones,
    whose per-chunk costs are only weakly tied."""
    pairs = {(body_of(k), body_of({**k, "strategy": "1d"})) for k in keys
             if k["name"] in PER_FORM_BODIES and k["strategy"].startswith("2d") and k["dst_dtype"]
             and is_widening(k) == widening}
    return sorted(pairs)


def is_widening(key: dict[str, str]) -> bool:
    """Whether a key is a conversion to a wider element type."""
    return bool(key["dst_dtype"]) and BITS[key["dst_dtype"]] > BITS[key["dtype"]]


def takes_shared_flat(key: dict[str, str]) -> bool:
    """Whether a key's one-chunk 1D program takes the shared flat-program term (FLAT_NOTE): all but widening
    conversions."""
    return not (key["name"] in PER_FORM_BODIES and is_widening(key))


def body_of(key: dict[str, str]) -> str:
    """Return the body a key's resource form is shared by: for the ops in PER_FORM_BODIES their family (conversions of
    equal widths share one curve, costmodel.md §9) and 1D/2D form; else the chunk's work (`sig`, models/a5_features.py
    `body_signature`: TADD, TSUB and TMUL share one) on the key's types (BODY_DTYPE: a variant's borrowed one), or on
    any type for DTYPE_FREE_SIGS — each op deviates from it by MEMBER terms."""
    if key["name"] in PER_FORM_BODIES:
        return f"{family_of(key)}|{key['strategy'][:2]}"
    return "|".join([key.get("sig") or key["name"], body_dtype(key), key["dst_dtype"]])


def readable(key: str, member: bool = False) -> str:
    """A `|`-joined key as the report prints it: its fields with blanks and `*` left out (`ld2 st1 simple1|*|` ->
    `ld2 st1 simple1`); a member key (op|dtype|dst|variant[|form]) with its conversion as `bf16->f16`."""
    parts = key.split("|")
    if member and len(parts) >= 3 and parts[2]:
        parts = [parts[0], f"{parts[1]}->{parts[2]}", *parts[3:]]
    return " ".join(p for p in parts if p and p != "*")


def body_dtype(key: dict[str, str]) -> str:
    """Return the element type of the body a (non per-form) key shares: '*' for DTYPE_FREE_SIGS, a variant's
    borrowed type (BODY_DTYPE), else the key's own."""
    if (key.get("sig") or key["name"]) in DTYPE_FREE_SIGS:
        return "*"
    return BODY_DTYPE.get(key["op_params"], key["dtype"])


@dataclass(frozen=True)
class SmoothFit:
    """Fitted values: the dispatch bound per 1D/2D shape (d0..d3), a start offset per loop form (a form of a fitted
    shape no row measured: its prior, where the fit's penalty would hold it, so a trace of some forms still prices
    its ops in all four, from one fit), per body
    (a, p, r, mr, mc, f), per op body its deviation from the shared body (da, dp), the sharpness q, and the address
    bound's a0, al, as; with `cov`, the covariance of the fitted parameters (named `names`, as `terms` names them)."""

    dispatch: dict[str, dict[str, float]]
    offset: dict[str, float]
    body: dict[str, dict[str, float]]
    q: float
    member: dict[str, dict[str, float]] = field(default_factory=dict)
    address: dict[str, float] = field(default_factory=dict)
    flat: float = 0.0  # the one-chunk 1D program's shared term (FLAT_NOTE), taken by the keys of `takes_shared_flat`
    names: tuple[str, ...] = ()
    cov: np.ndarray | None = field(default=None, compare=False)
    at_bound: frozenset[str] = frozenset()  # fitted parameters (`terms` names) that ended on a bound of the fit

    def terms(self, key: dict[str, str]) -> dict[str, dict[str, float]]:
        """Return each coefficient of a key's bounds (P p0..p5, D d0..d3, the address bound's a0 and ac where the
        program has one) as {fitted parameter: weight}: the loop form's offset is in every start, an op body's
        deviation in its body's start and slope, the shared flat term in the p5 of the keys that take it."""
        b, m, strategy, dim = body_of(key), member_of(key), key["strategy"], key["strategy"][:2]
        off = {f"off|{strategy}": 1.0}
        out = {"p0": {f"a|{b}": 1.0, f"da|{m}": 1.0, **off}, "p1": {f"p|{b}": 1.0, f"dp|{m}": 1.0},
               "p2": {f"r|{b}": 1.0}, "p3": {f"mr|{b}": 1.0}, "p4": {f"mc|{b}": 1.0},
               "p5": {f"f|{b}": 1.0, **({"fg": 1.0} if takes_shared_flat(key) else {})},
               "d0": {f"d0|{dim}": 1.0, **off}, **{t: {f"{t}|{dim}": 1.0} for t in DISPATCH_TERMS[1:]}}
        loads, stores = address_counts(key.get("sig", ""), strategy)
        if self.address and loads + stores:
            out.update(a0={"a0": 1.0, **off}, ac={"al": float(loads), "as": float(stores)})
        return out

    def value(self, name: str) -> float:
        """Return a fitted parameter by its `terms` name (an op body's deviation nobody fitted is zero)."""
        if name == "fg":
            return self.flat
        if name in ADDRESS_TERMS:
            return self.address[name]
        term, group = name.split("|", 1)
        if term == "off":
            return self.offset[group]
        if term in DISPATCH_TERMS:
            return self.dispatch[group][term]
        if term in MEMBER_TERMS:
            return self.member.get(group, {}).get(term, 0.0)
        return self.body[group][term]

    def params(self, key: dict[str, str]) -> tuple[dict[str, float], dict[str, float]] | None:
        """Return (P coefficients p0..p5, D coefficients d0..d3 and q) for a key, or None if its body or form is
        unfitted. The loop form's offset is in both starts, so cycles = offset + smooth max of the two bounds."""
        strategy = key["strategy"]
        if body_of(key) not in self.body or strategy[:2] not in self.dispatch or strategy not in self.offset:
            return None
        got = {t: sum(w * self.value(n) for n, w in ws.items()) for t, ws in self.terms(key).items()}
        return ({t: got[t] for t in P_TERMS},
                {t: v for t, v in got.items() if t not in P_TERMS} | {"q": self.q})

    def stderr(self, weights: dict[str, float]) -> float | None:
        """Return the standard error of a weighted sum of fitted parameters (a `terms` entry; "lq" is log q), or
        None without a covariance or where every parameter in it sits at a bound."""
        if self.cov is None:
            return None
        at = {n: i for i, n in enumerate(self.names)}
        g = np.zeros(len(self.names))
        for n, w in weights.items():
            if n in at:
                g[at[n]] += w
        var = float(g @ self.cov @ g)
        return float(np.sqrt(var)) if var > 0 else None

    def bounded(self, key: dict[str, str]) -> dict[str, tuple[bool, str]]:
        """Return, per coefficient of a key (`terms`) that sums a parameter ending on a bound of the fit, (whether every
        parameter it sums does, what those at a bound are: PART_NAMES): its standard error says nothing of them."""
        out = {}
        for t, ws in self.terms(key).items():
            summed = [n for n, w in ws.items() if w and n in self.names]
            held = [n for n in summed if n in self.at_bound]
            if held:
                out[t] = (len(held) == len(summed),
                          ", ".join(dict.fromkeys(PART_NAMES.get(n.split("|", 1)[0], n) for n in held)))
        return out

    def stderrs(self, key: dict[str, str]) -> dict[str, float | None]:
        """Return the standard error of every coefficient `params` gives a key, and of q."""
        se_lq = self.stderr({"lq": 1.0})
        return ({t: self.stderr(ws) for t, ws in self.terms(key).items()}
                | {"q": None if se_lq is None else self.q * se_lq})


def covariance(sol, n: int) -> np.ndarray | None:
    """Return the Gauss-Newton covariance s^2 (J'J)^-1 of a least-squares solution whose first `n` residuals are data
    (the rest penalties, which act as priors), over the parameters off their bounds (zero for those at one); s^2 is
    the data residuals' variance on their effective degrees of freedom (n minus the hat matrix's trace). None where
    fewer than one degree of freedom is left: the fit then passes through its rows and s^2 is not estimable."""
    J = sol.jac.toarray() if hasattr(sol.jac, "toarray") else np.asarray(sol.jac)
    free = sol.active_mask == 0
    Jf = J[:, free]
    inv = np.linalg.pinv(Jf.T @ Jf)
    dof = n - float(np.einsum("ij,jk,ik->", Jf[:n], inv, Jf[:n]))
    if dof < 1.0:
        return None
    cov = np.zeros((J.shape[1], J.shape[1]))
    cov[np.ix_(free, free)] = float(np.sum(sol.fun[:n] ** 2)) / dof * inv
    return cov


def pressed_on_bound(sol, lo: np.ndarray, hi: np.ndarray, near: float = 1e-3) -> np.ndarray:
    """Return a mask of the parameters of a bounded least-squares solution held by a bound: on it (`active_mask`), or
    within `near` of the bound's size (at least 1) from it with the cost still falling outward (the trust-region
    solver stops a hair inside a bound: a TADD-only fit's shared flat term ended at -19.986 of its -20 floor)."""
    def close(bound):
        return near * np.maximum(1.0, np.abs(bound))

    return ((sol.active_mask != 0) | ((sol.x - lo <= close(lo)) & (sol.grad > 0))
            | ((hi - sol.x <= close(hi)) & (sol.grad < 0)))


def fit_smooth(rows, idx: np.ndarray, stderr: bool = False, anchor: dict[str, float] | None = None) -> SmoothFit:
    """Fit the smooth form on rows `idx` of a5_formula_fit.Rows by robust nonlinear least squares on relative error;
    with `stderr`, the fit carries its parameters' covariance. `anchor`: {parameter (`SmoothFit.terms` name, "lq" for
    log q): value} each is pulled toward (fit/a5_anchor.py: PENALTY "anchor"); a name the rows do not fit is ignored."""
    idx = np.asarray(idx)
    keys = [rows.keys[i] for i in idx]
    strategies = sorted({k["strategy"] for k in keys})
    dims = sorted({s[:2] for s in strategies})
    bodies = sorted({body_of(k) for k in keys})
    members = sorted({member_of(k) for k in keys})
    si = np.array([strategies.index(k["strategy"]) for k in keys])
    di = np.array([dims.index(k["strategy"][:2]) for k in keys])
    bi = np.array([bodies.index(body_of(k)) for k in keys])
    mi = np.array([members.index(member_of(k)) for k in keys])
    per_form = np.zeros(len(bodies))
    per_form[[bodies.index(body_of(k)) for k in keys if k["name"] in PER_FORM_BODIES]] = 1.0
    counts = np.array([address_counts(k.get("sig", ""), k["strategy"]) for k in keys], dtype=float).reshape(-1, 2)
    addressed = counts.sum(axis=1) > 0
    shared_f = np.array([takes_shared_flat(k) for k in keys], dtype=float)
    y = rows.y[idx]
    f = features(rows.C[idx], rows.R[idx], rows.dim[idx])
    flat_rows = (shared_f * f["p5"]) > 0  # one-chunk 1D programs that take the shared term
    nD, nS, nB, nM, n = len(dims), len(strategies), len(bodies), len(members), len(idx)
    # parameter vector: dispatch terms per dim, one offset per loop form, body terms per body, member deviations,
    # the address bound's three terms, log q
    o_off = len(DISPATCH_TERMS) * nD
    o_body = o_off + nS
    o_mem = o_body + len(BODY_TERMS) * nB
    o_addr = o_mem + len(MEMBER_TERMS) * nM
    prior_at = np.array([j for j, s in enumerate(strategies) if s in OFFSET_PRIOR], dtype=int)
    tie, tie_w = (np.array([(bodies.index(b2), bodies.index(b1)) for b2, b1 in tied_bodies(keys, w) if b1 in bodies],
                           dtype=int).reshape(-1, 2) for w in (False, True))
    prior = np.array([OFFSET_PRIOR[strategies[j]] for j in prior_at])
    lengths: dict[str, set[float]] = {}  # loop lengths (chunks, above the one-chunk flat program) per body
    for k, c in zip(keys, rows.C[idx]):
        if c > 1:
            lengths.setdefault(body_of(k), set()).add(float(c))
    tie_w = tie_w[[len(lengths.get(bodies[b1], ())) < 2 for b1 in tie_w[:, 1]]]
    names = ([f"{t}|{d}" for t in DISPATCH_TERMS for d in dims] + [f"off|{s}" for s in strategies]
             + [f"{t}|{b}" for t in BODY_TERMS for b in bodies] + [f"{t}|{m}" for t in MEMBER_TERMS for m in members]
             + list(ADDRESS_TERMS) + ["fg", "lq"])
    anchored = np.array([j for j, name in enumerate(names) if name in (anchor or {})], dtype=int)
    centre = np.array([(anchor or {})[names[j]] for j in anchored])
    # relative to the centre's size (at least 1 cycle); log q is relative already
    spread = np.array([1.0 if names[j] == "lq" else max(1.0, abs(c)) for j, c in zip(anchored, centre)])

    def split(th):
        return (th[:o_off].reshape(-1, nD), th[o_off:o_body], th[o_body:o_mem].reshape(-1, nB),
                th[o_mem:o_addr].reshape(-1, nM), th[o_addr:-2], th[-2], th[-1])

    def predict(th):
        (d0, d1, d2, d3), off, (a, p, r, mr, mc, fl), (da, dp), (a0, al, as_), fg, lq = split(th)
        D = off[si] + d0[di] + d1[di] * f["p1"] + d2[di] * f["p2"] + d3[di] * f["p3"]
        P = (off[si] + a[bi] + da[mi] + (p[bi] + dp[mi]) * f["p1"] + r[bi] * f["p2"] + mr[bi] * f["p3"]
             + mc[bi] * f["p4"] + (fl[bi] + fg * shared_f) * f["p5"])
        A = np.where(addressed, off[si] + a0 + (al * counts[:, 0] + as_ * counts[:, 1]) * f["p1"], 0.0)
        return smooth_max(D, P, np.exp(lq), A)

    def residuals(th):
        (_, d1, _, _), off, (_, p, r, mr, mc, fl), (da, dp), _, _, _ = split(th)
        return np.concatenate([(predict(th) - y) / y, PENALTY["r"] * r, PENALTY["m"] * mr * (1 - per_form),
                               PENALTY["m"] * mc * (1 - per_form),
                               PENALTY["m"] * fl * (1 - per_form) + PENALTY["f"] * fl * per_form,
                               PENALTY["da"] * da, PENALTY["dp"] * dp, PENALTY["d1"] * (d1 - 1.0),
                               PENALTY["off"] * (off[prior_at] - prior),
                               PENALTY["tie"] * (p[tie[:, 0]] + r[tie[:, 0]] - p[tie[:, 1]]),
                               PENALTY["tie_w"] * (p[tie_w[:, 0]] - p[tie_w[:, 1]]),
                               PENALTY["anchor"] * (th[anchored] - centre) / spread,
                               PENALTY["neg"] * np.minimum(p + mc, 0.0)])

    # which residual depends on which parameter: the row's dim, loop form, body and member, and q (and the address
    # terms, for rows of the address loop form); penalties on their own parameter
    penalised = (2, 3, 4, 5)  # body terms with a penalty row: r, mr, mc, f
    o_pen = n + len(penalised) * nB + len(MEMBER_TERMS) * nM
    o_anchor = o_pen + nD + len(prior_at) + len(tie) + len(tie_w)
    o_neg = o_anchor + len(anchored)
    J = lil_matrix((o_neg + nB, o_addr + len(ADDRESS_TERMS) + 2), dtype=int)
    rowsel = np.arange(n)
    for t in range(len(DISPATCH_TERMS)):
        J[rowsel, t * nD + di] = 1
    J[rowsel, o_off + si] = 1
    for t in range(len(BODY_TERMS)):
        J[rowsel, o_body + t * nB + bi] = 1
    for t in range(len(MEMBER_TERMS)):
        J[rowsel, o_mem + t * nM + mi] = 1
    J[:n, -1] = 1
    J[rowsel[flat_rows], o_addr + len(ADDRESS_TERMS)] = 1  # the shared flat-program term
    for t in range(len(ADDRESS_TERMS)):
        J[rowsel[addressed], o_addr + t] = 1
    for j, t in enumerate(penalised):
        J[n + j * nB + np.arange(nB), o_body + t * nB + np.arange(nB)] = 1
    for t in range(len(MEMBER_TERMS)):
        J[n + len(penalised) * nB + t * nM + np.arange(nM), o_mem + t * nM + np.arange(nM)] = 1
    J[o_pen + np.arange(nD), nD + np.arange(nD)] = 1
    J[o_pen + nD + np.arange(len(prior_at)), o_off + prior_at] = 1
    o_tie = o_pen + nD + len(prior_at)
    for t, side in ((1, 0), (2, 0), (1, 1)):  # p and r of the 2D body, p of the 1D body
        J[o_tie + np.arange(len(tie)), o_body + t * nB + tie[:, side]] = 1
    for side in (0, 1):
        J[o_tie + len(tie) + np.arange(len(tie_w)), o_body + nB + tie_w[:, side]] = 1
    J[o_anchor + np.arange(len(anchored)), anchored] = 1
    for t in (1, 4):  # p and mc of each body
        J[o_neg + np.arange(nB), o_body + t * nB + np.arange(nB)] = 1

    def vec(table, address, q):
        return np.concatenate([np.full(nD, table[t]) for t in DISPATCH_TERMS] + [np.full(nS, table["off"])]
                              + [np.full(nB, table[t]) for t in BODY_TERMS]
                              + [np.full(nM, table[t]) for t in MEMBER_TERMS] + [address, [table["fg"]], [np.log(q)]])

    fg_on = bool(flat_rows.any())
    lo = vec({**LOWER, "fg": FLAT_RANGE[0] if fg_on else -1e-6}, ADDRESS_LOWER, Q_RANGE[0])
    hi = vec({**UPPER, "fg": FLAT_RANGE[1] if fg_on else 1e-6}, ADDRESS_UPPER, Q_RANGE[1])
    x0 = np.clip(vec({**START, "fg": 0.0}, ADDRESS_START, Q_START), lo + 1e-9, hi - 1e-9)
    sol = least_squares(residuals, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.03, jac_sparsity=J.tocsr(),
                        max_nfev=3000, ftol=1e-6, x_scale="jac")
    Dv, off, B, M, Ad, fg, lq = split(sol.x)
    return SmoothFit({d: dict(zip(DISPATCH_TERMS, map(float, Dv[:, j]))) for j, d in enumerate(dims)},
                     {**{s: v for s, v in OFFSET_PRIOR.items() if s[:2] in dims},
                      **{s: float(off[j]) for j, s in enumerate(strategies)}},
                     {b: dict(zip(BODY_TERMS, map(float, B[:, j]))) for j, b in enumerate(bodies)},
                     float(np.exp(lq)),
                     {m: dict(zip(MEMBER_TERMS, map(float, M[:, j]))) for j, m in enumerate(members)},
                     dict(zip(ADDRESS_TERMS, map(float, Ad))) if addressed.any() else {}, float(fg) if fg_on else 0.0,
                     tuple(names), covariance(sol, n) if stderr else None,
                     frozenset(n for n, held in zip(names, pressed_on_bound(sol, lo, hi)) if held))


def predict_smooth(fit: SmoothFit, rows, idx: np.ndarray) -> np.ndarray:
    """Return cycles for rows `idx` (NaN where the row's body or loop form was not fitted)."""
    out = np.full(len(idx), np.nan)
    for j, i in enumerate(idx):
        got = fit.params(rows.keys[i])
        if got is not None:
            out[j] = float(cycles(got[0], got[1], rows.C[i], rows.R[i], rows.dim[i])[0])
    return out
