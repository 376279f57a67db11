"""The A5 formula's second candidate form: a smooth maximum of the bounds, one resource form per op body.

    cycles = smax_q(D_s, P),  smax_q(a, b) = (a^q + b^q)^(1/q)
    D_s = d0_s + d1_s·C + d2_s·R + d3_s·R·m               per loop form s (dispatch, shared by every op)
    P   = a_b + off_s + p_b·C + r_b·R + (mr_b·R + mc_b·C)·m  per op body b (op, dtype, dst dtype, variant)

Two things differ from the hard-max form of a5_formula_fit.py. The body's resource cost is shared by every
loop form it is measured in (the body's loads, ops and stores do not change with the loop form; a loop form
only shifts the start by `off_s`), so a key measured in one form predicts the others, and a held-out shape
is predicted from every shape the body was measured at in any form. And near the crossover of the dispatch
and resource bounds the measured cycles exceed both (10x672 TMINS fp32 costs more than either bound
extrapolated from either side), which a hard max cannot express; q is fitted globally.

Bodies of the ops in PER_FORM_BODIES get one body per 1D/2D form and free multi-chunk terms m: a TCVT
program differs between its 1D and 2D forms (costmodel.md §7: DEFAULT resolves to no-post-update in 1D,
post-update in 2D) and its 2D cost steps between one and several chunks per row (costmodel.md §13).
Other bodies' m terms and row terms are pulled toward zero.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares
from scipy.sparse import lil_matrix

from costmodel.models.a5_formula import cycles, family_of, smooth_max

PER_FORM_BODIES = ("TCVT",)
STRATEGY_TERMS = ("d0", "d1", "d2", "d3", "off")
BODY_TERMS = ("a", "p", "r", "mr", "mc")
# penalty weights (per unit of the parameter, against relative residuals): row terms, multi-chunk terms of
# bodies that should not have them, the loop-form offset of the reference form, dispatch slope away from
# one chunk per cycle (costmodel.md §8 iteration dispatch)
PENALTY = {"r": 0.004, "m": 0.2, "off_ref": 0.02, "d1": 0.02}
REFERENCE_FORM = "2d-no-post-update"
# bounds: dispatch start at least VF startup + drain (23 + 12, costmodel.md §8)
LOWER = {"d0": 35.0, "d1": 0.5, "d2": 0.0, "d3": 0.0, "off": -20.0, "a": 0.0, "p": 0.0, "r": 0.0, "mr": -500.0, "mc": -500.0}
UPPER = {"d0": 120.0, "d1": 3.0, "d2": 30.0, "d3": 30.0, "off": 20.0, "a": 500.0, "p": 1000.0, "r": 500.0, "mr": 500.0, "mc": 500.0}
START = {"d0": 50.0, "d1": 1.0, "d2": 1.0, "d3": 4.0, "off": 0.0, "a": 40.0, "p": 1.0, "r": 0.0, "mr": 0.0, "mc": 0.0}
Q_START, Q_RANGE = 8.0, (1.5, 200.0)


def body_of(key: dict[str, str]) -> str:
    """Return the body a key's resource form is shared by: op, dtype, dst dtype, variant; for the ops in
    PER_FORM_BODIES their family (conversions of equal widths share one curve, costmodel.md §9) and 1D/2D form."""
    if key["name"] in PER_FORM_BODIES:
        return f"{family_of(key)}|{key['strategy'][:2]}"
    return "|".join([key["name"], key["dtype"], key["dst_dtype"], key["op_params"]])


@dataclass(frozen=True)
class SmoothFit:
    """Fitted values: per loop form (d0..d3, off), per body (a, p, r, mr, mc), and the sharpness q."""

    strategy: dict[str, dict[str, float]]
    body: dict[str, dict[str, float]]
    q: float
    families: dict[str, int]  # op families each loop form was fitted from

    def params(self, key: dict[str, str]) -> tuple[dict[str, float], dict[str, float]] | None:
        """Return (P coefficients p0..p4, D coefficients d0..d3 and q) for a key, or None if its body or form is unfitted."""
        b, s = self.body.get(body_of(key)), self.strategy.get(key["strategy"])
        if b is None or s is None:
            return None
        p = {"p0": b["a"] + s["off"], "p1": b["p"], "p2": b["r"], "p3": b["mr"], "p4": b["mc"]}
        return p, {**{t: s[t] for t in STRATEGY_TERMS if t != "off"}, "q": self.q}


def fit_smooth(rows, idx: np.ndarray) -> SmoothFit:
    """Fit the smooth form on rows `idx` of a5_formula_fit.Rows by robust nonlinear least squares on relative error."""
    idx = np.asarray(idx)
    keys = [rows.keys[i] for i in idx]
    strategies = sorted({k["strategy"] for k in keys})
    bodies = sorted({body_of(k) for k in keys})
    si = np.array([strategies.index(k["strategy"]) for k in keys])
    bi = np.array([bodies.index(body_of(k)) for k in keys])
    per_form = np.array([b.split("|")[0] in PER_FORM_BODIES for b in bodies], dtype=float)
    C, R, y = rows.C[idx], rows.R[idx], rows.y[idx]
    two = (rows.dim[idx] == "2d").astype(float)
    m = ((C >= 2 * R) & (two > 0)).astype(float)
    nS, nB, n, nT = len(strategies), len(bodies), len(idx), len(STRATEGY_TERMS)
    ref = strategies.index(REFERENCE_FORM) if REFERENCE_FORM in strategies else None

    def split(th):
        S = th[: nT * nS].reshape(nT, nS)
        B = th[nT * nS: nT * nS + 5 * nB].reshape(5, nB)
        return S, B, th[-1]

    def predict(th):
        (d0, d1, d2, d3, off), (a, p, r, mr, mc), lq = split(th)
        D = d0[si] + d1[si] * C + (d2[si] + d3[si] * m) * R * two
        P = a[bi] + off[si] + p[bi] * C + r[bi] * R * two + (mr[bi] * R + mc[bi] * C) * m
        return smooth_max(D, P, np.exp(lq))

    def residuals(th):
        (d0, d1, d2, d3, off), (a, p, r, mr, mc), lq = split(th)
        pen = [PENALTY["r"] * r, PENALTY["m"] * mr * (1 - per_form), PENALTY["m"] * mc * (1 - per_form),
               PENALTY["d1"] * (d1 - 1.0)]
        if ref is not None:
            pen.append(PENALTY["off_ref"] * off[ref: ref + 1])
        return np.concatenate([(predict(th) - y) / y, *pen])

    # which residual depends on which parameter: the row's loop form, its body, and q; penalties on their own
    n_pen = 3 * nB + nS + (ref is not None)
    J = lil_matrix((n + n_pen, nT * nS + 5 * nB + 1), dtype=int)
    rowsel = np.arange(n)
    for t in range(nT):
        J[rowsel, t * nS + si] = 1
    for t in range(5):
        J[rowsel, nT * nS + t * nB + bi] = 1
    J[:n, -1] = 1
    for j, t in enumerate((2, 3, 4)):
        J[n + j * nB + np.arange(nB), nT * nS + t * nB + np.arange(nB)] = 1
    J[n + 3 * nB + np.arange(nS), 1 * nS + np.arange(nS)] = 1
    if ref is not None:
        J[n + 3 * nB + nS, (nT - 1) * nS + ref] = 1

    def vec(table, q):
        return np.concatenate([np.full(nS, table[t]) for t in STRATEGY_TERMS]
                              + [np.full(nB, table[t]) for t in BODY_TERMS] + [[np.log(q)]])

    lo, hi = vec(LOWER, Q_RANGE[0]), vec(UPPER, Q_RANGE[1])
    x0 = np.clip(vec(START, Q_START), lo + 1e-9, hi - 1e-9)
    sol = least_squares(residuals, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.03, jac_sparsity=J.tocsr(),
                        max_nfev=3000, ftol=1e-6, x_scale="jac")
    S, B, lq = split(sol.x)
    fams = {s: len({keys[i]["name"] for i in np.flatnonzero(si == j)}) for j, s in enumerate(strategies)}
    return SmoothFit({s: dict(zip(STRATEGY_TERMS, map(float, S[:, j]))) for j, s in enumerate(strategies)},
                     {b: dict(zip(BODY_TERMS, B[:, j])) for j, b in enumerate(bodies)}, float(np.exp(lq)), fams)


def predict_smooth(fit: SmoothFit, rows, idx: np.ndarray) -> np.ndarray:
    """Return cycles for rows `idx` (NaN where the row's body or loop form was not fitted)."""
    out = np.full(len(idx), np.nan)
    for j, i in enumerate(idx):
        got = fit.params(rows.keys[i])
        if got is not None:
            out[j] = float(cycles(got[0], got[1], rows.C[i], rows.R[i], rows.dim[i])[0])
    return out
