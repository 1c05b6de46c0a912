"""What every servicer shares: the ledger, worker threads under one bounded limiter, deadlines,
and the projector's progress as an asyncio signal.

Ledger calls are synchronous (storage I/O, locks), so they run in worker threads under one
anyio.CapacityLimiter: the event loop never blocks on storage and the thread count is bounded.
Waiting for a view to reach a position holds no thread: the projector calls a listener after each
chunk, which wakes asyncio waiters through loop.call_soon_threadsafe.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import grpc

from ledger import Ledger

__all__ = ["Edge", "WORKER_THREADS", "READ_TIMEOUT_DEFAULT_S", "READ_TIMEOUT_MAX_S"]

T = TypeVar("T")
WORKER_THREADS = 32
READ_TIMEOUT_DEFAULT_S = 5.0
READ_TIMEOUT_MAX_S = 30.0
# Answer UNAVAILABLE a little before the client's deadline, so the client sees our reason
# rather than DEADLINE_EXCEEDED.
DEADLINE_MARGIN_S = 0.05


class Edge:
    """The ledger as the servicers use it. Create and use it on the server's event loop."""

    def __init__(self, ledger: Ledger, *, worker_threads: int = WORKER_THREADS) -> None:
        self.ledger = ledger
        self.limiter = anyio.CapacityLimiter(worker_threads)
        self.loop = asyncio.get_running_loop()
        self.closed = False
        self._changed = asyncio.Event()
        ledger.projector.listeners.append(self._projected)

    async def call(self, function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run a synchronous ledger call in a worker thread."""
        return await anyio.to_thread.run_sync(functools.partial(function, *args, **kwargs), limiter=self.limiter)

    @staticmethod
    def timeout_s(context: grpc.aio.ServicerContext) -> float:
        """How long a read may wait for the views: the call's remaining deadline, capped."""
        remaining = context.time_remaining()
        if remaining is None:  # The client set no deadline.
            return READ_TIMEOUT_DEFAULT_S
        return max(0.0, min(remaining - DEADLINE_MARGIN_S, READ_TIMEOUT_MAX_S))

    async def caught_up(self, position: int, timeout_s: float) -> float:
        """Wait, without a thread, until every view reflects `position` or the timeout passes.
        Returns the time left, for the ledger read that follows (which then raises
        UnavailableError(VIEW_NOT_CAUGHT_UP) itself if the position was not reached)."""
        projector = self.ledger.projector
        if position <= projector.position:
            return timeout_s
        deadline = self.loop.time() + timeout_s
        projector.wake()  # Writers in other processes are only noticed by a poll otherwise.
        while projector.position < position and not self.closed and projector.failure is None:
            left = deadline - self.loop.time()
            if left <= 0:
                return 0.0
            await self.wait(self.progress(), left)
        return max(0.0, deadline - self.loop.time())

    def progress(self) -> asyncio.Event:
        """An event set the next time the projector has projected more of the log (or the edge
        closes). Take it before looking at the log, then wait on it: no wake-up is lost."""
        return self._changed

    @staticmethod
    async def wait(event: asyncio.Event, timeout_s: float | None = None) -> None:
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
        except asyncio.TimeoutError:
            pass

    def _projected(self, position: int) -> None:
        # Called in the projector's thread after each chunk.
        try:
            self.loop.call_soon_threadsafe(self._notify)
        except RuntimeError:  # The loop is closed: nobody is waiting any more.
            pass

    def _notify(self) -> None:
        event, self._changed = self._changed, asyncio.Event()
        event.set()

    def close(self) -> None:
        """Wake every waiter for good (watchers end their streams) and stop listening."""
        self.closed = True
        try:
            self.ledger.projector.listeners.remove(self._projected)
        except ValueError:
            pass
        self._notify()
