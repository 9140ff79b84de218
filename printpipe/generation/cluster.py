"""Where the chunks of a run execute: a local process pool, or the workers of a Dask cluster.

A run (export or generate) is a map of one picklable work unit over its chunks; the stage
code does not know which engine runs them.  Both runners expose the same two calls,
``submit(index, fn, job)`` and ``next_done()``, and :func:`run_in_order` drives either one
with a bounded submission window, handing the results back in block order.  Dask does the
scheduling, data transfer and the rescheduling of tasks whose worker died; the window only
bounds what the coordinator holds in memory, so a 15-million-ticket emission costs no more
coordinator memory than a 200-pack run.
"""

from __future__ import annotations

import multiprocessing
import queue
import signal
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, TypeVar

from printpipe.errors import PrintpipeError, seconds_from_environment

J = TypeVar("J")
R = TypeVar("R")

DASK_INSTALL_HINT = "pip install printpipe[dask]"
CONNECT_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_ENV = "PRINTPIPE_DASK_CONNECT_S"
"""How long to wait for the scheduler, and then for its first worker (10 s);
``PRINTPIPE_DASK_CONNECT_S`` changes it (a slow network; the tests, an unreachable one)."""


def connect_timeout_s() -> float:
    """The wait for the scheduler and its first worker, from the environment or 10 s."""
    return seconds_from_environment(CONNECT_TIMEOUT_ENV, CONNECT_TIMEOUT_S)


class ChunkRunner(Protocol):
    """An engine running work units; results come back in completion order."""

    slots: int
    """How many chunks it runs at once (sizes the submission window)."""

    def submit(self, index: int, fn: Callable[[Any], Any], job: Any) -> None: ...

    def next_done(self) -> tuple[int, Any]:
        """Wait for any submitted chunk; its index and result (its exception is raised)."""
        ...

    def close(self, abort: bool) -> None: ...


def run_in_order(
    runner: ChunkRunner,
    fn: Callable[[J], R],
    jobs: Iterable[J],
    on_arrival: Callable[[J, R], R] | None = None,
    window: int | None = None,
) -> Iterator[tuple[J, R]]:
    """Map ``fn`` over ``jobs`` on ``runner``; yield ``(job, result)`` in the order of ``jobs``.

    ``on_arrival`` sees each result as soon as it arrives (e.g. to write collected PDF bytes
    and drop them), so that only small results wait in the reorder buffer.  At most
    ``window`` jobs are running or waiting to be yielded: ``jobs`` may be a lazy generator
    (e.g. reading ticket columns) and memory stays bounded whatever the run's length.
    """
    window = max(2, window or 4 * runner.slots)
    pending = enumerate(jobs)
    running: dict[int, J] = {}
    held: dict[int, tuple[J, R]] = {}
    next_out = 0

    def top_up() -> None:
        while len(running) + len(held) < window:
            item = next(pending, None)
            if item is None:
                return
            index, job = item
            running[index] = job
            runner.submit(index, fn, job)

    top_up()
    while running:
        index, result = runner.next_done()
        job = running.pop(index)
        held[index] = (job, on_arrival(job, result) if on_arrival else result)
        while next_out in held:
            yield held.pop(next_out)
            next_out += 1
        top_up()


# -- local process pool ----------------------------------------------------------------------


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the coordinator decides how a run stops


class LocalRunner:
    """A fork process pool on this machine (the default engine)."""

    def __init__(self, workers: int, initializer: Callable[[], None] | None = None) -> None:
        self.slots = max(1, workers)
        self._done: queue.Queue[tuple[int, Any, BaseException | None]] = queue.Queue()
        self._pool = multiprocessing.get_context("fork").Pool(
            self.slots, initializer=initializer or _ignore_sigint
        )

    def submit(self, index: int, fn: Callable[[Any], Any], job: Any) -> None:
        self._pool.apply_async(
            fn,
            (job,),
            callback=lambda result: self._done.put((index, result, None)),
            error_callback=lambda exc: self._done.put((index, None, exc)),
        )

    def next_done(self) -> tuple[int, Any]:
        index, result, error = self._done.get()
        if error is not None:
            raise error
        return index, result

    def close(self, abort: bool) -> None:
        if abort:
            self._pool.terminate()
        else:
            self._pool.close()
        self._pool.join()


# -- Dask distributed ------------------------------------------------------------------------


OUTPUT_LIBRARIES = ("printpipe", "numpy", "cryptography", "reportlab", "python-barcode", "svglib")
"""The distributions whose version can change a run's output bytes: the generator's arithmetic
(numpy, cryptography's ChaCha20 and AES) and the PDF writer (reportlab, python-barcode, and
svglib, which reads a template's designer artwork)."""


def output_versions() -> dict[str, str]:
    """Runs on the coordinator and on each worker: the versions of :data:`OUTPUT_LIBRARIES`."""
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for name in OUTPUT_LIBRARIES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def version_mismatch(ours: dict[str, str], theirs: dict[str, str]) -> str | None:
    """The first library whose version differs, worded for the user, or None."""
    for name, version in ours.items():
        if theirs.get(name) != version:
            return f"{name} {theirs.get(name, 'not installed')}, this is {version}"
    return None


class DaskRunner:
    """The workers of a Dask cluster, reached through its scheduler (``tcp://HOST:8786``).

    Tasks are submitted with ``pure=False`` and unique keys: a rerun after a crash never
    picks up a stale result.  A worker that dies mid-task has its tasks rescheduled by the
    scheduler on another worker, up to ``distributed.scheduler.allowed-failures`` times.
    """

    def __init__(self, address: str, name: str) -> None:
        try:
            from distributed import Client, as_completed
        except ImportError:
            raise PrintpipeError(
                f"--scheduler needs Dask distributed, which is not installed: {DASK_INSTALL_HINT}"
            ) from None
        self._timeout_s = connect_timeout_s()
        try:
            self._client = Client(address, timeout=self._timeout_s, set_as_default=False, name=name)
        except (OSError, TimeoutError, ValueError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise PrintpipeError(
                f"cannot reach the Dask scheduler at {address}: {reason}"
            ) from None
        self._as_completed = as_completed(loop=self._client.loop)
        self._futures: dict[str, int] = {}
        self._run = uuid.uuid4().hex[:12]
        self._name = name
        try:
            self._check_workers(address)
        except BaseException:
            self._client.close()
            raise

    def _check_workers(self, address: str) -> None:
        """Refuse a cluster without workers, or with other versions of the libraries that decide
        the output bytes."""
        try:
            self._client.wait_for_workers(1, timeout=self._timeout_s)
        except TimeoutError:
            raise PrintpipeError(
                f"no Dask worker joined the scheduler at {address} within {self._timeout_s:g} s"
            ) from None
        # A worker that dies while we ask (or is being restarted) answers nothing: that is the
        # scheduler's business (it reruns its tasks), not a reason to stop the run.
        ours = output_versions()
        for worker, theirs in self._client.run(output_versions, on_error="ignore").items():
            if mismatch := version_mismatch(ours, theirs):
                raise PrintpipeError(
                    f"Dask worker {worker} runs {mismatch}: install the same versions on every "
                    "worker (they decide the output bytes)"
                )
        self.slots = max(1, sum(self._client.nthreads().values()))

    def submit(self, index: int, fn: Callable[[Any], Any], job: Any) -> None:
        key = f"printpipe-{self._name}-{self._run}-{index}"
        future = self._client.submit(fn, job, key=key, pure=False)
        self._futures[key] = index
        self._as_completed.add(future)

    def next_done(self) -> tuple[int, Any]:
        from distributed import KilledWorker

        future = next(self._as_completed)
        index = self._futures.pop(future.key)
        try:
            result = future.result()
        except KilledWorker:
            raise PrintpipeError(
                f"chunk {index + 1} killed every worker it ran on (scheduler's allowed-failures "
                "reached): check the workers' memory and logs"
            ) from None
        future.release()
        return index, result

    def close(self, abort: bool) -> None:
        if abort:
            self._client.cancel(list(self._as_completed.futures), force=True)
        self._client.close()


def make_runner(
    scheduler: str | None,
    workers: int,
    name: str,
    initializer: Callable[[], None] | None = None,
) -> ChunkRunner:
    """The runner for a run: Dask when a scheduler address is given, else a local pool."""
    if scheduler:
        return DaskRunner(scheduler, name)
    return LocalRunner(workers, initializer)
