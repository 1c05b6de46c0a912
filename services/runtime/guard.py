"""A stream that ends when its caller may no longer hold it open.

A call is authenticated once, when it starts, and a stream may stay open for hours: `guarded` hands
on a stream's items while a watchdog task checks again, with `check`, every `interval_s`, also
while the stream waits for its next item (a WatchRun of a quiet run, a RecordSteps whose client
sends nothing, a live feed of the dashboard). A check that raises ends the stream with its error
(services.runtime.auth.Gate.guard: a revoked or expired token is Unauthenticated): when the stream is
waiting for its next item, the watchdog cancels that wait (the cancellation lands inside the
stream's own code, whose cleanup runs, and the error replaces it); when an item is on its way to
the caller, the error is raised before the next one is asked for. The items pass straight
through, with no task or queue between the stream and its caller: the check costs nothing per
item.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

__all__ = ["guarded"]

T = TypeVar("T")


class _Watchdog:
    """Checks every interval_s; on a refusal, keeps it and cancels `task` if it is waiting for an
    item (`waiting`), where the cancellation is the stream's to turn into the refusal."""

    def __init__(self, task: asyncio.Task[object], check: Callable[[], Awaitable[None]], interval_s: float) -> None:
        self.task, self.check, self.interval_s = task, check, interval_s
        self.refusal: Exception | None = None
        self.waiting = False
        self.cancelled = False
        self.runner = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while self.refusal is None:
            await asyncio.sleep(self.interval_s)
            try:
                await self.check()
            except Exception as error:
                self.refusal = error
                if self.waiting:
                    self.cancelled = True
                    self.task.cancel()

    def refused(self) -> Exception | None:
        """The refusal, once the check has refused; a cancellation of the task's that the stream
        swallowed is taken back (the refusal ends the stream in its place)."""
        if self.refusal is not None and self.cancelled:
            self.cancelled = False
            self.task.uncancel()
        return self.refusal

    async def stop(self) -> None:
        self.runner.cancel()
        await asyncio.wait([self.runner])


async def guarded(items: AsyncIterator[T], check: Callable[[], Awaitable[None]], interval_s: float) -> AsyncIterator[T]:
    """`items`, while `check` (awaited every `interval_s`) does not raise; what it raises ends the
    stream (after the stream's own cleanup), as does what `items` raises."""
    task = asyncio.current_task()
    assert task is not None  # An async generator runs in a task.
    watchdog = _Watchdog(task, check, interval_s)
    iterator = aiter(items)
    try:
        while True:
            if (refusal := watchdog.refused()) is not None:
                raise refusal
            watchdog.waiting = True
            try:
                item = await anext(iterator)
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                if not watchdog.cancelled or (refusal := watchdog.refused()) is None:
                    raise
                raise refusal from None
            finally:
                watchdog.waiting = False
            yield item
    finally:
        watchdog.refused()  # Takes back a cancellation the stream swallowed before it ended.
        await watchdog.stop()
        close = getattr(iterator, "aclose", None)
        if close is not None:
            await close()
