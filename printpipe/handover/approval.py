"""Proof = press: the lottery approves a proof pack, and a press run needs an approved proof.

A press file is made from four inputs: the game definition, the ticket template, the ticket
texts, and the artwork (the game's built-in drawings, named by the printpipe version that
draws them, or the designer files the template names).  :class:`PressInputs` is their
SHA-256s.  A proof pack records the inputs it was made from (``proof.json``); the lottery
approves the pack with its signing key:

    printpipe proof approve PROOF_DIR --keys KEYS

which writes ``APPROVALS/GAME-<digest>-<key id>.approval.json`` (default folder
``printpipe-approvals``; another key's approval of the same inputs lives beside it): the
statement (game, inputs, the proof PDF's SHA-256, when, which key) and its Ed25519 signature
by ``KEYS/lottery-signing.key``.  The lottery hands that file
to the print shop, which keeps it in its own approvals folder; ``printpipe export`` checks,
before any rendering, that an approval signed by ``KEYS/lottery-signing.pub`` covers exactly
the inputs of the run, and otherwise refuses in one line naming what differs (or runs with
``--unapproved``, which prints NOT APPROVED on every sheet and in ``job.json``).
"""

from __future__ import annotations

import calendar
import hashlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from printpipe import __version__
from printpipe.atomic import make_private_dir, sha256_file, write_atomic
from printpipe.errors import PrintpipeError

if TYPE_CHECKING:
    from printpipe.render.template import Template

APPROVAL_FORMAT = "printpipe-approval/1"
APPROVALS_DIR = Path("printpipe-approvals")
"""Where approvals are written and looked for by default."""
NOT_APPROVED = "NOT APPROVED"
BUILT_IN = "built-in"


@dataclass(frozen=True)
class PressInputs:
    """What a press file is made from, by SHA-256 (the artwork: role -> digest or version)."""

    game: str
    definition_sha256: str
    template: str
    template_sha256: str
    texts_sha256: str
    artwork: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: Any) -> PressInputs:
        try:
            inputs = PressInputs(**data)
        except TypeError:
            raise PrintpipeError(f"not a record of press inputs: {data!r:.80}") from None
        if not isinstance(inputs.artwork, dict):
            raise PrintpipeError("press inputs: artwork must be a table")
        return inputs

    def digest(self) -> str:
        return hashlib.sha256(_canonical(self.to_json())).hexdigest()

    def differences(self, approved: PressInputs) -> list[str]:
        """What differs from an approved proof's inputs, in words (empty: the same)."""
        out = []
        if self.game != approved.game:
            out.append(f"the game ({self.game}, approved: {approved.game})")
        if self.definition_sha256 != approved.definition_sha256:
            out.append(
                f"the game definition (sha256 {self.definition_sha256[:12]}, approved: "
                f"{approved.definition_sha256[:12]})"
            )
        if self.template_sha256 != approved.template_sha256:
            out.append(
                f"the template ({self.template} sha256 {self.template_sha256[:12]}, approved: "
                f"{approved.template} sha256 {approved.template_sha256[:12]})"
            )
        if self.texts_sha256 != approved.texts_sha256:
            out.append(
                f"the ticket texts (sha256 {self.texts_sha256[:12]}, approved: "
                f"{approved.texts_sha256[:12]})"
            )
        for role in sorted(set(self.artwork) | set(approved.artwork)):
            mine, theirs = self.artwork.get(role), approved.artwork.get(role)
            if mine != theirs:
                out.append(f"the {role} artwork ({_short(mine)}, approved: {_short(theirs)})")
        return out


def _short(value: str | None) -> str:
    if value is None:
        return "none"
    return f"sha256 {value[:12]}" if len(value) == 64 else value


def _canonical(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def press_inputs(
    game_id: str,
    definition_sha256: str,
    template_name: str,
    template_sha256: str,
    texts: Path,
    artwork: dict[str, Path],
) -> PressInputs:
    """The inputs of a proof or a press run; ``artwork`` is the template's designer files by
    role (none: the game's built-in drawings of this printpipe version)."""
    return PressInputs(
        game=game_id,
        definition_sha256=definition_sha256,
        template=template_name,
        template_sha256=template_sha256,
        texts_sha256=sha256_file(texts),
        artwork={role: sha256_file(path) for role, path in sorted(artwork.items())}
        or {BUILT_IN: f"printpipe {__version__}"},
    )


def inputs_of(game_id: str, definition_sha256: str, template: Template) -> PressInputs:
    """The inputs of a proof or press run of ``game_id`` with ``template`` (its texts are the
    game's ``texts.toml``; its artwork the template's designer files, or the built-in)."""
    from printpipe.games import game_template_dir

    return press_inputs(
        game_id,
        definition_sha256,
        template.name,
        template.sha256,
        game_template_dir(game_id) / "texts.toml",
        dict(template.artwork),
    )


@dataclass(frozen=True)
class Approval:
    """A verified approval: its file, what it covers, and when it was given."""

    path: Path
    sha256: str
    inputs: PressInputs
    approved_at: int
    proof_pdf_sha256: str

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.path.name,
            "sha256": self.sha256,
            "approved_at": _utc(self.approved_at),
            "proof_pdf_sha256": self.proof_pdf_sha256,
        }


def _utc(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _key_id(key: Ed25519PublicKey) -> str:
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def approval_file_name(inputs: PressInputs, key_sha256: str) -> str:
    """``GAME-<inputs' digest>-<signer's key id>.approval.json``: the signer is in the name, so
    an approval is never replaced by another signer's approval of the same inputs (a demo
    key's beside the lottery's); the same signer approving again replaces its own."""
    return f"{inputs.game}-{inputs.digest()[:16]}-{key_sha256[:8]}.approval.json"


def approve_proof(
    proof_dir: Path,
    *,
    signing_key: Ed25519PrivateKey,
    approvals_dir: Path = APPROVALS_DIR,
    now: int | None = None,
) -> Path:
    """Sign the approval of the proof pack in ``proof_dir``; returns the approval file."""
    record_path = proof_dir / "proof.json"
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PrintpipeError(f"{proof_dir} is not a proof pack (no proof.json)") from None
    except (OSError, ValueError) as exc:
        raise PrintpipeError(f"{record_path} is unreadable: {exc}") from None
    if not isinstance(record, dict) or record.get("inputs") is None:
        raise PrintpipeError(
            f"{proof_dir} is the proof of an online game or of an earlier printpipe: only a "
            "press proof made by this version can be approved"
        )
    inputs = PressInputs.from_json(record["inputs"])
    pdf = proof_dir / str(record.get("pdf"))
    if not pdf.is_file() or sha256_file(pdf) != record.get("pdf_sha256"):
        raise PrintpipeError(f"{pdf} is missing or changed since the proof was made")
    statement = {
        "format": APPROVAL_FORMAT,
        "game": inputs.game,
        "inputs": inputs.to_json(),
        "proof": {"pdf": pdf.name, "pdf_sha256": record["pdf_sha256"]},
        "approved_at": _utc(int(time.time()) if now is None else now),
        "lottery_key_sha256": _key_id(signing_key.public_key()),
    }
    signature = signing_key.sign(_canonical(statement)).hex()
    path = approvals_dir / approval_file_name(inputs, _key_id(signing_key.public_key()))
    try:
        make_private_dir(approvals_dir)
        body = {"statement": statement, "signature": signature}
        write_atomic(path, json.dumps(body, indent=2, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise PrintpipeError(f"cannot write to {approvals_dir}: {exc.strerror}") from None
    return path


def read_approval(path: Path, public_key: Ed25519PublicKey, key_file: Path) -> Approval:
    """One approval file, its signature verified; a bad one is refused in one line."""
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
        statement, signature = body["statement"], bytes.fromhex(body["signature"])
        public_key.verify(signature, _canonical(statement))
    except InvalidSignature:
        raise PrintpipeError(
            f"approval {path} is not signed by the lottery's key {key_file}"
        ) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PrintpipeError(f"approval {path} is unreadable: {exc}") from None
    if statement.get("format") != APPROVAL_FORMAT:
        raise PrintpipeError(f"approval {path} is not a {APPROVAL_FORMAT} file")
    try:
        approved_at = calendar.timegm(time.strptime(statement["approved_at"], "%Y-%m-%dT%H:%M:%SZ"))
    except (KeyError, ValueError):
        raise PrintpipeError(f"approval {path} has no valid approved_at") from None
    return Approval(
        path,
        sha256_file(path),
        PressInputs.from_json(statement["inputs"]),
        approved_at,
        str(statement["proof"]["pdf_sha256"]),
    )


def find_approval(
    inputs: PressInputs, approvals_dir: Path, public_key: Ed25519PublicKey, key_file: Path
) -> Approval:
    """The approval covering exactly ``inputs`` signed by ``public_key``; else one line naming
    what differs.  Approvals by other keys (a demo key's beside the lottery's) are passed over;
    one that names this key but whose signature fails is refused by name."""
    paths = sorted(approvals_dir.glob("*.approval.json")) if approvals_dir.is_dir() else []
    key_id = _key_id(public_key)
    approvals, others = [], []
    for path in paths:
        if _signer_of(path) in (key_id, None):
            approvals.append(read_approval(path, public_key, key_file))
        else:
            others.append(path)
    for approval in approvals:
        if not inputs.differences(approval.inputs):
            return approval
    remedy = (
        "make a proof of these inputs and have it approved (printpipe proof --out DIR, then "
        "printpipe proof approve DIR), or export --unapproved"
    )
    same_game = [a for a in approvals if a.inputs.game == inputs.game]
    if not same_game:
        foreign = (
            f" ({len(others)} approval(s) there, such as {others[0].name}, are not signed by "
            f"the lottery's key {key_file})"
            if others
            else ""
        )
        raise PrintpipeError(
            f"no approved proof of {inputs.game} in {approvals_dir}{foreign}: {remedy}"
        )
    closest = min(same_game, key=lambda a: len(inputs.differences(a.inputs)))
    differs = "; ".join(inputs.differences(closest.inputs))
    raise PrintpipeError(
        f"no approved proof matches this press run: {differs} (closest: {closest.path.name}); "
        + remedy
    )


def _signer_of(path: Path) -> str | None:
    """The key id an approval file says signed it (None when unreadable: then
    :func:`read_approval` refuses it by name)."""
    try:
        signer = json.loads(path.read_text(encoding="utf-8"))["statement"]["lottery_key_sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return signer if isinstance(signer, str) else None
