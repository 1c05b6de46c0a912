"""What every servicer shares: the ledger, a bounded pool of worker threads, deadlines,
and the projector's progress as an asyncio signal.

Ledger calls are synchronous (storage I/O, locks), so they run in a bounded pool of worker threads
(`Workers`): the event loop never blocks on storage and the thread count is bounded.
Waiting for a view to reach a position holds no thread: the projector calls a listener after each
chunk, which wakes asyncio waiters through loop.call_soon_threadsafe.

No client can starve the others: each client (a connection, by its peer address) gets at most
WORKER_THREADS_PER_CLIENT of the threads at once and STREAMS_PER_CLIENT_MAX request streams, and
the requests the server holds are bounded in bytes (ByteBudget): past the budget a request waits
briefly, then is refused as SERVER_BUSY instead of buffered.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar

import grpc

from ledger import Ledger
from ledger.domain.errors import Unavailable
from ledger.domain.limits import REQUEST_BYTES_IN_FLIGHT_MAX
from ledger.domain.reasons import Reason

__all__ = [
    "Edge",
    "ByteBudget",
    "CLIENT",
    "SEARCHES_AT_ONCE",
    "WORKER_THREADS",
    "WORKER_THREADS_PER_CLIENT",
    "STREAMS_PER_CLIENT_MAX",
    "BUSY_WAIT_S",
    "READ_TIMEOUT_DEFAULT_S",
    "READ_TIMEOUT_MAX_S",
]

T = TypeVar("T")
WORKER_THREADS = 32
# Writes take one lock in the ledger, but decoding and encoding a batch run beside it: four let
# one client's step stream keep its pace (bench/service.py: two cost it a fifth of its steps/s)
# and a Reserve start beside its batches, and leave the other clients most of the threads.
WORKER_THREADS_PER_CLIENT = 4
STREAMS_PER_CLIENT_MAX = 16
# Run searches (ListRuns with a where or an order_by, /api/runs?where=) running at once, over every
# client: the costliest query the language allows reads every run, so many clients asking for it
# would otherwise hold every thread and stall every write. A search past these waits with no thread.
SEARCHES_AT_ONCE = 4
# How long a request waits for room in the byte budget before it is refused as SERVER_BUSY.
BUSY_WAIT_S = 1.0
# The client a call comes from (its peer address, one per connection), set by the interceptor;
# empty for the server's own work (the reservation sweep), which takes no client's share.
CLIENT: ContextVar[str] = ContextVar("client", default="")
READ_TIMEOUT_DEFAULT_S = 5.0
READ_TIMEOUT_MAX_S = 30.0
# Answer UNAVAILABLE a little before the client's deadline, so the client sees our reason
# rather than DEADLINE_EXCEEDED.
DEADLINE_MARGIN_S = 0.05


def _busy(why: str, reason: Reason, **metadata: Any) -> Unavailable:
    # UNAVAILABLE, not RESOURCE_EXHAUSTED: the client resends the same request after a backoff
    # (its ids make that safe), where a RESOURCE_EXHAUSTED batch of steps would be dropped for good.
    return Unavailable(why, reason=reason, **metadata)


class ByteBudget:
    """The bytes of the requests the server holds at once. Requests get room in arrival order;
    one that waits longer than its wait is refused (Unavailable, reason SERVER_BUSY). Use it
    on one event loop."""

    def __init__(self, capacity_bytes: int) -> None:
        self.capacity_bytes = capacity_bytes
        self.used_bytes = 0
        self._waiting: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()

    async def acquire(self, size: int, wait_s: float) -> int:
        """Take `size` bytes (at most the whole budget), waiting up to `wait_s`; returns what was
        taken, for release."""
        size = min(size, self.capacity_bytes)
        if not self._waiting and self.used_bytes + size <= self.capacity_bytes:
            self.used_bytes += size
            return size
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (size, granted)
        self._waiting.append(entry)
        try:
            await asyncio.wait_for(asyncio.shield(granted), wait_s)
        except BaseException as error:
            if granted.done():  # Granted just as the wait ended.
                if isinstance(error, asyncio.TimeoutError):
                    return size
                self.release(size)
                raise
            granted.cancel()
            self._waiting.remove(entry)
            self._grant()  # The requests behind this one may fit now.
            if isinstance(error, asyncio.TimeoutError):
                raise _busy(
                    "the server is busy: too many request bytes in flight, try again",
                    Reason.SERVER_BUSY,
                    limit=self.capacity_bytes,
                ) from None
            raise
        return size

    @property
    def waiting(self) -> int:
        """How many requests wait for room."""
        return len(self._waiting)

    def release(self, size: int) -> None:
        self.used_bytes -= size
        self._grant()

    def _grant(self) -> None:
        while self._waiting and self.used_bytes + self._waiting[0][0] <= self.capacity_bytes:
            size, granted = self._waiting.popleft()
            self.used_bytes += size
            granted.set_result(None)


class _Call:
    """One call handed to a worker thread: its work, run in the caller's context, and what it
    gave; the thread wakes the caller's future on the event loop once the work has ended."""

    __slots__ = ("loop", "context", "work", "waiter", "ended", "result", "error")

    def __init__(self, loop: asyncio.AbstractEventLoop, work: Callable[[], Any]) -> None:
        self.loop, self.work = loop, work
        self.context = contextvars.copy_context()
        self.waiter: asyncio.Future[None] = loop.create_future()
        self.ended = False
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        """In the worker thread."""
        try:
            self.result = self.context.run(self.work)
        except BaseException as error:  # Handed to the caller, as a future would.
            self.error = error
        try:
            self.loop.call_soon_threadsafe(self._end)
        except RuntimeError:  # The loop is closed: nobody waits any more.
            pass

    def _end(self) -> None:
        """On the event loop."""
        self.ended = True
        if not self.waiter.done():
            self.waiter.set_result(None)


class Workers:
    """The worker threads that ledger calls run in: at most `threads` at once, the calls beyond
    them in arrival order. A call runs in a copy of the caller's context (its context variables:
    the principal, the request id), and its caller waits for it to end even when cancelled, so
    what a client holds (its share of the threads) is held while its call runs.

    A thread pool of the standard library, not anyio.to_thread with a CapacityLimiter: with 32
    clients calling at once, the event loop bounds the server, and anyio's per-call bookkeeping on
    it (its limiter, cancel scope and run variables) cost about 100 us of CPU per call against
    60 us for this (32 tasks x 300 calls, process time). The thread wakes the caller's own asyncio
    future (`_Call`) rather than a concurrent future chained to one (run_in_executor) and waited
    on with asyncio.wait: measured here, about 30 us of CPU a call instead of 50."""

    def __init__(self, threads: int) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="trainledger-worker")
        #: Calls handed to the pool and not yet ended (running, or waiting for a thread).
        self.busy = 0

    async def run(self, work: Callable[[], T]) -> T:
        call = _Call(asyncio.get_running_loop(), work)
        self._pool.submit(call.run)
        self.busy += 1
        cancelled = False
        try:
            while not call.ended:
                try:
                    await call.waiter
                except asyncio.CancelledError:
                    # The thread runs on: wait for it, then let the cancellation through.
                    cancelled = True
                    if not call.ended:
                        call.waiter = call.loop.create_future()
        finally:
            self.busy -= 1
        if cancelled:
            raise asyncio.CancelledError
        error, call.error = call.error, None
        if error is not None:
            try:
                raise error
            finally:
                del error  # No cycle through the traceback's frame.
        return call.result  # type: ignore[no-any-return]

    def close(self) -> None:
        """No more calls; those running finish in their threads."""
        self._pool.shutdown(wait=False)


class Edge:
    """The ledger as the servicers use it. Create and use it on the server's event loop."""

    def __init__(
        self,
        ledger: Ledger,
        *,
        worker_threads: int = WORKER_THREADS,
        worker_threads_per_client: int = WORKER_THREADS_PER_CLIENT,
        streams_per_client_max: int = STREAMS_PER_CLIENT_MAX,
        request_bytes_in_flight_max: int = REQUEST_BYTES_IN_FLIGHT_MAX,
    ) -> None:
        self.ledger = ledger
        self.workers = Workers(worker_threads)
        self.worker_threads_per_client = worker_threads_per_client
        self.streams_per_client_max = streams_per_client_max
        self.budget = ByteBudget(request_bytes_in_flight_max)
        self.loop = asyncio.get_running_loop()
        self.closed = False
        self._changed = asyncio.Event()
        # Per client: its share of the threads and how many calls use it; its open streams.
        self._shares: dict[str, tuple[asyncio.Semaphore, list[int]]] = {}
        self._streams: collections.Counter[str] = collections.Counter()
        self._searches = asyncio.Semaphore(SEARCHES_AT_ONCE)
        #: The clients' calls handed to the worker threads so far (the server's own work, the
        #: sweep, is not counted): each is a trip to a thread and back, the dearest step of a call.
        self.client_calls = 0
        #: Live followers by kind (WatchRun's watchers, the dashboard's run and runs streams): each
        #: kind's count, for the metrics, registered by the program that serves it.
        self.followers: dict[str, Callable[[], int]] = {}
        ledger.projector.listeners.append(self._projected)

    async def call(self, function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run a synchronous ledger call in a worker thread, within the calling client's share."""
        work = functools.partial(function, *args, **kwargs)
        client = CLIENT.get()
        if not client:
            return await self.workers.run(work)
        self.client_calls += 1
        shared = self._shares.get(client)
        if shared is None:
            shared = self._shares[client] = (asyncio.Semaphore(self.worker_threads_per_client), [0])
        share, users = shared
        users[0] += 1
        try:
            async with share:
                return await self.workers.run(work)
        finally:
            users[0] -= 1
            if not users[0]:
                del self._shares[client]

    async def search(self, function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """A run search as `call`, at most SEARCHES_AT_ONCE of them at once over every client."""
        async with self._searches:
            return await self.call(function, *args, **kwargs)

    @property
    def streams_open(self) -> int:
        """Streaming calls open now, over every client."""
        return sum(self._streams.values())

    @contextlib.contextmanager
    def stream(self, client: str) -> Iterator[None]:
        """Hold one of the client's request streams for the block. Raises Unavailable
        (TOO_MANY_STREAMS) when it has streams_per_client_max open already."""
        if self._streams[client] >= self.streams_per_client_max:
            raise _busy(
                f"this connection has {self.streams_per_client_max} streams open already",
                Reason.TOO_MANY_STREAMS,
                limit=self.streams_per_client_max,
            )
        self._streams[client] += 1
        try:
            yield
        finally:
            self._streams[client] -= 1
            if not self._streams[client]:
                del self._streams[client]

    @staticmethod
    def timeout_s(context: grpc.aio.ServicerContext[Any, Any]) -> float:
        """How long a read may wait for the views: the call's remaining deadline, capped."""
        remaining = context.time_remaining()
        if remaining is None:  # The client set no deadline.
            return READ_TIMEOUT_DEFAULT_S
        return max(0.0, min(remaining - DEADLINE_MARGIN_S, READ_TIMEOUT_MAX_S))

    async def caught_up(self, position: int, timeout_s: float) -> float:
        """Wait, without a thread, until every view reflects `position` or the timeout passes.
        Returns the time left, for the ledger read that follows (which then raises
        Unavailable(VIEW_NOT_CAUGHT_UP) itself if the position was not reached)."""
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
        except TimeoutError:
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
        """Wake every waiter for good (watchers end their streams) and stop listening. The worker
        threads stay for the calls still in flight (`Workers.close`, once the server has stopped)."""
        self.closed = True
        try:
            self.ledger.projector.listeners.remove(self._projected)
        except ValueError:
            pass
        self._notify()
