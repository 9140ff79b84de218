"""Benchmark: a block's commitment tree, and one inclusion proof written and verified.

On a full block (generated here, 1,500,000 tickets):

- the tree: every leaf built and hashed from the store's columns, then the levels to the root
  (what ``generate`` adds to a block, and the audit and the lottery redo);
- a proof written the way the ledger will write it (issue 14, second part; design in
  ``docs/commitment.md``): the levels stored at import in SQLite, one row per node, each
  node written as the tree is rebuilt (``TreeBuilder``'s ``on_nodes``: no level held), the salts
  sealed with ChaCha20-Poly1305 under a key held outside the database; per proof, one query
  for the path's nodes (``merkle.audit_path_nodes``), the salt unsealed, the proof assembled
  (``make_proof``) and serialised; then the same proof written as a file (``write_proof``:
  temporary name, fsync, rename);
- a proof verified as ``printpipe verify-proof`` does: both files read, the commitment's two
  signatures, the proof's fields and its path to the root; and the path alone.

Targets (issue 14): the tree <= 5 s; a proof written and a proof verified <= 1 ms (median).
Prints medians and the process's peak RSS.

    python bench/bench_commitment.py [--proofs 2000] [--game chien-chat]
"""

from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

from printpipe.block import PackRange
from printpipe.commitment import (
    COMMITMENT_FILE,
    LOTTERY,
    TicketOpening,
    load_commitment,
    make_proof,
    verify_proof_file,
    write_proof,
)
from printpipe.commitment.inclusion import proof_problem
from printpipe.commitment.tree import BATCH_PACKS, store_leaf_hash_batches, store_root
from printpipe.games import load_game
from printpipe.games.base import Game
from printpipe.generate import generate_block
from printpipe.ids import TicketId
from printpipe.keys import (
    LOTTERY_SIGNING_KEY,
    LOTTERY_SIGNING_PUB,
    PRODUCER_SIGNING_PUB,
    init_keys,
    load_public_key,
    load_secrets,
    load_signing_key,
)
from printpipe.merkle import TreeBuilder, audit_path_nodes
from printpipe.store import BlockStore


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.3f} ms"


def timed_tree(store: BlockStore, game: Game) -> tuple[float, float]:
    """Seconds to build and hash every leaf, and seconds for the levels above them, as the
    tree is built from a store (a batch of packs at a time, ``store_root``)."""
    builder = TreeBuilder()
    leaves_s = levels_s = 0.0
    batches = store_leaf_hash_batches(store, game.definition)
    while True:
        started = time.perf_counter()
        hashes = next(batches, None)
        leaves_s += time.perf_counter() - started
        if hashes is None:
            break
        started = time.perf_counter()
        builder.add(hashes)
        levels_s += time.perf_counter() - started
    started = time.perf_counter()
    builder.root()
    return leaves_s, levels_s + time.perf_counter() - started


def build_ledger(path: Path, store: BlockStore, game: Game, sealing_key: bytes) -> float:
    """The proposed ledger tables: every node of the tree as the tree is rebuilt (``on_nodes``:
    no level is held), and each ticket's sealed salt, a batch at a time."""
    started = time.perf_counter()
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE merkle_nodes (level INTEGER, position INTEGER, hash BLOB NOT NULL,
                                   PRIMARY KEY (level, position)) WITHOUT ROWID;
        CREATE TABLE ticket_salts (place INTEGER PRIMARY KEY, sealed BLOB NOT NULL);
        """
    )

    def insert_nodes(level: int, position: int, nodes: np.ndarray) -> None:
        data = nodes.tobytes()
        db.executemany(
            "INSERT INTO merkle_nodes VALUES (?, ?, ?)",
            ((level, position + i, data[32 * i : 32 * i + 32]) for i in range(len(nodes))),
        )

    aead = ChaCha20Poly1305(sealing_key)
    stored = store.pack_range
    with db:
        store_root(store, game.definition, on_nodes=insert_nodes)
        for first in range(stored.first, stored.last + 1, BATCH_PACKS):
            batch = PackRange(first, min(first + BATCH_PACKS - 1, stored.last))
            start = (first - stored.first) * store.pack_size
            salts = np.asarray(store.read_salts(batch))
            db.executemany(
                "INSERT INTO ticket_salts VALUES (?, ?)",
                (
                    (place, aead.encrypt(place.to_bytes(12, "big"), bytes(salt), None))
                    for place, salt in enumerate(salts, start)
                ),
            )
    db.close()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--game", default="chien-chat")
    parser.add_argument("--proofs", type=int, default=2000)
    args = parser.parse_args()
    game = load_game(args.game)
    definition = game.definition
    rng = np.random.default_rng(14)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        keys = work / "keys"
        init_keys(keys)
        started = time.perf_counter()
        generate_block(
            game,
            secrets=load_secrets(keys),
            signing_key=load_signing_key(keys),
            block=1,
            out=work / "block",
            show_progress=False,
        )
        generate_s = time.perf_counter() - started
        store = BlockStore.open(work / "block")
        size = store.summary.tickets

        leaves_s, levels_s = timed_tree(store, game)
        tree_s = leaves_s + levels_s
        print(
            f"tree over {size:,} tickets: {tree_s:.2f} s (leaves built and hashed "
            f"{leaves_s:.2f} s, "
            f"levels {levels_s:.2f} s); generate, tree included, took {generate_s:.2f} s here: "
            f"the tree is {tree_s / generate_s:.0%} of it [target <= 5 s]"
        )

        # The countersigned commitment that proofs are checked against.
        commitment_path = work / "block" / COMMITMENT_FILE
        signed = load_commitment(commitment_path).sign(
            LOTTERY, load_signing_key(keys, LOTTERY_SIGNING_KEY)
        )
        commitment_path.write_bytes(signed.to_json())
        commitment = load_commitment(commitment_path)

        sealing_key = os.urandom(32)
        ledger = work / "ledger.sqlite"
        import_s = build_ledger(ledger, store, game, sealing_key)
        print(
            f"ledger import of the tree and the sealed salts (SQLite, one row per node): "
            f"{import_s:.1f} s, {ledger.stat().st_size / 1e6:,.0f} MB"
        )

        tickets = store.read()
        db = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
        aead = ChaCha20Poly1305(sealing_key)
        places = rng.integers(0, size, args.proofs).tolist()
        build, write, verify_file, verify_path = [], [], [], []
        producer_key = load_public_key(keys / PRODUCER_SIGNING_PUB)
        lottery_key = load_public_key(keys / LOTTERY_SIGNING_PUB)
        for n, place in enumerate(places):
            # What a claim gives the ledger: the ticket (serial) and its VIRN (scanned code),
            # its prize (its row). The salt and the path come from the stored tables.
            pack = store.printed_pack(1 + place // store.pack_size)
            serial = TicketId(definition.number, pack, place % store.pack_size).serial
            prize = int(definition.tier_amounts[int(tickets.tier[place])])
            virn = f"{int(tickets.virn[place]):010d}"
            started = time.perf_counter()
            nodes = audit_path_nodes(place, size)
            marks = ",".join("(?, ?)" for _ in nodes)
            rows = db.execute(
                f"WITH wanted(level, position) AS (VALUES {marks}) "
                "SELECT n.level, n.hash FROM wanted w CROSS JOIN merkle_nodes n "
                "ON n.level = w.level AND n.position = w.position",
                [x for node in nodes for x in node],
            ).fetchall()
            by_level = dict(rows)
            (sealed,) = db.execute(
                "SELECT sealed FROM ticket_salts WHERE place = ?", (place,)
            ).fetchone()
            salt = aead.decrypt(place.to_bytes(12, "big"), sealed, None)
            proof = make_proof(
                commitment,
                TicketOpening(serial, prize, virn, salt),
                [by_level[level] for level, _ in nodes],
            )
            data = proof.to_json()
            build.append(time.perf_counter() - started)
            assert data
            path = work / f"proof-{n % 10}.json"
            started = time.perf_counter()
            write_proof(path, proof)
            write.append(time.perf_counter() - started)
            started = time.perf_counter()
            verify_proof_file(
                proof_path=path,
                commitment_path=commitment_path,
                producer_key=producer_key,
                lottery_key=lottery_key,
            )
            verify_file.append(time.perf_counter() - started)
            started = time.perf_counter()
            assert proof_problem(proof, commitment) is None
            verify_path.append(time.perf_counter() - started)
        print(
            f"a proof written, {args.proofs:,} random tickets, median: "
            f"{median_ms(build)} from the ledger tables to its JSON bytes [target <= 1 ms]; "
            f"{median_ms(write)} more to write it as a file (temporary name, fsync, rename)"
        )
        print(
            f"a proof verified, median: {median_ms(verify_file)} as verify-proof does it (read "
            f"both files, two signatures, fields, path) [target <= 1 ms]; "
            f"{median_ms(verify_path)} for the fields and the path alone"
        )
        print(f"peak RSS {peak_rss_mb():,.0f} MB")


if __name__ == "__main__":
    main()
