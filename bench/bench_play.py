"""Benchmark of the game server: 64 players playing at once against one ``printpipe play``,
on SQLite and on PostgreSQL.

For each database: a Golden Animals block of ``--packs`` groups of 1,000 units, generated,
countersigned and imported with its commitment; 64 players with a balance; a platform
terminal; then ``printpipe play --workers 2`` (one per core) in a subprocess.  Each player
sends ``--rounds`` plays one after the other on its own keep-alive connection, each signed by
the platform (pre-signed before the clock starts, ``tests/storm.py``) with its own
Idempotency-Key: a play is the whole path, debit, deal, credit and the durable commit.  The
run is repeated ``--repeat`` times and the median quoted; after the last, the books are
checked (no unit dealt twice, every debit with its play, money conserved).

Two kinds of run: without pause (each player sends its next play as soon as the last is
answered: the most the server answers; with 64 players always waiting, a play's latency is then
64 / the rate, Little's law: 128 ms at 500/s whatever the code), and paced (``--rate`` plays/s
offered, spread over the 64 players, each play sent when due and its latency counted from
then: the latency at the target's rate).  A warm-up of 2 plays a player comes first, not
counted (each worker's first requests load what it caches).

Reported per run: plays/s, p50 and p99 latency, the client's CPU over the wall time (its share
of one core: it must not be what limits the server), the server side's CPU per play (the play
server's processes and, on PostgreSQL, the database server's) and what 2 idle cores would
answer at that cost.  Target (issue 21): >= 500 plays/s with p99 <= 100 ms on SQLite.

Usage: ``python bench/bench_play.py [--db sqlite,postgresql] [--rounds 20] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from printpipe.ledger import LOTTERY, Location, configure, parse_location
from tests import pgserver
from tests.play_helpers import PlayWorld, make_block, make_world
from tests.storm import Pace, storm

PLAYERS = 64


def cpu_seconds(pid: int) -> float:
    """CPU time of ``pid`` and its children (the server's workers), in seconds."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if stat.parent.name == str(pid) or fields[1] == str(pid):
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def run_once(
    world: PlayWorld, rounds: int, pids: list[int], name: str, *, pace: Pace | None = None
) -> dict[str, float]:
    per_player = [[world.play_request(p) for _ in range(rounds)] for p in world.players]
    cpu0, server0 = time.process_time(), sum(cpu_seconds(pid) for pid in pids)
    outcomes, wall = storm(world.url, per_player, pace=pace)
    client = time.process_time() - cpu0
    server = sum(cpu_seconds(pid) for pid in pids) - server0
    answered = [o for o in outcomes if o is not None and o.status == 201]
    latencies = np.array([o.latency_s for o in answered]) * 1000
    result = {
        "rate": len(answered) / wall,
        "p50": float(np.percentile(latencies, 50)),
        "p99": float(np.percentile(latencies, 99)),
        "client": client / wall,
        "server": server / wall,
        "cpu_us": server / max(len(answered), 1) * 1e6,
        "errors": float(len(outcomes) - len(answered)),
    }
    print(
        f"  {name}: {len(answered):,} plays in {wall:.2f} s = {result['rate']:,.0f}/s, "
        f"p50 {result['p50']:.1f} ms, p99 {result['p99']:.1f} ms; client CPU "
        f"{result['client']:.0%} of a core, server {result['server']:.0%} "
        f"({result['cpu_us']:.0f} us a play: {2e6 / result['cpu_us']:,.0f}/s on 2 idle cores); "
        f"not 201: {result['errors']:.0f}; load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    return result


def run(backend: str, args: argparse.Namespace, root: Path) -> None:
    databases = contextlib.ExitStack()  # PostgreSQL's server, stopped at the end
    database_pids: list[int] = []
    if backend == "sqlite":
        location: Location = root / "ledger.sqlite"
    else:
        postgres = databases.enter_context(pgserver.throwaway(durable=True))
        location = parse_location(postgres.url)
        database_pids.append(postgres.pid)
    try:
        started = time.perf_counter()
        block = make_block(root / "block", packs=args.packs)
        world = make_world(
            block, location, root / "world", players=PLAYERS,
            balance_eur=2 * args.rounds * args.repeat + 10,
        )  # fmt: skip
        # every player plays more than the default daily limit allows: raised for the bench
        configure(location, terminal=LOTTERY, daily_stake_limit_eur=10_000)
        print(f"{backend}: {args.packs * 1000:,} units and {PLAYERS} players ready in "
              f"{time.perf_counter() - started:.0f} s", flush=True)  # fmt: skip
        world.start(workers=args.workers)
        assert world.process is not None
        pids = [world.process.pid, *database_pids]
        paced = f"plays offered at {args.rate:,}/s"
        runs: dict[str, list[dict[str, float]]] = {"plays without pause": [], paced: []}
        try:
            run_once(world, 2, pids, "warm-up (not counted: each worker's first requests)")
            for attempt in range(args.repeat):
                runs["plays without pause"].append(
                    run_once(world, args.rounds, pids, f"without pause #{attempt + 1}")
                )
                runs[paced].append(
                    run_once(world, args.rounds, pids, f"{paced} #{attempt + 1}",
                             pace=Pace(args.rate))
                )  # fmt: skip
        finally:
            world.stop()
        totals = world.check_books(sum(world.players.values()))
        for kind, measured in runs.items():
            median = {k: statistics.median(r[k] for r in measured) for k in measured[0]}
            print(
                f"{backend} {kind}, median of {len(measured)}: {median['rate']:,.0f}/s, p50 "
                f"{median['p50']:.1f} ms, p99 {median['p99']:.1f} ms, client CPU "
                f"{median['client']:.0%} of one core (server {median['server']:.0%}, "
                f"{median['cpu_us']:.0f} us a play: {2e6 / median['cpu_us']:,.0f}/s on 2 idle "
                "cores)",
                flush=True,
            )
        print(
            f"{backend}: books checked: {totals['plays']:,} plays, each unit once, "
            f"{totals['stakes'] / 100:,.0f} EUR staked, {totals['lots'] / 100:,.0f} EUR won",
            flush=True,
        )
    finally:
        databases.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", default="sqlite,postgresql")
    parser.add_argument("--packs", type=int, default=10, help="Groups of 1,000 units.")
    parser.add_argument("--rounds", type=int, default=20, help="Plays per player per run.")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rate", type=int, default=500, help="Plays/s offered (paced runs).")
    parser.add_argument("--workers", type=int, default=2, help="printpipe play --workers")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} (2 cores)", flush=True)
    for backend in args.db.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            run(backend, args, Path(tmp))
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
