"""Benchmark of the manifest and validation stages on a full 1,500,000-ticket block.

Prints: time to write the block manifest, time to import it into a fresh validation
database, validation lookups per second in one process, p50/p99 latency of one validation,
and the peak RSS of each stage (Linux: the peak is reset between stages, so a stage's figure
is its own, not the generate before it) and of the whole process.  Targets (issue 4): import
<= 60 s, >= 5,000 lookups/s, p99 <= 2 ms.
Usage: ``python bench/bench_validation.py [--lookups N]``.
"""

from __future__ import annotations

import argparse
import contextlib
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from printpipe.block import BlockStore
from printpipe.games import load_game
from printpipe.generation import generate_block
from printpipe.handover import verify_manifest, write_run_manifest
from printpipe.ids import TicketId
from printpipe.keys import (
    LOTTERY_IDENTITY,
    LOTTERY_RECIPIENT,
    PRODUCER_SIGNING_PUB,
    init_keys,
    load_lottery_identity,
    load_lottery_recipient,
    load_public_key,
    load_secrets,
    load_signing_key,
)
from printpipe.ledger import Ledger, PackScope, TerminalId, import_manifest, load_ledger_key

STAGE_PEAKS: list[float] = []
"""The peak RSS of each stage so far: the whole process's is their maximum (resetting the
peak resets the one getrusage reports too)."""


def reset_stage_peak() -> None:
    """Start a stage: Linux resets the peak RSS it reports (VmHWM) when 5 is written to
    /proc/self/clear_refs."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def stage_peak_mb() -> float:
    """The peak RSS since the last reset (the whole process's where that is not Linux)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with contextlib.suppress(OSError, StopIteration):
        status = Path("/proc/self/status").read_text()
        line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
        peak = int(line.split()[1]) / 1024
    STAGE_PEAKS.append(peak)
    return peak


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lookups", type=int, default=50_000)
    parser.add_argument("--workdir", type=Path, default=None, help="Keep files here.")
    args = parser.parse_args()
    game = load_game("chien-chat")
    with tempfile.TemporaryDirectory() as tmp:
        root = args.workdir or Path(tmp)
        shutil.rmtree(root / "keys", ignore_errors=True)
        shutil.rmtree(root / "block", ignore_errors=True)
        for name in ("run.ppm", "ledger.sqlite", "ledger.sqlite-wal", "ledger.sqlite-shm"):
            (root / name).unlink(missing_ok=True)
        keys = root / "keys"
        init_keys(keys)
        block = root / "block"
        reset_stage_peak()
        started = time.perf_counter()
        generate_block(
            game,
            secrets=load_secrets(keys),
            signing_key=load_signing_key(keys),
            block=1,
            out=block,
            show_progress=False,
        )
        print(
            f"generate (no manifest): {time.perf_counter() - started:.1f} s, "
            f"peak RSS {stage_peak_mb():.0f} MB"
        )
        store = BlockStore.open(block)
        manifest_path = root / "run.ppm"
        reset_stage_peak()
        started = time.perf_counter()
        write_run_manifest(
            manifest_path,
            store,
            store.pack_range,
            load_lottery_recipient(keys / LOTTERY_RECIPIENT),
            load_signing_key(keys),
            [],
            game=game,
        )
        size = manifest_path.stat().st_size
        print(
            f"write manifest, 1,500,000 records: {time.perf_counter() - started:.1f} s, "
            f"{size / 1e6:.0f} MB, peak RSS {stage_peak_mb():.0f} MB"
        )
        started = time.perf_counter()
        manifest = verify_manifest(manifest_path, load_public_key(keys / PRODUCER_SIGNING_PUB))
        print(f"verify manifest: {time.perf_counter() - started:.2f} s")
        db = root / "ledger.sqlite"
        started = time.perf_counter()
        identity = load_lottery_identity(keys / LOTTERY_IDENTITY)
        key = load_ledger_key(keys)
        reset_stage_peak()
        import_manifest(db, manifest=manifest, game=game, identity=identity, key=key)
        import_s = time.perf_counter() - started
        print(
            f"import 1,500,000 records: {import_s:.1f} s (target <= 60 s), "
            f"db {db.stat().st_size / 1e6:.0f} MB, peak RSS {stage_peak_mb():.0f} MB"
        )
        reset_stage_peak()
        tickets = store.read()
        rng = np.random.default_rng(1)
        rows = rng.integers(0, len(tickets), args.lookups)
        size_pack = store.pack_size
        codes = [
            TicketId(
                game.definition.number, int(r) // size_pack + 1, int(r) % size_pack
            ).validation_code(int(tickets.virn[r]))
            for r in rows
        ]
        terminal = TerminalId("bench")
        with Ledger(db, key=key) as book:
            with book.db.transaction() as tx:
                tx.execute("UPDATE packs SET state = 'activated'")
            latencies = np.empty(len(codes))
            started = time.perf_counter()
            for i, code in enumerate(codes):
                t0 = time.perf_counter()
                book.validate(code, terminal=terminal, scope=PackScope.office())
                latencies[i] = time.perf_counter() - t0
            elapsed = time.perf_counter() - started
        p50, p99 = np.percentile(latencies, [50, 99]) * 1000
        print(
            f"validate: {len(codes) / elapsed:,.0f} lookups/s in one process (target >= 5,000), "
            f"p50 {p50:.3f} ms, p99 {p99:.3f} ms (target <= 2 ms), "
            f"peak RSS {stage_peak_mb():.0f} MB (the block's columns read for the codes)"
        )
        print(f"peak RSS of the whole process: {max(STAGE_PEAKS):.0f} MB")


if __name__ == "__main__":
    main()
