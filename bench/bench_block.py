"""Benchmark: generate (store alone, then with the block manifest, as the CLI does) and audit
a full block, the block's commitment tree, and the lottery's countersignature; prints
tickets/s and peak memory.

Each stage runs in a fresh subprocess (so its peak RSS is its own), ``--repeat`` times;
the medians are printed.  Targets (issue 2): each stage <= 60 s and <= 1 GB on 2 cores.
The tree stage rebuilds the commitment tree from the store's columns (every leaf built and
hashed, then the levels): the work ``generate`` includes, printed with its share of generate
(issue 14: <= 5 s).  The sign stage is ``printpipe commitment sign``: the block manifest
decrypted, every record checked, the tree rebuilt from the records and the commitment
countersigned.

    python bench/bench_block.py [--game chien-chat] [--repeat 3] [--stages generate,tree]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import resource, sys, time
from pathlib import Path
from printpipe.games import load_game
from printpipe.keys import load_secrets, load_signing_key, load_public_key
stage, game_id, keys, out = sys.argv[1:5]
game = load_game(game_id)
started = time.perf_counter()
if stage.startswith("generate"):
    from printpipe.generation import generate_block
    from printpipe.keys import load_lottery_recipient
    recipient = (load_lottery_recipient(Path(keys) / "lottery.age.pub")
                 if stage == "generate+manifest" else None)
    generate_block(game, secrets=load_secrets(Path(keys)), signing_key=load_signing_key(Path(keys)),
                   block=1, out=Path(out), overwrite=True, show_progress=False,
                   manifest_recipient=recipient)
elif stage == "tree":
    from printpipe.commitment.tree import store_root
    from printpipe.block import BlockStore
    store_root(BlockStore.open(Path(out)), game.definition)
elif stage == "sign":
    from printpipe.commitment import countersign
    from printpipe.keys import load_lottery_identity
    from printpipe.handover import verify_manifest
    producer_key = load_public_key(Path(keys) / "producer-signing.pub")
    countersign(
        commitment_path=Path(out) / "commitment.json",
        manifest=verify_manifest(Path(out) / "manifest.ppm", producer_key),
        game=game, identity=load_lottery_identity(Path(keys) / "lottery.age"),
        producer_key=producer_key,
        lottery_signing_key=load_signing_key(Path(keys), "lottery-signing.key"),
        out=Path(out).parent / "countersigned.json",
    )
else:
    from printpipe.generation import audit_block
    from printpipe.block import BlockStore
    report = audit_block(BlockStore.open(Path(out)), game,
                         load_public_key(Path(keys) / "producer-signing.pub"), False)
    assert report.passed, report.render()
elapsed = time.perf_counter() - started
print(elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


STAGES = ("generate", "generate+manifest", "audit", "tree", "sign")


def run_stage(stage: str, game: str, keys: Path, out: Path) -> tuple[float, float]:
    result = subprocess.run(
        [sys.executable, "-c", CHILD, stage, game, str(keys), str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    seconds, max_rss_kb = result.stdout.split()
    return float(seconds), int(max_rss_kb) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--game", default="chien-chat")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--stages", default=",".join(STAGES), help=f"comma-separated, among {','.join(STAGES)}"
    )
    args = parser.parse_args()
    stages = args.stages.split(",")
    if not set(stages) <= set(STAGES):
        parser.error(f"--stages: choose among {','.join(STAGES)}")

    from printpipe.games import load_game
    from printpipe.keys import init_keys

    tickets = load_game(args.game).definition.block.size
    with tempfile.TemporaryDirectory() as tmp:
        keys, out = Path(tmp) / "keys", Path(tmp) / "block"
        init_keys(keys)
        started = time.perf_counter()
        medians = {}
        for stage in stages:
            if not stage.startswith("generate") and not (out / "manifest.ppm").exists():
                run_stage("generate+manifest", args.game, keys, out)  # what it reads, untimed
            runs = [run_stage(stage, args.game, keys, out) for _ in range(args.repeat)]
            seconds = statistics.median(r[0] for r in runs)
            rss = statistics.median(r[1] for r in runs)
            medians[stage] = seconds
            print(
                f"{args.game} {stage:17s}: {tickets:,} tickets, median {seconds:6.2f} s "
                f"({tickets / seconds:,.0f} tickets/s) over {args.repeat} runs "
                f"[{', '.join(f'{r[0]:.2f}' for r in runs)}], peak RSS {rss:,.0f} MB"
            )
        if {"tree", "generate", "generate+manifest"} <= medians.keys():
            print(
                f"the commitment tree is {medians['tree'] / medians['generate']:.0%} of generate "
                f"(store alone) and {medians['tree'] / medians['generate+manifest']:.0%} of "
                "generate with its manifest"
            )
        print(f"total bench time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
