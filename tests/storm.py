"""Many signed terminals at once: pre-signed requests sent over raw keep-alive HTTP/1.1
connections from one asyncio loop (the reliability tests and ``bench/bench_service.py``).

Signing costs about as much as verifying, so requests are signed before the clock starts
(each with its own nonce, ``created`` within the allowed skew); sending them is then a
``write`` and a small parse per request, cheap enough that the client is never what limits
the server (the bench reports its CPU share).  Each connection is one terminal: it sends its
requests one after the other, waiting for each answer: at once (the most the server answers),
or each at its due time (``Pace``: a given rate offered, the latency counted from when the
request was due, so a late answer is not hidden by the requests it delayed).  For the
benchmarks: what a storm cost the server (:func:`measured_storm`) and where their ledger goes
(:func:`ledger_location`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

from printpipe.ledger import Location, parse_location
from printpipe.service.signatures import RequestSigner
from tests import pgserver


@dataclass(frozen=True)
class Pace:
    """Requests offered at ``rate`` per second in all, spread evenly over the terminals."""

    rate: float

    def due(self, terminal: int, terminals: int, index: int) -> float:
        """When (seconds after the start) request ``index`` of ``terminal`` is due."""
        every = terminals / self.rate
        return (terminal / terminals + index) * every


@dataclass
class Outcome:
    """One request's fate: ``status`` None when no answer came (connection lost)."""

    status: int | None
    body: bytes
    latency_s: float

    def json(self) -> dict:
        try:
            data = json.loads(self.body)
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}


def signed_request(
    signer: RequestSigner,
    server: str,
    method: str,
    path: str,
    body: bytes,
    *,
    extra: dict[str, str] | None = None,
) -> bytes:
    """The bytes of one signed HTTP/1.1 request (``extra``: header fields, signed when the
    profile says so, e.g. Idempotency-Key)."""
    parts = urlsplit(server)
    headers = signer.headers(method, server + path, body, fields=extra)
    lines = [f"{method} {path} HTTP/1.1", f"Host: {parts.netloc}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    lines += ["Content-Type: application/json", f"Content-Length: {len(body)}", "", ""]
    return "\r\n".join(lines).encode("latin-1") + body


def claim_request(signer: RequestSigner, server: str, code: str, key: str) -> bytes:
    body = json.dumps({"code": code}).encode()
    return signed_request(
        signer, server, "POST", "/v1/claims", body, extra={"Idempotency-Key": key}
    )


def validate_request(signer: RequestSigner, server: str, code: str) -> bytes:
    body = json.dumps({"code": code}).encode()
    return signed_request(signer, server, "POST", "/v1/validations", body)


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    body = await reader.readexactly(length) if length else b""
    return status, body


async def _terminal(
    host: str,
    port: int,
    requests: Sequence[bytes],
    start: asyncio.Event,
    out: list[Outcome | None],
    offsets: Sequence[int],
    on_answer: Callable[[], None] | None,
    due: Callable[[int], float] | None,
    origin: list[float],
) -> None:
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError:
        return
    await start.wait()
    try:
        for index, (request, slot) in enumerate(zip(requests, offsets, strict=True)):
            began = time.perf_counter()
            if due is not None:
                began = origin[0] + due(index)
                if began > time.perf_counter():
                    await asyncio.sleep(began - time.perf_counter())
            writer.write(request)
            status, body = await _read_response(reader)
            out[slot] = Outcome(status, body, time.perf_counter() - began)
            if on_answer is not None:
                on_answer()
    except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
        pass  # the server went away: the rest stay unanswered
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


async def storm_async(
    server: str,
    per_terminal: Sequence[Sequence[bytes]],
    *,
    timeout: float = 120.0,
    on_answer: Callable[[], None] | None = None,
    pace: Pace | None = None,
) -> tuple[list[Outcome | None], float]:
    """Send each terminal's requests on its own connection, all terminals released at once;
    the outcomes in the order of the flattened lists (None: unanswered), and the wall time.
    ``on_answer`` is called after each answer (a test kills the server from it); ``pace``:
    each request sent when due, not as soon as the one before is answered."""
    parts = urlsplit(server)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    total = sum(len(r) for r in per_terminal)
    out: list[Outcome | None] = [None] * total
    start = asyncio.Event()
    tasks, offset = [], 0
    origin = [0.0]
    for number, requests in enumerate(per_terminal):
        slots = range(offset, offset + len(requests))
        offset += len(requests)
        due = None
        if pace is not None:
            due = functools.partial(pace.due, number, len(per_terminal))
        tasks.append(
            asyncio.create_task(
                _terminal(host, port, requests, start, out, slots, on_answer, due, origin)
            )
        )
    await asyncio.sleep(0.05)  # let every connection open
    began = origin[0] = time.perf_counter()
    start.set()
    await asyncio.wait(tasks, timeout=timeout)
    for task in tasks:
        task.cancel()
    return out, time.perf_counter() - began


def storm(
    server: str,
    per_terminal: Sequence[Sequence[bytes]],
    *,
    timeout: float = 120.0,
    on_answer: Callable[[], None] | None = None,
    pace: Pace | None = None,
) -> tuple[list[Outcome | None], float]:
    return asyncio.run(
        storm_async(server, per_terminal, timeout=timeout, on_answer=on_answer, pace=pace)
    )


# -- what a storm costs the server (the benchmarks) -------------------------------------------


def process_stats() -> Iterator[tuple[int, list[str]]]:
    """Each process's pid and the fields of its ``/proc/PID/stat`` after its name (state, ppid,
    pgrp, ...: proc(5)'s fields 3 on); a process that ends while it is read is left out."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            yield int(stat.parent.name), stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue


def cpu_seconds(pid: int) -> float:
    """CPU time of ``pid`` and its children (a server's workers), in seconds, from /proc."""
    total = sum(
        int(fields[11]) + int(fields[12])
        for other, fields in process_stats()
        if other == pid or fields[1] == str(pid)
    )
    return total / os.sysconf("SC_CLK_TCK")


def measured_storm(
    name: str,
    server: str,
    per_terminal: Sequence[Sequence[bytes]],
    server_pids: Sequence[int],
    *,
    ok: int,
    unit: str,
    pace: Pace | None = None,
) -> dict[str, float]:
    """A storm and what it cost, printed on one line: the answers of status ``ok`` a second,
    their p50 and p99 (ms), the client's and the server's CPU (shares of a core; the server:
    ``server_pids`` and their children, e.g. a service's supervisor and the database server),
    the server's CPU a ``unit`` in us, and how many were not ``ok``."""
    cpu0, server0 = time.process_time(), sum(cpu_seconds(pid) for pid in server_pids)
    outcomes, wall = storm(server, per_terminal, pace=pace)
    client = time.process_time() - cpu0
    spent = sum(cpu_seconds(pid) for pid in server_pids) - server0
    answered = [o for o in outcomes if o is not None and o.status == ok]
    latencies = np.array([o.latency_s for o in answered]) * 1000
    result = {
        "rate": len(answered) / wall,
        "p50": float(np.percentile(latencies, 50)),
        "p99": float(np.percentile(latencies, 99)),
        "client": client / wall,
        "server": spent / wall,
        "cpu_us": spent / max(len(answered), 1) * 1e6,
        "errors": float(len(outcomes) - len(answered)),
    }
    print(f"  {name}: {len(answered):,} in {wall:.2f} s = {_summary(result, unit)}; not {ok}: "
          f"{result['errors']:.0f}; load {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    return result


def print_median(label: str, runs: Sequence[dict[str, float]], *, unit: str) -> dict[str, float]:
    """The median of each figure of ``runs`` (:func:`measured_storm`'s), printed on one line."""
    median = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    print(f"{label}, median of {len(runs)}: {_summary(median, unit)}", flush=True)
    return median


def _summary(result: dict[str, float], unit: str) -> str:
    return (
        f"{result['rate']:,.0f}/s, p50 {result['p50']:.1f} ms, p99 {result['p99']:.1f} ms; "
        f"client CPU {result['client']:.0%} of a core, server {result['server']:.0%} "
        f"({result['cpu_us']:.0f} us a {unit}: {2e6 / result['cpu_us']:,.0f}/s on 2 idle cores)"
    )


def start_floor(
    db: str, root: Path, workers: int, *, table: str = "tickets"
) -> tuple[subprocess.Popen, str]:
    """The floor server (``bench/floor_server.py``) on the ledger ``db`` (its ``--db`` text),
    reading ``table``'s rows, with ``workers``: its process and URL once it listens."""
    url_file = root / "floor.url"
    log = open(root / "floor.log", "ab")  # noqa: SIM115 - the server's
    floor = subprocess.Popen(
        [sys.executable, str(Path(__file__).parent.parent / "bench" / "floor_server.py"), db,
         str(url_file), str(workers), table],
        stdout=log, stderr=log,
    )  # fmt: skip
    log.close()
    while not url_file.exists():
        if floor.poll() is not None:
            raise SystemExit((root / "floor.log").read_text())
        time.sleep(0.05)
    time.sleep(1.0)  # its workers' start-up (the URL is written before uvicorn starts)
    return floor, url_file.read_text().strip()


@contextlib.contextmanager
def ledger_location(backend: str, folder: Path) -> Iterator[tuple[Location, list[int]]]:
    """Where a benchmark's ledger goes: a file in ``folder`` (``sqlite``), or a database of a
    throwaway PostgreSQL server (durable, as in production), stopped on exit; and the pids
    of the database's server, whose CPU counts with the service's."""
    if backend == "sqlite":
        yield folder / "ledger.sqlite", []
        return
    with pgserver.throwaway(durable=True) as postgres:
        yield parse_location(postgres.url), [postgres.pid]
