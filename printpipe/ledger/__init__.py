"""The lottery's validation ledger: its public surface.

What the command line, the service and the benchmarks use is named here; the modules behind
it are the ledger's own:

- ``rules.py``: the validation policy, pure (answers, settings, :func:`decide`);
- ``book.py``: :class:`Ledger`, which applies it in transactions (validate, claim, prove,
  prizes remaining, block closure), with the office's controls (``office.py``), terminals
  (``terminals.py``) and packs (``packs.py``) it shares an open database with (``core.py``);
- ``importer.py``: a verified manifest into the ledger, all or nothing (an online block's units
  and its deal order with it: ``units.py``, ``deal.py``);
- ``batch.py``: group commit, many requests in one transaction (validations, claims, plays);
- ``plays.py``: the online game server's transactions (a play: debit, unit, credit, once per
  Idempotency-Key; history, proofs, players), over the wallet of ``wallet.py`` (one outside
  the ledger, the operator's: through the outbox of ``outbox.py``);
- ``store/``: the database behind one protocol, one module per engine, the schema written once;
- ``key.py`` (HMACs under the ledger key), ``tree.py`` and ``proofs.py`` (a block's commitment
  in the ledger), ``log.py`` (the audit log sealed under the ledger key), ``inputs.py``
  (what terminals and the office send, parsed before any transaction).

Names are imported on first use, so that parsing a terminal id does not load the database
drivers nor the manifest reader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from printpipe import load_on_first_use

if TYPE_CHECKING:
    from printpipe.ledger.batch import Batcher
    from printpipe.ledger.book import (
        Claim,
        ClaimStart,
        IdempotentClaim,
        KeyTakenOver,
        Ledger,
        Validation,
        blocks_remaining,
        close_block,
        configure,
        publish_remaining,
        record_refusal,
        write_ticket_proof,
    )
    from printpipe.ledger.core import Admission, RequestRefused
    from printpipe.ledger.importer import import_manifest
    from printpipe.ledger.inputs import (
        LOTTERY,
        PackRef,
        Reason,
        TerminalId,
        audit_text,
        parse_pack_ref,
        parse_reason,
        parse_terminal_id,
        parse_ticket_ref,
    )
    from printpipe.ledger.key import LedgerKey, load_ledger_key
    from printpipe.ledger.launches import start_launched_session
    from printpipe.ledger.log import (
        SEAL_DELAY_S,
        Checkpoint,
        CheckpointRefused,
        checkpoint_order_problem,
        describe,
        read_checkpoint,
        write_checkpoint,
    )
    from printpipe.ledger.migration import Upgraded, upgrade
    from printpipe.ledger.outbox import Outbox, with_outbox
    from printpipe.ledger.packs import ForeignPack, NoSuchPack
    from printpipe.ledger.plays import (
        DailyLimitReached,
        Dealer,
        KeyReused,
        NoSuchPlay,
        Play,
        PlayRefused,
        PlayRequest,
        SoldOut,
        check_player,
    )
    from printpipe.ledger.rules import (
        TERMINAL_ROLES,
        Answer,
        PackScope,
        Settings,
        format_instant,
        format_time,
        parse_time,
    )
    from printpipe.ledger.sales import GameSales, RecordedCall, day_sales, recorded_calls
    from printpipe.ledger.store import (
        Location,
        PostgresLocation,
        Tx,
        database_errors,
        location_argument,
        parse_location,
        tx_over,
    )
    from printpipe.ledger.terminals import Terminal
    from printpipe.ledger.wallet import (
        DatabaseWallet,
        InsufficientFunds,
        NoSuchPlayer,
        Wallet,
        parse_euros,
    )
    from printpipe.ledger.witness import (
        WITNESS_INTERVAL_S,
        default_witness_folder,
        read_witness,
        witness_path,
        write_witness,
    )

_HOMES = {
    "Batcher": "batch",
    "Claim": "book",
    "ClaimStart": "book",
    "IdempotentClaim": "book",
    "KeyTakenOver": "book",
    "Ledger": "book",
    "close_block": "book",
    "configure": "book",
    "publish_remaining": "book",
    "blocks_remaining": "book",
    "record_refusal": "book",
    "Validation": "book",
    "upgrade": "migration",
    "Upgraded": "migration",
    "WITNESS_INTERVAL_S": "witness",
    "default_witness_folder": "witness",
    "read_witness": "witness",
    "witness_path": "witness",
    "write_witness": "witness",
    "write_ticket_proof": "book",
    "Admission": "core",
    "RequestRefused": "core",
    "import_manifest": "importer",
    "LOTTERY": "inputs",
    "PackRef": "inputs",
    "Reason": "inputs",
    "TerminalId": "inputs",
    "audit_text": "inputs",
    "parse_pack_ref": "inputs",
    "parse_reason": "inputs",
    "parse_terminal_id": "inputs",
    "parse_ticket_ref": "inputs",
    "LedgerKey": "key",
    "load_ledger_key": "key",
    "start_launched_session": "launches",
    "ForeignPack": "packs",
    "NoSuchPack": "packs",
    "SEAL_DELAY_S": "log",
    "Checkpoint": "log",
    "CheckpointRefused": "log",
    "checkpoint_order_problem": "log",
    "describe": "log",
    "read_checkpoint": "log",
    "write_checkpoint": "log",
    "Answer": "rules",
    "PackScope": "rules",
    "TERMINAL_ROLES": "rules",
    "Settings": "rules",
    "format_instant": "rules",
    "format_time": "rules",
    "parse_time": "rules",
    "Location": "store",
    "PostgresLocation": "store",
    "Tx": "store",
    "database_errors": "store",
    "location_argument": "store",
    "parse_location": "store",
    "tx_over": "store",
    "Terminal": "terminals",
    "DailyLimitReached": "plays",
    "Dealer": "plays",
    "KeyReused": "plays",
    "NoSuchPlay": "plays",
    "Play": "plays",
    "PlayRefused": "plays",
    "PlayRequest": "plays",
    "SoldOut": "plays",
    "check_player": "plays",
    "DatabaseWallet": "wallet",
    "Outbox": "outbox",
    "GameSales": "sales",
    "RecordedCall": "sales",
    "day_sales": "sales",
    "recorded_calls": "sales",
    "with_outbox": "outbox",
    "InsufficientFunds": "wallet",
    "NoSuchPlayer": "wallet",
    "Wallet": "wallet",
    "parse_euros": "wallet",
}

__all__ = [
    "LOTTERY",
    "SEAL_DELAY_S",
    "TERMINAL_ROLES",
    "WITNESS_INTERVAL_S",
    "Admission",
    "Answer",
    "Batcher",
    "Checkpoint",
    "CheckpointRefused",
    "Claim",
    "ClaimStart",
    "DailyLimitReached",
    "DatabaseWallet",
    "Dealer",
    "ForeignPack",
    "GameSales",
    "IdempotentClaim",
    "InsufficientFunds",
    "KeyReused",
    "KeyTakenOver",
    "Ledger",
    "LedgerKey",
    "Location",
    "NoSuchPack",
    "NoSuchPlay",
    "NoSuchPlayer",
    "Outbox",
    "PackRef",
    "PackScope",
    "Play",
    "PlayRefused",
    "PlayRequest",
    "PostgresLocation",
    "Reason",
    "RecordedCall",
    "RequestRefused",
    "Settings",
    "SoldOut",
    "Terminal",
    "TerminalId",
    "Tx",
    "Upgraded",
    "Validation",
    "Wallet",
    "audit_text",
    "blocks_remaining",
    "check_player",
    "checkpoint_order_problem",
    "close_block",
    "configure",
    "database_errors",
    "day_sales",
    "default_witness_folder",
    "describe",
    "format_instant",
    "format_time",
    "import_manifest",
    "load_ledger_key",
    "location_argument",
    "parse_euros",
    "parse_location",
    "parse_pack_ref",
    "parse_reason",
    "parse_terminal_id",
    "parse_ticket_ref",
    "parse_time",
    "publish_remaining",
    "read_checkpoint",
    "read_witness",
    "record_refusal",
    "recorded_calls",
    "start_launched_session",
    "tx_over",
    "upgrade",
    "with_outbox",
    "witness_path",
    "write_checkpoint",
    "write_ticket_proof",
    "write_witness",
]

__getattr__ = load_on_first_use(__name__, _HOMES)
