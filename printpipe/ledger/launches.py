"""A game session launched by the operator's platform, in one transaction.

The platform's launch token (``printpipe.play.launch``, verified before) is spent here: its
nonce admitted as a signed request's is (a token used twice is refused, the platform revoked
meanwhile too), the player introduced if the game server has never seen them (no registration:
the platform authenticated them; an account with nothing in the built-in wallet), a session
started for them (as a demo login starts one: ``plays.py`` owns the sessions), and the launch
entered in the audit log with the platform's session id.
"""

from __future__ import annotations

import secrets

from printpipe.ledger.book import Ledger
from printpipe.ledger.core import Admission
from printpipe.ledger.plays import SESSION_TTL_S, _hash_token, check_player
from printpipe.ledger.rules import format_time

LAUNCH_ACTION = "launch"


def start_launched_session(
    ledger: Ledger,
    *,
    player: str,
    operator_session: str,
    admission: Admission,
    terminal: str,
) -> tuple[str, bool]:
    """Spend a verified launch token (its nonce in ``admission``) for ``player``, launched by
    the platform ``terminal``: (a new session token, whether the player is new here)."""
    check_player(player)
    now = ledger.clock()
    session = secrets.token_urlsafe(32)
    with ledger.db.transaction(durable=True) as tx:
        ledger._admit(tx, admission)  # a token spent already, or its platform revoked: refused
        created = tx.one(
            "INSERT INTO players (id, balance_cents, added_at) VALUES (?, 0, ?) "
            "ON CONFLICT (id) DO NOTHING RETURNING id",
            (player, format_time(now)),
        )
        tx.execute(
            "INSERT INTO player_sessions (token_hash, player, expires_at) VALUES (?, ?, ?)",
            (_hash_token(session), player, int(now.timestamp()) + SESSION_TTL_S),
        )
        introduced = " (introduced by the launch)" if created is not None else ""
        ledger._log(
            tx, terminal, LAUNCH_ACTION, player, None,
            f"session started{introduced}, platform session {operator_session}",
        )  # fmt: skip
    return session, created is not None
