"""The worker pool ledger calls run in (services.runtime.edge.Workers): bounded, in the caller's context,
and a cancelled caller still waits for its thread to end before the cancellation goes through."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from pathlib import Path

import pytest

from ledger import Ledger
from services.runtime.edge import Edge, Workers

WHO: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


def test_a_call_sees_the_callers_context_and_its_answer_or_error_comes_back() -> None:
    async def main() -> None:
        workers = Workers(2)
        try:
            WHO.set("alice")
            who, thread = await workers.run(lambda: (WHO.get(), threading.current_thread().name))
            assert who == "alice" and thread.startswith("trainledger-worker")

            def fails() -> None:
                raise KeyError("k")

            with pytest.raises(KeyError):
                await workers.run(fails)
            assert workers.busy == 0
        finally:
            workers.close()

    asyncio.run(main())


def test_no_more_threads_than_the_bound_run_at_once() -> None:
    running, most = [0], [0]
    lock = threading.Lock()

    def work() -> None:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1

    async def main() -> None:
        workers = Workers(3)
        try:
            await asyncio.gather(*(workers.run(work) for _ in range(12)))
        finally:
            workers.close()

    asyncio.run(main())
    assert most[0] == 3


def test_a_cancelled_caller_waits_for_its_thread_then_is_cancelled() -> None:
    release = threading.Event()
    ended: list[float] = []

    def slow() -> str:
        release.wait(10)
        ended.append(time.monotonic())
        return "done"

    async def main() -> None:
        workers = Workers(1)
        try:
            call = asyncio.ensure_future(workers.run(slow))
            await asyncio.sleep(0.05)
            call.cancel()
            await asyncio.sleep(0.05)
            assert not call.done()  # Still holding its thread.
            assert workers.busy == 1
            asyncio.get_running_loop().call_later(0.05, release.set)
            with pytest.raises(asyncio.CancelledError):
                await call
            assert ended  # The thread's work ended before the cancellation went through.
            assert workers.busy == 0
        finally:
            workers.close()

    asyncio.run(main())


def test_calls_made_after_the_edge_closes_still_run_until_the_server_has_stopped(tmp_path: Path) -> None:
    # A server that shuts down closes its edge first and then lets the calls in flight finish
    # within the grace: a call they make meanwhile (a stream's next batch) must still run.
    ledger = Ledger.open(str(tmp_path / "ledger.db"))

    async def main() -> None:
        edge = Edge(ledger)
        edge.close()
        assert await edge.call(ledger.head) == 0
        edge.workers.close()

    try:
        asyncio.run(main())
    finally:
        ledger.close()


def test_searches_hold_at_most_their_share_of_the_threads(tmp_path: Path) -> None:
    # Many clients each asking for the costliest search the language allows must not take every
    # worker thread: past SEARCHES_AT_ONCE a search waits without a thread, and another client's
    # write still gets one while every search is held.
    from services.runtime.edge import CLIENT, SEARCHES_AT_ONCE

    ledger = Ledger.open(str(tmp_path / "ledger.db"))
    release = threading.Event()
    running: list[int] = []
    most = [0]
    lock = threading.Lock()

    def search() -> None:
        with lock:
            running.append(1)
            most[0] = max(most[0], len(running))
        release.wait(30)
        with lock:
            running.pop()

    async def main() -> None:
        edge = Edge(ledger)

        async def from_client(number: int) -> None:
            CLIENT.set(f"ipv4:127.0.0.1:{40_000 + number}")
            await edge.search(search)

        searches = [asyncio.create_task(from_client(n)) for n in range(4 * SEARCHES_AT_ONCE + 8)]
        while len(running) < SEARCHES_AT_ONCE:
            await asyncio.sleep(0.01)
        CLIENT.set("ipv4:127.0.0.1:39999")
        assert await edge.call(ledger.head) == 0  # A thread is free for another client's call.
        assert len(running) == SEARCHES_AT_ONCE
        release.set()
        await asyncio.gather(*searches)
        edge.workers.close()

    try:
        asyncio.run(main())
    finally:
        ledger.close()
    assert most[0] == SEARCHES_AT_ONCE
