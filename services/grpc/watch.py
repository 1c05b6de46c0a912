"""WatchRun's encoder of the run feed (services.runtime.feed): live tails of runs as runs_pb2
messages, bounded in number, in backlog and in what each message carries.

- Watchers are bounded per caller (principal and peer host) and in all; past either bound a watch
  is refused: RESOURCE_EXHAUSTED, reason TOO_MANY_WATCHERS.
- A watcher's backlog is bounded in messages and bytes. A watcher that passes either (it stopped
  reading while its run went on) is dropped rather than buffered: RESOURCE_EXHAUSTED, reason
  WATCHER_TOO_SLOW, with the position to watch again from.
- The first message carries the run's state without its spec (GetRunState has it); each later
  one carries its event and only the fields of the state that changed since the last state the
  stream sent, named by a FieldMask. A step batch carries its steps; a run opened from one of the
  run's checkpoints comes as event_type Run.ChildOpened with the run's changed children.
- The feeds read on one thread of their own, one read at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator
from typing import Any

import grpc

from ledger.domain.errors import Exhausted, Invalid, LedgerError
from ledger.domain.reasons import Reason
from services.grpc import codec
from services.grpc.codec.changes import state_message, state_without_spec
from services.grpc.interceptors import SCOPE
from services.runtime.edge import Edge
from services.runtime.feed import Bounds, Encoder, Entry, Feeds, Follower, RunFeed, is_change, read_events
from services.runtime.followers import WATCHERS_MAX, WATCHERS_PER_CALLER_MAX
from services.runtime.logs import PRINCIPAL
from services.runtime.scopes import child_count_within
from trainledger.v1 import runs_pb2

__all__ = ["Watchers", "Watcher", "Message", "caller", "lineage_message_within"]

Message = runs_pb2.WatchRunResponse


def caller(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    """Whom a watcher counts against: the call's principal on its peer's host."""
    host = (context.peer() or "unknown").rsplit(":", 1)[0]
    return f"{PRINCIPAL.get()}@{host}"


class Watcher(Follower[Message]):
    """One WatchRun call; one that falls behind ends with WATCHER_TOO_SLOW."""

    def push(self, message: Message, size: int) -> None:
        self.put(message, size, message.position)

    def too_slow(self, resume: int) -> None:
        self.end(
            Exhausted(
                f"this watcher fell more than {self.messages_max} messages or {self.bytes_max} bytes behind its "
                "run: watch again from next_position",
                reason=Reason.WATCHER_TOO_SLOW,
                next_position=resume,
                backlog_messages_max=self.messages_max,
                backlog_bytes_max=self.bytes_max,
            )
        )


def _too_many(scope: str, limit: int) -> Exception:
    return Exhausted(
        f"too many watchers: {limit} per {scope}", reason=Reason.TOO_MANY_WATCHERS, scope=scope, limit=limit
    )


class WatchEncoder(Encoder[Message, runs_pb2.RunState]):
    """The feed's items as WatchRunResponse messages; a watcher's baseline is the last state it
    was sent, and each change carries what differs from it."""

    task_prefix = "watch"

    def read_page(self, edge: Edge, run_id: str, originator_ids: list[str], position: int) -> list[Entry]:
        """(position, type, StepBatch or None) of the run's events from `position`."""
        return [
            (e["position"], e["type"], None if is_change(e["type"]) else codec.batch_message(run_id, e["data"]))
            for e in read_events(edge, originator_ids, position)
        ]

    def state(self, state: Any) -> runs_pb2.RunState:
        return state_without_spec(state)

    def position_of(self, state: runs_pb2.RunState) -> int:
        return int(state.position)

    def first(self, position: int, state: runs_pb2.RunState) -> Message:
        return state_message(position, "state", state, None)

    def place(self, asked: int, state_position: int, feed_position: int) -> tuple[int, tuple[int, int] | None]:
        start = max(feed_position, asked or state_position + 1)
        return start, (asked, feed_position) if 0 < asked < feed_position else None

    def missed(self, entry: Entry) -> Message:
        position, event_type, steps = entry
        return Message(position=position, event_type=event_type, steps=steps)

    def refuse(self, follower: Follower[Message], joined: asyncio.Future[Any], error: LedgerError) -> None:
        joined.set_exception(error)

    def failed(self, feed: RunFeed[Message, runs_pb2.RunState], error: Exception) -> None:
        feed.close(error)

    async def hand_out(
        self, feed: RunFeed[Message, runs_pb2.RunState], page: list[Entry], state: runs_pb2.RunState | None
    ) -> None:
        """The state changes go with the first event of the page, other than a step batch, that a
        watcher gets."""
        for position, event_type, steps in page:
            if steps is None:
                assert state is not None  # A page with a change reads the state.
                _push_change(feed, position, event_type, state)
            else:
                message = Message(position=position, event_type=event_type, steps=steps)
                feed.push(position, message, message.ByteSize())


def _push_change(
    feed: RunFeed[Message, runs_pb2.RunState], position: int, event_type: str, state: runs_pb2.RunState
) -> None:
    # Watchers that were sent the same state share one message (`made` keeps each state alive
    # while its id is a key).
    made: dict[int, tuple[runs_pb2.RunState | None, Message, int]] = {}
    for watcher in feed.followers:
        if position < watcher.start or not feed.sees(watcher, position):
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
        watcher.put(message, size, position)


class Watchers(Feeds[Message, runs_pb2.RunState]):
    """Every live WatchRun of one server (Edge.followers["watchers"])."""

    _of: weakref.WeakKeyDictionary[Edge, Watchers] = weakref.WeakKeyDictionary()

    def __init__(self, edge: Edge) -> None:
        bounds = Bounds(Watcher, _too_many, WATCHERS_MAX, WATCHERS_PER_CALLER_MAX)
        super().__init__(edge, WatchEncoder(), bounds, metric="watchers", own_thread=True)

    async def watch(self, run_id: str, from_position: int, key: str) -> AsyncIterator[Message]:
        """The messages of one WatchRun (a scoped token's hears of no child opened outside its
        scope: SCOPE). Raises Exhausted (TOO_MANY_WATCHERS,
        WATCHER_TOO_SLOW), NotFound (RUN_NOT_FOUND) and what reading the log raises."""
        if from_position < 0:
            raise Invalid("from_position must not be negative", reason=Reason.OUT_OF_RANGE, field="from_position")
        if self.edge.closed:
            return
        watcher = self.bounds.enter(key)
        watcher.scope = SCOPE.get() or ""
        async with contextlib.aclosing(self.stream(watcher, run_id, from_position)) as messages:
            async for message in messages:
                yield message


def lineage_message_within(ledger: Any, message: Any, scope: str) -> Any:
    """A watcher's message with its state's source and children kept only where they are runs
    under `scope` (services.runtime.scopes.lineage_within); a copy when any is dropped (watchers
    share messages)."""
    state = message.state
    source_outside = state.HasField("source") and not ledger.run_within(state.source.run_id, scope)
    kept = [child for child in state.children if ledger.run_within(child.run_id, scope)]
    dropped = len(state.children) - len(kept)
    count = child_count_within(len(state.children), len(kept), state.child_count)
    if not source_outside and not dropped and count == state.child_count:
        return message
    copy = runs_pb2.WatchRunResponse()
    copy.CopyFrom(message)
    if source_outside:
        copy.state.ClearField("source")
    if dropped:
        del copy.state.children[:]
        copy.state.children.extend(kept)
    copy.state.child_count = count
    return copy
