"""``Batcher``: every request asked gets its own outcome, whatever batches it went in, from
whichever event loop asked it."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from printpipe.ledger import Batcher


class Refused(Exception):
    pass


def _outcomes(requests: list[int]) -> list[int | BaseException]:
    return [Refused(n) if n % 3 == 0 else n * 10 for n in requests]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 1000), max_size=60), st.integers(1, 8))
def test_each_request_gets_its_own_outcome(requests, most):
    sizes: list[int] = []

    def run(batch: list[int]) -> list[int | BaseException]:
        sizes.append(len(batch))
        return _outcomes(batch)

    async def ask_all() -> list[object]:
        with ThreadPoolExecutor(1) as executor:
            batcher: Batcher[int, int] = Batcher(run, executor, most=most)
            return await asyncio.gather(*(batcher.ask(n) for n in requests),
                                        return_exceptions=True)  # fmt: skip

    answered = asyncio.run(ask_all())
    for n, outcome in zip(requests, answered, strict=True):
        if n % 3 == 0:
            assert isinstance(outcome, Refused) and outcome.args == (n,)
        else:
            assert outcome == n * 10
    assert sum(sizes) == len(requests) and all(size <= most for size in sizes)


def test_a_failed_batch_fails_each_of_its_requests():
    def run(batch: list[int]) -> list[int]:
        raise OSError("the database is gone")

    async def ask_two() -> tuple[object, object]:
        with ThreadPoolExecutor(1) as executor:
            batcher: Batcher[int, int] = Batcher(run, executor)
            return await asyncio.gather(batcher.ask(1), batcher.ask(2), return_exceptions=True)

    assert [type(outcome) for outcome in asyncio.run(ask_two())] == [OSError, OSError]


def test_a_request_is_answered_on_its_own_event_loop():
    """A request asked from a second loop while the first loop's batch runs goes in the next
    batch, and is answered on its own loop (tests run each request in a loop of its own)."""
    running, asked = threading.Event(), threading.Event()

    def run(batch: list[int]) -> list[int]:
        running.set()
        asked.wait(timeout=10)
        return [n * 10 for n in batch]

    answers: dict[int, int] = {}
    started = time.monotonic()
    with ThreadPoolExecutor(1) as executor:
        batcher: Batcher[int, int] = Batcher(run, executor)

        def ask_in_a_loop_of_its_own(n: int) -> None:
            answers[n] = asyncio.run(asyncio.wait_for(batcher.ask(n), timeout=10))

        first = threading.Thread(target=ask_in_a_loop_of_its_own, args=(1,))
        first.start()
        assert running.wait(timeout=10)
        second = threading.Thread(target=ask_in_a_loop_of_its_own, args=(2,))
        second.start()
        while not batcher._pending:  # the second request waits for the next batch
            second.join(timeout=0.01)
        asked.set()
        first.join(timeout=20)
        second.join(timeout=20)
    assert answers == {1: 10, 2: 20}
    assert time.monotonic() - started < 3  # answered, not found by the loop's next wake-up


@pytest.mark.parametrize("outcomes", [[], [1, 2, 3]])
def test_a_run_that_answers_the_wrong_count_fails_the_batch(outcomes):
    async def ask_two() -> tuple[object, object]:
        with ThreadPoolExecutor(1) as executor:
            batcher: Batcher[int, int] = Batcher(lambda batch: outcomes, executor)
            return await asyncio.gather(batcher.ask(1), batcher.ask(2), return_exceptions=True)

    assert all(isinstance(outcome, RuntimeError) for outcome in asyncio.run(ask_two()))
