"""Speed of vectorised sweeps (run on demand: `python benchmarks/sweep.py [--points N] [--no-dask]`).

Prints estimates per second and the ratio to each target:

* formula path: `sweep(frame)` on 1 000 000 points (TMINS and TADD, f16 and f32, a2a3 and a5; random static
  shapes and valid regions that fit the unified buffer), target >= 10 million estimates/s;
* pipeline path: `sweep(frame, model="pipeline")` on 100 000 A5 points (same ops and dtypes), the process's
  simulation cache emptied first so every simulation is paid for, target >= 20 000 estimates/s;
* conversions: `sweep(frame)` on 100 000 TCVT points per arch from f32 to four types (A5: measured pairs; A2/A3:
  f32 -> i16 converts through an s32 tmp with CTRL writes), closed form, formula, no target (an A5 pair without
  formula parameters, such as f32 -> f32, takes the anchored pipeline: the TRSQRT line's speed);
* selects: `sweep(frame)` on 100 000 TSEL points per arch (f16 and f32: the mask tile; on A5 the 32-bit parity
  variants), no target;
* anchored path: `sweep(frame)` on 10 000 A5 TRSQRT points (no formula parameters: the pipeline of the point and
  of each measured anchor op, plus each anchor's formula), no target;
* Dask: `sweep_dask` on the 1 000 000 points against an already running local cluster of 2 workers, wall time
  within 2x of the local engine, and the frame identical (`pandas.testing.assert_frame_equal`, exact): worker
  processes as `sweep_dask` starts them, worker processes with dask's default environment, and threads; each
  with a client connected for the call and with an open client. Cluster start-up is printed separately.

An estimate is one output row with cycles (every legal strategy of every point is costed for `best`).
Timings are the best of `--repeat` runs of the whole `sweep` call, frame in, frame out.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GROUPS = [(op, dt, arch) for arch in ("a2a3", "a5") for op in ("TMINS", "TADD") for dt in ("f16", "f32")]
UB = {"a2a3": 196608, "a5": 262144}
FORMULA_TARGET, PIPELINE_TARGET, DASK_RATIO = 10_000_000, 20_000, 2.0


def frame(n: int, groups=GROUPS, seed: int = 0, max_rows: int = 256):
    """`n` points split over `groups`: random shapes (rows x cols) whose three tiles fit the UB, random valid
    regions (half of them with full valid columns, so both 1-level and 2-level forms occur)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    parts = []
    per = -(-n // len(groups))
    for op, dt, arch in groups:
        nbytes = int(dt[1:]) // 8
        unit = 32 // nbytes
        rows = rng.integers(1, max_rows + 1, per)
        cap = np.maximum(1, UB[arch] // (3 * rows * unit * nbytes))
        cols = unit * rng.integers(1, np.minimum(cap, 512) + 1)
        vr = rng.integers(1, rows + 1)
        vc = np.where(rng.random(per) < 0.5, cols, rng.integers(1, cols + 1))
        parts.append(pd.DataFrame({"op": op, "dtype": dt, "arch": arch, "rows": rows, "cols": cols,
                                   "valid_rows": vr, "valid_cols": vc}))
    return pd.concat(parts, ignore_index=True).iloc[:n]


def timed(fn, repeat: int):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--pipeline-points", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-dask", action="store_true")
    args = ap.parse_args()

    import pandas as pd

    from costmodel.models.a5_pipeline import forget_simulations
    from costmodel.sweep import sweep

    df = frame(args.points)
    sweep(df.head(1000))  # imports, parameter tables
    secs, out = timed(lambda: sweep(df), args.repeat)
    n_est = int(out["cycles"].notna().sum())
    rate = n_est / secs
    print(f"formula path: {len(df):,} points, {n_est:,} estimates in {secs:.3f} s -> {rate:,.0f} estimates/s "
          f"({rate / FORMULA_TARGET:.2f}x of the {FORMULA_TARGET:,}/s target)")
    print(f"  models: {out['model'].value_counts().to_dict()}")

    pdf = frame(args.pipeline_points, [g for g in GROUPS if g[2] == "a5"], seed=1)
    forget_simulations()  # cold: models of the shipped parameters share one cache per process
    secs_p, out_p = timed(lambda: sweep(pdf, model="pipeline"), 1)
    n_p = int(out_p["cycles"].notna().sum())
    rate_p = n_p / secs_p
    print(f"pipeline path: {len(pdf):,} A5 points, {n_p:,} estimates in {secs_p:.2f} s -> {rate_p:,.0f} estimates/s "
          f"({rate_p / PIPELINE_TARGET:.2f}x of the {PIPELINE_TARGET:,}/s target)")

    adf = frame(args.pipeline_points // 10, [("TRSQRT", dt, "a5") for dt in ("f16", "f32")], seed=2)
    forget_simulations()
    secs_a, out_a = timed(lambda: sweep(adf), 1)
    n_a = int(out_a["cycles"].notna().sum())
    print(f"anchored path (`auto` on TRSQRT, no formula parameters): {len(adf):,} A5 points, {n_a:,} estimates in "
          f"{secs_a:.2f} s -> {n_a / secs_a:,.0f} estimates/s; models: {out_a['model'].value_counts().to_dict()}")

    dsts = {"a5": ["f16", "bf16", "fp8_e4m3", "hif8"], "a2a3": ["f16", "bf16", "i16", "i32"]}
    for arch in ("a5", "a2a3"):
        cdf = frame(args.points // 10, [("TCVT", "f32", arch)], seed=3)
        cols = -(-cdf["cols"] // 32) * 32  # whole 32-byte rows of a 1-byte destination too
        cdf = cdf.assign(cols=cols, dst_dtype=np.tile(dsts[arch], len(cdf))[: len(cdf)])
        sdf = frame(args.points // 10, [("TSEL", dt, arch) for dt in ("f16", "f32")], seed=4)
        for what, f in ((f"conversions (`auto` on TCVT f32 -> {', '.join(dsts[arch])})", cdf),
                        ("selects (`auto` on TSEL f16, f32)", sdf)):
            secs_c, out_c = timed(lambda f=f: forget_simulations() or sweep(f), args.repeat)  # each run cold
            n_c = int(out_c["cycles"].notna().sum())
            print(f"{what}: {len(f):,} {arch} points, {n_c:,} estimates in {secs_c:.3f} s -> "
                  f"{n_c / secs_c:,.0f} estimates/s; models: {out_c['model'].value_counts().to_dict()}")

    if args.no_dask:
        return 0
    from dask.distributed import Client, LocalCluster

    from costmodel.sweep import local_cluster, sweep_dask

    for label, start in (("the engine's local cluster (costmodel.sweep.local_cluster)", lambda: local_cluster(2)),
                         ("a LocalCluster with dask's default worker environment",
                          lambda: LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)),
                         ("the engine's local cluster of threads (processes=False)",
                          lambda: local_cluster(2, processes=False))):
        t = time.perf_counter()
        cluster = start()
        print(f"dask, {label}: 2 workers started in {time.perf_counter() - t:.1f} s (not counted)")
        client = Client(cluster)
        try:
            sweep_dask(df.head(1000), client=client)  # workers import the package once
            address = cluster.scheduler_address
            runs = (("connected for the call (scheduler=address)", lambda a=address: sweep_dask(df, scheduler=a)),
                    ("an open Client (client=)", lambda c=client: sweep_dask(df, client=c)))
            for how, run in runs:
                secs_d, out_d = timed(run, args.repeat)
                pd.testing.assert_frame_equal(out, out_d, check_exact=True)
                print(f"  sweep_dask, {how}: {secs_d:.3f} s vs local {secs:.3f} s -> {secs_d / secs:.2f}x the local "
                      f"wall time (target <= {DASK_RATIO:g}x); frames identical")
        finally:
            client.close()
            cluster.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
