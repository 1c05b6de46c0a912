"""What a RecordSteps stream reads ahead of the batches being recorded (ReadAhead), so that the
batches a client streams during one commit go in the next one."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

__all__ = ["READ_AHEAD_BATCHES", "READ_AHEAD_BYTES", "ReadAhead"]

# What one RecordSteps stream reads ahead of the batches being recorded (ReadAhead): the batches a
# client streams during one commit, so that they go in the next one (bench/service.py: 16 as good
# as 32, better than 8), in little memory (a stream holds twice this at most: the batches read
# ahead and those being recorded; the server's byte budget counts them too, until answered).
READ_AHEAD_BATCHES = 16
READ_AHEAD_BYTES = 4 * 1024 * 1024


class ReadAhead:
    """The requests of a stream that its client has already sent, read by a task of their own
    while the servicer records those before them. It holds at most READ_AHEAD_BATCHES requests
    and READ_AHEAD_BYTES bytes of them (always at least one), then reads no more until they are
    taken; `take` takes what is there and waits only when nothing is. A request the stream
    failed to give (malformed, outside the caller's scope, past the byte budget) is that
    failure, raised by `take` once the requests before it are taken."""

    def __init__(
        self,
        requests: AsyncIterator[Any],
        *,
        batches: int = READ_AHEAD_BATCHES,
        size_bytes: int = READ_AHEAD_BYTES,
    ) -> None:
        self.batches, self.size_bytes = batches, size_bytes
        self._held: list[Any] = []
        self._bytes = 0
        self._ended = False
        self._error: Exception | None = None
        self._changed = asyncio.Event()
        self._task = asyncio.ensure_future(self._read(requests))

    async def _read(self, requests: AsyncIterator[Any]) -> None:
        try:
            async for request in requests:
                self._held.append(request)
                self._bytes += request.ByteSize()
                self._signal()
                while len(self._held) >= self.batches or self._bytes >= self.size_bytes:
                    await self._changed.wait()
        except Exception as error:
            self._error = error
        finally:
            self._ended = True
            self._signal()

    def _signal(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def take(self) -> list[Any]:
        """The requests read so far, in order, once there is one; [] when the stream has ended."""
        while not self._held and not self._ended:
            await self._changed.wait()
        if self._held:
            taken, self._held, self._bytes = self._held, [], 0
            self._signal()
            return taken
        if self._error is not None:
            raise self._error
        return []

    async def close(self) -> None:
        """Stop reading (the call is over)."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
