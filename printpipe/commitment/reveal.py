"""After a block is closed: every leaf's preimage, so that anyone can recount its tiers.

Closed means that no ticket of the block can be sold or paid any more: its sale has ended and
the claim period after it has run out.  Only then may the leaves be published, for two
reasons: before the end of the sale they would let anyone pick the unsold winners; before the
end of the claim period they would let anyone claim them, since a revealed VIRN with its
serial is the ticket's validation code.  Closing is the lottery's act (the pipeline cannot see
sales or the calendar of claims), so ``printpipe commitment reveal`` needs the lottery's keys,
its age identity (the salts travel only in the block manifest, encrypted to the lottery) and
its signing key, and the lottery signs, in the file, the day the block closed; a day after
today is refused.  The ledger (issue 14, second part) will hold that day too, refuse payments
after it and refuse to reveal a block it has not closed.

File format ``printpipe-reveal/1`` (UTF-8, LF)::

    printpipe-reveal/1
    {"block":1,"closed_on":"2027-03-31",...}     header: canonical JSON on one line
    signature <128 hex>                          the lottery's Ed25519 over
                                                 "printpipe-reveal/1 lottery\\n" + header line
    index,serial,prize_eur,virn,salt             then one row per ticket, in block order
    0,0412-000001-000-0,0,5172678016,38856...    (virn empty for a game without VIRN)

``tail -n +4 FILE`` is a plain CSV.  Its rows are checked against the commitment's root, so a
changed row cannot pass (``printpipe commitment recount``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pyrage import x25519

from printpipe.atomic import atomic_file
from printpipe.commitment.leaves import ticket_leaves
from printpipe.commitment.lottery import check_manifest_covers, manifest_commitment
from printpipe.commitment.merkle import TreeBuilder, leaf_hashes
from printpipe.commitment.signed_file import SignedFileFormat
from printpipe.commitment.statement import (
    Commitment,
    load_commitment,
    statement_difference,
    verify_commitment,
)
from printpipe.commitment.strict import (
    Malformed,
    canonical_json,
    text,
    whole_number,
)
from printpipe.errors import PrintpipeError
from printpipe.games.base import Game
from printpipe.handover import Manifest, ParsedRecords
from printpipe.ids import serials_array
from printpipe.progress import progress_bar
from printpipe.rng import LEAF_SALT_SIZE

REVEAL_FORMAT = "printpipe-reveal/1"
COLUMNS = ["index", "serial", "prize_eur", "virn", "salt"]
CLOSURE = (
    "The lottery declares this block closed on closed_on: none of its tickets is sold or paid "
    "after that day. Each row is one leaf of the committed tree, in block order."
)
_FILE = SignedFileFormat(
    name=REVEAL_FORMAT,
    what="reveal",
    header_keys=frozenset(
        {"format", "game", "block", "tickets", "root", "closed_on", "closure", "columns"}
    ),
    max_header_bytes=4096,
)
BATCH_LINES = 100_000


@dataclass(frozen=True)
class Reveal:
    commitment: Commitment
    closed_on: dt.date
    tier_counts: dict[int, int]

    def describe(self, path: Path) -> str:
        c = self.commitment
        lines = [
            f"{c.game_id} block {c.block}, closed on {self.closed_on.isoformat()}: "
            f"{c.tickets:,} leaves in {path} rebuild the committed root {c.root.hex()}",
            "  amount EUR    committed    recounted",
        ]
        for tier in c.tiers:
            recounted = self.tier_counts.get(tier.amount_eur, 0)
            lines.append(f"  {tier.amount_eur:>10,} {tier.tickets:>12,} {recounted:>12,}")
        return "\n".join(lines)


def write_reveal(
    *,
    out: Path,
    commitment_path: Path,
    manifest: Manifest,
    game: Game,
    identity: x25519.Identity,
    producer_key: Ed25519PublicKey,
    lottery_signing_key: Ed25519PrivateKey,
    closed_on: dt.date,
    today: dt.date | None = None,
    show_progress: bool = False,
) -> Reveal:
    """Write every leaf's preimage of a closed block, under the lottery's signed closure."""
    today = today or dt.date.today()
    if closed_on > today:
        raise PrintpipeError(
            f"a block is revealed once it is closed: {closed_on.isoformat()} is after today "
            f"({today.isoformat()})"
        )
    commitment = load_commitment(commitment_path)
    verify_commitment(commitment, producer_key, lottery_signing_key.public_key())
    check_manifest_covers(commitment, manifest, game)
    definition = game.definition
    header_line = canonical_json(
        {
            "format": REVEAL_FORMAT,
            "game": {"id": commitment.game_id, "number": f"{commitment.game_number:04d}"},
            "block": commitment.block,
            "tickets": commitment.tickets,
            "root": commitment.root.hex(),
            "closed_on": closed_on.isoformat(),
            "closure": CLOSURE,
            "columns": COLUMNS,
        }
    )
    with atomic_file(out) as handle:
        _FILE.write_head(handle, header_line, signing_key=lottery_signing_key)
        handle.write((",".join(COLUMNS) + "\n").encode())

        def on_batch(parsed: ParsedRecords) -> None:
            handle.write(_rows(commitment, definition.number, parsed))

        rebuilt = manifest_commitment(
            manifest, game, identity, on_batch=on_batch, show_progress=show_progress
        )
        difference = statement_difference(rebuilt, commitment)
        if difference:
            raise PrintpipeError(
                f"commitment {commitment.name} refused: the manifest's records give {difference}"
            )
    counts = {t.amount_eur: t.tickets for t in rebuilt.tiers}
    return Reveal(commitment, closed_on, counts)


def _rows(commitment: Commitment, game_number: int, parsed: ParsedRecords) -> bytes:
    index = (parsed.pack_number - commitment.first_pack_number) * commitment.pack_size
    index = index + parsed.ticket
    serials = serials_array(game_number, parsed.pack_number, parsed.ticket)
    serial_texts = serials.tobytes().decode("ascii")
    width = serials.shape[1]
    salts = np.ascontiguousarray(parsed.salts).tobytes().hex()
    virns = (
        [f"{v:010d}" for v in parsed.virn.tolist()]
        if commitment.has_virn
        else [""] * len(parsed.ticket)
    )
    salt_width = 2 * LEAF_SALT_SIZE
    return "".join(
        f"{i},{serial_texts[k * width : (k + 1) * width]},{p},{v},"
        f"{salts[k * salt_width : (k + 1) * salt_width]}\n"
        for k, (i, p, v) in enumerate(
            zip(index.tolist(), parsed.prize_eur.tolist(), virns, strict=True)
        )
    ).encode()


# -- the public recount ----------------------------------------------------------------------


def _refuse(path: Path, problem: str) -> PrintpipeError:
    return _FILE.refuse(path, problem)


def recount(
    *,
    reveal_path: Path,
    commitment_path: Path,
    producer_key: Ed25519PublicKey,
    lottery_key: Ed25519PublicKey,
    show_progress: bool = False,
) -> Reveal:
    """Check a reveal file against the published commitment: the lottery's closure, then
    every row, in order, rebuilding the committed root and recounting the tiers."""
    commitment = load_commitment(commitment_path)
    verify_commitment(commitment, producer_key, lottery_key)
    path = reveal_path
    with _FILE.open_verified(path, lottery_key=lottery_key) as (header, handle):
        try:
            closed_on = dt.date.fromisoformat(text(header["closed_on"], "closed_on"))
            same = (
                header["format"] == REVEAL_FORMAT
                and header["game"]
                == {"id": commitment.game_id, "number": f"{commitment.game_number:04d}"}
                and whole_number(header["block"], "block") == commitment.block
                and whole_number(header["tickets"], "tickets") == commitment.tickets
                and header["root"] == commitment.root.hex()
                and header["columns"] == COLUMNS
            )
        except (Malformed, ValueError):
            raise _refuse(path, "its header is malformed") from None
        if not same:
            raise _refuse(path, "it is not the reveal of this commitment's block")
        if handle.readline() != (",".join(COLUMNS) + "\n").encode():
            raise _refuse(path, "its column row is not the format's")
        tree = TreeBuilder()
        counts: dict[int, int] = {}
        seen = 0
        with progress_bar(commitment.tickets, "recount", "leaves", show_progress) as bar:
            while lines := handle.readlines(BATCH_LINES * 120):
                if seen + len(lines) > commitment.tickets:
                    raise _refuse(path, f"it holds more than the {commitment.tickets:,} leaves")
                batch = _parse_rows(commitment, lines, seen, path)
                tree.add(leaf_hashes(batch.leaves))
                for amount, count in zip(*np.unique(batch.prizes, return_counts=True), strict=True):
                    counts[int(amount)] = counts.get(int(amount), 0) + int(count)
                seen += len(lines)
                bar.update(len(lines))
    if seen != commitment.tickets:
        raise _refuse(path, f"it holds {seen:,} leaves, the block {commitment.tickets:,}")
    if tree.root() != commitment.root:
        raise _refuse(path, "its leaves do not rebuild the committed root (a row was changed)")
    for tier in commitment.tiers:
        if counts.get(tier.amount_eur, 0) != tier.tickets:
            raise _refuse(
                path,
                f"it counts {counts.get(tier.amount_eur, 0):,} tickets of {tier.amount_eur:,} "
                f"EUR, the commitment {tier.tickets:,}",
            )
    return Reveal(commitment, closed_on, counts)


@dataclass(frozen=True)
class _Rows:
    leaves: np.ndarray
    prizes: np.ndarray


def _parse_rows(commitment: Commitment, lines: list[bytes], first: int, path: Path) -> _Rows:
    count = len(lines)
    index = first + np.arange(count, dtype=np.int64)
    pack_numbers = commitment.first_pack_number + index // commitment.pack_size
    tickets = index % commitment.pack_size
    expected_serials = serials_array(commitment.game_number, pack_numbers, tickets)
    prizes = np.empty(count, dtype=np.int64)
    virns = np.zeros(count, dtype=np.uint64)
    salts = []
    amounts = commitment.tier_amounts()
    k = 0
    try:
        for k, line in enumerate(lines):
            i, serial, prize, virn, salt = line.rstrip(b"\n").split(b",")
            if int(i) != first + k or serial != expected_serials[k].tobytes():
                raise ValueError
            prizes[k] = int(prize)
            if prizes[k] not in amounts or prize != str(prizes[k]).encode():
                raise ValueError
            if commitment.has_virn:
                if len(virn) != 10 or not virn.isdigit():
                    raise ValueError
                virns[k] = int(virn)
            elif virn:
                raise ValueError
            if len(salt) != 2 * LEAF_SALT_SIZE or salt != salt.lower():
                raise ValueError
            salts.append(salt)
        salt_array = np.frombuffer(bytes.fromhex(b"".join(salts).decode()), dtype=np.uint8)
    except (ValueError, UnicodeDecodeError):
        raise _refuse(path, f"row {first + k + 1} is not the leaf of ticket {first + k}") from None
    leaves = ticket_leaves(
        commitment.game_number,
        pack_numbers,
        tickets,
        prizes,
        virns if commitment.has_virn else None,
        salt_array.reshape(count, LEAF_SALT_SIZE),
    )
    return _Rows(leaves, prizes)
