"""The main job, ``printpipe run``: on built-in defaults, keys (demo ones if none), a block
generated and audited, then its first packs exported to press PDFs.

An export needs a proof the lottery approved (:mod:`printpipe.handover.approval`). On demo keys,
:func:`approve_demo_proof` makes the proof pack and approves it with the demo lottery key, so
the main job runs whole on a fresh machine; a real print run never does that (the lottery
approves with its own key). The workflow lives here, with the command it serves, so that the
approval does not depend on the proof pack, nor the proof pack on the export.
"""

from __future__ import annotations

from pathlib import Path

from printpipe.errors import PrintpipeError
from printpipe.handover import APPROVALS_DIR, approve_proof, find_approval, inputs_of

RUN_EXPORT_PACKS = "1:200"
"""What ``printpipe run`` exports: 200 packs, 25,000 tickets, a few seconds."""


def block_dir_name(game_id: str, block: int) -> str:
    """The folder of a block store under the main job's output folder."""
    return f"{game_id}-block-{block:04d}"


def approve_demo_proof(
    game_id: str,
    *,
    keys_dir: Path,
    proof_dir: Path,
    approvals_dir: Path = APPROVALS_DIR,
    show_progress: bool = False,
) -> str | None:
    """What ``printpipe run`` does on demo keys before its export: make the proof pack and
    approve it with the demo lottery key, unless an approval of the same inputs is there.
    Returns the line to tell the user; None when there is nothing to do (real keys, where
    the lottery approves, or an online game, which has no press files)."""
    from printpipe.games import game_template_dir, load_game
    from printpipe.games.base import is_paper
    from printpipe.keys import (
        DEMO_KEYS_DIR,
        LOTTERY_SIGNING_KEY,
        LOTTERY_SIGNING_PUB,
        load_public_key,
        load_signing_key,
    )
    from printpipe.proof import make_proof
    from printpipe.render.template import load_template

    game = load_game(game_id)
    if keys_dir != DEMO_KEYS_DIR or not is_paper(game):
        return None
    d = game.definition
    template = load_template(game_template_dir(game_id) / "ticket.toml")
    inputs = inputs_of(d.id, d.source_sha256, template)
    key_file = keys_dir / LOTTERY_SIGNING_PUB
    try:
        found = find_approval(inputs, approvals_dir, load_public_key(key_file), key_file)
    except PrintpipeError:
        found = None
    if found is not None:
        return f"demo keys: the proof of these inputs is approved ({found.path})"
    make_proof(game_id=game_id, out_dir=proof_dir, force=True, show_progress=show_progress)
    key = load_signing_key(keys_dir, LOTTERY_SIGNING_KEY)
    path = approve_proof(proof_dir, signing_key=key, approvals_dir=approvals_dir)
    return (
        f"demo keys: made the proof pack {proof_dir} and approved it with the DEMO lottery key "
        f"({path}); a real print run needs the lottery's own approval"
    )
