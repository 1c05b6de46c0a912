"""The write seam of the ledger application: every command's decision runs here.

`Writer.write` queues a decision (a function that loads aggregates into the list it is given and
triggers events on them) for the next group commit (ledger.application.gather): the commands
that queue while a transaction is in flight are decided one after the other, each on the state
the previous ones left in the cached aggregates, and all their events are saved in the next
transaction, with one sync to disk. Each caller is answered once that transaction is durable,
with its own result and the position of its own events, or with its own refusal: a refused
command changes nothing (`DecidedGroup.roll_back`), and a refusal that is itself recorded for
audit raises `Recorded`. A group whose transaction loses a version race with another process (a
PostgreSQL replica) is decided again, after a random back-off, on aggregates read afresh.

The bounded contexts of the application (runs, spend, registry, bills, tokens, ...) each get the
writer, and load what they decide on through its `aggregates` (ledger.application.loading).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar
from uuid import UUID

from eventsourcing.application import ProcessingEvent
from eventsourcing.persistence import IntegrityError, Recording

from ledger.application.gather import GROUP_COMMANDS_MAX, DecidedGroup, QueuedWrite, WriteQueue
from ledger.application.loading import Aggregates
from ledger.application.naming import named
from ledger.application.outcomes import Receipt, Recorded, outage, unrecorded
from ledger.domain.base import Audit, LedgerAggregate
from ledger.domain.errors import Contended, LedgerError
from ledger.domain.limits import check_text
from ledger.domain.reasons import Reason
from ledger.storage.base import Storage

__all__ = ["WRITE_RETRIES", "Saving", "Writer"]

log = logging.getLogger("trainledger.ledger")

T = TypeVar("T")
Decide = Callable[[list[LedgerAggregate]], T]
WRITE_RETRIES = 16
# Back-off between retries of a write that lost a version race with another process: random,
# growing, capped, so racing replicas spread out instead of colliding again in lockstep.
WRITE_BACKOFF_S = 0.002
WRITE_BACKOFF_MAX_S = 0.1


class Saving(Protocol):
    """What the writer needs of the application (ledger.application.kernel.Kernel) to save a
    group: its events with their keys, in one transaction, then the snapshots that are due."""

    def processing_event(
        self, events: Sequence[Any], aggregates: dict[UUID, LedgerAggregate]
    ) -> ProcessingEvent[UUID]: ...

    def record(self, processing_event: ProcessingEvent[UUID]) -> list[Recording[UUID]]: ...

    def take_snapshots(self, processing_event: ProcessingEvent[UUID]) -> None: ...


class _Sequence:
    """The decisions of one sequence of writes (Writer.write_all). They are decided in their
    order, and a decision is decided again only with every one after it (a group that must
    settle again returns its commands in order), so the latest decision of each one before a
    decision is the one that stands. `refused` is the first whose latest decision raised."""

    def __init__(self) -> None:
        self.refused: int | None = None
        self.error: BaseException | None = None
        # What the refused decision touched: a write refused after it shares its fate (decided
        # again with it when its group must settle again, answered with it otherwise).
        self.touched: list[LedgerAggregate] = []

    def link(self, index: int, decide: Decide[T]) -> Decide[T]:
        def linked(touched: list[LedgerAggregate]) -> T:
            if self.refused is not None and self.refused < index:
                assert self.error is not None
                touched.extend(self.touched)
                raise unrecorded(self.error)
            try:
                result = decide(touched)
            except BaseException as error:
                self.refused, self.error, self.touched = index, error, list(touched)
                raise
            if self.refused == index:
                self.refused, self.error, self.touched = None, None, []
            return result

        return linked


class Writer:
    """Runs the decisions of commands in group commits and answers each once it is durable."""

    def __init__(
        self,
        saving: Saving,
        aggregates: Aggregates,
        storage: Storage,
        projector: Any,
        *,
        clock: Callable[[], datetime],
        commit_listeners: list[Callable[[int, Sequence[Any]], None]],
    ) -> None:
        self._saving = saving
        self.aggregates = aggregates
        self.storage = storage
        self._projector = projector
        self.clock = clock
        # Called after each group commit with how many commands it answered and the events it
        # saved (services.metrics counts them); called under the write lock, so kept cheap. One
        # that fails is logged: the group's events are saved, so its writes are answered as saved.
        self._commit_listeners = commit_listeners
        #: Held while a group is decided and committed.
        self.lock = threading.RLock()
        # Group commit needs the commands of a group to share the aggregates they change: with no
        # cache, or a copy per load, each command is its own group.
        repository = aggregates.repository
        shared = repository.cache is not None and not repository.deepcopy_from_cache
        self.queue = WriteQueue(group_max=GROUP_COMMANDS_MAX if shared else 1)

    def audit(self, principal: str, request_id: str) -> Audit:
        """Who asks, under which request id, and the time of the clock now."""
        return Audit(
            check_text(principal, "principal", limit=256), check_text(request_id, "request_id", limit=256), self.clock()
        )

    def write(self, decide: Decide[T]) -> tuple[T, int | None]:
        """Run `decide` (which loads aggregates into the list it is given and triggers events on
        them) in the next group commit (ledger.application.gather): it sees the state its
        predecessors in the group left, and its events are saved with theirs in one transaction.
        Answers once that transaction is durable: what `decide` returned and the position of its
        events (None when it recorded none), or raises what it raised. Version clashes (another
        process wrote first) evict the stale aggregates and decide again; so does a refusal when
        other processes share the storage, since it may have been decided on stale state."""
        queued = QueuedWrite(decide)
        self._submit((queued,))
        if queued.error is not None:
            if queued.position is not None and isinstance(queued.error, LedgerError):
                # A refusal recorded for audit says where, so its caller can read it (min_position).
                queued.error.metadata.setdefault("recorded_position", str(queued.position))
            raise named(queued.error, self.aggregates.repository, self.storage.outage_errors)
        result: T = queued.result
        return result, queued.position

    def write_all(self, decides: Sequence[Decide[T]]) -> list[tuple[T, int | None] | Exception]:
        """Run `decides` as `write` runs each, queued together and decided in their order
        (ledger.application.gather), in as few transactions as group commit makes of them.
        They are a sequence, as if each were run once the one before it was answered: once one
        is refused, those after it are refused too (`unrecorded`) and change nothing. Answers one
        outcome per decision: (what it returned, the position of its events), or its refusal."""
        sequence = _Sequence()
        queued = [QueuedWrite(sequence.link(index, decide)) for index, decide in enumerate(decides)]
        self._submit(queued)
        outcomes: list[tuple[T, int | None] | Exception] = []
        for write in queued:
            if write.error is None:
                outcomes.append((write.result, write.position))
            elif isinstance(write.error, Exception):
                outcomes.append(named(write.error, self.aggregates.repository, self.storage.outage_errors))
            else:
                raise write.error  # An interruption (KeyboardInterrupt, SystemExit), not a refusal.
        return outcomes

    def receipt(self, aggregate_id: UUID, repeated: int | None, position: int | None, **decided: Any) -> Receipt:
        """The answer of a command about `aggregate_id`: the position of its fresh write, or, for
        an identical retry (`repeated` is the version of the event it repeats), the position of
        that event."""
        if position is None:
            assert repeated is not None
            position = self.storage.position_of(aggregate_id, repeated)
        return Receipt(position, duplicate=repeated is not None, **decided)

    # The group commit.

    def _submit(self, commands: Sequence[QueuedWrite]) -> None:
        """Queue `commands` (ledger.application.gather) and return once each is answered: by the
        group commits of other writers, or by those this writer leads."""
        if not self.queue.join(commands):
            return
        try:
            while group := self.queue.take(commands):
                try:
                    retry = self._commit_group(group)
                except BaseException as error:
                    self.queue.interrupted(group, commands, error)
                    raise
                self.queue.settled(group, retry, commands)
        finally:
            self.queue.release()

    def _commit_group(self, group: list[QueuedWrite]) -> list[QueuedWrite]:
        """Decide `group` in order and save every event it recorded in one transaction; answers
        the commands it settles and returns those to decide again in the next group."""
        if self.storage.shared and group[0].tries:
            # Racing replicas spread out instead of colliding again in lockstep (the commands
            # that lost a race are at the front of the queue).
            time.sleep(random.uniform(0, min(WRITE_BACKOFF_MAX_S, WRITE_BACKOFF_S * 2 ** group[0].tries)))
        with self.lock:
            decided = DecidedGroup()
            try:
                for index, queued in enumerate(group):
                    if not self._decide(queued, decided):
                        # It changed an aggregate of the group and was refused: it and those
                        # behind it are decided again in the next group, once this one commits.
                        return self._settle(decided) + group[index:]
                return self._settle(decided)
            except BaseException:
                # Interrupted: nothing of the group is saved, so nothing it changed may stay cached.
                self.aggregates.evict([*decided.aggregates.values(), *decided.stale])
                raise

    def _decide(self, queued: QueuedWrite, decided: DecidedGroup) -> bool:
        """Decide one command of a group on the state its predecessors left. False when it
        cannot be settled in this group (see DecidedGroup.roll_back)."""
        while True:
            touched: list[LedgerAggregate] = []
            try:
                result = queued.decide(touched)
            except Recorded as recorded:
                decided.keep(queued, touched, error=recorded.error)
                return True
            except BaseException as error:
                if not decided.roll_back(queued, touched, self.aggregates.evict):
                    return False
                if not isinstance(error, Exception):
                    raise
                if isinstance(error, LedgerError) and self.storage.shared and not queued.refreshed:
                    # Other processes write too: a refusal is decided again on fresh state.
                    queued.refreshed = True
                    self.aggregates.evict([a for a in touched if a.id not in decided.aggregates])
                    continue
                if isinstance(error, self.storage.outage_errors):
                    error = outage(error)
                decided.refuse(queued, touched, error)
                return True
            decided.keep(queued, touched, result=result)
            self.aggregates.cache_created(touched)
            return True

    def _settle(self, decided: DecidedGroup) -> list[QueuedWrite]:
        """Save the group's events in one transaction and answer its commands; those that were
        decided on state another process had changed meanwhile are returned, to decide again."""
        processing_event = self._saving.processing_event(decided.events(), decided.aggregates)
        recordings: list[Recording[UUID]] = []
        if processing_event.events:
            try:
                recordings = self._saving.record(processing_event)
            except IntegrityError:
                self.aggregates.evict([*decided.aggregates.values(), *decided.stale])
                return self._conflicted(decided)
            except BaseException as error:
                self.aggregates.evict([*decided.aggregates.values(), *decided.stale])
                decided.fail(outage(error) if isinstance(error, self.storage.outage_errors) else error)
                return []
            self._saving.take_snapshots(processing_event)
            # The offer wakes the projector (ledger.views.projector: Projector._pass).
            self._projector.offer([(recording.notification.id, recording.domain_event) for recording in recordings])
            for listener in self._commit_listeners:
                try:
                    listener(len(decided.decided), processing_event.events)
                except Exception:  # It watches the commit, never decides it: the group is saved.
                    log.exception("a commit listener failed; the commit it was told of stands")
        decided.answer([recording.notification.id for recording in recordings])
        self.aggregates.evict(decided.stale)
        return []

    @staticmethod
    def _conflicted(decided: DecidedGroup) -> list[QueuedWrite]:
        """The commands of a group whose transaction lost a version race: decided again in the
        next group, or refused when they kept losing."""
        again = []
        for queued, *_ in decided.decided:
            queued.tries += 1
            if queued.tries < WRITE_RETRIES:
                again.append(queued)
            else:
                queued.answer(
                    error=Contended("the write kept conflicting with concurrent writers", reason=Reason.WRITE_CONFLICT)
                )
        return again
