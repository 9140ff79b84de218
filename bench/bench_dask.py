"""Dask benchmark: the same export through the local process pool and through a Dask
LocalCluster (loopback, no dashboard), with 1 and 2 workers; tickets/s and Dask's overhead.

    python bench/bench_dask.py [--packs 200] [--chunk-packs 20] [--repeat 3]

Each run is a whole ``export_block`` call into a fresh folder (store check, rendering, job.json,
run manifest); for Dask it includes connecting to the scheduler, not starting the cluster
(a print shop's cluster is already up).  Configurations are interleaved within each repeat, so
that the load of other jobs on the machine spreads over all of them; medians are reported.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from printpipe.block import PackRange  # noqa: E402
from printpipe.games import load_game  # noqa: E402
from printpipe.generation import generate_block  # noqa: E402
from printpipe.keys import init_keys, load_secrets, load_signing_key  # noqa: E402
from printpipe.press import export_block  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--packs", type=int, default=200)
    parser.add_argument("--chunk-packs", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from distributed import LocalCluster

    with tempfile.TemporaryDirectory() as tmp_text:
        tmp = Path(tmp_text)
        keys = tmp / "keys"
        init_keys(keys)
        store = tmp / "block"
        generate_block(
            load_game("chien-chat"),
            secrets=load_secrets(keys),
            signing_key=load_signing_key(keys),
            block=1,
            out=store,
            packs=PackRange(1, args.packs),
            show_progress=False,
        )
        tickets = args.packs * 125
        clusters = {
            n: LocalCluster(
                n_workers=n,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
            )
            for n in (1, 2)
        }
        configs = {
            "local pool, 1 worker": (1, None),
            "local pool, 2 workers": (2, None),
            "Dask LocalCluster, 1 worker": (1, clusters[1].scheduler_address),
            "Dask LocalCluster, 2 workers": (2, clusters[2].scheduler_address),
        }
        seconds: dict[str, list[float]] = {name: [] for name in configs}
        try:
            for repeat in range(args.repeat):
                for name, (workers, scheduler) in configs.items():
                    out = tmp / f"print-{repeat}-{len(seconds[name])}-{workers}-{bool(scheduler)}"
                    started = time.perf_counter()
                    export_block(
                        block_dir=store,
                        out_dir=out,
                        keys_dir=keys,
                        unapproved=True,  # the same work as an approved run, another slug
                        workers=workers,
                        chunk_packs=args.chunk_packs,
                        show_progress=False,
                        scheduler=scheduler,
                    )
                    seconds[name].append(time.perf_counter() - started)
        finally:
            for cluster in clusters.values():
                cluster.close()

    rate = {name: tickets / statistics.median(times) for name, times in seconds.items()}
    print(
        f"{args.packs} packs = {tickets:,} tickets, {args.chunk_packs}-pack chunks, "
        f"median of {args.repeat}"
    )
    for name, times in seconds.items():
        runs = ", ".join(f"{t:.2f}" for t in times)
        print(f"  {name:30s} {rate[name]:8,.0f} tickets/s   (runs: {runs} s)")
    for workers in (1, 2):
        suffix = "worker" if workers == 1 else "workers"
        local = rate[f"local pool, {workers} {suffix}"]
        dask = rate[f"Dask LocalCluster, {workers} {suffix}"]
        print(f"  Dask overhead, {workers} {suffix}: {100 * (local / dask - 1):+.1f} %")


if __name__ == "__main__":
    main()
