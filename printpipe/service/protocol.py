"""uvicorn's httptools protocol with bounds: no connection is kept for a client that does not
send, and no client holds more than its share of the server.

uvicorn bounds the idle time between requests (``timeout_keep_alive``) but nothing before a
request's headers end, nor while its body arrives: a client sending half a request keeps its
connection (and a file descriptor) forever, and httptools takes headers of any size and
number.  Its
``limit_concurrency`` answers 503 to every request once that many connections are open, idle
ones included, so 1,000 idle attackers would lock every terminal out.  This subclass adds, per
worker process (:class:`ConnectionLimits`):

- a **header-read timeout**: from the connection's first byte (or the end of the answer
  before, on a kept-alive connection) to the end of the request's headers; past it, 408 and the
  connection closed;
- a **body-read timeout**: from the end of the headers to the end of the body; past it, 408
  (unless the application answered already) and the connection closed.  The timer is armed
  only when a read ends with the body incomplete, so the common request, whose body comes with
  its headers, costs no timer;
- **header limits**: at most ``max_header_bytes`` bytes of request line and headers, counted
  both as bytes arrive (an endless header is cut as soon as it passes the limit, not when it
  ends) and as the parser reads each field (so a head that arrives whole in one read, or behind
  a pipelined request, is held to the same limit), at most ``max_headers`` fields: 431 and
  closed, before the application sees the request;
- a **connection cap**: past ``max_connections`` open connections, the one that has waited
  longest for a request (idle between requests, still sending its headers, or still sending
  the body the application waits for) is closed to make room, as nginx reuses its idle
  keep-alive connections; only when every connection has a request being answered is the new
  one answered 503 with ``Retry-After`` and closed.  So however many half-requests an attacker
  keeps open, a terminal that sends a whole request is served.
  The cap is kept below the process's open-file limit, so that the server never runs out of
  descriptors (``accept`` failing would refuse everyone);
- uvicorn's own 400 for malformed HTTP as RFC 9457 problem details, like every other error.

These are the hooks uvicorn's protocol has (``connection_made``, ``data_received``, the parser's
callbacks, ``send_400_response``); the parsing, the keep-alive timer, pipelining and flow control
stay uvicorn's.
"""

from __future__ import annotations

import asyncio
import resource
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from printpipe.service.problems import raw_response

RESERVED_FILES = 64
"""Descriptors kept for everything but connections: the database's, logs, the listening socket."""


@dataclass(frozen=True)
class ConnectionLimits:
    """Per worker process; safe defaults for terminals that send one small request at a time."""

    header_timeout_s: float = 10.0
    body_timeout_s: float = 10.0
    keep_alive_timeout_s: float = 5.0
    max_connections: int = 1000
    max_header_bytes: int = 16 * 1024
    max_headers: int = 64

    def connection_cap(self) -> int:
        """:attr:`max_connections`, lowered to fit under the process's open-file limit."""
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY:
            return self.max_connections
        return max(1, min(self.max_connections, soft - RESERVED_FILES))


class _Rejected(Exception):
    """Raised from a parser callback: the request is answered ``status`` and closed."""

    def __init__(self, status: int, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.kind, self.detail = status, kind, detail


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    limits = ConnectionLimits()
    """Replaced by ``server.py`` from the serve command's options, in each worker."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timeout_keep_alive = self.limits.keep_alive_timeout_s  # type: ignore[assignment]
        self._cap = self.limits.connection_cap()
        self._header_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._waiting_since = 0.0
        self._head_bytes = 0
        self._head_parsed = 0
        self._head_fields = 0
        self._awaiting_head = True
        self._awaiting_body = False
        self._rejected: _Rejected | None = None

    # -- the connection cap -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._awaiting_head = True
        self._arm_header_timer()
        if len(self.connections) > self._cap and not self._make_room():
            self.transport.write(
                raw_response(
                    503,
                    "unavailable",
                    "the server has as many connections as it takes: retry",
                    {"Retry-After": "1"},
                )
            )
            self.transport.close()

    def _waiting(self) -> bool:
        """Waiting for the client: for a request (none in progress, none of its headers
        complete), or for the rest of a body the application has not answered yet."""
        cycle = self.cycle
        if self._awaiting_body and cycle is not None and not cycle.response_started:
            return True
        return self._awaiting_head and (cycle is None or cycle.response_complete)

    def _make_room(self) -> bool:
        """Close the connection that has waited longest for its client, or say there is none."""
        waiting = [
            c
            for c in self.connections
            if c is not self and isinstance(c, BoundedHttpToolsProtocol) and c._waiting()
        ]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: c._waiting_since)
        oldest.transport.abort()
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        self._cancel_body_timer()
        super().connection_lost(exc)

    # -- the header-read timeout and limits --------------------------------------------------

    def _arm_header_timer(self) -> None:
        self._cancel_header_timer()
        self._waiting_since = self.loop.time()
        self._header_timer = self.loop.call_later(
            self.limits.header_timeout_s, self._header_timeout
        )

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timeout(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self._reject(408, "timeout", "the request's headers did not arrive in time")

    def _reject(self, status: int, kind: str, detail: str) -> None:
        self._cancel_header_timer()
        self._cancel_body_timer()
        self.transport.write(raw_response(status, kind, detail))
        self.transport.close()

    # -- the body-read timeout ------------------------------------------------------------------

    def _cancel_body_timer(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _body_timeout(self) -> None:
        self._body_timer = None
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is None or cycle.response_started:
            self.transport.close()  # answered already: the rest of the body is not awaited
            return
        cycle.disconnected = True  # the application's answer, if any, is not written after it
        self._reject(408, "timeout", "the request's body did not arrive in time")

    def data_received(self, data: bytes) -> None:
        if self._awaiting_head and not self._awaiting_body:
            self._head_bytes += len(data)
        super().data_received(data)
        if self.transport.is_closing():
            return
        if self._awaiting_head and self._head_bytes > self.limits.max_header_bytes:
            self._reject_head()
        elif self._awaiting_body and self._body_timer is None:
            self._body_timer = self.loop.call_later(self.limits.body_timeout_s, self._body_timeout)

    def _head_limit_text(self) -> str:
        return (
            f"a request's headers are at most {self.limits.max_header_bytes} bytes and "
            f"{self.limits.max_headers} fields"
        )

    def _reject_head(self) -> None:
        self._reject(431, "headers_too_large", self._head_limit_text())

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._header_timer is None:  # a kept-alive connection's next request
            self._arm_header_timer()
        self._head_fields = 0
        self._head_parsed = 0

    def _refuse_in_parser(self, status: int, kind: str, detail: str) -> None:
        """Stop the parser (it raises HttpParserCallbackError, which uvicorn answers with
        :meth:`send_400_response`) and say why."""
        self._rejected = _Rejected(status, kind, detail)
        raise self._rejected

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > self.limits.max_header_bytes:
            self._refuse_in_parser(414, "uri_too_long", "the request's target is too long")
        self._head_parsed += len(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_fields += 1
        if self._head_fields > self.limits.max_headers:
            self._refuse_in_parser(
                431, "headers_too_large", f"a request has at most {self.limits.max_headers} fields"
            )
        self._head_parsed += len(name) + len(value) + 4  # ": " and CRLF
        if self._head_parsed > self.limits.max_header_bytes:
            self._refuse_in_parser(431, "headers_too_large", self._head_limit_text())
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._awaiting_head = False
        self._awaiting_body = True
        self._waiting_since = self.loop.time()
        self._cancel_header_timer()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._awaiting_body = False
        self._cancel_body_timer()
        super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._awaiting_head = True  # the next request's head, if any (uvicorn's keep-alive timer)
        self._head_bytes = 0
        self._waiting_since = self.loop.time()

    def send_400_response(self, msg: str) -> None:
        """Malformed HTTP, or a request a parser callback refused (``_Rejected``)."""
        cause = self._rejected
        if cause is not None:
            self._reject(cause.status, cause.kind, cause.detail)
        else:
            self._reject(400, "bad_request", f"malformed HTTP request: {msg}")
