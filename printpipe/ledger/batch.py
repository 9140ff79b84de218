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

import asyncio
import contextlib
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any, Generic, TypeVar

R = TypeVar("R")
O = TypeVar("O")  # noqa: E741 - the outcome


class Batcher(Generic[R, O]):
    """Runs ``run`` on ``executor`` over the requests asked, at most ``most`` at a time, at
    most ``concurrency`` batches at a time (default one).  A request asked while as many
    batches run waits for the next one; otherwise it goes at once, alone.  (Two batches at
    once on PostgreSQL measured slower for validations: smaller batches, more transactions; the
    game server's plays, whose batches wait mostly for their durable commit and touch rows of
    their own, run two: one is built while the other commits.)

    A batch's outcomes are handed back to the event loop that asked, in one call (one wake-up
    of the loop for the batch, not one a request; a server has one loop, tests several)."""

    def __init__(
        self,
        run: Callable[[list[R]], Sequence[O | BaseException]],
        executor: Executor,
        *,
        most: int = 128,
        concurrency: int = 1,
    ) -> None:
        self.run = run
        self.executor = executor
        self.most = most
        self.concurrency = concurrency
        self._pending: list[tuple[R, asyncio.Future[O]]] = []
        self._lock = threading.Lock()
        self._running = 0

    async def ask(self, request: R) -> O:
        """The outcome of ``request``, run with the others asked meanwhile (its exception
        raised, or the batch's)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[O] = loop.create_future()
        with self._lock:
            self._pending.append((request, future))
            start = self._running < self.concurrency
            if start:
                self._running += 1
        if start:
            self.executor.submit(self._run)
        return await future

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._pending:
                    self._running -= 1
                    return
                batch, self._pending = self._pending[: self.most], self._pending[self.most :]
            try:
                outcomes: Sequence[O | BaseException] = self.run([request for request, _ in batch])
                if len(outcomes) != len(batch):
                    raise RuntimeError(f"{len(outcomes)} outcomes for {len(batch)} requests")
            except BaseException as exc:  # the database failed: none of them happened
                outcomes = [exc] * len(batch)
            settled: dict[asyncio.AbstractEventLoop, tuple[list[Any], list[Any]]] = {}
            for (_, future), outcome in zip(batch, outcomes, strict=True):
                futures, theirs = settled.setdefault(future.get_loop(), ([], []))
                futures.append(future)
                theirs.append(outcome)
            for loop, (futures, theirs) in settled.items():  # one loop, but for tests
                with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
                    loop.call_soon_threadsafe(_settle, futures, theirs)


def _settle(futures: list[asyncio.Future[O]], outcomes: Sequence[O | BaseException]) -> None:
    for future, outcome in zip(futures, outcomes, strict=True):
        if future.done():  # its request was cancelled (the client went away)
            continue
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)
