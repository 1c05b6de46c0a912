"""The write kernel of the ledger application: what every command shares.

`Kernel` is the eventsourcing Application: it opens the backend that ledger.backend chooses,
saves aggregates with the keys index (ledger.storage.keys) and snapshots, runs each command's
decision in the write loop, recalls ids that have left an aggregate's window, loads the
aggregates commands act on, and answers with a Receipt. The bounded contexts (runs, spend,
registry, reads) are written over it.

The write loop is a group commit (ledger.application.gather): the commands that queue while a
transaction is in flight are decided one after the other, each on the state the previous ones
left in the cached aggregates, and all their events are saved in the next transaction, with one
sync to disk. Each caller is answered once that transaction is durable, with its own result and
the position of its own events, or with its own refusal: a refused command changes nothing
(`Gathered.roll_back`), and a refusal that is itself recorded for audit raises `Recorded`. A
group whose transaction loses a version race with another process (a PostgreSQL replica) is
decided again, after a random back-off, on aggregates read afresh.
"""

from __future__ import annotations

import functools
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Concatenate, ParamSpec, Self, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application, ProcessingEvent
from eventsourcing.persistence import EventStore, IntegrityError, InterfaceError, OperationalError, Recording

from ledger.application.gather import GROUP_COMMANDS_MAX, Command, Gathered, WriteQueue
from ledger.application.naming import named
from ledger.application.snapshots import TolerantSnapshots
from ledger.backend import open_storage, persistence_env, uses_postgres
from ledger.domain.accounts import Account, Recall
from ledger.domain.base import Audit, LedgerAggregate, ledger_id
from ledger.domain.bills import Bill
from ledger.domain.errors import Contended, Invalid, LedgerError, NotFound, Refused, Unavailable
from ledger.domain.limits import PARENT_DEPTH_MAX, check_reference, check_text
from ledger.domain.reasons import Reason
from ledger.domain.registry import Family
from ledger.domain.runs import Run
from ledger.storage import transcoder
from ledger.storage.base import READ_ONLY, Storage, read_only
from ledger.storage.keys import batch_key, event_keys, spend_key
from ledger.storage.sqlite import read_only_uri
from ledger.storage.version import check_file_schema, check_schema

__all__ = ["Kernel", "Receipt", "Recorded", "storage_read", "unrecorded", "utc_now"]

T = TypeVar("T")
K = TypeVar("K", bound="Kernel")
A = TypeVar("A", bound=LedgerAggregate)
P = ParamSpec("P")
WRITE_RETRIES = 16
# Back-off between retries of a write that lost a version race with another process: random,
# growing, capped, so racing replicas spread out instead of colliding again in lockstep.
WRITE_BACKOFF_S = 0.002
WRITE_BACKOFF_MAX_S = 0.1


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Receipt:
    """What a command answers: the log position and whether it was a retry of an earlier
    identical request, plus what the command decided."""

    position: int
    duplicate: bool = False
    attempt: int = 0
    version: int = 0
    previous: int = 0
    overrun_usd_micro: int = 0
    created: bool = False
    run_id: str = ""
    expires_at: datetime | None = None
    last_step: int | None = None
    #: A spend write's account totals as of its own write (Account.summary): later writes of its
    #: group are not in them, and nothing is in them before it is durable.
    account: dict[str, Any] | None = None


class Recorded(Exception):
    """Raised by a decision that refuses its command but records the refusal itself (for audit):
    the events it triggered are saved with its group, and the caller gets `error` once they are
    durable."""

    def __init__(self, error: LedgerError) -> None:
        super().__init__(str(error))
        self.error = error


def storage_read(method: Callable[Concatenate[K, P], T]) -> Callable[Concatenate[K, P], T]:
    """A read of the log or the views: storage outages become Unavailable."""

    @functools.wraps(method)
    def read(self: K, /, *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return method(self, *args, **kwargs)
        except self.storage.outage_errors as error:
            raise Unavailable(f"storage is unavailable: {error}") from error

    return read


def outage(error: BaseException) -> Unavailable:
    """The refusal of a write that storage failed: reason STORAGE_FULL when the disk (or the
    database's size limit) is full, so that whoever runs the ledger sees what to fix; otherwise
    storage is unavailable. Either is UNAVAILABLE on the wire: the same request may be sent again."""
    cause: BaseException | None = error
    for _ in range(8):  # The library wraps the driver's error: look a few causes deep.
        if cause is None:
            break
        # SQLite says SQLITE_FULL; PostgreSQL says SQLSTATE 53100 (disk_full).
        if getattr(cause, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or getattr(cause, "sqlstate", "") == "53100":
            return Unavailable(
                f"storage is full ({error}): free space, then send the write again", reason=Reason.STORAGE_FULL
            )
        cause = cause.__cause__ or cause.__context__
    return Unavailable(f"storage is unavailable: {error}")


def unrecorded(refusal: BaseException) -> Refused:
    """The refusal of a write of a sequence (Kernel._write_all) after one that was refused:
    nothing of it was recorded. Its reason is the first refusal's (INTERNAL after a failure that
    is no refusal of the ledger's)."""
    reason = refusal.reason if isinstance(refusal, LedgerError) else Reason.INTERNAL
    return Refused(f"not recorded: a write before it in the same sequence was refused ({refusal})", reason=reason)


class _Chain:
    """The decisions of one sequence of writes (Kernel._write_all). They are decided in their
    order, and a decision is decided again only with every one after it (a group that must
    settle again returns its commands in order), so the latest decision of each one before a
    decision is the one that stands. `refused` is the first whose latest decision raised."""

    def __init__(self) -> None:
        self.refused: int | None = None
        self.error: BaseException | None = None
        # What the refused decision touched: a write refused after it shares its fate (decided
        # again with it when its group must settle again, answered with it otherwise).
        self.touched: list[LedgerAggregate] = []

    def link(self, index: int, decide: Callable[[list[LedgerAggregate]], T]) -> Callable[[list[LedgerAggregate]], T]:
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


class Kernel(Application[UUID]):
    """The application's plumbing; `ledger.application.ledger.Ledger` is the whole ledger."""

    name = "trainledger"
    snapshotting_intervals = {Run: 200, Account: 1_000, Family: 100, Bill: 50}
    env = {
        "TRANSCODER_TOPIC": transcoder.TOPIC,
        "AGGREGATE_CACHE_MAXSIZE": "10000",
        # Commands never mutate a cached aggregate unless they save it: on any failure the
        # aggregate is evicted, so the deep copy per load (the library's default) is not needed.
        "DEEPCOPY_FROM_AGGREGATE_CACHE": "n",
        "AGGREGATE_CACHE_FASTFORWARD": "n",
    }

    def __init__(
        self, env: dict[str, str] | None = None, *, clock: Callable[[], datetime] = utc_now, project: bool = True
    ) -> None:
        settings = env or {}
        if not uses_postgres(settings) and settings.get("SQLITE_DBNAME"):
            check_file_schema(settings["SQLITE_DBNAME"])  # Before the recorder makes its tables.
        try:
            super().__init__(env)
        except (OperationalError, InterfaceError) as error:
            # An unreachable database at start: one clear error, not the library's traceback.
            raise Unavailable(f"storage is unavailable: {error}") from None
        self.clock = clock
        self._lock = threading.RLock()
        # Called after each group commit with how many commands it answered and the events it
        # saved (services.metrics counts them); called under the write lock, so kept cheap.
        self.commit_listeners: list[Callable[[int, Sequence[Any]], None]] = []
        # Group commit needs the commands of a group to share the aggregates they change: with no
        # cache, or a copy per load, each command is its own group.
        cache = self.repository.cache
        shared = cache is not None and not self.repository.deepcopy_from_cache
        self._writes = WriteQueue(self._commit_group, group_max=GROUP_COMMANDS_MAX if shared else 1)
        try:
            self.storage: Storage = open_storage(self)
        except BaseException:
            super().close()
            raise
        try:
            check_schema(self.storage, write=not read_only(self))  # A newer schema is refused, untouched.
        except BaseException:
            self.storage.close()
            super().close()
            raise
        self.views = self.storage.views
        self.read_only = read_only(self)
        if not self.read_only:
            # Every id the log holds is in the keys index before any command is decided, so a
            # retry is never answered as new: checked here, at open, with two grouped counts, so
            # that a lookup that finds nothing (every new id) costs one indexed query and no more.
            self.storage.reindex_keys()
        self.projector = self.storage.projector(self)
        if project:
            self.projector.start()

    def construct_snapshot_store(self) -> EventStore[UUID]:
        # A snapshot that cannot be decoded is passed over (ledger.application.snapshots).
        return TolerantSnapshots(super().construct_snapshot_store())

    @classmethod
    def open(
        cls,
        database: str,
        *,
        clock: Callable[[], datetime] = utc_now,
        project: bool = True,
        env: dict[str, str] | None = None,
        read_only: bool = False,
    ) -> Self:
        """Open the ledger on a SQLite file path or a postgresql:// URL. With `read_only` (to check
        it: verify) nothing is ever written: no table made, no index rebuilt, no view projected."""
        settings = {**persistence_env(database), **(env or {})}
        if read_only:
            settings.update({READ_ONLY: "y", "CREATE_TABLE": "n"})
            project = False
            name = settings.get("SQLITE_DBNAME", "")
            if name and name != ":memory:" and not name.startswith("file:") and not uses_postgres(settings):
                settings["SQLITE_DBNAME"] = read_only_uri(name)  # eventsourcing's connections too.
        return cls(settings, clock=clock, project=project)

    def close(self) -> None:
        self.projector.stop()
        self.storage.close()
        super().close()

    # Saving.

    def save(self, *aggregates: Any, **kwargs: Any) -> list[Recording[UUID]]:
        """Application.save for our aggregates only, without the per-object Protocol
        isinstance checks of ProcessingEvent.collect_events (a measurable share of a Reserve)."""
        processing_event: ProcessingEvent[UUID] = ProcessingEvent()
        for aggregate in aggregates:
            processing_event.events.extend(aggregate.collect_events())
            processing_event.aggregates[aggregate.id] = aggregate
        processing_event.saved_kwargs.update(kwargs)
        # Client-made ids are indexed for good in the same transaction (ledger.storage.keys).
        keys = [
            (event.originator_id, key, event.originator_version)
            for event in processing_event.events
            for key in event_keys(event)
        ]
        if keys:
            # In one order, so concurrent writers (PostgreSQL replicas) never lock rows crosswise.
            processing_event.saved_kwargs["keys"] = sorted(keys)
        recordings = self._record(processing_event)
        self._take_snapshots(processing_event)
        return recordings

    def _take_snapshots(self, processing_event: ProcessingEvent[UUID]) -> None:
        """Snapshot from the aggregate just saved, instead of the library's way of replaying it
        from the store since the last snapshot. An aggregate whose saved events reach a multiple
        of its interval is snapshotted as saved: at that version, or at its last event when the
        save holds later ones of it (a group commit), since a load starts from any snapshot at or
        below the version it wants. Only an aggregate whose state in memory is not what was saved
        (a refusal in its group left it stale) is replayed from the store."""
        if self.snapshots is None:
            return
        last: dict[UUID, int] = {}
        due: dict[UUID, int] = {}
        for event in processing_event.events:
            last[event.originator_id] = event.originator_version
            aggregate: Any = processing_event.aggregates.get(event.originator_id)
            interval = self.snapshotting_intervals.get(type(aggregate))
            if interval and event.originator_version % interval == 0:
                due.setdefault(event.originator_id, event.originator_version)
        for aggregate_id, version in due.items():
            aggregate = processing_event.aggregates[aggregate_id]
            if aggregate.version == last[aggregate_id]:
                self.snapshots.put([type(aggregate).Snapshot.take(aggregate)])
            else:
                self.take_snapshot(aggregate_id, version=version)

    def _evict(self, aggregates: Sequence[LedgerAggregate]) -> None:
        cache = self.repository.cache
        if cache is None:
            return
        for aggregate in aggregates:
            try:
                cache.get(aggregate.id, evict=True)
            except KeyError:
                pass

    def _write(self, decide: Callable[[list[LedgerAggregate]], T]) -> tuple[T, int | None]:
        """Run `decide` (which loads aggregates into the list it is given and triggers events on
        them) in the next group commit (ledger.application.gather): it sees the state its
        predecessors in the group left, and its events are saved with theirs in one transaction.
        Answers once that transaction is durable: what `decide` returned and the position of its
        events (None when it recorded none), or raises what it raised. Version clashes (another
        process wrote first) evict the stale aggregates and decide again; so does a refusal when
        other processes share the storage, since it may have been decided on stale state."""
        command = Command(decide)
        self._writes.submit(command)
        if command.error is not None:
            if command.position is not None and isinstance(command.error, LedgerError):
                # A refusal recorded for audit says where, so its caller can read it (min_position).
                command.error.metadata.setdefault("recorded_position", str(command.position))
            raise named(command.error, self.repository, self.storage.outage_errors)
        result: T = command.result
        return result, command.position

    def _write_all(
        self, decides: Sequence[Callable[[list[LedgerAggregate]], T]]
    ) -> list[tuple[T, int | None] | Exception]:
        """Run `decides` as `_write` runs each, queued together and decided in their order
        (ledger.application.gather), in as few transactions as group commit makes of them.
        They are a sequence, as if each were run once the one before it was answered: once one
        is refused, those after it are refused too (`unrecorded`) and change nothing. Answers one
        outcome per decision: (what it returned, the position of its events), or its refusal."""
        chain = _Chain()
        commands = [Command(chain.link(index, decide)) for index, decide in enumerate(decides)]
        self._writes.submit_all(commands)
        outcomes: list[tuple[T, int | None] | Exception] = []
        for command in commands:
            if command.error is None:
                outcomes.append((command.result, command.position))
            elif isinstance(command.error, Exception):
                outcomes.append(named(command.error, self.repository, self.storage.outage_errors))
            else:
                raise command.error  # An interruption (KeyboardInterrupt, SystemExit), not a refusal.
        return outcomes

    def _commit_group(self, group: list[Command]) -> list[Command]:
        """Decide `group` in order and save every event it recorded in one transaction; answers
        the commands it settles and returns those to decide again in the next group."""
        if self.storage.shared and group[0].tries:
            # Racing replicas spread out instead of colliding again in lockstep (the commands
            # that lost a race are at the front of the queue).
            time.sleep(random.uniform(0, min(WRITE_BACKOFF_MAX_S, WRITE_BACKOFF_S * 2 ** group[0].tries)))
        with self._lock:
            gathered = Gathered()
            try:
                for index, command in enumerate(group):
                    if not self._decide(command, gathered):
                        # It changed an aggregate of the group and was refused: it and those
                        # behind it are decided again in the next group, once this one commits.
                        return self._settle(gathered) + group[index:]
                return self._settle(gathered)
            except BaseException:
                # Interrupted: nothing of the group is saved, so nothing it changed may stay cached.
                self._evict([*gathered.aggregates.values(), *gathered.stale])
                raise

    def _decide(self, command: Command, gathered: Gathered) -> bool:
        """Decide one command of a group on the state its predecessors left. False when it
        cannot be settled in this group (see Gathered.roll_back)."""
        while True:
            touched: list[LedgerAggregate] = []
            try:
                result = command.decide(touched)
            except Recorded as recorded:
                gathered.keep(command, touched, error=recorded.error)
                return True
            except BaseException as error:
                if not gathered.roll_back(command, touched, self._evict):
                    return False
                if not isinstance(error, Exception):
                    raise
                if isinstance(error, LedgerError) and self.storage.shared and not command.refreshed:
                    # Other processes write too: a refusal is decided again on fresh state.
                    command.refreshed = True
                    self._evict([a for a in touched if a.id not in gathered.aggregates])
                    continue
                if isinstance(error, self.storage.outage_errors):
                    error = outage(error)
                gathered.refuse(command, touched, error)
                return True
            gathered.keep(command, touched, result=result)
            self._cache_created(touched)
            return True

    def _cache_created(self, touched: list[LedgerAggregate]) -> None:
        # An aggregate created in a group is found by the commands after it in the same group.
        cache = self.repository.cache
        if cache is not None:
            for aggregate in touched:
                if aggregate.version == len(aggregate.pending_events):
                    cache.put(aggregate.id, aggregate)

    def _settle(self, gathered: Gathered) -> list[Command]:
        """Save the group's events in one transaction and answer its commands; those that were
        decided on state another process had changed meanwhile are returned, to decide again."""
        processing_event = self._processing_event(gathered)
        recordings: list[Recording[UUID]] = []
        if processing_event.events:
            try:
                recordings = self._record(processing_event)
            except IntegrityError:
                self._evict([*gathered.aggregates.values(), *gathered.stale])
                return self._conflicted(gathered)
            except BaseException as error:
                self._evict([*gathered.aggregates.values(), *gathered.stale])
                gathered.fail(outage(error) if isinstance(error, self.storage.outage_errors) else error)
                return []
            self._take_snapshots(processing_event)
            # The offer wakes the projector (ledger.views.projector: Projector._pass).
            self.projector.offer([(recording.notification.id, recording.domain_event) for recording in recordings])
            for listener in self.commit_listeners:
                listener(len(gathered.decided), processing_event.events)
        gathered.answer([recording.notification.id for recording in recordings])
        self._evict(gathered.stale)
        return []

    def _processing_event(self, gathered: Gathered) -> ProcessingEvent[UUID]:
        processing_event: ProcessingEvent[UUID] = ProcessingEvent()
        processing_event.events.extend(gathered.events())
        processing_event.aggregates.update(gathered.aggregates)
        # Client-made ids are indexed for good in the same transaction (ledger.storage.keys).
        keys = [
            (event.originator_id, key, event.originator_version)
            for event in processing_event.events
            for key in event_keys(event)
        ]
        if keys:
            # In one order, so concurrent writers (PostgreSQL replicas) never lock rows crosswise.
            processing_event.saved_kwargs["keys"] = sorted(keys)
        return processing_event

    @staticmethod
    def _conflicted(gathered: Gathered) -> list[Command]:
        """The commands of a group whose transaction lost a version race: decided again in the
        next group, or refused when they kept losing."""
        again = []
        for command, *_ in gathered.decided:
            command.tries += 1
            if command.tries < WRITE_RETRIES:
                again.append(command)
            else:
                command.answer(
                    error=Contended("the write kept conflicting with concurrent writers", reason=Reason.WRITE_CONFLICT)
                )
        return again

    def _receipt(self, aggregate_id: UUID, repeated: int | None, position: int | None, **decided: Any) -> Receipt:
        """The answer of a command about `aggregate_id`: the position of its fresh write, or, for
        an identical retry (`repeated` is the version of the event it repeats), the position of
        that event."""
        if position is None:
            assert repeated is not None
            position = self.storage.position_of(aggregate_id, repeated)
        return Receipt(position, duplicate=repeated is not None, **decided)

    # Loading the aggregates a command acts on.

    def _audit(self, principal: str, request_id: str) -> Audit:
        return Audit(
            check_text(principal, "principal", limit=256), check_text(request_id, "request_id", limit=256), self.clock()
        )

    def _load(self, aggregate_id: UUID, kind: type[A], what: str, reason: Reason, key: str) -> A:
        """The aggregate `aggregate_id` if it is a `kind`; an unknown id, or the id of another kind
        of aggregate (a run id that is really an account's uuid), is NotFound."""
        aggregate: object = None
        try:
            aggregate = self.repository.get(aggregate_id)
        except AggregateNotFoundError:
            pass
        if not isinstance(aggregate, kind):
            raise NotFound(f"no {what} {key}", reason=reason, **{what: key})
        return aggregate

    def _run(self, run_id: str) -> tuple[UUID, Run]:
        check_reference(run_id, "run_id")
        try:
            uuid = UUID(run_id)
        except ValueError:
            raise NotFound(f"no run {run_id}", reason=Reason.RUN_NOT_FOUND, run_id=run_id) from None
        return uuid, self._load(uuid, Run, "run", Reason.RUN_NOT_FOUND, run_id)

    def _account(self, name: str) -> Account:
        check_reference(name, "account")
        return self._load(ledger_id("account", name), Account, "account", Reason.ACCOUNT_NOT_FOUND, name)

    def _family(self, name: str) -> Family:
        check_reference(name, "family")
        return self._load(ledger_id("family", name), Family, "family", Reason.FAMILY_NOT_FOUND, name)

    def _parents(self, parent: str, touched: list[LedgerAggregate]) -> list[Account]:
        chain: list[Account] = []
        while parent:
            if len(chain) >= PARENT_DEPTH_MAX:
                raise Invalid("accounts nest too deeply", reason=Reason.PARENT_TOO_DEEP)
            account = self._account(parent)
            touched.append(account)
            chain.append(account)
            parent = account.parent
        return chain

    def _chain(self, name: str, touched: list[LedgerAggregate]) -> tuple[Account, list[Account]]:
        account = self._account(name)
        touched.append(account)
        return account, self._parents(account.parent, touched)

    # Recalling ids that have left an aggregate's window (ledger.storage.keys).

    def _recalled_events(self, aggregate_id: UUID, key: str) -> list[Any]:
        """The stored events of an aggregate that used `key`, oldest first."""
        events = []
        for version in self.storage.key_versions(aggregate_id, key):
            for stored in self.recorder.select_events(aggregate_id, gt=version - 1, lte=version):
                events.append(self.mapper.to_domain_event(stored))
        return events

    def _recall_spend(self, account: Account) -> Recall:
        """Recalls the entry of a reservation or charge id that has left the account's window,
        by folding the events that used it into an empty account."""

        def recall(entry_id: str) -> dict[str, Any] | None:
            events = self._recalled_events(account.id, spend_key(entry_id))
            if not events:
                return None
            scratch = scratch_account()
            for event in events:
                event.apply(scratch)
            return scratch.entry(entry_id)

        return recall

    def _recall_batch(self, run: Run) -> Callable[[int, int, int], tuple[str, int] | None]:
        def recall(attempt: int, first: int, last: int) -> tuple[str, int] | None:
            events = self._recalled_events(run.id, batch_key(attempt, first, last))
            return (events[0].digest, events[0].originator_version) if events else None

        return recall


def scratch_account() -> Account:
    """An empty account, to fold the recalled events of one id into (ledger.storage.keys): its
    settled window is unbounded, so the recalled entry stays in it."""
    account = Account.__new__(Account)
    account.__dict__.update(
        name="",
        parent="",
        cap=None,
        committed=0,
        pending=0,
        overrun=0,
        presumed=0,
        holds={},
        settled={},
        evicted=0,
        adjusted=0,
        window_max=float("inf"),
    )
    return account
