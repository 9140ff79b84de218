"""The floor for ``bench_service.py``: the least a validation server must do, on the same stack.

A bare ASGI callable on uvicorn (uvloop, httptools, the same workers), that for each
``POST /v1/validations``: verifies the request's signature with the same profile and code
(``printpipe.service.signatures.verify_request``), reads the ticket's row by its primary key,
appends one row to a log table (no chain, no MAC) and commits, then answers a line of JSON.
No nonce, no counters, no framework, no rate limit, no request id.  What printpipe spends per
validation above this is the price of everything else it does.

Run by the benches: ``python bench/floor_server.py DB PORT_FILE WORKERS [TABLE]`` (the table
whose row is read by its key: ``tickets``, or ``units`` beside the game server).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sqlite3
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from printpipe.ids import parse_validation_code
from printpipe.service.signatures import public_key_from_raw, verify_request

FLOOR_LOG = "floor_log"
TABLE = os.environ.get("FLOOR_TABLE", "tickets")


def _postgres(db: str) -> bool:
    return db.startswith("postgresql://")


def prepare(db: str) -> None:
    """The floor's log table, beside the ledger's."""
    if _postgres(db):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute(f"CREATE TABLE IF NOT EXISTS {FLOOR_LOG} (id BIGSERIAL PRIMARY KEY, "
                         "at TEXT, terminal TEXT, input TEXT, answer TEXT)")  # fmt: skip
    else:
        with sqlite3.connect(db) as conn:
            conn.execute(f"CREATE TABLE IF NOT EXISTS {FLOOR_LOG} (id INTEGER PRIMARY KEY, "
                         "at TEXT, terminal TEXT, input TEXT, answer TEXT)")  # fmt: skip


class Store:
    """One transaction per validation: the ticket's row read, one log row appended."""

    def __init__(self, db: str) -> None:
        self.db = db
        self.local = threading.local()
        if _postgres(db):
            from psycopg_pool import ConnectionPool

            def configure(conn: Any) -> None:
                conn.execute("SET synchronous_commit = off")
                conn.commit()  # the pool takes only idle connections

            self.pool = ConnectionPool(db, min_size=8, max_size=8, configure=configure,
                                       kwargs={"autocommit": False}, open=True)  # fmt: skip
            self.threads = 8
        else:
            self.threads = 1
        self.executor = ThreadPoolExecutor(self.threads)
        self.keys = {key_id: (public_key_from_raw(bytes(raw)), name)
                     for key_id, raw, name in self._terminals()}  # fmt: skip

    def _terminals(self) -> list[tuple[str, bytes, str]]:
        sql = "SELECT key_id, public_key, id FROM terminals"
        if _postgres(self.db):
            with self.pool.connection() as conn:
                return list(conn.execute(sql))
        with sqlite3.connect(self.db) as conn:
            return list(conn.execute(sql))

    def _sqlite(self) -> sqlite3.Connection:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.db, isolation_level=None, timeout=60)
            conn.execute("PRAGMA synchronous=NORMAL")
            self.local.conn = conn
        return conn

    def validate(self, ticket: int, terminal: str, given: str) -> str:
        if _postgres(self.db):
            with self.pool.connection() as conn:
                row = conn.execute(
                    f"SELECT prize_eur FROM {TABLE} WHERE id = %s", (ticket,)
                ).fetchone()
                answer = "UNKNOWN TICKET" if row is None else f"PRIZE {row[0]}"
                conn.execute(
                    f"INSERT INTO {FLOOR_LOG} (at, terminal, input, answer) "
                    "VALUES (now()::text, %s, %s, %s)",
                    (terminal, given, answer),
                )
            return answer
        conn = self._sqlite()
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute(f"SELECT prize_eur FROM {TABLE} WHERE id = ?", (ticket,)).fetchone()
            answer = "UNKNOWN TICKET" if row is None else f"PRIZE {row[0]}"
            conn.execute(
                f"INSERT INTO {FLOOR_LOG} (at, terminal, input, answer) "
                "VALUES (datetime('now'), ?, ?, ?)",
                (terminal, given, answer),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return answer


STORE: Store | None = None


async def app(scope: dict, receive: Any, send: Any) -> None:
    global STORE
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                STORE = Store(os.environ["FLOOR_DB"])
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    assert STORE is not None
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
    store = STORE

    def key(key_id: str) -> Any:
        known = store.keys.get(key_id)
        return known[0] if known else None

    try:
        verified = verify_request(method=scope["method"], path=scope["path"],
                                  query=scope["query_string"].decode(), headers=headers,
                                  body=body, public_key=key)  # fmt: skip
        code = json.loads(body)["code"]
        parsed = parse_validation_code(code)
        assert parsed is not None
        ticket = parsed.ticket_id
        ticket_id = ticket.game * 10**9 + ticket.pack * 10**3 + ticket.ticket
    except Exception:
        await _answer(send, 400, b'{"error":"refused"}')
        return
    loop = asyncio.get_running_loop()
    answer = await loop.run_in_executor(store.executor, store.validate, ticket_id,
                                        store.keys[verified.key_id][1], code[:13])  # fmt: skip
    await _answer(send, 200, json.dumps({"text": answer}).encode())


async def _answer(send: Any, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})


def main() -> None:
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    db, port_file, workers = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    prepare(db)
    os.environ["FLOOR_DB"] = db
    os.environ["FLOOR_TABLE"] = sys.argv[4] if len(sys.argv) > 4 else "tickets"
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    sock.set_inheritable(True)
    config = uvicorn.Config("floor_server:app", workers=workers, loop="uvloop", http="httptools",
                            lifespan="on", access_log=False, log_level="warning",
                            server_header=False, date_header=False)  # fmt: skip
    port_file.write_text(f"http://127.0.0.1:{sock.getsockname()[1]}\n")
    if workers > 1:
        Multiprocess(config, sockets=[sock]).run()
    else:
        uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
