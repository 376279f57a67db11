"""Weighted, bounded, hierarchically shrunk linear least squares — the workhorse of the formula-model fits.

A parameter may name a *parent*: its effective value is parent + deviation, and deviations pay an L2
penalty `shrink`, so a parameter with few observations stays near its family's value (and one with none
equals it). Rows are weighted by 1/y² by default, so the fit minimises relative (percentage) error, which
is how users judge a cycle model. Lower bounds apply to effective values of root parameters.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np


def one_blas_thread(fn):
    """Decorator: run `fn` with the BLAS pool at one thread. The fits solve many small systems, for which a
    multithreaded BLAS only adds contention: measured on the 2-core machine with another process busy, the A2/A3 fit
    took 28.6 s with OpenBLAS's default threads and 1.6 s with one; the A5 formula fit 32 s and 25 s."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            return fn(*args, **kwargs)
    return wrapper


@dataclass(frozen=True)
class LinearFit:
    """Fitted effective parameters with standard errors; `predict(X)` works on the original feature columns."""

    names: tuple[str, ...]
    values: np.ndarray
    stderr: np.ndarray
    n_obs: np.ndarray  # observations with a non-zero feature, per parameter
    rss: float
    dof: float  # the data's effective residual degrees of freedom (n minus the hat matrix's trace; NaN unasked)
    at_bound: tuple[str, ...] = field(default=())
    nodes: dict[str, float] = field(default_factory=dict)  # effective value of every node, incl. latent families

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X, dtype=float) @ self.values

    def as_dict(self) -> dict[str, float]:
        return dict(zip(self.names, map(float, self.values)))


def _ancestors(name: str, parent: dict[str, str | None]) -> list[str]:
    out = []
    p = parent.get(name)
    while p:
        out.append(p)
        p = parent.get(p)
    return out


def _least_squares(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return argmin |A x - b| by the normal equations (A is sparse: rows touch a key and its ancestors), with a
    ridge of 1e-12 of the mean diagonal for directions no row or penalty constrains (where it tends to the
    minimum-norm solution); an SVD solve if the factorisation fails. Several times faster than an SVD solve of A,
    and the formula fits solve thousands of these."""
    from scipy import linalg, sparse

    S = sparse.csr_matrix(A)
    G = (S.T @ S).toarray()
    G[np.diag_indices_from(G)] += 1e-12 * max(float(np.trace(G)) / max(len(G), 1), 1e-300)
    try:
        return linalg.cho_solve(linalg.cho_factor(G), S.T @ b)
    except linalg.LinAlgError:
        return np.linalg.lstsq(A, b, rcond=None)[0]


def fit_linear(X: np.ndarray, y: np.ndarray, names: list[str], *, parent: dict[str, str | None] | None = None,
               lower: dict[str, float] | None = None, shrink: float = 1.0, weights: np.ndarray | None = None,
               prior: dict[str, float] | None = None, scale: dict[str, float] | None = None,
               stderr: bool = True) -> LinearFit:
    """Fit y ≈ X θ. Returns effective parameters (parent + own deviation) for every column of X.

    `parent` maps a column name to its family parameter (which may itself have no column of its own: a
    latent family value); `lower` gives lower bounds on effective root values; `prior` pulls roots toward a
    value (with the same `shrink` weight) instead of leaving them free; `scale` gives the size of a
    parameter (a deviation of one `scale` costs `shrink`), so penalties compare across units.
    """
    from scipy.optimize import lsq_linear

    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    parent = dict(parent or {})
    names = list(names)
    nodes = list(names)
    for n in names:
        for a in _ancestors(n, parent):
            if a not in nodes:
                nodes.append(a)
    idx = {n: i for i, n in enumerate(nodes)}
    # effective θ_n = Σ over n and its ancestors of the node values: column of node a collects all its descendants
    Z = np.zeros((len(y), len(nodes)))
    for j, n in enumerate(names):
        Z[:, idx[n]] += X[:, j]
        for a in _ancestors(n, parent):
            Z[:, idx[a]] += X[:, j]
    w = (1.0 / np.maximum(np.abs(y), 1e-9)) if weights is None else np.asarray(weights, float)
    A = Z * w[:, None]
    b = y * w
    pen_rows, pen_b = [], []
    prior = prior or {}
    size = scale or {}
    for n in nodes:
        is_child = parent.get(n) is not None
        if is_child or n in prior:
            k = np.sqrt(shrink) / max(abs(size.get(n, 1.0)), 1e-9)
            row = np.zeros(len(nodes))
            row[idx[n]] = k
            pen_rows.append(row)
            pen_b.append(k * (prior.get(n, 0.0) if not is_child else 0.0))
    if pen_rows:
        A = np.vstack([A, np.array(pen_rows)])
        b = np.concatenate([b, np.array(pen_b)])
    lb = np.full(len(nodes), -np.inf)
    for n, v in (lower or {}).items():
        if n in idx and parent.get(n) is None:
            lb[idx[n]] = v
    if np.isfinite(lb).any():
        node_vals = lsq_linear(A, b, bounds=(lb, np.full(len(nodes), np.inf)), method="bvls", lsmr_tol="auto").x
    else:
        node_vals = _least_squares(A, b)
    def effective(n: str) -> float:
        return float(node_vals[idx[n]] + sum(node_vals[idx[a]] for a in _ancestors(n, parent)))

    eff = np.array([effective(n) for n in names])
    resid = (Z @ node_vals - y) * w
    # the penalties act as priors, so the fit spends fewer degrees of freedom than it has nodes: the data residuals'
    # variance is taken on n minus the hat matrix's trace (as a5_smooth_fit.covariance does)
    dof = float("nan")
    try:
        if not stderr:
            raise np.linalg.LinAlgError("standard errors not requested")
        inv = np.linalg.pinv(A.T @ A)
        Zw = Z * w[:, None]
        dof = float(len(y) - np.einsum("ij,jk,ik->", Zw, inv, Zw))
        if dof < 1.0:  # the fit passes through its rows: sigma is not estimable
            raise np.linalg.LinAlgError("standard errors not estimable")
        cov_nodes = inv * (float(resid @ resid) / dof)
        T = np.zeros((len(names), len(nodes)))
        for j, n in enumerate(names):
            T[j, idx[n]] = 1
            for a in _ancestors(n, parent):
                T[j, idx[a]] = 1
        errors = np.sqrt(np.clip(np.diag(T @ cov_nodes @ T.T), 0, None))
    except np.linalg.LinAlgError:
        errors = np.full(len(names), np.nan)
    n_obs = (np.abs(X) > 0).sum(axis=0)
    at_bound = tuple(n for n in names if parent.get(n) is None and n in (lower or {}) and abs(node_vals[idx[n]] - lower[n]) < 1e-9)
    return LinearFit(tuple(names), eff, errors, n_obs, float(resid @ resid), dof, at_bound,
                     {n: effective(n) for n in nodes})


def grouped_folds(groups: np.ndarray, k: int = 5, seed: int = 0) -> np.ndarray:
    """Return a fold number per row such that all rows of one group share a fold (balanced by group size)."""
    groups = np.asarray(groups)
    uniq, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(uniq))
    order = order[np.argsort(-counts[order], kind="stable")]
    load = np.zeros(k)
    fold_of = np.empty(len(uniq), dtype=int)
    for g in order:
        f = int(np.argmin(load))
        fold_of[g] = f
        load[f] += counts[g]
    return fold_of[inverse]
