"""An export run of a game whose output is a unit feed (``[output] kind = "feed"``).

The press export's counterpart for an online game: the run writes the unit feed of its
pack range (:mod:`printpipe.handover.feed`), then the run's secure manifest (listing the feed
with its SHA-256, so the producer's signature covers it), then ``job.json`` last.  The feed is one
file written in seconds, so a rerun simply writes it again (same bytes); there is nothing
to resume.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pyrage import x25519

from printpipe.atomic import make_private_dir, remove_partials, write_atomic
from printpipe.block import BlockStore, PackRange
from printpipe.errors import PrintpipeError
from printpipe.games.base import Game
from printpipe.handover import feed_file_name, write_feed

JOB_FORMAT = "printpipe-feed-job/1"
JOB_FILE = "job.json"
MANIFEST_FILE = "manifest.ppm"


def export_feed(
    store: BlockStore,
    game: Game,
    out_dir: Path,
    packs: PackRange,
    recipient: x25519.Recipient,
    signing_key: Ed25519PrivateKey,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Write the feed of ``packs``, the run's manifest and ``job.json``; returns the job record."""
    from printpipe.handover import write_run_manifest

    d = game.definition
    first = store.printed_pack(packs.first)
    name = feed_file_name(d.id, store.block, first, first + packs.count - 1)
    try:
        make_private_dir(out_dir)
        if any(out_dir.glob("*.pdf")) or any(p.name != name for p in out_dir.glob("*.feed")):
            raise PrintpipeError(
                f"{out_dir} holds the files of another export: use an empty folder"
            )
        remove_partials(out_dir)
        (out_dir / JOB_FILE).unlink(missing_ok=True)  # rewritten only when the run is complete
    except OSError as exc:
        raise PrintpipeError(f"cannot write to {out_dir}: {exc.strerror}") from None
    entry = write_feed(out_dir / name, store, game, packs, show_progress)
    write_run_manifest(
        out_dir / MANIFEST_FILE,
        store,
        packs,
        recipient,
        signing_key,
        [entry],
        show_progress,
        game=game,
    )
    record = {
        "format": JOB_FORMAT,
        "game": {"id": d.id, "number": d.number},
        "output": "feed",
        "block": store.block,
        "packs": {"first": packs.first, "last": packs.last},
        "printed_packs": {"first": first, "last": first + packs.count - 1},
        "tickets": packs.count * d.block.pack_size,
        "block_summary_sha256": hashlib.sha256(store.summary_bytes).hexdigest(),
        "files": [entry],
        "manifest": MANIFEST_FILE,
    }
    write_atomic(out_dir / JOB_FILE, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    return record
