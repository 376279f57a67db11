"""Vectorised sweeps: a frame of requests in, the same frame with `cycles`, `strategy`, `model`, `default`,
`best` and `note` out.

Requests are evaluated once per distinct (request, strategy) key and merged back, so grids that repeat keys
cost one evaluation per key. A point that cannot be modelled (illegal strategy, tile too big for the unified
buffer, op not modelled) gets NaN cycles and the reason in `note`; nothing aborts.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

REQUEST_COLUMNS = ("op", "dtype", "dst_dtype", "arch", "rows", "cols", "valid_rows", "valid_cols", "static_valid")
PARAM_COLUMNS = ("scalar", "order", "src0_valid", "src1_valid", "expand_mode", "expanded", "idx_dtype", "in_place",
                 "vf_impl_kind", "precision", "round_mode", "saturation", "repeat", "mask", "dst_rep_stride",
                 "src_blk_stride", "src_rep_stride", "binary", "dst_layout", "src_layout", "gm_shape", "gm_dynamic",
                 "pad", "src_valid", "layout", "src_loc", "dst_loc")
OUTPUT_COLUMNS = ("cycles", "strategy", "model", "default", "best", "note")


def _normalise(frame):
    df = frame.copy()
    if "strategy" not in df:
        df["strategy"] = "default"
    df["strategy"] = df["strategy"].fillna("default").astype(str).replace({"": "default", "None": "default"})
    for col, src in (("valid_rows", "rows"), ("valid_cols", "cols")):
        if col not in df:
            df[col] = df[src]
        df[col] = df[col].fillna(df[src]).astype(int)
    if "dst_dtype" not in df:
        df["dst_dtype"] = ""
    df["dst_dtype"] = df["dst_dtype"].fillna("").astype(str)
    if "arch" not in df:
        df["arch"] = "a2a3"
    if "static_valid" not in df:
        df["static_valid"] = False
    return df


def _key_columns(df) -> list[str]:
    return [c for c in (*REQUEST_COLUMNS, *PARAM_COLUMNS) if c in df.columns]


def evaluate_key(values: dict[str, Any], model: str) -> tuple[dict[str, float], str, str, str]:
    """Return ({strategy: cycles} over every legal strategy, default strategy, model name, note) for one request."""
    from . import lower
    from .api import estimate_request
    from .errors import PtoCostError
    from .operands import make_request

    kw = {k: v for k, v in values.items() if k not in ("rows", "cols", "valid_rows", "valid_cols", "dst_dtype")
          and v is not None and v == v and v != ""}
    kw["shape"] = (int(values["rows"]), int(values["cols"]))
    kw["valid"] = (int(values["valid_rows"]), int(values["valid_cols"]))
    if values.get("dst_dtype") and values["dst_dtype"] != values["dtype"]:
        kw["dst_dtype"] = values["dst_dtype"]
    kw["static_valid"] = bool(kw.get("static_valid", False))
    try:
        req = make_request(**kw)
        default = lower.resolve_strategy(req)[0]
        out: dict[str, float] = {}
        name = ""
        for s in lower.legal_strategies(req):
            e = estimate_request(req.with_strategy(s), model=model, verify=False)
            out[s], name = e.cycles, e.model
        return out, default, name, ""
    except PtoCostError as exc:
        return {}, "", "", str(exc)


def sweep(frame, *, model: str = "auto", progress: Callable[[int, int], None] | None = None):
    """Return `frame` with cycles/strategy/model/default/best/note columns (strategy `all` expands to every legal one)."""
    import pandas as pd

    df = _normalise(frame)
    keys = _key_columns(df)
    uniq = df[keys].drop_duplicates().reset_index(drop=True)
    results: list[tuple] = []
    for i, values in enumerate(uniq.to_dict("records")):
        results.append(evaluate_key(values, model))
        if progress is not None:
            progress(i + 1, len(uniq))
    uniq["_kid"] = np.arange(len(uniq))
    df = df.merge(uniq, on=keys, how="left", sort=False)
    rows = []
    for rec in df.to_dict("records"):
        table, default, name, note = results[rec.pop("_kid")]
        best = min(table, key=table.get) if table else ""
        asked = rec["strategy"]
        wanted = list(table) if asked == "all" else [default if asked == "default" else asked]
        if not table:
            rows.append({**rec, "cycles": np.nan, "strategy": "" if asked in ("all", "default") else asked,
                         "model": "", "default": False, "best": "", "note": note})
            continue
        for s in wanted:
            match = {k.lower(): k for k in table}.get(str(s).lower())
            if match is None:
                rows.append({**rec, "cycles": np.nan, "strategy": s, "model": name, "default": False, "best": best,
                             "note": f"strategy {s} is not legal here; legal: {', '.join(table)}"})
            else:
                rows.append({**rec, "cycles": table[match], "strategy": match, "model": name,
                             "default": match == default, "best": best, "note": ""})
    return pd.DataFrame(rows)


def sweep_dask(frame, *, model: str = "auto", scheduler: str | None = None, workers: int | None = None,
               npartitions: int | None = None):
    """Run `sweep` over partitions of the frame on a dask.distributed cluster; returns the same frame as `sweep`."""
    from .errors import PtoCostError

    try:
        import dask.dataframe as dd
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise PtoCostError("the dask engine needs the optional extra: pip install 'pto-cost[dask]'") from None
    import pandas as pd

    df = _normalise(frame)
    n = npartitions or max(1, min(len(df) // 2000 + 1, 4 * (workers or 2)))
    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        cluster = LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        meta = sweep(df.head(1), model=model).iloc[:0]
        ddf = dd.from_pandas(df, npartitions=n, sort=False)
        out = ddf.map_partitions(sweep, model=model, meta=meta).compute()
        return pd.DataFrame(out).reset_index(drop=True)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def verify_sample(result, n: int, *, seed: int = 0) -> list[str]:
    """Emulate `n` random modelled points of a sweep result against the golden; return descriptions of failures."""
    from . import lower
    from .emulate.verify import verify
    from .operands import make_request

    ok = result[result["cycles"].notna()]
    if not len(ok):
        return []
    pick = ok.sample(n=min(n, len(ok)), random_state=seed)
    failures = []
    for rec in pick.to_dict("records"):
        kw = {k: v for k, v in rec.items() if k in (*REQUEST_COLUMNS, *PARAM_COLUMNS) and v == v and v != ""
              and k not in ("rows", "cols", "valid_rows", "valid_cols", "dst_dtype")}
        kw["shape"] = (int(rec["rows"]), int(rec["cols"]))
        kw["valid"] = (int(rec["valid_rows"]), int(rec["valid_cols"]))
        if rec.get("dst_dtype") and rec["dst_dtype"] != rec["dtype"]:
            kw["dst_dtype"] = rec["dst_dtype"]
        kw["static_valid"] = bool(kw.get("static_valid", False))
        req = make_request(**kw, strategy=rec["strategy"])
        v = verify(lower.lower(req), seed=seed)
        if v.ok is False:
            failures.append(f"{req.describe()} strategy {rec['strategy']}: {v.note}")
    return failures
