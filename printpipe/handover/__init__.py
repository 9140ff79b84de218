"""What passes between the printer and the lottery: the manifest and unit feed handed over, and
the lottery's approval of a proof handed back.

Each file's format, its writer and its reader in one module:

- ``manifest.py``: the secure manifest (serial -> prize, encrypted to the lottery, signed by
  the producer): the record encoding, the block's and a run's manifest written, verified,
  decrypted and re-checked row by row (:class:`RecordChecker`), the auditor's CSV exported;
- ``feed.py``: the unit feed an online game's export hands to the game server
  (:func:`write_feed`, :class:`FeedReader`, :func:`verify_feed_file`);
- ``auditor_csv.py``: the auditor's CSV read back, with the validation code of each ticket
  (:func:`ticket_codes`);
- ``approval.py``: the lottery's signed approval of a proof pack's inputs
  (:func:`approve_proof`), and the export's check for one (:func:`find_approval`).

A format ranks below both the runs that write or check it (``generation``, ``proof``,
``press``) and the side that reads it (``commitment``, ``ledger``): this wing imports only the
block, the games, a ticket template's type and the shared modules.  Names are imported on first
use, so that a command that only names a default folder loads neither pyrage nor numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from printpipe import load_on_first_use

if TYPE_CHECKING:
    from printpipe.handover.approval import (
        APPROVALS_DIR,
        NOT_APPROVED,
        Approval,
        approve_proof,
        find_approval,
        inputs_of,
    )
    from printpipe.handover.auditor_csv import ticket_codes
    from printpipe.handover.feed import (
        FeedReader,
        check_unit,
        feed_file_name,
        verify_feed_file,
        write_feed,
    )
    from printpipe.handover.manifest import (
        BLOCK_MANIFEST,
        Manifest,
        ParsedRecords,
        RecordChecker,
        decrypt_manifest,
        describe,
        export_csv,
        seal_run_records,
        verify_manifest,
        write_block_manifest,
        write_run_manifest,
        write_sealed_run_manifest,
    )

_HOMES = {
    "APPROVALS_DIR": "approval",
    "NOT_APPROVED": "approval",
    "Approval": "approval",
    "approve_proof": "approval",
    "find_approval": "approval",
    "inputs_of": "approval",
    "ticket_codes": "auditor_csv",
    "FeedReader": "feed",
    "check_unit": "feed",
    "feed_file_name": "feed",
    "verify_feed_file": "feed",
    "write_feed": "feed",
    "BLOCK_MANIFEST": "manifest",
    "Manifest": "manifest",
    "ParsedRecords": "manifest",
    "RecordChecker": "manifest",
    "decrypt_manifest": "manifest",
    "describe": "manifest",
    "export_csv": "manifest",
    "seal_run_records": "manifest",
    "verify_manifest": "manifest",
    "write_block_manifest": "manifest",
    "write_run_manifest": "manifest",
    "write_sealed_run_manifest": "manifest",
}

__all__ = [
    "APPROVALS_DIR",
    "BLOCK_MANIFEST",
    "NOT_APPROVED",
    "Approval",
    "FeedReader",
    "Manifest",
    "ParsedRecords",
    "RecordChecker",
    "approve_proof",
    "check_unit",
    "decrypt_manifest",
    "describe",
    "export_csv",
    "feed_file_name",
    "find_approval",
    "inputs_of",
    "seal_run_records",
    "ticket_codes",
    "verify_feed_file",
    "verify_manifest",
    "write_block_manifest",
    "write_feed",
    "write_run_manifest",
    "write_sealed_run_manifest",
]

__getattr__ = load_on_first_use(__name__, _HOMES)
