"""Benchmark: generate and audit one full block of a game; units/s and peak memory.

    python bench/bench_block.py [--game golden-animals] [--runs 3]

Each stage runs as the command a user types, in its own process, so the peak RSS reported
is that stage's own (from ``wait4``).  The machine is shared: the median of the runs is the
figure to quote.  Runs this checkout (not an installed printpipe) with demo keys in a
temporary folder.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_stage(args: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Wall time in seconds and peak RSS in bytes of one ``printpipe`` command."""
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "printpipe", *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            errors.seek(0)
            sys.exit(f"printpipe {' '.join(args)} failed:\n{errors.read().decode()}")
    return elapsed, usage.ru_maxrss * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="golden-animals")
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    units = 1_500_000
    figures: dict[str, list[tuple[float, int]]] = {"generate": [], "audit": []}
    with tempfile.TemporaryDirectory() as work:
        keys = Path(work) / "keys"
        subprocess.run(
            [sys.executable, "-m", "printpipe", "keys", "init", str(keys)],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        for run in range(options.runs):
            block = Path(work) / f"block-{run}"
            generate = ["generate", "--game", options.game, "--keys", str(keys)]
            figures["generate"].append(run_stage([*generate, "--out", str(block), "-q"], env))
            audit = ["audit", str(block), "--keys", str(keys), "-q"]
            figures["audit"].append(run_stage(audit, env))
            print(
                f"run {run + 1}: generate {figures['generate'][-1][0]:.1f} s, "
                f"audit {figures['audit'][-1][0]:.1f} s",
                file=sys.stderr,
            )
    print(f"{options.game}: one block of {units:,} units, median of {options.runs} runs")
    print(f"{'stage':<10} {'seconds':>8} {'units/s':>10} {'peak RSS MB':>12}")
    for stage, runs in figures.items():
        seconds = statistics.median(s for s, _ in runs)
        peak = statistics.median(r for _, r in runs) / 2**20
        print(f"{stage:<10} {seconds:>8.1f} {units / seconds:>10,.0f} {peak:>12.0f}")


if __name__ == "__main__":
    main()
