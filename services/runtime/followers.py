"""How many live followers a server keeps, and how far each may fall behind: WatchRun's watchers
(services.grpc.watch) and the dashboard's server-sent event streams (services.web.live) share
these bounds, each follower's bounded backlog (Follower) and the count per caller and in all
(Bounds)."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["Follower", "Bounds", "WATCHERS_MAX", "WATCHERS_PER_CALLER_MAX", "BACKLOG_MESSAGES_MAX", "BACKLOG_BYTES_MAX"]

T = TypeVar("T")  # What a follower is handed: a message, a chunk.
F = TypeVar("F", bound="Follower[Any]")

WATCHERS_MAX = 1_024
WATCHERS_PER_CALLER_MAX = 128
# How far one watcher may fall behind its run before it is dropped. Messages are shared by the
# watchers of a run, so a backlog holds references, and the bytes bound what they keep alive.
BACKLOG_MESSAGES_MAX = 64
BACKLOG_BYTES_MAX = 2 * 1024 * 1024


class Follower(Generic[T]):
    """One follower: its caller, the first position its feed hands it, the last state it was sent,
    and its bounded backlog of (item, size, position)."""

    def __init__(self, key: str, messages_max: int, bytes_max: int) -> None:
        self.key, self.messages_max, self.bytes_max = key, messages_max, bytes_max
        self.start = 0
        self.scope = ""  # The account a scoped token's follower is kept to ("": none).
        self.baseline: Any = None
        self.backlog: collections.deque[tuple[T, int, int]] = collections.deque()
        self.backlog_bytes = 0
        self.ended = False
        self.error: BaseException | None = None
        self.ready = asyncio.Event()

    def put(self, item: T, size: int, position: int) -> None:
        if self.ended:
            return
        self.backlog.append((item, size, position))
        self.backlog_bytes += size
        if len(self.backlog) > self.messages_max or self.backlog_bytes > self.bytes_max:
            self.too_slow(self.backlog[0][2])
        self.ready.set()

    def too_slow(self, resume: int) -> None:
        """End a follower that fell behind; `resume` is the position it can follow again from."""
        raise NotImplementedError

    def end(self, error: BaseException | None = None) -> None:
        """End the stream: at once, without what the backlog holds, when `error` is given."""
        if error is not None:
            self.backlog.clear()
            self.backlog_bytes = 0
            self.error = error
        self.ended = True
        self.ready.set()

    async def next(self, timeout_s: float | None = None) -> T | None:
        """The next item; None once the stream has ended. Raises the error it was ended with, and
        TimeoutError when nothing came within `timeout_s`."""
        while True:
            if self.backlog:
                item, size, _ = self.backlog.popleft()
                self.backlog_bytes -= size
                return item
            if self.error is not None:
                raise self.error
            if self.ended:
                return None
            self.ready.clear()
            await asyncio.wait_for(self.ready.wait(), timeout_s)


class Bounds(Generic[F]):
    """Followers per caller and in all, and how far each may fall behind."""

    def __init__(
        self,
        follower: Callable[[str, int, int], F],
        refusal: Callable[[str, int], Exception],
        count_max: int = WATCHERS_MAX,
        per_caller_max: int = WATCHERS_PER_CALLER_MAX,
    ) -> None:
        self.follower, self.refusal = follower, refusal
        self.count = 0
        self.per_caller: collections.Counter[str] = collections.Counter()
        self.max, self.per_caller_max = count_max, per_caller_max
        self.messages_max, self.bytes_max = BACKLOG_MESSAGES_MAX, BACKLOG_BYTES_MAX

    def check(self, key: str) -> None:
        """Raises the refusal (TOO_MANY_WATCHERS) when `key` may not follow one more stream."""
        if self.per_caller[key] >= self.per_caller_max or self.count >= self.max:
            scope, limit = (
                ("caller", self.per_caller_max) if self.per_caller[key] >= self.per_caller_max else ("server", self.max)
            )
            raise self.refusal(scope, limit)

    def enter(self, key: str) -> F:
        self.check(key)
        self.per_caller[key] += 1
        self.count += 1
        return self.follower(key, self.messages_max, self.bytes_max)

    def leave(self, follower: Follower[Any]) -> None:
        self.count -= 1
        self.per_caller[follower.key] -= 1
        if not self.per_caller[follower.key]:
            del self.per_caller[follower.key]
