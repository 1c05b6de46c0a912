"""Group commit: the writes that arrive while a commit is in flight are gathered into the next one.

Every command of the ledger ends in one durable transaction, and on a durable store the cost of
a transaction is its sync to disk (SQLite's fsync of the write-ahead log, PostgreSQL's WAL flush),
not the few rows it writes. So writers queue here (`WriteQueue.join`) and one of them, the
leader, takes everything queued at that moment (at most GROUP_COMMANDS_MAX, `WriteQueue.take`)
and commits the group itself (ledger.application.writer: each command decided in order on the
state its predecessors left, all their events in one transaction). The others wait on a lock of
their own until their command is answered, or until they are made the next leader. The queue
never calls into the writer: the writer asks it for groups and tells it what each settled.

There is no fixed wait: a lone writer finds the queue empty and commits at once; writers that
arrive while it commits queue up behind it and go together in the next group (the leader of that
group is the first of them, promoted when the previous group is answered). A command the group
could not settle (a version conflict with another process, a refusal that left an aggregate that
its predecessors changed in a state that must be reloaded) goes back to the front of the queue,
in its order, and is decided again in the next group.

A writer may also queue several commands at once (a stream's step batches): they are queued
together, so no other writer's command comes between them, and are decided in their order, in
as few groups as GROUP_COMMANDS_MAX allows; the writer returns once each is answered.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

from ledger.domain.base import LedgerAggregate

__all__ = ["GROUP_COMMANDS_MAX", "DecidedGroup", "QueuedWrite", "WriteQueue"]

# The commands of one group at most: a bound on one transaction's size (a command saves a few
# events; a step batch is one event of up to 10,000 steps).
GROUP_COMMANDS_MAX = 128


class QueuedWrite:
    """One queued write: its decision, and, once answered, its result or its error and the log
    position of its events (None when it recorded none)."""

    __slots__ = ("decide", "result", "error", "position", "done", "tries", "refreshed", "_waiter")

    def __init__(self, decide: Callable[[list[LedgerAggregate]], Any]) -> None:
        self.decide = decide
        self.result: Any = None
        self.error: BaseException | None = None
        self.position: int | None = None
        self.done = False
        # Groups whose transaction this command was in and that conflicted with another process.
        self.tries = 0
        # Whether a refusal was already decided again on state read afresh from storage.
        self.refreshed = False
        self._waiter = threading.Lock()
        self._waiter.acquire()

    def answer(self, result: Any = None, position: int | None = None, error: BaseException | None = None) -> None:
        """Settle the command (its thread is woken by the queue)."""
        self.result, self.position, self.error, self.done = result, position, error, True

    def wake(self) -> None:
        self._waiter.release()

    def wait(self) -> None:
        self._waiter.acquire()


class WriteQueue:
    """Writers in arrival order. A writer queues its commands (`join`); the one at the front while
    no group is committing leads: it takes groups (`take`) and commits each itself, telling the
    queue which commands the group left to decide again (`settled`), which go back to the front
    of the queue, until its own commands are answered; then it hands the lead on (`release`).
    The queue only orders and wakes writers: it never calls into what commits."""

    def __init__(self, *, group_max: int = GROUP_COMMANDS_MAX):
        self.group_max = group_max
        self._mutex = threading.Lock()
        self._queue: collections.deque[QueuedWrite] = collections.deque()
        self._leading = False
        # How many writers the last group answered (other than its leader).
        self._answered = 0

    @property
    def queued(self) -> int:
        """Commands waiting for a group (not counting one being committed)."""
        return len(self._queue)

    def join(self, commands: Sequence[QueuedWrite]) -> bool:
        """Queue `commands` together and in their order (no other writer's command comes between
        them). They are decided in that order, and go back to the queue in that order when a group
        cannot settle them. Returns once each is answered (False), or once this writer leads (True:
        it then commits with `take` and `settled`, and ends with `release`)."""
        with self._mutex:
            self._queue.extend(commands)
            lead = not self._leading
            self._leading = True
        if lead:
            return True
        for command in commands:
            command.wait()  # Answered, or promoted to lead the next group.
            if not command.done:
                return True
        return False

    def take(self, own: Sequence[QueuedWrite]) -> list[QueuedWrite]:
        """The next group for the leader whose commands are `own` to commit; empty once they are
        all answered. Its first unanswered command is in the first group it takes."""
        if all(command.done for command in own):
            return []
        if len(self._queue) < self._answered:
            # The writers the last group answered are likely writing again: let them queue first
            # (a yield of the processor, not a timed wait).
            time.sleep(0)
        with self._mutex:
            return [self._queue.popleft() for _ in range(min(self.group_max, len(self._queue)))]

    def settled(self, group: list[QueuedWrite], retry: list[QueuedWrite], own: Sequence[QueuedWrite]) -> None:
        """`group` is committed: `retry`, the commands it could not settle, go back to the front of
        the queue in their order, and the other writers it answered are woken."""
        with self._mutex:
            self._queue.extendleft(reversed(retry))
        mine = {id(command) for command in own}
        self._answered = 0
        for command in group:
            if command.done and id(command) not in mine:
                command.wake()
                self._answered += 1

    def interrupted(self, group: list[QueuedWrite], own: Sequence[QueuedWrite], error: BaseException) -> None:
        """The leader's thread was interrupted while committing `group`: what it held is answered
        with the error, and so are its own commands still queued (nobody would wait for them)."""
        with self._mutex:
            left = [command for command in own if not command.done and command not in group]
            for command in left:
                self._queue.remove(command)
        mine = {id(command) for command in own}
        for command in [*group, *left]:
            if not command.done:
                command.answer(error=error)
            if id(command) not in mine:
                command.wake()

    def release(self) -> None:
        """The leader is done: the writer now at the front leads the next group (it was never
        taken, so it is not answered), or nobody leads until the next writer joins."""
        with self._mutex:
            if self._queue:
                self._queue[0].wake()
            else:
                self._leading = False


class DecidedGroup:
    """The commands of one group as they are decided, and the events they recorded.

    A decision loads aggregates from the application's cache and triggers events on them, so
    the commands after it see its effects. One that is refused must change nothing: events it
    triggered on an aggregate that no predecessor in the group changed are undone by evicting the
    aggregate (the next load reads it from storage); on an aggregate the group already changed
    they are cut from its pending events, and the aggregate, whose state in memory still holds
    them, is reloaded after the group commits (`stale`), before anything else decides on it.
    """

    def __init__(self) -> None:
        # The aggregates with events pending in this group, and how many are pending on each
        # after the last decision that kept its events.
        self.aggregates: dict[UUID, LedgerAggregate] = {}
        self._pending: dict[UUID, int] = {}
        # (command, its events in saving order, what it returned, what it raised)
        self.decided: list[tuple[QueuedWrite, list[Any], Any, BaseException | None]] = []
        self.stale: list[LedgerAggregate] = []

    def _base(self, aggregate: LedgerAggregate) -> int:
        """How many of the aggregate's pending events the group's earlier decisions triggered."""
        return self._pending.get(aggregate.id, 0) if self.aggregates.get(aggregate.id) is aggregate else 0

    @staticmethod
    def _unique(touched: list[LedgerAggregate]) -> list[LedgerAggregate]:
        return list({id(aggregate): aggregate for aggregate in touched}.values())

    def keep(
        self,
        command: QueuedWrite,
        touched: list[LedgerAggregate],
        *,
        result: Any = None,
        error: BaseException | None = None,
    ) -> None:
        """The decision stands: its events are saved with the group's. The first aggregate
        touched is the one the command is about: its events come last, so the command's answer
        (the highest position of its events) is its event, which is the position an identical
        retry answers with."""
        events: list[Any] = []
        aggregates = self._unique(touched)
        for aggregate in reversed(aggregates):
            events.extend(aggregate.pending_events[self._base(aggregate) :])
        for aggregate in aggregates:
            if len(aggregate.pending_events) > self._base(aggregate):
                self.aggregates[aggregate.id] = aggregate
                self._pending[aggregate.id] = len(aggregate.pending_events)
        self.decided.append((command, events, result, error))

    def refuse(self, command: QueuedWrite, touched: list[LedgerAggregate], error: BaseException) -> None:
        """The command is refused (after roll_back). A refusal decided on what the group changed
        shares the group's fate (a conflict decides it again); any other is answered now."""
        if any(self.aggregates.get(aggregate.id) is aggregate for aggregate in touched):
            self.decided.append((command, [], None, error))
        else:
            command.answer(error=error)

    def roll_back(
        self, command: QueuedWrite, touched: list[LedgerAggregate], evict: Callable[[list[LedgerAggregate]], None]
    ) -> bool:
        """Undo what a refused decision triggered. False when it changed an aggregate that the
        group had changed before it: that aggregate is stale, and the group must end before it."""
        changed = [a for a in self._unique(touched) if len(a.pending_events) > self._base(a)]
        fresh = [a for a in changed if self.aggregates.get(a.id) is not a]
        evict(fresh)
        stale = [a for a in changed if self.aggregates.get(a.id) is a]
        for aggregate in stale:
            del aggregate.pending_events[self._base(aggregate) :]
        self.stale += stale
        return not stale

    def events(self) -> list[Any]:
        """Every event of the group, in saving order."""
        return [event for _, events, _, _ in self.decided for event in events]

    def answer(self, positions: list[int]) -> None:
        """The group is durable: answer each decided command with its result or its refusal,
        and the highest position of its events. `positions` are the events' in saving order."""
        offset = 0
        for command, events, result, error in self.decided:
            count = len(events)
            command.answer(result, max(positions[offset : offset + count]) if count else None, error)
            offset += count
        for aggregate in self.aggregates.values():
            aggregate.pending_events.clear()

    def fail(self, error: BaseException) -> None:
        """The group's transaction failed: every decided command is answered with `error`."""
        for command, *_ in self.decided:
            command.answer(error=error)
