"""The write kernel of the ledger application: what every command shares.

`Kernel` is the eventsourcing Application: it opens the backend that ledger.backend chooses,
saves aggregates with the keys index (ledger.storage.keys) and snapshots, runs each command's
decision in the write loop (retries with back-off when another process wrote first), recalls ids
that have left an aggregate's window, loads the aggregates commands act on, and answers with a
Receipt. The bounded contexts (runs, spend, registry, reads) are written over it.
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
from eventsourcing.persistence import IntegrityError, InterfaceError, OperationalError, Recording

from ledger.backend import open_storage, persistence_env
from ledger.domain.accounts import Account, Recall
from ledger.domain.base import Audit, LedgerAggregate, ledger_id
from ledger.domain.bills import Bill
from ledger.domain.errors import Contended, Invalid, LedgerError, NotFound, Unavailable
from ledger.domain.limits import PARENT_DEPTH_MAX, check_reference, check_text
from ledger.domain.reasons import Reason
from ledger.domain.registry import Family
from ledger.domain.runs import Run
from ledger.storage import transcoder
from ledger.storage.base import Storage
from ledger.storage.keys import batch_key, event_keys, spend_key

__all__ = ["Kernel", "Receipt", "storage_read", "utc_now"]

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
        try:
            super().__init__(env)
        except (OperationalError, InterfaceError) as error:
            # An unreachable database at start: one clear error, not the library's traceback.
            raise Unavailable(f"storage is unavailable: {error}") from None
        self.clock = clock
        self._lock = threading.RLock()
        try:
            self.storage: Storage = open_storage(self)
        except BaseException:
            super().close()
            raise
        self.views = self.storage.views
        if self.storage.keys_missing():
            # A ledger written before the keys index existed: index its log once.
            self.storage.index_log()
        self.projector = self.storage.projector(self)
        if project:
            self.projector.start()

    @classmethod
    def open(
        cls,
        database: str,
        *,
        clock: Callable[[], datetime] = utc_now,
        project: bool = True,
        env: dict[str, str] | None = None,
    ) -> Self:
        """Open the ledger on a SQLite file path or a postgresql:// URL."""
        return cls({**persistence_env(database), **(env or {})}, clock=clock, project=project)

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
        """Snapshot from the aggregate just saved (it is exactly at the snapshot's version),
        instead of the library's way of replaying it from the store since the last snapshot."""
        if self.snapshots is None:
            return
        for event in processing_event.events:
            aggregate: Any = processing_event.aggregates.get(event.originator_id)
            interval = self.snapshotting_intervals.get(type(aggregate))
            if interval and event.originator_version % interval == 0:
                if aggregate.version == event.originator_version:
                    self.snapshots.put([type(aggregate).Snapshot.take(aggregate)])
                else:
                    self.take_snapshot(event.originator_id, version=event.originator_version)

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
        them) and save everything it touched in one transaction. Version clashes (another
        process wrote first) evict the stale aggregates and decide again; so does a refusal when
        other processes share the storage, since it may have been decided on stale state."""
        refreshed = not self.storage.shared
        for attempt in range(WRITE_RETRIES):
            if attempt and self.storage.shared:
                time.sleep(random.uniform(0, min(WRITE_BACKOFF_MAX_S, WRITE_BACKOFF_S * 2**attempt)))
            touched: list[LedgerAggregate] = []
            with self._lock:
                try:
                    result = decide(touched)
                    pending = [a for a in touched if a.pending_events]
                    # The first aggregate touched is the one the command is about: it is saved
                    # last, so the answer (the transaction's highest position) is its event,
                    # which is the position an identical retry answers with (see _receipt).
                    recordings = self.save(*reversed(pending)) if pending else []
                except IntegrityError:
                    self._evict(touched)
                    continue
                except LedgerError:
                    self._evict(touched if not refreshed else [a for a in touched if a.pending_events])
                    if refreshed:
                        raise
                    refreshed = True
                    continue
                except BaseException as error:
                    self._evict(touched)
                    if isinstance(error, self.storage.outage_errors):
                        raise outage(error) from error
                    raise
            if not recordings:
                return result, None
            self.projector.wake()
            return result, max(recording.notification.id for recording in recordings)
        raise Contended("the write kept conflicting with concurrent writers", reason=Reason.WRITE_CONFLICT)

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
            scratch = Account.scratch()
            for event in events:
                event.apply(scratch)
            return scratch.entry(entry_id)

        return recall

    def _recall_batch(self, run: Run) -> Callable[[int, int, int], tuple[str, int] | None]:
        def recall(attempt: int, first: int, last: int) -> tuple[str, int] | None:
            events = self._recalled_events(run.id, batch_key(attempt, first, last))
            return (events[0].digest, events[0].originator_version) if events else None

        return recall
