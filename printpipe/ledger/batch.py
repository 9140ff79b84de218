"""Group commit: requests that arrive while the ledger is busy wait, then go together in one
transaction (one commit, one flush to disk, and on PostgreSQL one round trip a step, for all).

The service's validations and the game server's plays are each many small transactions on
the same few rows and pages; under load, what would be a queue of transactions, each waiting
for the one before to commit, becomes one transaction for everything that queued meanwhile.
A :class:`Batcher` knows nothing of what it groups: ``run`` (e.g.
:meth:`printpipe.ledger.book.Ledger.validate_many`) takes the requests in the order they came
and returns each one's outcome, a result or the exception that refuses it alone; an exception
``run`` raises (the database failed) fails every request of its batch, none of which happened.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from typing import Generic, TypeVar

R = TypeVar("R")
O = TypeVar("O")  # noqa: E741 - the outcome


class Batcher(Generic[R, O]):
    """Runs ``run`` on ``executor`` over the requests submitted, at most ``most`` at a time, in
    at most ``lanes`` batches at once (1 on SQLite, whose one connection is one thread; more
    lets PostgreSQL work on a batch while the next one is sent).  A request submitted while
    every lane is busy waits for the next batch; with a lane free, it goes at once, alone."""

    def __init__(
        self,
        run: Callable[[list[R]], Sequence[O | BaseException]],
        executor: Executor,
        *,
        most: int = 128,
        lanes: int = 1,
    ) -> None:
        self.run = run
        self.executor = executor
        self.most = most
        self.lanes = lanes
        self._pending: list[tuple[R, Future[O]]] = []
        self._lock = threading.Lock()
        self._running = 0

    def submit(self, request: R) -> Future[O]:
        future: Future[O] = Future()
        with self._lock:
            self._pending.append((request, future))
            if self._running < self.lanes:
                self._running += 1
                self.executor.submit(self._run)
        return future

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._pending:
                    self._running -= 1
                    return
                batch, self._pending = self._pending[: self.most], self._pending[self.most :]
            try:
                outcomes = self.run([request for request, _ in batch])
            except BaseException as exc:  # the database failed: none of them happened
                for _, future in batch:
                    future.set_exception(exc)
                continue
            for (_, future), outcome in zip(batch, outcomes, strict=True):
                if isinstance(outcome, BaseException):
                    future.set_exception(outcome)
                else:
                    future.set_result(outcome)
