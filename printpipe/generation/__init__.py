"""The generation: a block generated into its store, and proven by the audit.

- ``generate.py``: secrets + game + block number -> a signed block store, its public
  commitment (``commitment.json``) and its block manifest, chunk by chunk
  (:func:`generate_block`; several blocks: :func:`generate_emission`);
- ``audit.py``: everything a game's spec says a block must prove, from its store alone, and
  its commitment (:func:`audit_store`, :func:`audit_block`; per-pack figures:
  :func:`pack_tallies`);
- ``cluster.py``: where the chunks of a run execute, a local process pool or a Dask
  cluster (:func:`make_runner`, :func:`run_in_order`); the press's export runs on it too.

It writes the block (``printpipe.block``), its commitment (``printpipe.commitment``) and its
manifest (``printpipe.handover``), so it ranks above all three.  Names are imported on first
use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from printpipe import load_on_first_use

if TYPE_CHECKING:
    from printpipe.generation.audit import audit_block, audit_store, pack_tallies
    from printpipe.generation.cluster import ChunkRunner, DaskRunner, make_runner, run_in_order
    from printpipe.generation.generate import (
        Emission,
        generate_block,
        generate_blocks,
        generate_emission,
    )

_HOMES = {
    "audit_block": "audit",
    "audit_store": "audit",
    "pack_tallies": "audit",
    "ChunkRunner": "cluster",
    "DaskRunner": "cluster",
    "make_runner": "cluster",
    "run_in_order": "cluster",
    "Emission": "generate",
    "generate_block": "generate",
    "generate_blocks": "generate",
    "generate_emission": "generate",
}

__all__ = [
    "ChunkRunner",
    "DaskRunner",
    "Emission",
    "audit_block",
    "audit_store",
    "generate_block",
    "generate_blocks",
    "generate_emission",
    "make_runner",
    "pack_tallies",
    "run_in_order",
]

__getattr__ = load_on_first_use(__name__, _HOMES)
