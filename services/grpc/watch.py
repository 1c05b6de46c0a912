"""Live tails of runs (WatchRun), bounded in number, in backlog and in what each message carries.

- One feed per watched run reads the events of the run and of its spend account once, however
  many watch it, and hands each message to every watcher's backlog. The projector wakes a feed
  only after a chunk that touched its run (Projector.originator_listeners): a write to another
  run wakes no watcher.
- Watchers are bounded per caller (principal and peer host) and in all; past either bound a watch
  is refused: RESOURCE_EXHAUSTED, reason TOO_MANY_WATCHERS.
- A watcher's backlog is bounded in messages and bytes. A watcher that passes either (it stopped
  reading while its run went on) is dropped rather than buffered: RESOURCE_EXHAUSTED, reason
  WATCHER_TOO_SLOW, with the position to watch again from.
- The first message carries the run's state without its spec (GetRunState has it); each later
  one carries its event and only the fields of the state that changed since the last state the
  stream sent, named by a FieldMask. A step batch carries its steps.

This module admits the watchers and wakes the feeds; services.grpc.feed holds a run's feed and a
watcher's backlog.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import functools
import weakref
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar
from uuid import UUID

import grpc

from ledger.domain.errors import Exhausted, Invalid
from ledger.domain.reasons import Reason
from services.grpc.feed import Feed, Message, Watcher, read_page
from services.runtime.edge import Edge
from services.runtime.followers import BACKLOG_BYTES_MAX, BACKLOG_MESSAGES_MAX, WATCHERS_MAX, WATCHERS_PER_CALLER_MAX
from services.runtime.logs import PRINCIPAL

__all__ = ["Watchers", "caller"]


T = TypeVar("T")


def caller(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    """Whom a watcher counts against: the call's principal on its peer's host."""
    host = (context.peer() or "unknown").rsplit(":", 1)[0]
    return f"{PRINCIPAL.get()}@{host}"


class Watchers:
    """Every live WatchRun of one server: the feeds, the bounds, and the projector's signal."""

    _of: weakref.WeakKeyDictionary[Edge, Watchers] = weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, edge: Edge) -> Watchers:
        """The watchers of the server whose edge this is (made on first use, on its loop)."""
        watchers = cls._of.get(edge)
        if watchers is None:
            watchers = cls._of[edge] = cls(edge)
        return watchers

    def __init__(self, edge: Edge) -> None:
        self.edge = edge
        self.loop = asyncio.get_running_loop()
        edge.followers["watchers"] = lambda: self.count
        self.watchers_max, self.per_caller_max = WATCHERS_MAX, WATCHERS_PER_CALLER_MAX
        self.backlog_messages_max, self.backlog_bytes_max = BACKLOG_MESSAGES_MAX, BACKLOG_BYTES_MAX
        self.feeds: dict[str, Feed] = {}
        self._by_id: dict[UUID, Feed] = {}
        self._watched: frozenset[UUID] = frozenset()  # Read by the projector's thread.
        self.count = 0
        self._per_caller: collections.Counter[str] = collections.Counter()
        # The feeds read on one thread of their own, one read at a time: a run's state is read
        # with its spec (megabytes, decoded each time), and memory that one thread frees is what
        # its next read reuses, where a pool would leave some with each of its threads.
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainledger-watch")
        edge.ledger.projector.originator_listeners.append(self._projected)
        # Held so that the task lives as long as the watchers do.
        self._closer = self.loop.create_task(self._close_with(edge), context=contextvars.Context())

    async def call(self, function: Callable[..., T], /, *args: Any) -> T:
        """Run a feed's synchronous ledger read on the feeds' thread."""
        return await self.loop.run_in_executor(self._thread, functools.partial(function, *args))

    def reads_of(self, run_id: str) -> int:
        """How many times the feed of `run_id` has read the log (0 when nobody watches it)."""
        feed = self.feeds.get(run_id)
        return feed.reads if feed is not None else 0

    async def watch(self, run_id: str, from_position: int, key: str) -> AsyncIterator[Message]:
        """The messages of one WatchRun. Raises Exhausted (TOO_MANY_WATCHERS,
        WATCHER_TOO_SLOW), NotFound (RUN_NOT_FOUND) and what reading the log raises."""
        if from_position < 0:
            raise Invalid("from_position must not be negative", reason=Reason.OUT_OF_RANGE, field="from_position")
        if self.edge.closed:
            return
        watcher = self._enter(key)
        feed = self.feeds.get(run_id) or self._feed(run_id)
        try:
            joined = await feed.join(watcher, from_position)
            if joined is None:
                return
            first, behind = joined
            yield first
            if behind is not None:
                async for message in self._catch_up(run_id, feed.originator_ids, *behind):
                    yield message
            while (queued := await watcher.next()) is not None:
                yield queued
        finally:
            feed.leave(watcher)
            self._leave(watcher)

    async def _catch_up(self, run_id: str, originator_ids: list[str], start: int, stop: int) -> AsyncIterator[Message]:
        """The run's events in [start, stop), read by the watcher itself: all of them are in the
        state it was sent first, so they carry no state."""
        while start < stop and not self.edge.closed:
            page = await self.edge.call(read_page, self.edge, run_id, originator_ids, start)
            if not page:
                return
            for position, event_type, steps in page:
                if position >= stop:
                    return
                yield Message(position=position, event_type=event_type, steps=steps)
            start = page[-1][0] + 1

    def _enter(self, key: str) -> Watcher:
        if self._per_caller[key] >= self.per_caller_max or self.count >= self.watchers_max:
            scope, limit = (
                ("caller", self.per_caller_max)
                if self._per_caller[key] >= self.per_caller_max
                else ("server", self.watchers_max)
            )
            raise Exhausted(
                f"too many watchers: {limit} per {scope}", reason=Reason.TOO_MANY_WATCHERS, scope=scope, limit=limit
            )
        self._per_caller[key] += 1
        self.count += 1
        return Watcher(key, self.backlog_messages_max, self.backlog_bytes_max)

    def _leave(self, watcher: Watcher) -> None:
        self.count -= 1
        self._per_caller[watcher.key] -= 1
        if not self._per_caller[watcher.key]:
            del self._per_caller[watcher.key]

    def _feed(self, run_id: str) -> Feed:
        feed = self.feeds[run_id] = Feed(self, run_id)
        for originator_id in feed.originator_ids:
            try:
                self._by_id[UUID(originator_id)] = feed
            except ValueError:  # No run has such an id: the feed's first state says so.
                pass
        self._watched = frozenset(self._by_id)
        return feed

    def forget(self, feed: Feed) -> None:
        if self.feeds.get(feed.run_id) is feed:
            del self.feeds[feed.run_id]
        for originator_id in [i for i, f in self._by_id.items() if f is feed]:
            del self._by_id[originator_id]
        self._watched = frozenset(self._by_id)

    def _projected(self, originator_ids: frozenset[UUID] | None) -> None:
        # Called in the projector's thread after each chunk: only chunks that touched a watched
        # run reach the loop.
        if originator_ids is not None and self._watched.isdisjoint(originator_ids):
            return
        try:
            self.loop.call_soon_threadsafe(self._wake, originator_ids)
        except RuntimeError:  # The loop is closed: nobody is watching any more.
            pass

    def _wake(self, originator_ids: frozenset[UUID] | None) -> None:
        feeds = (
            self.feeds.values()
            if originator_ids is None
            else {self._by_id[i] for i in originator_ids if i in self._by_id}
        )
        for feed in list(feeds):
            feed.changed.set()

    async def _close_with(self, edge: Edge) -> None:
        """End every watch when the server closes its edge (shutdown)."""
        while not edge.closed:
            await edge.progress().wait()
        try:
            edge.ledger.projector.originator_listeners.remove(self._projected)
        except ValueError:
            pass
        for feed in list(self.feeds.values()):
            feed.close()
        self._thread.shutdown(wait=False, cancel_futures=True)
        Watchers._of.pop(edge, None)
        edge.followers.pop("watchers", None)
