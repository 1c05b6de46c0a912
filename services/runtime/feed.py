"""One feed per followed run, behind two encoders: WatchRun's (services.grpc.watch: runs_pb2
messages) and the dashboard's server-sent events (services.web.live: SSE chunks).

- A run's feed (RunFeed) reads the events of the run and of its spend account once, however many
  follow it, and hands each item its encoder makes to every follower's backlog. The projector
  wakes a feed only after a chunk that touched its run (Projector.originator_listeners).
- Joiners are admitted together with one first state, reflecting everything recorded before they
  came and all the feed has handed out; what lies before the feed's position a follower reads
  itself (Feeds.catch_up), the runs opened from the run's checkpoints among it.
- Followers are bounded per caller (principal and peer host) and in all (Bounds: TOO_MANY_WATCHERS);
  a follower's backlog is bounded in items and bytes, and one that passes either is dropped
  (Follower.too_slow: WATCHER_TOO_SLOW with the position to resume from).
- A run opened from the run's checkpoint (CHILD_OPENED, read from the lineage view: lineage.touched
  wakes the feed) changes its children; a scoped follower is handed it only within its scope.
- Every feed ends when the server closes its edge (shutdown); Edge.followers counts the followers.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Generic, TypeVar
from uuid import UUID

from ledger.domain.base import ledger_id
from ledger.domain.errors import LedgerError
from services.runtime.edge import READ_TIMEOUT_MAX_S, Edge
from services.runtime.followers import Bounds, Follower

__all__ = [
    "Follower",
    "Bounds",
    "Encoder",
    "RunFeed",
    "Feeds",
    "Entry",
    "close_with",
    "is_change",
    "read_events",
    "FEED_PAGE",
    "FEED_PAGE_BYTES",
    "CHILD_OPENED",
]

T = TypeVar("T")  # What a follower is handed: a message, a chunk.
S = TypeVar("S")  # A run's state as the encoder holds it.
R = TypeVar("R")
Visible = dict[int, frozenset[str]]  # The scopes that see each child opened, by its position.

# One read of a run's events: at most this many, and this many stored bytes (one larger event
# is read alone).
FEED_PAGE = 256
FEED_PAGE_BYTES = 1024 * 1024

Entry = tuple[int, str, Any]  # (position, event type, what the encoder read of the event)

CHILD_OPENED = "Run.ChildOpened"  # The entry of a run opened from the feed's run's checkpoint.


def read_events(edge: Edge, originator_ids: list[str], position: int) -> list[dict[str, Any]]:
    """The stored events of a run and of its account from `position`, a page bounded in count and
    bytes; called in a thread."""
    events: list[dict[str, Any]] = edge.ledger.read_events(
        from_position=position, limit=FEED_PAGE, originator_ids=originator_ids, bytes_max=FEED_PAGE_BYTES
    )
    return events


def is_change(event_type: str) -> bool:
    """Whether an event changes the run's state (all but step batches do)."""
    return not event_type.endswith("StepsRecorded")


class Encoder(Generic[T, S]):
    """What a feed hands out: how it reads a page and a state, the first item, where a joiner
    starts, the items of a page, and how a refusal or a failure ends followers."""

    task_prefix = "feed"

    def read_page(self, edge: Edge, run_id: str, originator_ids: list[str], position: int) -> list[Entry]:
        """A page of the run's events as entries; called in a thread."""
        raise NotImplementedError

    def state(self, state: Any) -> S:
        """The run's state (a models.RunState) as the encoder holds it; called in a thread."""
        raise NotImplementedError

    def position_of(self, state: S) -> int:
        raise NotImplementedError

    def first(self, position: int, state: S) -> T:
        raise NotImplementedError

    def place(self, asked: int, state_position: int, feed_position: int) -> tuple[int, tuple[int, int] | None]:
        """A joiner's first position handed out, and the positions [from, to) it reads itself."""
        raise NotImplementedError

    async def hand_out(self, feed: RunFeed[T, S], page: list[Entry], state: S | None) -> None:
        raise NotImplementedError

    def child_opened(self, run_id: str, position: int, child_run_id: str) -> Entry:
        """The entry for a run opened from one of `run_id`'s checkpoints: a change of the run."""
        return (position, CHILD_OPENED, None)

    def missed(self, entry: Entry) -> T | None:
        """What a follower reading events itself is sent for one (None: nothing)."""
        raise NotImplementedError

    def refuse(self, follower: Follower[T], joined: asyncio.Future[Any], error: LedgerError) -> None:
        """A joiner whose first state could not be read (no such run)."""
        raise NotImplementedError

    def failed(self, feed: RunFeed[T, S], error: Exception) -> None:
        """The feed could not read (storage, projection): end its followers."""
        raise NotImplementedError


class RunFeed(Generic[T, S]):
    """The events of one run and of its spend account, read once for all of its followers."""

    def __init__(self, feeds: Feeds[T, S], run_id: str) -> None:
        self.feeds, self.encoder, self.edge, self.run_id = feeds, feeds.encoder, feeds.edge, run_id
        self.originator_ids = [run_id, str(ledger_id("account", run_id))]
        self.position = 0  # Every event of the run before it has been handed out.
        self.followers: set[Follower[T]] = set()
        self.joining: list[tuple[Follower[T], int, asyncio.Future[Any]]] = []
        self.changed = asyncio.Event()
        self.reads = 0
        self.visible: Visible = {}
        # The feed works for every follower of the run: none of their shares of the worker threads.
        self.task = asyncio.get_running_loop().create_task(
            self._run(), name=f"{self.encoder.task_prefix}-{run_id}", context=contextvars.Context()
        )

    async def join(self, follower: Follower[T], asked: int) -> tuple[T, tuple[int, int] | None] | None:
        """The follower's first item and the positions [from, to) it must read itself before what
        the feed hands it; None when the server is closing."""
        joined: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.joining.append((follower, asked, joined))
        self.changed.set()
        return await joined  # type: ignore[no-any-return]

    def leave(self, follower: Follower[T]) -> None:
        self.followers.discard(follower)
        self.joining = [entry for entry in self.joining if entry[0] is not follower]
        if not self.followers and not self.joining:
            self.close()

    def close(self, error: BaseException | None = None) -> None:
        self.feeds.forget(self)
        self.task.cancel()
        for follower in self.followers:
            follower.end(error)
        for _, _, joined in self.joining:
            if joined.done():
                continue
            if error is None:
                joined.set_result(None)
            else:
                joined.set_exception(error)
        self.followers.clear()
        self.joining.clear()

    def push(self, position: int, item: T, size: int) -> None:
        """Hand one item to every follower it is for."""
        for follower in self.followers:
            if position >= follower.start and self.sees(follower, position):
                follower.put(item, size, position)

    def sees(self, follower: Follower[T], position: int) -> bool:
        """Whether `follower` may be handed the entry at `position`: a child opened there only
        when it lies under the follower's scope (an unscoped follower sees every one)."""
        shown = self.visible.get(position)
        return shown is None or not follower.scope or follower.scope in shown

    async def _run(self) -> None:
        try:
            while self.followers or self.joining:
                self.changed.clear()
                page = await self._read() if self.followers else []
                if page:
                    await self._hand_out(page)
                if self.joining:
                    await self._admit()
                elif not page:
                    await self.changed.wait()
        except asyncio.CancelledError:
            raise
        except Exception as error:  # Storage, projection: the followers end with it.
            self.encoder.failed(self, error)
        else:
            self.close()

    async def _read(self) -> list[Entry]:
        self.reads += 1
        scopes = frozenset(follower.scope for follower in self.followers if follower.scope)
        page, self.visible = await self.feeds.call(self._read_page, self.position, scopes)
        return page

    def _read_page(self, position: int, scopes: frozenset[str], stop: int = 0) -> tuple[list[Entry], Visible]:
        """The run's events and the runs opened from it, from `position` up to where the lineage
        view has reached (the run's page; before `stop`), which `scopes` see each child; in a thread."""
        ledger = self.edge.ledger
        opened, reached = ledger.children_opened(self.run_id, position, FEED_PAGE)
        reached = min(reached, stop - 1) if stop else reached
        events = self.encoder.read_page(self.edge, self.run_id, self.originator_ids, position)
        end = min(reached, events[-1][0]) if events else reached
        end = min(end, opened[-1][0]) if len(opened) == FEED_PAGE else end  # Unlisted ones come next.
        page = [entry for entry in events if entry[0] <= end]
        visible: Visible = {}
        for at, child in opened:
            if at <= end:
                page.append(self.encoder.child_opened(self.run_id, at, child))
                visible[at] = frozenset(scope for scope in scopes if ledger.run_within(child, scope))
        return sorted(page, key=lambda entry: entry[0]), visible

    async def _state(self, min_position: int) -> S:
        timeout_s = await self.edge.caught_up(min_position, READ_TIMEOUT_MAX_S)
        return await self.feeds.call(self._read_state, min_position, timeout_s)

    def _read_state(self, min_position: int, timeout_s: float) -> S:
        state = self.edge.ledger.run_state(self.run_id, min_position=min_position, timeout_s=timeout_s)
        return self.encoder.state(state)

    async def _admit(self) -> None:
        """Let in the followers waiting: one state for all of them; the feed hands each the events
        after that state (or from where it asked; what lies before the feed's position it reads
        itself)."""
        present = {id(follower) for follower, _, _ in self.joining}
        try:
            head = await self.feeds.call(self.edge.ledger.head)
            state = await self._state(max(head, self.position - 1))
            error = None
        except LedgerError as refusal:  # No such run: those waiting are refused, the others go on.
            error = refusal
        # Those that came during the reads wait for the next round; those that left are gone.
        waiting = [entry for entry in self.joining if id(entry[0]) in present]
        self.joining = [entry for entry in self.joining if id(entry[0]) not in present]
        # A future already done was cancelled with its call, which is about to leave.
        waiting = [entry for entry in waiting if not entry[2].done()]
        if error is not None:
            for follower, _, joined in waiting:
                self.encoder.refuse(follower, joined, error)
            return
        state_position = self.encoder.position_of(state)
        if not self.followers:
            self.position = max(self.position, state_position + 1)
        first = self.encoder.first(state_position, state)
        for follower, asked, joined in waiting:
            follower.baseline = state
            follower.start, behind = self.encoder.place(asked, state_position, self.position)
            self.followers.add(follower)
            joined.set_result((first, behind))

    async def _hand_out(self, page: list[Entry]) -> None:
        changes = [position for position, event_type, _ in page if is_change(event_type)]
        state = await self._state(changes[-1]) if changes else None
        await self.encoder.hand_out(self, page, state)
        self.position = page[-1][0] + 1
        for follower in [f for f in self.followers if f.ended]:
            self.followers.discard(follower)


class Feeds(Generic[T, S]):
    """Every run followed through one encoder on one server: the feeds, the bounds, and the
    projector's signal. `metric` names the followers in Edge.followers; with `own_thread` the
    feeds read on one thread of their own, else on the edge's workers."""

    _of: weakref.WeakKeyDictionary[Edge, Any]

    @classmethod
    def of(cls: type[R], edge: Edge) -> R:
        """The feeds of the server whose edge this is (made on first use, on its loop)."""
        found = cls._of.get(edge)  # type: ignore[attr-defined]
        if found is None:
            found = cls._of[edge] = cls(edge)  # type: ignore[attr-defined, call-arg]
        return found  # type: ignore[no-any-return]

    def __init__(
        self, edge: Edge, encoder: Encoder[T, S], bounds: Bounds[Any], *, metric: str, own_thread: bool = False
    ) -> None:
        self.edge, self.encoder, self.bounds, self.metric = edge, encoder, bounds, metric
        self.loop = asyncio.get_running_loop()
        edge.followers[metric] = lambda: self.bounds.count
        self.feeds: dict[str, RunFeed[T, S]] = {}
        self._by_id: dict[UUID, RunFeed[T, S]] = {}
        self._watched: frozenset[UUID] = frozenset()  # Read by the projector's thread.
        # A run's state is read with its spec (megabytes, decoded each time), and memory that one
        # thread frees is what its next read reuses, where a pool would leave some with each thread.
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainledger-watch") if own_thread else None
        edge.ledger.projector.originator_listeners.append(self._projected)
        # Held so that the task lives as long as the feeds do.
        self._closer = self.loop.create_task(self._close_with(), context=contextvars.Context())

    async def call(self, function: Callable[..., R], /, *args: Any) -> R:
        """Run a feed's synchronous ledger read on the feeds' thread (or the edge's workers)."""
        if self._thread is None:
            return await self.edge.call(function, *args)
        return await self.loop.run_in_executor(self._thread, functools.partial(function, *args))

    def reads_of(self, run_id: str) -> int:
        """How many times the feed of `run_id` has read the log (0 when nobody follows it)."""
        feed = self.feeds.get(run_id)
        return feed.reads if feed is not None else 0

    async def stream(
        self, follower: Follower[T], run_id: str, asked: int, timeout_s: float | None = None
    ) -> AsyncGenerator[T, None]:
        """What one follower (entered in the bounds) is handed until the server closes, it falls
        behind or the caller stops iterating (Follower.next: `timeout_s`)."""
        feed = self.feeds.get(run_id) or self._feed(run_id)
        try:
            joined = await feed.join(follower, asked)
            if joined is None:
                return
            first, behind = joined
            yield first
            if behind is not None:
                async for missed in self.catch_up(feed, follower.scope, *behind):
                    yield missed
            while (item := await follower.next(timeout_s)) is not None:
                yield item
        finally:
            feed.leave(follower)
            self.bounds.leave(follower)

    async def catch_up(self, feed: RunFeed[T, S], scope: str, start: int, stop: int) -> AsyncIterator[T]:
        """What the run's events and the runs opened from it (under `scope`) in [start, stop) make,
        read by the follower itself: all of them are in the state it was sent first."""
        while start < stop and not self.edge.closed:
            page, visible = await self.edge.call(feed._read_page, start, frozenset({scope} - {""}), stop)
            if not page:
                return
            for entry in page:
                if entry[0] >= stop:
                    return
                if scope and scope not in visible.get(entry[0], (scope,)):
                    continue
                item = self.encoder.missed(entry)
                if item is not None:
                    yield item
            start = page[-1][0] + 1

    def _feed(self, run_id: str) -> RunFeed[T, S]:
        feed = self.feeds[run_id] = RunFeed(self, run_id)
        for originator_id in feed.originator_ids:
            with contextlib.suppress(ValueError):  # No run has such an id: the first state says so.
                self._by_id[UUID(originator_id)] = feed
        self._watched = frozenset(self._by_id)
        return feed

    def forget(self, feed: RunFeed[T, S]) -> None:
        if self.feeds.get(feed.run_id) is feed:
            del self.feeds[feed.run_id]
        for originator_id in [i for i, f in self._by_id.items() if f is feed]:
            del self._by_id[originator_id]
        self._watched = frozenset(self._by_id)

    def _projected(self, originator_ids: frozenset[UUID] | None) -> None:
        # Called in the projector's thread after each chunk: only chunks that touched a followed
        # run reach the loop.
        if originator_ids is not None and self._watched.isdisjoint(originator_ids):
            return
        with contextlib.suppress(RuntimeError):  # The loop is closed: nobody follows any more.
            self.loop.call_soon_threadsafe(self._wake, originator_ids)

    def _wake(self, originator_ids: frozenset[UUID] | None) -> None:
        feeds = (
            self.feeds.values()
            if originator_ids is None
            else {self._by_id[i] for i in originator_ids if i in self._by_id}
        )
        for feed in list(feeds):
            feed.changed.set()

    async def _close_with(self) -> None:
        """End every feed when the server closes its edge (shutdown)."""
        edge = self.edge
        while not edge.closed:
            await edge.progress().wait()
        with contextlib.suppress(ValueError):
            edge.ledger.projector.originator_listeners.remove(self._projected)
        for feed in list(self.feeds.values()):
            feed.close()
        if self._thread is not None:
            self._thread.shutdown(wait=False, cancel_futures=True)
        type(self)._of.pop(edge, None)
        edge.followers.pop(self.metric, None)


async def close_with(edge: Edge, close: Callable[[], None]) -> None:
    """Call `close` when the server closes its edge (shutdown)."""
    while not edge.closed:
        await edge.progress().wait()
    close()
