"""The feeds of WatchRun: one per watched run, reading the events of the run and of its spend account
once for all of its watchers, and each watcher's bounded backlog that a feed fills (a watcher that
falls behind is ended with WATCHER_TOO_SLOW). services.grpc.watch admits the watchers, bounds their
number and wakes the feeds; this module is what runs for each run and each watcher."""

from __future__ import annotations

import asyncio
import collections
import contextvars
from typing import TYPE_CHECKING, Any

from ledger.domain.base import ledger_id
from ledger.domain.errors import Exhausted, LedgerError
from ledger.domain.reasons import Reason
from services.grpc import codec
from services.grpc.codec.changes import state_message, state_without_spec
from services.runtime.edge import READ_TIMEOUT_MAX_S, Edge
from trainledger.v1 import runs_pb2

if TYPE_CHECKING:
    from services.grpc.watch import Watchers

__all__ = ["Feed", "Watcher", "Message", "FEED_PAGE", "FEED_PAGE_BYTES", "read_page", "read_state"]

# One read of a run's events: at most this many, and this many stored bytes (one larger event
# is read alone).
FEED_PAGE = 256
FEED_PAGE_BYTES = 1024 * 1024

Message = runs_pb2.WatchRunResponse


def read_page(edge: Edge, run_id: str, originator_ids: list[str], position: int) -> list[tuple[int, str, Any]]:
    """(position, type, StepBatch or None) of the run's events from `position`, a page bounded in
    count and bytes; called in a thread."""
    events = edge.ledger.read_events(
        from_position=position, limit=FEED_PAGE, originator_ids=originator_ids, bytes_max=FEED_PAGE_BYTES
    )
    return [
        (
            e["position"],
            e["type"],
            codec.batch_message(run_id, e["data"]) if e["type"].endswith("StepsRecorded") else None,
        )
        for e in events
    ]


def read_state(edge: Edge, run_id: str, min_position: int, timeout_s: float) -> runs_pb2.RunState:
    """The run's state without its spec; called in a thread."""
    return state_without_spec(edge.ledger.run_state(run_id, min_position=min_position, timeout_s=timeout_s))


class Watcher:
    """One WatchRun call: the first position its feed hands it, the last state it was sent, and
    its bounded backlog."""

    def __init__(self, key: str, messages_max: int, bytes_max: int) -> None:
        self.key, self.messages_max, self.bytes_max = key, messages_max, bytes_max
        self.start = 0
        self.baseline: runs_pb2.RunState | None = None
        self.backlog: collections.deque[tuple[Message, int]] = collections.deque()
        self.backlog_bytes = 0
        self.ended = False
        self.error: BaseException | None = None
        self.ready = asyncio.Event()

    def push(self, message: Message, size: int) -> None:
        if self.ended:
            return
        self.backlog.append((message, size))
        self.backlog_bytes += size
        if len(self.backlog) > self.messages_max or self.backlog_bytes > self.bytes_max:
            self.end(
                Exhausted(
                    f"this watcher fell more than {self.messages_max} messages or {self.bytes_max} bytes behind its "
                    "run: watch again from next_position",
                    reason=Reason.WATCHER_TOO_SLOW,
                    next_position=self.backlog[0][0].position,
                    backlog_messages_max=self.messages_max,
                    backlog_bytes_max=self.bytes_max,
                )
            )
        self.ready.set()

    def end(self, error: BaseException | None = None) -> None:
        """End the stream: at once, without what the backlog holds, when `error` is given."""
        if error is not None:
            self.backlog.clear()
            self.backlog_bytes = 0
            self.error = error
        self.ended = True
        self.ready.set()

    async def next(self) -> Message | None:
        """The next message; None when the stream has ended. Raises the error it was ended with."""
        while True:
            if self.backlog:
                message, size = self.backlog.popleft()
                self.backlog_bytes -= size
                return message
            if self.error is not None:
                raise self.error
            if self.ended:
                return None
            self.ready.clear()
            await self.ready.wait()


class Feed:
    """The events of one run and of its spend account, read once for all of the run's watchers."""

    def __init__(self, watchers: Watchers, run_id: str) -> None:
        self.owner, self.edge, self.run_id = watchers, watchers.edge, run_id
        self.originator_ids = [run_id, str(ledger_id("account", run_id))]
        self.position = 0  # Every event of the run before it has been handed to the watchers.
        self.watchers: set[Watcher] = set()
        self.joining: list[tuple[Watcher, int, asyncio.Future[Any]]] = []
        self.changed = asyncio.Event()
        self.reads = 0
        # The feed works for every watcher of the run: none of their shares of the worker threads.
        self.task = asyncio.get_running_loop().create_task(
            self._run(), name=f"watch-{run_id}", context=contextvars.Context()
        )

    async def join(self, watcher: Watcher, from_position: int) -> tuple[Message, tuple[int, int] | None] | None:
        """The watcher's first message and the positions [from, to) it must read itself before
        what the feed hands it; None when the server is closing."""
        joined: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.joining.append((watcher, from_position, joined))
        self.changed.set()
        return await joined  # type: ignore[no-any-return]

    def leave(self, watcher: Watcher) -> None:
        self.watchers.discard(watcher)
        self.joining = [entry for entry in self.joining if entry[0] is not watcher]
        if not self.watchers and not self.joining:
            self.close()

    def close(self, error: BaseException | None = None) -> None:
        self.owner.forget(self)
        self.task.cancel()
        for watcher in self.watchers:
            watcher.end(error)
        for _, _, joined in self.joining:
            if joined.done():
                continue
            if error is None:
                joined.set_result(None)
            else:
                joined.set_exception(error)
        self.watchers.clear()
        self.joining.clear()

    async def _run(self) -> None:
        try:
            while self.watchers or self.joining:
                self.changed.clear()
                page = await self._read(self.position) if self.watchers else []
                if page:
                    await self._hand_out(page)
                if self.joining:
                    await self._admit()
                elif not page:
                    await self.changed.wait()
        except asyncio.CancelledError:
            raise
        except Exception as error:  # Storage, projection: the watchers end with it.
            self.close(error)
        else:
            self.close()

    async def _read(self, position: int) -> list[tuple[int, str, Any]]:
        self.reads += 1
        return await self.owner.call(read_page, self.edge, self.run_id, self.originator_ids, position)

    async def _state(self, min_position: int) -> runs_pb2.RunState:
        timeout_s = await self.edge.caught_up(min_position, READ_TIMEOUT_MAX_S)
        return await self.owner.call(read_state, self.edge, self.run_id, min_position, timeout_s)

    async def _admit(self) -> None:
        """Let in the watchers waiting: one state for all of them, reflecting everything recorded
        before they came and all the feed has handed out; the feed hands each the events after
        that state (or from the position it asked for; what lies before the feed's position it
        reads itself)."""
        present = {id(watcher) for watcher, _, _ in self.joining}
        try:
            head = await self.owner.call(self.edge.ledger.head)
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
            for _, _, joined in waiting:
                joined.set_exception(error)
            return
        if not self.watchers:
            self.position = max(self.position, state.position + 1)
        first = state_message(state.position, "state", state, None)
        for watcher, from_position, joined in waiting:
            watcher.baseline = state
            watcher.start = max(self.position, from_position or state.position + 1)
            behind = (from_position, self.position) if 0 < from_position < self.position else None
            self.watchers.add(watcher)
            joined.set_result((first, behind))

    async def _hand_out(self, page: list[tuple[int, str, Any]]) -> None:
        """Hand a page to every watcher it is for; the state changes go with the first event of
        the page, other than a step batch, that a watcher gets."""
        changes = [position for position, _, steps in page if steps is None]
        state = await self._state(changes[-1]) if changes else None
        for position, event_type, steps in page:
            if steps is None:
                assert state is not None  # A page with a change reads the state.
                self._push_change(position, event_type, state)
            else:
                self._push(position, Message(position=position, event_type=event_type, steps=steps))
        self.position = page[-1][0] + 1
        for watcher in [w for w in self.watchers if w.ended]:
            self.watchers.discard(watcher)

    def _push(self, position: int, message: Message) -> None:
        size = message.ByteSize()
        for watcher in self.watchers:
            if position >= watcher.start:
                watcher.push(message, size)

    def _push_change(self, position: int, event_type: str, state: runs_pb2.RunState) -> None:
        # Watchers that were sent the same state share one message (`made` keeps each state
        # alive while its id is a key).
        made: dict[int, tuple[runs_pb2.RunState | None, Message, int]] = {}
        for watcher in self.watchers:
            if position < watcher.start:
                continue
            before = watcher.baseline
            if id(before) not in made:
                message = (
                    Message(position=position, event_type=event_type)
                    if before is state
                    else state_message(position, event_type, state, before)
                )
                made[id(before)] = (before, message, message.ByteSize())
            _, message, size = made[id(before)]
            watcher.baseline = state
            watcher.push(message, size)
