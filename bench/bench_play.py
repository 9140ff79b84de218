"""Benchmark of the game server: 64 players playing at once against one ``printpipe play``,
beside the validation floor server, on SQLite and on PostgreSQL.

For each database: a Golden Animals block of ``--packs`` groups of 1,000 units, generated,
countersigned and imported with its commitment; 64 players with a balance; a platform
terminal; then ``printpipe play --workers 2`` (one per core) in a subprocess, and beside it,
on the same database and with the same workers, **the floor** (``bench/floor_server.py``: a
bare ASGI server that verifies the same signature profile, reads one row by its key, appends
one log row and commits; here it reads the units' table).  Each player sends ``--rounds``
plays one after the other on its own keep-alive connection, each signed by the platform
(pre-signed before the clock starts, ``tests/storm.py``) with its own Idempotency-Key: a play
is the whole path, debit, deal, credit and the durable commit.  The floor gets as many
validations, signed by the same key, alternated with the plays.  The run is repeated
``--repeat`` times and the medians quoted; after the last, the books are checked (no unit
dealt twice, every debit with its play, money conserved) and ``verify-log`` passes.

Two kinds of run: without pause (each player sends its next play as soon as the last is
answered: the most the server answers; with 64 players always waiting, a play's latency is then
64 / the rate, Little's law), and paced (``--rate`` a second offered, spread over the 64
players, each request sent when due and its latency counted from then: the latency at that
rate), each for the plays and for the floor.  A warm-up of 2 plays a player comes first.

Reported per run: requests a second, p50 and p99 latency, the client's CPU over the wall time,
the server side's CPU per request (the server's processes and, on PostgreSQL, the database
server's) and what 2 idle cores would answer at that cost.  Last, issue 25's targets, each met
or NOT MET: plays a second without pause (PostgreSQL >= 1,500; SQLite no slower than issue 21's
1,929), the plays' p99 at ``--rate`` offered <= 2 x the floor's p99 at that rate, and the
server CPU a play <= 2 x the floor's a validation.  The load average is printed before and
after: the machine is shared, compare the ratios of one run.

**Through the operator's wallet** (issue 27; ``--no-wallet`` to leave it out): beside the
built-in wallet's game server, a second ledger on the same database holding the same block,
its 64 players' money at the reference wallet (``printpipe wallet serve``, its own database on
the same engine, on this machine), and ``printpipe play --wallet URL --wallet-key FILE
--workers 2``: its plays without pause are alternated with the built-in one's, and the median
of the runs' ratios is compared with issue 27's target (>= 0.5 x).  Afterwards its outbox is
empty, its ledger verifies and the wallet's balances are the deposits less the stakes plus the
lots.

Usage: ``python bench/bench_play.py [--db sqlite,postgresql] [--rounds 20] [--repeat 3]
[--rate 1000] [--no-wallet]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from printpipe.ledger import LOTTERY, Location, configure, location_argument
from printpipe.ledger.store import ticket_of_key
from tests.play_helpers import OnlineBlock, PlayWorld, make_block, make_world
from tests.storm import (
    Pace,
    ledger_location,
    measured_storm,
    print_median,
    start_floor,
    validate_request,
)
from tests.wallet_helpers import WalletProcess

PLAYERS = 64


@dataclass(frozen=True)
class Target:
    """Issue 25's targets for one database (``play --workers 2``, 64 players)."""

    plays: int  # a second, without pause
    p99_ratio: float = 2.0  # the plays' p99 at --rate offered, over the floor's
    cpu_ratio: float = 2.0  # server CPU a play, over the floor's a validation


TARGETS = {"sqlite": Target(1_929), "postgresql": Target(1_500)}


def unit_codes(world: PlayWorld) -> list[str]:
    """A validation code for each unit (its serial, any VIRN: the floor reads the row only)."""
    rows = world.query("SELECT id FROM units ORDER BY id")
    return [ticket_of_key(int(unit)).validation_code(12345) for (unit,) in rows]


WALLET_TARGET = 0.5
"""Issue 27: plays through the HTTP wallet, over the plays with the built-in one (a second)."""


@dataclass
class WalletSide:
    """The game server playing through the reference wallet (its world, the wallet)."""

    world: PlayWorld
    wallet: WalletProcess
    deposit_cents: int

    @property
    def pids(self) -> list[int]:
        assert self.world.process is not None
        return [self.world.process.pid]


def start_wallet_side(
    backend: str, location: Location, block: OnlineBlock, root: Path, args: argparse.Namespace
) -> WalletSide:
    """A second ledger with the block, the reference wallet holding its players' money, and
    ``printpipe play --wallet`` on them."""
    import datetime as dt

    from printpipe.ledger.store import PostgresLocation
    from printpipe.wallet.store import WalletStore
    from tests.ledger_helpers import LedgerFactory

    url = location.dsn if isinstance(location, PostgresLocation) else None
    factory = LedgerFactory(backend, root / "more", url)
    (root / "more").mkdir(exist_ok=True)
    world = make_world(block, factory.new(), root / "world-wallet", players=PLAYERS,
                       balance_eur=0)  # fmt: skip
    configure(world.location, terminal=LOTTERY, daily_stake_limit_eur=10_000)
    wallet = WalletProcess(factory.new(), root / "wallet")
    deposit = (2 * args.rounds * args.repeat + 10) * 100
    with WalletStore(wallet.location) as store:
        now = dt.datetime.now(dt.UTC)
        for player in world.players:
            store.deposit(player=player, amount_cents=deposit, now=now)
    wallet.start()
    world.start(workers=args.workers,
                args=["--wallet", wallet.url, "--wallet-key", str(wallet.key_file)])  # fmt: skip
    return WalletSide(world, wallet, deposit)


def check_wallet_side(side: WalletSide) -> int:
    """Its outbox emptied, its ledger verified, the wallet's money conserved; the plays."""
    from printpipe.wallet.store import WalletStore

    deadline = time.monotonic() + 120
    while side.world.query("SELECT COUNT(*) FROM wallet_outbox WHERE state IN ('pending', "
                           "'sent')")[0][0]:  # fmt: skip
        assert time.monotonic() < deadline, "the outbox was never emptied"
        time.sleep(0.5)
    ((plays, stakes, lots),) = side.world.query(
        "SELECT COUNT(*), COALESCE(SUM(stake_cents), 0), COALESCE(SUM(lot_cents), 0) FROM plays"
    )
    with WalletStore(side.wallet.location) as store:
        balances = store.totals()["balances"]
    assert balances == PLAYERS * side.deposit_cents - int(stakes) + int(lots), "money moved"
    with side.world.ledger() as book:
        report = book.verify_log()
    assert report.ok, report.problems
    return int(plays)


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
        codes = unit_codes(world)
        print(f"{backend}: {args.packs * 1000:,} units and {PLAYERS} players ready in "
              f"{time.perf_counter() - started:.0f} s", flush=True)  # fmt: skip
        world.start(workers=args.workers)
        assert world.process is not None
        side = start_wallet_side(backend, location, block, root, args) if args.wallet else None
        floor, floor_url = start_floor(
            location_argument(world.location), root, args.workers, table="units"
        )
        pids, floor_pids = [world.process.pid, *database_pids], [floor.pid, *database_pids]
        paced = f"offered at {args.rate:,}/s"
        runs: dict[str, list[dict[str, float]]] = {
            "plays without pause": [], "floor without pause": [],
            f"plays {paced}": [], f"floor {paced}": [],
        }  # fmt: skip
        through = "plays through the HTTP wallet without pause"
        if side is not None:
            runs[through] = []

        def wallet_plays(name: str, rounds: int) -> dict[str, float]:
            assert side is not None
            w = side.world
            per_player = [[w.play_request(p) for _ in range(rounds)] for p in w.players]
            return measured_storm(name, w.url, per_player, [*side.pids, *database_pids],
                                  ok=201, unit="play")  # fmt: skip

        turn = [0]

        def plays(name: str, rounds: int, pace: Pace | None = None) -> dict[str, float]:
            per_player = [[world.play_request(p) for _ in range(rounds)] for p in world.players]
            return measured_storm(name, world.url, per_player, pids, ok=201, unit="play",
                                  pace=pace)  # fmt: skip

        def validations(name: str, pace: Pace | None = None) -> dict[str, float]:
            per_terminal = []
            for _ in range(PLAYERS):
                asked = []
                for _ in range(args.rounds):
                    turn[0] = (turn[0] + 7919) % len(codes)
                    asked.append(validate_request(world.platform, floor_url, codes[turn[0]]))
                per_terminal.append(asked)
            return measured_storm(name, floor_url, per_terminal, floor_pids, ok=200,
                                  unit="validation", pace=pace)  # fmt: skip

        try:
            plays("warm-up (not counted: each worker's first requests)", 2)
            validations("floor warm-up")
            if side is not None:
                wallet_plays("HTTP wallet warm-up (not counted)", 2)
            for attempt in range(args.repeat):
                n = f"#{attempt + 1}"
                runs["plays without pause"].append(plays(f"plays without pause {n}", args.rounds))
                if side is not None:
                    runs[through].append(wallet_plays(f"{through} {n}", args.rounds))
                runs["floor without pause"].append(validations(f"floor without pause {n}"))
                runs[f"plays {paced}"].append(
                    plays(f"plays {paced} {n}", args.rounds, Pace(args.rate))
                )
                runs[f"floor {paced}"].append(validations(f"floor {paced} {n}", Pace(args.rate)))
        finally:
            world.stop()
            floor.terminate()
            floor.wait(timeout=60)
            if side is not None:
                try:
                    print(f"{backend}: the HTTP wallet's books checked, verify-log passes: "
                          f"{check_wallet_side(side):,} plays", flush=True)  # fmt: skip
                finally:
                    side.world.stop()
                    side.wallet.stop()
        totals = world.check_books(sum(world.players.values()))
        medians = {kind: print_median(f"{backend} {kind}", measured, unit="request")
                   for kind, measured in runs.items()}  # fmt: skip
        print(
            f"{backend}: books checked, verify-log passes: {totals['plays']:,} plays, each "
            f"unit once, {totals['stakes'] / 100:,.0f} EUR staked, {totals['lots'] / 100:,.0f} "
            "EUR won",
            flush=True,
        )
        free, floor_free = runs["plays without pause"], runs["floor without pause"]
        cpu = statistics.median(
            a["cpu_us"] / b["cpu_us"] for a, b in zip(free, floor_free, strict=True)
        )
        at, floor_at = runs[f"plays {paced}"], runs[f"floor {paced}"]
        p99 = statistics.median(a["p99"] / b["p99"] for a, b in zip(at, floor_at, strict=True))
        target = TARGETS[backend]
        rate = medians["plays without pause"]["rate"]
        m = medians
        rows = [
            ("plays a second, 64 players without pause", f"{rate:,.0f}",
             f">= {target.plays:,}", rate >= target.plays),
            ("  the floor's validations, the same", f"{m['floor without pause']['rate']:,.0f}",
             "", None),
            (f"p99 {paced}: plays / floor",
             f"{m[f'plays {paced}']['p99']:.1f} / {m[f'floor {paced}']['p99']:.1f} ms", "", None),
            ("  ratio (median of the runs')", f"{p99:.2f} x", f"<= {target.p99_ratio:g} x",
             p99 <= target.p99_ratio),
            ("  plays answered a second at that rate", f"{m[f'plays {paced}']['rate']:,.0f}",
             "", None),
            ("server CPU a play / a floor validation",
             f"{m['plays without pause']['cpu_us']:,.0f} / "
             f"{m['floor without pause']['cpu_us']:,.0f} us", "", None),
            ("  ratio (median of the runs')", f"{cpu:.2f} x", f"<= {target.cpu_ratio:g} x",
             cpu <= target.cpu_ratio),
        ]  # fmt: skip
        if side is not None:
            ratio = statistics.median(
                a["rate"] / b["rate"] for a, b in zip(runs[through], free, strict=True)
            )
            rows += [
                ("plays a second through the HTTP wallet", f"{m[through]['rate']:,.0f}", "",
                 None),
                ("  over the built-in wallet's (median ratio)", f"{ratio:.2f} x",
                 f">= {WALLET_TARGET:g} x", ratio >= WALLET_TARGET),
                ("  its p50 / p99", f"{m[through]['p50']:.1f} / {m[through]['p99']:.1f} ms", "",
                 None),
            ]  # fmt: skip
        print(f"{backend}: issue 25's and 27's targets (medians of {args.repeat} runs, load "
              f"{os.getloadavg()[0]:.1f})")  # fmt: skip
        for name, value, wanted, met in rows:
            verdict = "" if met is None else "met" if met else "NOT MET"
            print(f"  {name:<44} {value:>18}  {wanted:<10} {verdict}".rstrip(), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", default="sqlite,postgresql")
    parser.add_argument("--packs", type=int, default=10, help="Groups of 1,000 units.")
    parser.add_argument("--rounds", type=int, default=20, help="Requests per player per run.")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rate", type=int, default=1000, help="Requests/s offered (paced).")
    parser.add_argument("--workers", type=int, default=2, help="printpipe play --workers")
    parser.add_argument("--wallet", action=argparse.BooleanOptionalAction, default=True,
                        help="Also play through the reference wallet over HTTP.")  # fmt: skip
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} (2 cores)", flush=True)
    for backend in args.db.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            run(backend, args, Path(tmp))
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
