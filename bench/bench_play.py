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
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from printpipe.ledger import LOTTERY, configure
from tests.play_helpers import PlayWorld, make_block, make_world
from tests.storm import Pace, ledger_location, measured_storm, print_median

PLAYERS = 64


def run_once(
    world: PlayWorld, rounds: int, pids: list[int], name: str, *, pace: Pace | None = None
) -> dict[str, float]:
    per_player = [[world.play_request(p) for _ in range(rounds)] for p in world.players]
    return measured_storm(name, world.url, per_player, pids, ok=201, unit="play", pace=pace)


def run(backend: str, args: argparse.Namespace, root: Path) -> None:
    with ledger_location(backend, root) as (location, database_pids):
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
            print_median(f"{backend} {kind}", measured, unit="play")
        print(
            f"{backend}: books checked: {totals['plays']:,} plays, each unit once, "
            f"{totals['stakes'] / 100:,.0f} EUR staked, {totals['lots'] / 100:,.0f} EUR won",
            flush=True,
        )


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
