"""Vectorised sweeps: a frame of requests in, the same frame with `cycles`, `strategy`, `model`, `default`,
`best` and `note` out (DESIGN.md §2).

Rows are grouped by everything but their shape (op, dtypes, arch, op parameters). A group whose family has a
closed form (`costmodel.vector`: unary, binary and binary-scalar ops, conversions and the mask ops, on both arches) is
costed with numpy over its shape arrays — every legal strategy of every row, no plan per row. Every other group,
and the rows a closed form does not cover, take the per-request path: each distinct request is lowered and costed
once (strategy by strategy) and merged back; on A5, where such rows are priced by the anchored pipeline, their
anchors' corrections (measured elementwise ops on the rows' tiles) come from the elementwise closed form first,
and a batch of their own programs is simulated by loop structure before they are priced.
Both paths fill the same per-row table (strategy -> cycles and model, default strategy), so the output does not
depend on the path taken.

Per row: `strategy` `default` gives the default strategy's row, `all` one row per legal strategy (the default
first), a name that strategy's row. A point that cannot be modelled (illegal strategy, tile too big for the
unified buffer, op not modelled) gets NaN cycles and the reason in `note`; nothing aborts. `model` names the
model that priced the row (A5 `auto`: `formula` where the key has parameters, else `anchored` or `pipeline`).
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from .models import registry
from .vector import Block
from .vector.frame import SHAPE_COLUMNS, Frame
from .vector.frame import asked as _asked
from .vector.frame import groups as _groups
from .vector.frame import runs as _runs
from .vector.output import Caveats, Entries, Results, Why, assemble, concat

REQUEST_COLUMNS = ("op", "dtype", "dst_dtype", "arch", "rows", "cols", "valid_rows", "valid_cols", "static_valid")
PARAM_COLUMNS = ("scalar", "order", "cmp_mode", "src0_valid", "src1_valid", "expand_mode", "expanded", "idx_dtype", "in_place",
                 "vf_impl_kind", "precision", "round_mode", "saturation", "repeat", "mask", "dst_rep_stride",
                 "src_blk_stride", "src_rep_stride", "binary", "dst_layout", "src_layout", "gm_shape", "gm_dynamic",
                 "pad", "src_valid", "layout", "src_loc", "dst_loc")
OP_PARAMS = (*PARAM_COLUMNS, "static_valid")  # what a spec's `params` and a cases file's columns may name
OUTPUT_COLUMNS = ("cycles", "strategy", "model", "default", "best", "note")


def _key_columns(f) -> list[str]:
    return [c for c in (*REQUEST_COLUMNS, *PARAM_COLUMNS) if c in f]


def request_kwargs(values: dict[str, Any], rows: int, cols: int, vr: int, vc: int) -> dict[str, Any]:
    """Return the `make_request` keywords of one sweep row (empty and missing parameters left out)."""
    kw = {k: v.item() if isinstance(v, np.generic) else v for k, v in values.items()  # messages show 1, not np.int64(1)
          if k not in (*SHAPE_COLUMNS, "dst_dtype") and v is not None and v == v and v != ""}
    for k in ("op", "dtype"):  # required: a gap is the row's error, never make_request's default
        if k not in kw:
            from .errors import PtoCostError

            raise PtoCostError(f"the row has no {k} (its {k} cell is empty)")
    kw["shape"] = (int(rows), int(cols))
    kw["valid"] = (int(vr), int(vc))
    if values.get("dst_dtype"):  # also equal to dtype: TCVT f32 -> f32 rounds to integral values
        kw["dst_dtype"] = values["dst_dtype"]
    kw.setdefault("static_valid", False)  # make_request reads the flag (true/false, 1/0, yes/no, on/off)
    return kw


class Models:
    """The cost model instance of each arch for one sweep, shared by all its rows (the pipeline model's caches)."""

    def __init__(self, name: str):
        self.name = name
        self._by_arch: dict[str, Any] = {}

    def get(self, arch: str):
        """Return the model for `arch`; raises PtoCostError when the arch has no such model."""
        from .errors import PtoCostError

        if arch not in self._by_arch:
            try:
                self._by_arch[arch] = registry.model_for(arch, self.name)
            except PtoCostError as exc:
                self._by_arch[arch] = exc
        got = self._by_arch[arch]
        if isinstance(got, PtoCostError):
            raise type(got)(str(got))
        return got


def lower_key(values: dict[str, Any]) -> tuple[dict[str, Any], str, str, dict[str, str]]:
    """Return ({strategy: plan} over every legal strategy, default strategy, "", {the op's illegal strategies: why})
    for one request, or ({}, "", the reason it cannot be lowered, {}): the per-request path's first half
    (`price_plans` the second), as `estimate` lowers it."""
    from . import lower
    from .errors import PtoCostError
    from .operands import make_request

    try:
        req = make_request(**request_kwargs(values, values["rows"], values["cols"], values["valid_rows"],
                                            values["valid_cols"]))
        default, table = lower.strategies(req)
        plans = {}
        for s in lower.legal_of(default, table):
            forced = req.with_strategy(s)
            plans[s] = lower.lower(forced, lower.resolve_strategy(forced)[0])
        return plans, default, "", {s: why for s, why in table.items() if why is not None}
    except PtoCostError as exc:
        return {}, "", str(exc), {}


def price_plans(plans: dict[str, Any], default: str, note: str,
                models: Models) -> tuple[dict[str, tuple[float, str, str]], str, str]:
    """Return ({strategy: (cycles, model name, the model's caveats: `group_note`)} over the lowered plans, default,
    note), or ({}, "", the reason) where a plan cannot be priced."""
    from .errors import PtoCostError
    from .models.auto import cycles_of, group_note

    out: dict[str, tuple[float, str, str]] = {}
    try:
        for s, p in plans.items():
            m = models.get(p.arch)
            out[s] = (cycles_of(m, p), m.name, group_note(m))
    except PtoCostError as exc:
        return {}, "", str(exc)
    return out, default, note


# ---------------------------------------------------------------------------------------------------------------

def sweep(frame, *, model: str = "auto", progress: Callable[[int, int], None] | None = None, vectorised: bool = True):
    """Return `frame` with cycles/strategy/model/default/best/note columns (strategy `all` expands to every legal one).

    Parameters
    ----------
    frame : DataFrame with columns op, dtype, rows, cols and optionally arch, dst_dtype, valid_rows, valid_cols,
        static_valid, strategy (`default`, `all` or a name) and op parameters (PARAM_COLUMNS).
    model : `auto`, `formula`, `pipeline`, ... (per arch, as in `estimate`).
    progress : called as progress(rows done, rows total).
    vectorised : False costs every group by the per-request path (for checks; same results, slower).

    Returns
    -------
    DataFrame: the input columns (normalised: strategy, valid_rows, valid_cols, dst_dtype, arch and static_valid
    filled in), one row per input row (per legal strategy for `all` rows, next to each other) in input order under a
    new RangeIndex, plus `cycles` (float, NaN where the point cannot be modelled), `model`, `default` (bool), `best`
    (the fastest legal strategy) and `note` (why a point cannot be modelled; for a priced one the model's caveats,
    `models.auto.group_note`). The string columns the sweep writes (strategy, model, best, note, and added constant
    columns) are categorical. A row without an op or dtype is such a point; one without an arch takes the default
    arch ($PTO_COST_ARCH, else a2a3), as a frame without the column does.
    """
    model = registry.check_name(model)  # an arch that lacks it is that arch's rows' note
    f = Frame(frame)
    return assemble(f, _evaluate(f, model, progress, vectorised))


def _evaluate(f: Frame, model: str, progress=None, vectorised: bool = True) -> Results:
    """Cost every row of a normalised frame: closed forms per group where they exist, else per request."""
    from .operands import make_request
    from .vector import Shapes, caveats, closed_form

    n = f.n
    keys = _key_columns(f)
    group_cols = [c for c in keys if c not in SHAPE_COLUMNS]
    ask_codes, asked = _asked(f)
    shape_arrays = Shapes(*(f.df[c].to_numpy(dtype=np.int64) for c in SHAPE_COLUMNS))
    models = Models(model)
    entries = Entries(asked)
    done = 0
    priced = _Reused()
    for values, rows in _groups(f, group_cols):
        idx = np.arange(rows.start, rows.stop) if isinstance(rows, slice) else rows
        sh = shape_arrays.take(rows)
        block = None

        def make(r, c, vr, vc, values=values):
            return make_request(**request_kwargs(values, r, c, vr, vc))

        known = functools.cache(functools.partial(_strategy_names, make))
        if vectorised:
            block, key = priced.get(values, sh, make)
            if block is None:
                block = closed_form(make, sh, models)
                priced.put(key, sh, block)
        if block is None:
            rest = np.arange(len(idx))
        else:
            rest = np.flatnonzero(block.fallback)
            err = block.errors
            if err is not None:
                at = idx[err.rows]
                codes = np.array([entries.strings.code(msg) for msg in err.messages], dtype=np.int32)[err.code]
                entries.add_errors(at, ask_codes[at], codes, known)
            if not len(rest) and err is None:  # the whole group
                cov, at = slice(None), rows
            else:
                keep = ~block.fallback
                if err is not None:
                    keep[err.rows] = False
                cov = np.flatnonzero(keep)
                at = idx[cov]
            if block.note:
                entries.add_errors(at, ask_codes[at], block.note, known)
            else:
                notes = caveats(make, sh, block, models, tuple((k, str(v)) for k, v in values.items()))
                entries.add(at, ask_codes[at], block.strategies, block.cycles[:, cov], block.legal[:, cov],
                            block.default[cov], block.models, block.best[cov], block.dval[cov], notes.take(cov),
                            why=Why(sh, cov, functools.partial(_why_illegal, make)), known=known)
            done += len(idx) - len(rest)
        if len(rest):
            if vectorised and values.get("arch") == "a5":
                from .vector.a5 import warm_anchored

                warm_anchored(make, sh.take(rest), models)
            done = _per_request(values, idx[rest], sh.take(rest), ask_codes, entries, models, progress, done, n,
                                warm=vectorised, known=known)
        if progress is not None:
            progress(done, n)
    return entries.results(n)


class _Reused:
    """Closed-form blocks of the groups that differ in a scalar operand's value only, on the same shapes. The value
    selects no instruction of a closed-form program (an A2/A3 `@hook` sequence, which may branch on it, has no closed
    form) but may equal a literal the program sets anyway, which then takes no scalar register of its own (TLRELU's
    0, TDIVS's 1: one `smov` fewer); so a block is shared by the groups whose representative plan issues the same
    instructions. A value the op refuses is caught by building that plan."""

    KEPT = 16  # groups held (their blocks' arrays)

    def __init__(self):
        self._blocks: dict[tuple, tuple] = {}

    def get(self, values: dict, sh, make) -> tuple[Block | None, tuple | None]:
        """(the block of an earlier group like this one on the same shapes, or None; the group's key for `put`)."""
        from . import lower
        from .errors import PtoCostError
        from .vector import representative

        if "scalar" not in values:
            return None, None
        try:
            counts = lower.lower(representative(make)).counts()
        except PtoCostError:
            return None, None
        key = (tuple((k, str(v)) for k, v in values.items() if k != "scalar"), tuple(sorted(counts.items())))
        found = self._blocks.get(key)
        if found is None or not all(np.array_equal(a, b) for a, b in zip(found[0], sh)):
            return None, key
        return found[1], key

    def put(self, key: tuple | None, sh, block: Block | None) -> None:
        """Hold a group's block under its key from `get` (not a group without one)."""
        if key is None or block is None:
            return
        if len(self._blocks) >= self.KEPT and key not in self._blocks:
            self._blocks.pop(next(iter(self._blocks)))
        self._blocks[key] = (sh, block)


PER_REQUEST_BATCH = 512  # distinct requests lowered before they are priced (their plans held at once)


def _why_illegal(make, shape: tuple[int, int, int, int], strategy: str) -> str | None:
    """Return the lowering's reason a strategy is illegal at one shape of a group (None where it gives none)."""
    from . import lower
    from .errors import PtoCostError

    try:
        return lower.strategies(make(*shape))[1].get(strategy)
    except PtoCostError:
        return None


def _strategy_names(make) -> tuple[str, ...]:
    """Every strategy of the group's op (legal or not) at the representative shape, () where it has no request
    there: what a refused row's named strategy is spelled as, alike on both paths."""
    from . import lower
    from .errors import PtoCostError
    from .vector import representative

    try:
        return tuple(lower.strategies(representative(make))[1])
    except PtoCostError:
        return ()


def _per_request(values, idx, sh, ask_codes, entries: Entries, models: Models, progress, done: int, total: int,
                 warm: bool = False, known=None) -> int:
    """Cost rows by lowering each distinct request once; returns the updated count of rows done. With `warm`, the
    pipeline simulations a batch of requests needs run first, batched by loop structure (PipelineModel.warm);
    `known()` gives the op's strategies, as `_strategy_names`."""
    stacked = np.stack(list(sh), axis=1)
    uniq, inv = np.unique(stacked, axis=0, return_inverse=True)
    inv = inv.ravel()
    order = np.argsort(inv, kind="stable")
    bounds = np.cumsum(np.bincount(inv, minlength=len(uniq)))
    members_of = np.split(order, bounds[:-1])
    for start in range(0, len(uniq), PER_REQUEST_BATCH):
        batch = range(start, min(start + PER_REQUEST_BATCH, len(uniq)))
        lowered = []
        for k in batch:
            r, c, vr, vc = (int(v) for v in uniq[k])
            lowered.append(lower_key({**values, "rows": r, "cols": c, "valid_rows": vr, "valid_cols": vc}))
        if warm:
            _warm_pipeline([p for plans, *_ in lowered for p in plans.values()], models)
        for k, (plans, default, note, illegal) in zip(batch, lowered):
            table, default, note = price_plans(plans, default, note, models)
            rows = idx[members_of[k]]
            if not table:
                entries.add_errors(rows, ask_codes[rows], note, known)
            else:
                # the illegal strategies go along (never priced) so that a row naming one is answered as the
                # closed form answers it, under the strategy's own spelling
                names = (*table, *illegal)
                m, n_legal = len(rows), len(table)
                cyc = np.array([table[s][0] for s in table] + [np.nan] * len(illegal))
                legal = np.zeros((len(names), m), dtype=bool)
                legal[:n_legal] = True
                entries.add(rows, ask_codes[rows], names, np.repeat(cyc[:, None], m, axis=1), legal,
                            np.full(m, names.index(default), dtype=np.int64),
                            tuple(table[s][1] for s in table) + ("",) * len(illegal),
                            caveats=Caveats(tuple(table[s][2] for s in table) + ("",),
                                            np.minimum(np.arange(len(names)), n_legal)),
                            why=Why(tuple(np.repeat(v, m) for v in uniq[k]), slice(None),
                                    lambda _, s, illegal=illegal: illegal.get(s)),
                            known=known)
            done += len(rows)
            if progress is not None:
                progress(done, total)
    return done


def _warm_pipeline(plans: list, models: Models) -> None:
    """Batch the pipeline simulations of the A5 plans the model will price by simulation (those its formula part has
    no parameters for)."""
    from .errors import PtoCostError
    from .isa_a5 import VfProgram
    from .vector.a5 import model_parts

    a5 = [p for p in plans if p.arch == "a5"]
    if not a5:
        return
    try:
        parts = model_parts(models.get("a5"))
    except PtoCostError:
        return
    if parts is None or parts[1] is None:
        return
    formula, pipe, _ = parts
    progs = []
    for p in a5:
        if formula is not None:
            try:
                if formula.covers(p):
                    continue
            except PtoCostError:  # priced by no model: the pricing pass reports it
                continue
        progs += [x for x in p.body if isinstance(x, VfProgram)]
    pipe.warm(progs)


def sweep_dask(frame, *, model: str = "auto", scheduler: str | None = None, workers: int | None = None,
               npartitions: int | None = None, processes: bool = True, client=None,
               progress: Callable[[int, int], None] | None = None):
    """Run `sweep` over partitions of the frame on a dask.distributed cluster; returns the same frame as `sweep`.

    Workers get only the columns a sweep reads (strings as categoricals, shapes as small integers) and send back
    only the result columns; the output frame is assembled here, from the caller's columns, exactly as `sweep`
    assembles it. The cluster: `client` (an existing dask Client, left open), else `scheduler` (an address,
    connected for the call), else a local cluster of `workers` (default 2) worker processes (threads if
    `processes` is False) started for the call. The frame is split into one partition per worker thread of the
    cluster (`npartitions` overrides), none under 2000 rows; `progress(rows done, rows total)` is called as
    partitions come back.
    """
    from .errors import PtoCostError

    try:
        from dask.distributed import Client
    except ImportError:
        raise PtoCostError("the dask engine needs the optional extra: pip install 'pto-cost[dask]'") from None

    model = registry.check_name(model)  # an arch that lacks it is that arch's rows' note
    if workers is not None and workers < 1:
        raise PtoCostError(f"--workers must be at least 1, got {workers}")
    f = Frame(frame.reset_index(drop=True))
    slim = _slim(f)
    cluster, own = None, client is None
    if client is None and scheduler is not None:
        client = _connect(Client, scheduler)
    elif client is None:
        cluster = local_cluster(workers or 2, processes=processes)
        client = Client(cluster)
    try:
        from dask.distributed import as_completed

        k = npartitions or max(1, min(f.n // 2000 + 1, sum(client.nthreads().values()) or 2))
        starts = [f.n * i // k for i in range(k)]
        ends = starts[1:] + [f.n]
        parts = [slim.iloc[a:b] for a, b in zip(starts, ends)]
        futures = client.map(_partition_results, client.scatter(parts), model=model, pure=False)
        if progress is not None:
            size, done = {fut.key: b - a for fut, a, b in zip(futures, starts, ends)}, 0
            for fut in as_completed(futures):
                done += size[fut.key]
                progress(done, f.n)
        results = client.gather(futures)
    finally:
        if own:
            client.close()
        if cluster is not None:
            cluster.close()
    return assemble(f, concat(results, starts))


def _connect(client_cls, address: str):
    """A dask client of the scheduler at `address`; PtoCostError when the address is empty, malformed or does not
    answer within 10 s."""
    from .errors import PtoCostError

    form = "an address like tcp://HOST:8786"
    if not address.strip():
        raise PtoCostError(f"cannot reach the dask scheduler at {address!r}: an empty address; give {form}")
    try:
        return client_cls(address, timeout="10s")
    except (ValueError, TypeError) as exc:  # distributed's address parsing; a scheme it cannot open (ucx, tls)
        raise PtoCostError(f"cannot reach the dask scheduler at {address!r}: {str(exc).splitlines()[0]}; "
                           f"give {form}") from None
    except (OSError, TimeoutError) as exc:
        raise PtoCostError(f"cannot reach the dask scheduler at {address} ({str(exc).splitlines()[0]})") from None


# dask starts worker processes with MALLOC_TRIM_THRESHOLD_=64 KiB (memory goes back to the OS eagerly); that also
# pins glibc's mmap threshold at 128 KiB, so every numpy temporary of a 32k-row chunk is a fresh mmap that
# page-faults in: a sweep then takes ~2.5x the CPU it takes in a plain process. Sweep workers keep freed memory.
WORKER_ENVIRON = {"MALLOC_TRIM_THRESHOLD_": 128 << 20, "MALLOC_MMAP_THRESHOLD_": 64 << 20}


def local_cluster(workers: int = 2, *, processes: bool = True):
    """A dask LocalCluster for sweeps: `workers` single-threaded workers (processes, or threads of this process),
    worker processes started with WORKER_ENVIRON."""
    import logging

    import dask
    from dask.distributed import LocalCluster

    environ = {f"distributed.nanny.pre-spawn-environ.{k}": v for k, v in WORKER_ENVIRON.items()}
    with dask.config.set(environ):
        # the cluster is the sweep's own: a task's error reaches the caller through its future, while the workers'
        # own logs would print connection tracebacks on every Ctrl-C (the cluster shut down mid-task)
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes, dashboard_address=None,
                            silence_logs=logging.CRITICAL)


def _partition_results(part, model: str = "auto") -> Results:
    """The result columns of one partition (what a dask worker runs: the same evaluation as `sweep`)."""
    return _evaluate(Frame(part), model)


def _slim(f: Frame):
    """The columns a sweep reads, compact for shipping: strings in runs as categoricals, shapes in the smallest
    integer type that holds them; the arch even where the frame has none (the workers' environment may name
    another default)."""
    import pandas as pd

    cols = {}
    for c in [*_key_columns(f), "strategy"]:
        if c == "arch" and c in f.const:  # the client's default arch ($PTO_COST_ARCH), not each worker's
            cols[c] = pd.Categorical.from_codes(np.zeros(f.n, dtype=np.int8), [f.const[c]], validate=False)
            continue
        if c in f.const:
            continue
        col = f.df[c]
        if isinstance(col.dtype, pd.StringDtype) or col.dtype == object:
            runs = _runs(col)
            if runs is not None:
                starts, values = runs
                codes, uniq = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
                if (codes >= 0).all() and len(uniq) < 127:
                    lengths = np.diff(np.append(starts, f.n))
                    col = pd.Categorical.from_codes(np.repeat(codes.astype(np.int8), lengths), uniq, validate=False)
        elif c in SHAPE_COLUMNS and len(col):
            lo, hi = int(col.min()), int(col.max())
            for small in (np.int16, np.int32):
                if np.iinfo(small).min <= lo and hi <= np.iinfo(small).max:
                    col = col.to_numpy(small)
                    break
        cols[c] = col
    return pd.DataFrame(cols, copy=False)  # columns the frame lacks are added by each partition, as by `sweep`


def verify_sample(result, n: int, *, seed: int = 0) -> tuple[list[str], int, list[str]]:
    """Emulate `n` random modelled rows of a sweep result (one strategy of a point each) against the golden; return
    (descriptions of failures, how many rows were emulated, descriptions of those the golden could not check:
    `Verification.ok` None)."""
    from . import lower
    from .emulate.verify import verify
    from .operands import make_request

    ok = result[result["cycles"].notna()]
    if not len(ok):
        return [], 0, []
    pick = ok.sample(n=min(n, len(ok)), random_state=seed)
    failures, unchecked = [], []
    for rec in pick.to_dict("records"):
        values = {k: v for k, v in rec.items() if k in (*REQUEST_COLUMNS, *PARAM_COLUMNS)}
        kw = request_kwargs(values, rec["rows"], rec["cols"], rec["valid_rows"], rec["valid_cols"])
        req = make_request(**kw, strategy=rec["strategy"])
        v = verify(lower.lower(req), seed=seed)
        if v.ok is not True:
            (failures if v.ok is False else unchecked).append(f"{req.describe()} strategy {rec['strategy']}: {v.note}")
    return failures, len(pick), unchecked
