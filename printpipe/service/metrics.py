"""What an operations team watches: both servers' Prometheus metrics, at ``/metrics``.

prometheus-client's metrics, in the text exposition format.  With ``--workers N`` each worker
is a process of its own: the server's parent points ``PROMETHEUS_MULTIPROC_DIR`` at a private
folder before the workers start (:func:`prepare_workers`), each worker's values live in its own
memory-mapped files there, and ``/metrics``, whichever worker answers it, adds them all up
(prometheus-client's multiprocess mode).  One worker: the plain registry, with the process's
own CPU and memory.

Nothing secret goes in a label: a request is counted by its route's template
(``/v1/players/{player}/plays``, never the path it named), its method and status; plays by
outcome; no player, code, VIRN, key or token.  An observation is a few microseconds
(``bench/bench_service.py`` measures the cost on a validation).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
MULTIPROCESS = bool(os.environ.get(MULTIPROCESS_ENV))
"""Decided once, as prometheus-client decides it when first imported (just below)."""
SWITCH_ENV = "PRINTPIPE_METRICS"
ENABLED = os.environ.get(SWITCH_ENV, "on") != "off"
"""``PRINTPIPE_METRICS=off``: no request counted or timed, no batch observed (the benchmark
measures what the metrics cost a validation against a server without them)."""

from prometheus_client import (  # noqa: E402 - after MULTIPROCESS, which its import decides
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

T = TypeVar("T")
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"})
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

REQUESTS = Counter(
    "printpipe_http_requests",
    "HTTP requests answered, by server, route template, method and status.",
    ["server", "route", "method", "status"],
)
LATENCY = Histogram(
    "printpipe_http_request_duration_seconds",
    "Time from a request's arrival at the application to its answer, by route template.",
    ["server", "route"],
    buckets=LATENCY_BUCKETS,
)
BATCH_SIZE = Histogram(
    "printpipe_batch_size",
    "Requests written in one transaction (group commit): validations, claims, plays.",
    ["kind"],
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
)
SEAL_LAG = Gauge(
    "printpipe_seal_lag_seconds",
    "Seconds since the audit log was last sealed (every 0.05 s while the database answers).",
    multiprocess_mode="livemax",
)
SEALED = Counter("printpipe_log_entries_sealed", "Audit log entries sealed under the ledger key.")
POOL = Gauge(
    "printpipe_db_pool_connections",
    "The PostgreSQL connection pools of the workers: their size, connections idle, and "
    "requests waiting for one.",
    ["state"],
    multiprocess_mode="livesum",
)
PLAYS = Counter(
    "printpipe_plays",
    "Plays asked, by outcome: dealt, replayed (an Idempotency-Key answered again), or the "
    "refusal's kind.",
    ["outcome"],
)
STAKES = Counter("printpipe_play_stakes_cents", "Stakes of the plays dealt, in cents.")
LOTS = Counter("printpipe_play_lots", "Plays dealt whose unit wins a lot.")
LOT_CENTS = Counter("printpipe_play_lots_cents", "Lots of the plays dealt, in cents.")
WALLET_CALLS = Counter(
    "printpipe_wallet_calls",
    "Attempts of calls to the operator's wallet, by call and outcome (confirmed, refused, "
    "unknown).",
    ["call", "outcome"],
)
WALLET_LATENCY = Histogram(
    "printpipe_wallet_call_duration_seconds",
    "Time of an attempt of a call to the operator's wallet.",
    ["call"],
    buckets=LATENCY_BUCKETS,
)


class HttpMetrics:
    """One server's requests, counted and timed (``server``: ``serve``, ``play``...).  The
    labelled series are kept, so that an answer costs two increments, not a label lookup."""

    def __init__(self, server: str) -> None:
        self.server = server
        self._series: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        key = (route, method, status)
        series = self._series.get(key)
        if series is None:
            if method not in METHODS:  # whatever a client sends: a few series at most
                method = "other"
                key = (route, method, status)
            series = self._series.get(key) or (
                REQUESTS.labels(self.server, route, method, str(status)),
                LATENCY.labels(self.server, route),
            )
            self._series[key] = series
        series[0].inc()
        series[1].observe(seconds)


def http_metrics(server: str) -> HttpMetrics | None:
    """What a server's guard counts its answers with (None: metrics off)."""
    return HttpMetrics(server) if ENABLED else None


def batched(kind: str, run: Callable[[list[T]], Sequence[Any]]) -> Callable[[list[T]], Any]:
    """``run`` (a batch's transaction, as a ``Batcher`` calls it), its batch sizes observed."""
    if not ENABLED:
        return run
    sizes = BATCH_SIZE.labels(kind)  # bound once: a label lookup a batch was a tenth of the cost

    def metered(requests: list[T]) -> Any:
        sizes.observe(len(requests))
        return run(requests)

    return metered


def observe_wallet_call(call: str, outcome: str, seconds: float) -> None:
    """The wallet client's observer (``printpipe.play.operator_wallet.Observer``)."""
    WALLET_CALLS.labels(call, outcome).inc()
    WALLET_LATENCY.labels(call).observe(seconds)


def sample_pool(pool: Any) -> None:
    """The PostgreSQL pool's use now (psycopg_pool's statistics), if the database has one."""
    if pool is None:
        return
    stats = pool.get_stats()
    POOL.labels("size").set(stats.get("pool_size", 0))
    POOL.labels("idle").set(stats.get("pool_available", 0))
    POOL.labels("waiting").set(stats.get("requests_waiting", 0))


def exposition() -> tuple[bytes, str]:
    """The metrics now, in Prometheus's text format, and its media type: this process's, or
    every worker's added up."""
    if MULTIPROCESS:
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


def prepare_workers(workers: int) -> Path | None:
    """Before a server starts ``workers`` worker processes (several): a private folder for
    their metrics, named to them by the environment; None for one worker (the plain
    registry).  :func:`forget_workers` removes it once they have stopped."""
    if workers <= 1:
        os.environ.pop(MULTIPROCESS_ENV, None)
        return None
    folder = Path(tempfile.mkdtemp(prefix="printpipe-metrics-"))  # 0700
    os.environ[MULTIPROCESS_ENV] = str(folder)
    return folder


def forget_workers(folder: Path | None) -> None:
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def worker_stopped() -> None:
    """A worker's last act: its live gauges no longer count (multiprocess mode)."""
    if MULTIPROCESS:
        multiprocess.mark_process_dead(os.getpid())
