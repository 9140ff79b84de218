"""A verified manifest into the ledger, all or nothing, creating the ledger if absent.

Every record is checked before it is kept (canonical, and its prize the game's ``evaluate``
of its symbols); VIRNs and records are kept only as HMACs under the ledger key
(:mod:`printpipe.ledger.key`); a block's commitment, if given, is rebuilt from the records and
must be the committed one (:mod:`printpipe.ledger.proofs`).  How a new ledger appears whole
is the store's (:func:`printpipe.ledger.store.create_or_open`).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from datetime import datetime

import numpy as np
from pyrage import x25519

from printpipe.commitment.lottery import check_manifest_covers, manifest_commitment
from printpipe.commitment.statement import Commitment, statement_difference
from printpipe.errors import PrintpipeError
from printpipe.games.base import Game
from printpipe.handover import Manifest, ParsedRecords, RecordChecker, decrypt_manifest
from printpipe.ledger.book import Ledger
from printpipe.ledger.core import lock_key
from printpipe.ledger.inputs import LOTTERY, TerminalId, audit_text, require_terminal
from printpipe.ledger.key import LedgerKey
from printpipe.ledger.proofs import CommitmentLoad
from printpipe.ledger.rules import default_settings_rows, format_time, pack_key, utc_now
from printpipe.ledger.store import Database, Location, create_or_open, ticket_of_key
from printpipe.ledger.units import record_deal_order, store_units

# -- creating and importing ----------------------------------------------------------------


def import_manifest(
    location: Location,
    *,
    manifest: Manifest,
    game: Game,
    identity: x25519.Identity,
    key: LedgerKey,
    commitment: Commitment | None = None,
    terminal: TerminalId = LOTTERY,
    progress: Callable[[int], object] | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> str:
    """Load a verified manifest into the ledger at ``location``, creating it if absent.

    ``commitment``: the block's countersigned commitment (its signatures checked by the
    caller), with the manifest of that block: the tree is rebuilt from the records and must be
    the committed one; the ledger keeps its nodes and sealed salts, and from then on answers
    every payment of the block with its inclusion proof (``printpipe.ledger.proofs``).

    The import's audit-log entry is sealed before it returns (it holds the ledger key).
    All or nothing: any failure (wrong key, a record that disagrees with the rules or with an
    already-imported manifest) leaves the ledger as it was.  The same manifest again is a
    no-op; one that conflicts is refused.  A new SQLite ledger is built and filled under a
    temporary name beside the file, then linked into place only if nothing is there yet: a
    failed import removes only its own temporary file, and if another import created the
    ledger meanwhile, this one is imported into it.  A PostgreSQL database with no tables gets
    the ledger's tables in the import's own transaction.
    """
    require_terminal(terminal)
    if not game.definition.records.has_virn and commitment is None:
        # e.g. golden-animals: an online unit is never scanned at a retailer; the game server
        # deals it, and proves it against the block's commitment, loaded with it
        raise PrintpipeError(
            f"manifest {manifest.path} refused: the units of {game.definition.id} are dealt "
            "online, not validated by retailers: import the block manifest with its "
            "commitment (--commitment COMMITMENT), for the game server (printpipe play)"
        )

    def fill(database: Database) -> str:
        book = Ledger._over(database, key=key, clock=clock, empty=database.empty)
        summary = _load(
            book,
            manifest,
            game,
            identity,
            terminal=terminal,
            progress=progress,
            commitment=commitment,
        )
        book.seal_all()  # the import's entry (and any left unsealed): it holds the key
        return summary

    return create_or_open(location, settings=default_settings_rows(), fill=fill)


def _load(
    book: Ledger,
    manifest: Manifest,
    game: Game,
    identity: x25519.Identity,
    *,
    terminal: TerminalId,
    progress: Callable[[int], object] | None,
    commitment: Commitment | None = None,
) -> str:
    """Load a verified manifest in one transaction (see :func:`import_manifest`)."""
    key = book._require_key()
    header = manifest.header
    if commitment is not None:
        check_manifest_covers(commitment, manifest, game)
    checker = RecordChecker(game, manifest)
    stats = {"new": 0}
    stamp = format_time(book.clock())
    definition = game.definition

    with book.db.transaction(durable=True) as tx:
        book.db.create_if_absent(tx, default_settings_rows())
        tx.lock(lock_key("import", 0))
        fingerprint = tx.one("SELECT value FROM ledger_meta WHERE key = 'key_fingerprint'")
        if fingerprint is None:
            tx.execute("INSERT INTO ledger_meta VALUES ('key_fingerprint', ?)", (key.fingerprint,))
        elif fingerprint[0] != key.fingerprint:
            raise PrintpipeError(
                f"{key.source or 'the ledger key'} is not the key of validation database "
                f"{book.location}: use the keys folder it was imported with"
            )
        known = tx.one(
            "SELECT id FROM manifests WHERE records_sha256 = ?", (manifest.records_sha256,)
        )
        if known and commitment is not None:
            loaded = tx.one("SELECT root FROM commitments WHERE manifest = ?", (known[0],))
            if loaded is not None:
                return (
                    f"manifest {manifest.path} already imported with its commitment "
                    f"(root {bytes(loaded[0]).hex()}): nothing to do"
                )
        elif known:
            return f"manifest {manifest.path} already imported (same records): nothing to do"
        created = known or tx.one(
            "INSERT INTO manifests (records_sha256, body_sha256, kind, game, game_number, "
            "block, first_pack, last_pack, records, new_records, prize_eur, imported_at, "
            "file) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?) RETURNING id",
            (
                manifest.records_sha256,
                manifest.body_sha256,
                header["kind"],
                definition.id,
                definition.number,
                int(header["block"]),
                int(header["packs"]["first_pack_number"]),
                int(header["packs"]["last_pack_number"]),
                int(header["records"]),
                int(header["totals"]["prize_eur"]),
                stamp,
                str(manifest.path),
            ),
        )
        assert created is not None
        manifest_id = created[0]
        block = int(header["block"])

        online = not definition.records.has_virn

        def store(parsed: ParsedRecords) -> None:
            if progress is not None:
                progress(len(parsed.keys))
            if not len(parsed.keys) or online:  # an online block's units: see below
                return
            keys = parsed.keys
            records = key.record_hmacs(parsed.lines)
            existing = dict(
                tx.execute(
                    "SELECT id, record_hmac FROM tickets WHERE id BETWEEN ? AND ?",
                    (int(keys.min()), int(keys.max())),
                )
            )
            fresh = np.ones(len(keys), dtype=bool)
            if existing:
                for i, ticket in enumerate(keys.tolist()):
                    record = existing.get(ticket)
                    if record is None:
                        continue
                    if not hmac.compare_digest(bytes(record), records[i]):
                        raise PrintpipeError(
                            f"manifest {manifest.path} refused: ticket "
                            f"{ticket_of_key(ticket).serial} differs from the one already "
                            "imported"
                        )
                    fresh[i] = False
            messages = [
                f"{k:013d}{v:010d}".encode()
                for k, v in zip(keys.tolist(), parsed.virn.tolist(), strict=True)
            ]
            virns = key.virn_hmacs(messages)
            rows = [
                (k, v, p, manifest_id, r)
                for k, v, p, r, new in zip(
                    keys.tolist(),
                    virns,
                    parsed.prize_eur.tolist(),
                    records,
                    fresh.tolist(),
                    strict=True,
                )
                if new
            ]
            tx.insert_rows(
                "tickets", ("id", "virn_hmac", "prize_eur", "manifest", "record_hmac"), rows
            )
            stats["new"] += len(rows)
            packs = np.unique(parsed.pack_number).tolist()
            tx.executemany(
                "INSERT INTO packs (id, game_number, pack, block, state, changed_at) "
                "VALUES (?, ?, ?, ?, 'issued', ?) ON CONFLICT (id) DO NOTHING",
                [
                    (pack_key(definition.number, p), definition.number, p, block, stamp)
                    for p in packs
                ],
            )

        with_tree = ""
        if commitment is None:
            decrypt_manifest(manifest, identity, lambda lines: store(checker.parse(lines)))
            checker.finish()
            seen = checker.seen
        else:
            load = CommitmentLoad(
                tx, commitment=commitment, manifest_id=manifest_id, key=key, stamp=stamp
            )

            def store_with_tree(parsed: ParsedRecords) -> None:
                store(parsed)
                load.on_batch(parsed)
                if online and len(parsed.keys):
                    assert parsed.symbols is not None
                    c = load.loaded.commitment
                    store_units(
                        tx,
                        commitment=load.loaded.id,
                        keys=parsed.keys,
                        leaves=(parsed.pack_number - c.first_pack_number) * c.pack_size
                        + parsed.ticket,
                        prizes=parsed.prize_eur,
                        symbols=parsed.symbols,
                        log_key=book._log_key(),
                    )
                    stats["new"] += len(parsed.keys)

            rebuilt = manifest_commitment(
                manifest, game, identity, on_batch=store_with_tree, on_nodes=load.nodes
            )
            difference = statement_difference(rebuilt, commitment)
            if difference:
                raise PrintpipeError(
                    f"commitment {commitment.name} refused: the manifest's records give "
                    f"{difference}"
                )
            earlier = load.finish()
            seen = rebuilt.tickets
            if online:
                place = record_deal_order(tx, loaded=load.loaded, ledger_key=key,
                                          log_key=book._log_key())  # fmt: skip
                with_tree = (
                    f"; its commitment (root {commitment.root.hex()}) and tree; units dealt "
                    f"in a keyed order fixed now, its HMAC {place.order_mac}, in place "
                    f"{place.place} of the ledger's dealing order ("
                    + ("dealt first" if place.place == 1 else "dealt after the block in "
                       + ("place 1" if place.place == 2 else f"places 1 to {place.place - 1}"))
                    + "; printpipe play deals them)"
                )  # fmt: skip
            else:
                with_tree = f"; its commitment (root {commitment.root.hex()}) and tree: every " + (
                    "payment is proven"
                    if not earlier
                    else f"payment is proven, the {earlier:,} made before included"
                )
        tx.execute(
            "UPDATE manifests SET new_records = new_records + ? WHERE id = ?",
            (stats["new"], manifest_id),
        )
        summary = (
            f"imported {seen:,} records ({stats['new']:,} new) of {definition.id} "
            f"block {header['block']}, pack numbers {header['packs']['first_pack_number']:06d} "
            f"to {header['packs']['last_pack_number']:06d}{with_tree}"
        )
        book._log(tx, terminal.value, "import", audit_text(manifest.path.name), None, summary)
    return summary
