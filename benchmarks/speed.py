"""Speed benchmark: wall time of the README command, and one emulator+golden check.

Run: python benchmarks/speed.py [--runs N]. Prints medians and the ratio to each target
(README command < 0.5 s; 64x64 f16 TMINS emulator + golden check < 5 ms).
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def readme_command_seconds(runs: int) -> list[float]:
    exe = shutil.which("pto-cost")
    cmd = [exe] if exe else [sys.executable, "-m", "cli"]
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([*cmd, "estimate", "TMINS", "--shape", "64x64", "--dtype", "f16"], check=True,
                       capture_output=True, cwd=Path(__file__).resolve().parent.parent)
        times.append(time.perf_counter() - t)
    return times


def verify_seconds(runs: int) -> list[float]:
    from costmodel import lower
    from costmodel.api import request
    from costmodel.emulate.verify import verify

    plan = lower.lower(request("TMINS", "64x64", "f16"))
    verify(plan)
    times = []
    for seed in range(runs):
        t = time.perf_counter()
        assert verify(plan, seed=seed).ok
        times.append(time.perf_counter() - t)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    cli = statistics.median(readme_command_seconds(args.runs))
    emu = statistics.median(verify_seconds(max(50, args.runs)))
    print(f"README command (pto-cost estimate TMINS --shape 64x64 --dtype f16): median {cli * 1e3:.0f} ms "
          f"over {args.runs} runs; target 500 ms -> {cli / 0.5:.2f}x of target")
    print(f"emulator + golden check, TMINS 64x64 f16: median {emu * 1e3:.2f} ms; target 5 ms -> {emu / 0.005:.2f}x of target")


if __name__ == "__main__":
    main()
