"""Benchmark of an online block's signed prizes remaining: written (every winning play's unit
proven from the ledger's tree and sealed salts, a page of plays at a time) and verified.

A Golden Animals block of ``--packs`` groups of 1,000 units, generated, countersigned and
imported with its commitment (SQLite, or PostgreSQL with ``--postgres URL``: a database made
for the run and dropped after); ``--plays`` plays dealt in batches of 128 through the game
server's own ``Dealer.play_batch`` (no HTTP: the plays are the set-up, not what is measured);
then ``--repeat`` times the report written (``publish_remaining``) and verified
(``verify_remaining_file``): the seconds, per lot, the file's size and the peak RSS.  The
machine is shared: the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from printpipe.commitment.remaining import verify_remaining_file
from printpipe.keys import (
    LOTTERY_SIGNING_KEY,
    LOTTERY_SIGNING_PUB,
    PRODUCER_SIGNING_PUB,
    load_public_key,
    load_signing_key,
)
from printpipe.ledger import LOTTERY, configure, load_ledger_key
from printpipe.ledger.book import publish_remaining
from printpipe.ledger.store.base import parse_location
from tests.play_helpers import OnlineBlock, make_block, make_world, play_many

PLAYERS = 64


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packs", type=int, default=20)
    parser.add_argument("--plays", type=int, default=None, help="default: every unit")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--postgres", default=None, help="a server's URL (a database is made)")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        started = time.perf_counter()
        block = make_block(root / "block", packs=args.packs)
        print(f"block of {args.packs * 1000:,} units made in {time.perf_counter() - started:.1f} s")
        url = None
        if args.postgres:
            from tests.pgserver import create_database

            url = create_database(args.postgres)
        try:
            run(args, block, root, url)
        finally:
            if url:
                from tests.pgserver import drop_database

                drop_database(url)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


def run(args: argparse.Namespace, block: OnlineBlock, root: Path, url: str | None) -> None:
    location = parse_location(url or str(root / "ledger.sqlite"))
    world = make_world(block, location, root / "world", players=PLAYERS, balance_eur=10**6)
    configure(location, terminal=LOTTERY, daily_stake_limit_eur=10**9)
    total = args.plays if args.plays is not None else args.packs * 1000
    started = time.perf_counter()
    play_many(location, world.keys, total, tag="bench", players=PLAYERS)
    print(f"{total:,} plays in {time.perf_counter() - started:.1f} s", flush=True)
    out = root / "remaining.txt"
    for _ in range(args.repeat):
        started = time.perf_counter()
        made = publish_remaining(
            location,
            out=out,
            signing_key=load_signing_key(world.keys, LOTTERY_SIGNING_KEY),
            key=load_ledger_key(world.keys),
        )
        written = time.perf_counter() - started
        started = time.perf_counter()
        verify_remaining_file(
            report_path=out,
            commitment_path=block.commitment,
            producer_key=load_public_key(world.keys / PRODUCER_SIGNING_PUB),
            lottery_key=load_public_key(world.keys / LOTTERY_SIGNING_PUB),
        )
        verified = time.perf_counter() - started
        per_lot = written / max(made.paid, 1) * 1e6
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"report of {made.paid:,} lots won: written {written:.2f} s ({per_lot:.0f} us a "
            f"lot), verified {verified:.2f} s, {out.stat().st_size / 1e6:.1f} MB, peak RSS "
            f"{rss:.0f} MB",
            flush=True,
        )


if __name__ == "__main__":
    main()
