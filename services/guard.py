"""A stream that ends when its caller may no longer hold it open.

A call is authenticated once, when it starts, and a stream may stay open for hours: `guarded` hands
on a stream's items while it checks again, with `check`, at least every `interval_s`, both between
items and while none comes (a WatchRun of a quiet run, a RecordSteps whose client sends nothing, a
live feed of the dashboard). A check that raises ends the stream with its error
(services.auth.Gate.guard: a revoked or expired token is Unauthenticated). The items are made by a
task of their own, at most one ahead of the caller, so that waiting for the next one never delays
a check; a stream that ends, for any reason, cancels that task and waits for it, so the stream's
own cleanup (a watcher's slot, a read-ahead) has run before the error goes out.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["guarded"]

T = TypeVar("T")


async def _pump(items: AsyncIterator[T], handoff: asyncio.Queue[tuple[bool, Any]]) -> None:
    """Hand each item over, then (False, None) at the end or (False, error) on a failure."""
    try:
        async for item in items:
            await handoff.put((True, item))
        await handoff.put((False, None))
    except Exception as error:  # Raised again by the caller, in the call's own task.
        await handoff.put((False, error))
    finally:
        close = getattr(items, "aclose", None)
        if close is not None:
            await close()


async def guarded(items: AsyncIterator[T], check: Callable[[], Awaitable[None]], interval_s: float) -> AsyncIterator[T]:
    """`items`, while `check` (awaited at least every `interval_s`) does not raise; what it (or
    `items`) raises ends the stream."""
    loop = asyncio.get_running_loop()
    handoff: asyncio.Queue[tuple[bool, Any]] = asyncio.Queue(maxsize=1)
    making = asyncio.ensure_future(_pump(items, handoff))
    checked = loop.time()
    try:
        while True:
            wait_s = checked + interval_s - loop.time()
            if wait_s <= 0:
                await check()
                checked = loop.time()
                continue
            try:
                async with asyncio.timeout(wait_s):
                    more, item = await handoff.get()
            except TimeoutError:
                continue
            if not more:
                if item is not None:
                    raise item
                return
            yield item
    finally:
        making.cancel()
        await asyncio.wait([making])
