"""The ledger application: commands in, events and log positions out; reads from the views.

`Ledger` is an eventsourcing Application over one of two persistence modules: SQLite (the
embedded default: one file holds events and views) or PostgreSQL. Every command validates its
input (ledger.domain.limits), loads the aggregates it touches from the in-process cache, lets them
decide, and saves their new events atomically. It answers with the global position of what it
recorded, or of what an identical earlier request recorded (a retry is a no-op).
"""

from __future__ import annotations

import functools
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application, ProcessingEvent
from eventsourcing.persistence import IntegrityError, InterfaceError, OperationalError, Recording

from ledger.domain import accounts as spend
from ledger.storage import transcoder
from ledger.domain.accounts import Account
from ledger.domain.base import Audit, LedgerAggregate, ledger_id
from ledger.storage.keys import batch_key, event_keys, spend_key
from ledger.domain.basis import check_basis
from ledger.domain.batches import StepBatch
from ledger.domain.errors import (
    AbortedError,
    AlreadyExistsError,
    FailedPreconditionError,
    InvalidArgumentError,
    LedgerError,
    NotFoundError,
    UnavailableError,
)
from ledger.domain.limits import (
    ERROR_LENGTH_MAX,
    PAGE_SIZE_MAX,
    PARENT_DEPTH_MAX,
    STEP_MAX,
    check_document,
    check_id,
    check_reference,
    check_int,
    check_text,
    check_usd_micro,
)
from ledger.domain.registry import Family
from ledger.domain.runs import FIDELITIES, FINISH_STATUSES, Run
from ledger.domain.topics import event_topics
from ledger.storage.sqlite import Storage, open_storage

__all__ = ["Ledger", "Receipt", "utc_now"]

T = TypeVar("T")
WRITE_RETRIES = 16
# Back-off between retries of a write that lost a version race with another process: random,
# growing, capped, so racing replicas spread out instead of colliding again in lockstep.
WRITE_BACKOFF_S = 0.002
WRITE_BACKOFF_MAX_S = 0.1
RESERVATION_TTL_DEFAULT = timedelta(minutes=15)
RESERVATION_TTL_MAX = timedelta(days=7)


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


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


def _storage_read(method: Callable[..., T]) -> Callable[..., T]:
    """A read of the log or the views: storage outages become UnavailableError."""

    @functools.wraps(method)
    def read(self: Ledger, *args: Any, **kwargs: Any) -> T:
        try:
            return method(self, *args, **kwargs)
        except self.storage.outage_errors as error:
            raise UnavailableError(f"storage is unavailable: {error}") from error

    return read


def _outage(error: BaseException) -> UnavailableError:
    """The refusal of a write that storage failed: reason STORAGE_FULL when the disk (or the
    database's size limit) is full, so that whoever runs the ledger sees what to fix; otherwise
    storage is unavailable. Either is UNAVAILABLE on the wire: the same request may be sent again."""
    cause: BaseException | None = error
    for _ in range(8):  # The library wraps the driver's error: look a few causes deep.
        if cause is None:
            break
        # SQLite says SQLITE_FULL; PostgreSQL says SQLSTATE 53100 (disk_full).
        if getattr(cause, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or getattr(cause, "sqlstate", "") == "53100":
            return UnavailableError(f"storage is full ({error}): free space, then send the write again",
                                    reason="STORAGE_FULL")
        cause = cause.__cause__ or cause.__context__
    return UnavailableError(f"storage is unavailable: {error}")


class Ledger(Application[UUID]):
    """The training ledger. Use `Ledger.open(path_or_url)`; close it when done."""

    name = "trainledger"
    snapshotting_intervals = {Run: 200, Account: 1_000, Family: 100}
    env = {
        "TRANSCODER_TOPIC": transcoder.TOPIC,
        "AGGREGATE_CACHE_MAXSIZE": "10000",
        # Commands never mutate a cached aggregate unless they save it: on any failure the
        # aggregate is evicted, so the deep copy per load (the library's default) is not needed.
        "DEEPCOPY_FROM_AGGREGATE_CACHE": "n",
        "AGGREGATE_CACHE_FASTFORWARD": "n",
    }

    def __init__(self, env: dict[str, str] | None = None, *, clock: Callable[[], datetime] = utc_now,
                 project: bool = True) -> None:
        try:
            super().__init__(env)
        except (OperationalError, InterfaceError) as error:
            # An unreachable database at start: one clear error, not the library's traceback.
            raise UnavailableError(f"storage is unavailable: {error}") from None
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
    def open(cls, database: str, *, clock: Callable[[], datetime] = utc_now, project: bool = True,
             env: dict[str, str] | None = None) -> Ledger:
        """Open the ledger on a SQLite file path or a postgresql:// URL."""
        from ledger.storage.sqlite import persistence_env

        return cls({**persistence_env(database), **(env or {})}, clock=clock, project=project)

    def close(self) -> None:
        self.projector.stop()
        self.storage.close()
        super().close()

    # Plumbing shared by every command.

    def save(self, *aggregates: Any, **kwargs: Any) -> list[Recording[UUID]]:
        """Application.save for our aggregates only, without the per-object Protocol
        isinstance checks of ProcessingEvent.collect_events (a measurable share of a Reserve)."""
        processing_event: ProcessingEvent[UUID] = ProcessingEvent()
        for aggregate in aggregates:
            processing_event.events.extend(aggregate.collect_events())
            processing_event.aggregates[aggregate.id] = aggregate
        processing_event.saved_kwargs.update(kwargs)
        # Client-made ids are indexed for good in the same transaction (ledger.storage.keys).
        keys = [(event.originator_id, key, event.originator_version)
                for event in processing_event.events for key in event_keys(event)]
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
            aggregate = processing_event.aggregates.get(event.originator_id)
            interval = self.snapshotting_intervals.get(type(aggregate))
            if interval and event.originator_version % interval == 0:
                if aggregate.version == event.originator_version:
                    self.snapshots.put([type(aggregate).Snapshot.take(aggregate)])
                else:
                    self.take_snapshot(event.originator_id, version=event.originator_version)

    def _audit(self, principal: str, request_id: str) -> Audit:
        return Audit(check_text(principal, "principal", limit=256), check_text(request_id, "request_id", limit=256),
                     self.clock())

    def _load(self, aggregate_id: UUID, what: str, reason: str, key: str) -> Any:
        try:
            return self.repository.get(aggregate_id)
        except AggregateNotFoundError:
            raise NotFoundError(f"no {what} {key}", reason=reason, **{what: key}) from None

    def _recalled_events(self, aggregate_id: UUID, key: str) -> list[Any]:
        """The stored events of an aggregate that used `key` (ledger.storage.keys), oldest first."""
        events = []
        for version in self.storage.key_versions(aggregate_id, key):
            for stored in self.recorder.select_events(aggregate_id, gt=version - 1, lte=version):
                events.append(self.mapper.to_domain_event(stored))
        return events

    def _recall_spend(self, account: Account) -> spend.Recall:
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
                    # which is the position an identical retry answers with (see _answer).
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
                        raise _outage(error) from error
                    raise
            if not recordings:
                return result, None
            self.projector.wake()
            return result, max(recording.notification.id for recording in recordings)
        raise AbortedError("the write kept conflicting with concurrent writers", reason="WRITE_CONFLICT")

    def _answer(self, aggregate_id: UUID, version: int | None, position: int | None) -> int:
        """The position of a fresh write, or of the event an identical retry points at."""
        if position is not None:
            return position
        assert version is not None
        return self.storage.position_of(aggregate_id, version)

    # Runs.

    def open_run(self, *, run_key: str, name: str = "", spec: dict | None = None, cap_usd_micro: int | None = None,
                 parent_account: str = "", principal: str = "", request_id: str = "") -> Receipt:
        """Open a run by its key (idempotent) with its spend account."""
        check_reference(run_key, "run_key")
        check_text(name, "name", limit=256)
        spec = check_document(spec, "spec")
        if cap_usd_micro is not None:
            check_usd_micro(cap_usd_micro, "cap_usd_micro")
        check_reference(parent_account, "parent_account", required=False)
        audit = self._audit(principal, request_id)
        run_id = ledger_id("run", run_key)

        def decide(touched: list[LedgerAggregate]) -> bool:
            try:
                touched.append(self.repository.get(run_id))
            except AggregateNotFoundError:
                pass
            else:
                self._reopen_account(str(run_id), cap_usd_micro, parent_account, audit, touched)
                return False
            check_id(run_key, "run_key")  # A new run takes a key under the identifier rules.
            run = Run._create(Run.Opened, id=run_id, run_key=run_key, name=name or run_key, spec=spec,
                              **audit.fields())
            touched.append(run)
            account_id = ledger_id("account", str(run_id))
            try:
                taken = self.repository.get(account_id)
            except AggregateNotFoundError:
                self._parents(parent_account, touched)
                touched.append(Account._create(Account.Opened, id=account_id, name=str(run_id),
                                               parent=parent_account, cap=cap_usd_micro, **audit.fields()))
                return True
            # Only in a ledger written before run account names were reserved: the account was
            # opened by OpenAccount. The run is opened only if its cap and parent are honoured.
            if (taken.cap, taken.parent) != (cap_usd_micro, parent_account):
                raise FailedPreconditionError(
                    f"the account {run_id} of this run was opened before it with another cap or parent",
                    reason="RUN_ACCOUNT_TAKEN", account=str(run_id))
            return True

        created, position = self._write(decide)
        if position is None:
            # A retry answers with the first answer: the position of the transaction that opened
            # the run and its account together (the later of the two events).
            position = self._answer(run_id, 1, None)
            try:
                position = max(position, self.storage.position_of(ledger_id("account", str(run_id)), 1))
            except LookupError:
                pass
        return Receipt(position, duplicate=not created, created=created, run_id=str(run_id))

    def _reopen_account(self, name: str, cap: int | None, parent: str, audit: Audit,
                        touched: list[LedgerAggregate]) -> None:
        """What an OpenRun of an existing run asks of its account: a cap given is a cap change
        (set_cap's rules), an absent one leaves the cap; a parent given must be the account's."""
        account = self._account(name)
        touched.append(account)
        if parent and parent != account.parent:
            raise FailedPreconditionError(
                f"the run's account is under {account.parent or 'no parent'}, not {parent}: a parent cannot change",
                reason="PARENT_ACCOUNT_DIFFERS", parent=account.parent, requested_parent=parent)
        if cap is not None:
            spend.set_cap(account, audit, cap)

    def _run(self, run_id: str) -> tuple[UUID, Run]:
        check_reference(run_id, "run_id")
        try:
            uuid = UUID(run_id)
        except ValueError:
            raise NotFoundError(f"no run {run_id}", reason="RUN_NOT_FOUND", run_id=run_id) from None
        return uuid, self._load(uuid, "run", "RUN_NOT_FOUND", run_id)

    def start_attempt(self, *, run_id: str, attempt_id: str = "", label: str = "",
                      resume_from_step: int | None = None, principal: str = "", request_id: str = "") -> Receipt:
        """Start the next attempt on a run, fencing the previous one."""
        check_id(attempt_id, "attempt_id", required=False)
        check_text(label, "label", limit=256)
        if resume_from_step is not None:
            check_int(resume_from_step, "resume_from_step")
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> tuple[int | None, int]:
            uuid, run = self._run(run_id)
            touched.append(run)
            version = run.start_attempt(audit, attempt_id=attempt_id, label=label, resume_from_step=resume_from_step)
            if version is None:
                # The fenced attempts' holds go back at once, not at their expiry.
                holder, parents = self._chain(str(uuid), touched)
                spend.release_superseded(holder, parents, audit, attempt=run.current_attempt)
            number = next(a["number"] for a in run.attempts if a["version"] == version) if version else run.current_attempt
            return version, number

        (version, number), position = self._write(decide)
        return Receipt(self._answer(UUID(run_id), version, position), duplicate=version is not None, attempt=number,
                       run_id=run_id)

    def append_steps(self, *, run_id: str, attempt: int, steps: Sequence[int], tokens: Sequence[int] | None = None,
                     usd_micro: Sequence[int] | None = None, metrics: dict[str, Any] | None = None,
                     principal: str = "", request_id: str = "") -> Receipt:
        """Record one batch of steps as one event (see ledger.domain.batches for the shape)."""
        batch = StepBatch.build(attempt=attempt, steps=steps, tokens=tokens, usd_micro=usd_micro, metrics=metrics)
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> tuple[int | None, int | None]:
            _, run = self._run(run_id)
            touched.append(run)
            return run.record_steps(audit, batch, self._recall_batch(run)), run.last_step

        (version, last_step), position = self._write(decide)
        return Receipt(self._answer(UUID(run_id), version, position), duplicate=version is not None,
                       last_step=last_step)

    def save_checkpoint(self, *, run_id: str, attempt: int, step: int, backend: str, uri: str,
                        fidelity: str = "weights+optimizer", sampler_uri: str = "", final: bool = False,
                        expires_at: datetime | None = None, digest: str = "", principal: str = "",
                        request_id: str = "") -> Receipt:
        """Record a checkpoint whose files are durable: the commit point for resume."""
        check_int(attempt, "attempt", minimum=1, maximum=2**31 - 1)
        check_int(step, "step", maximum=STEP_MAX)
        check_id(backend, "backend")
        check_text(uri, "uri")
        if not uri:
            raise InvalidArgumentError("uri is required", reason="MISSING_FIELD", field="uri")
        if fidelity not in FIDELITIES:
            raise InvalidArgumentError(f"fidelity must be one of {FIDELITIES}", reason="INVALID_FIELD", field="fidelity")
        check_text(sampler_uri, "sampler_uri")
        check_text(digest, "digest", limit=256)
        if expires_at is not None and (not isinstance(expires_at, datetime) or expires_at.tzinfo is None):
            raise InvalidArgumentError("expires_at must be a timezone-aware time", reason="INVALID_FIELD")
        checkpoint = {"step": step, "backend": backend, "uri": uri, "fidelity": fidelity, "sampler_uri": sampler_uri,
                      "final": bool(final), "expires_at": expires_at, "digest": digest}
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> int | None:
            _, run = self._run(run_id)
            touched.append(run)
            version = run.save_checkpoint(audit, attempt=attempt, checkpoint=checkpoint)
            # After the duplicate test: a retry of a save made before its expiry is still answered
            # as that save. The refusal drops the event just triggered with the rest of the write.
            if version is None and expires_at is not None and expires_at <= audit.now:
                raise InvalidArgumentError("expires_at has already passed: the checkpoint cannot be resumed from",
                                           reason="CHECKPOINT_ALREADY_EXPIRED", field="expires_at")
            return version

        version, position = self._write(decide)
        return Receipt(self._answer(UUID(run_id), version, position), duplicate=version is not None)

    def finish_run(self, *, run_id: str, attempt: int, status: str, summary: dict | None = None, error: str = "",
                   principal: str = "", request_id: str = "") -> Receipt:
        """Finish the run as done, failed or stopped; the error is cut to 2,000 characters."""
        if status not in FINISH_STATUSES:
            raise InvalidArgumentError(f"status must be one of {FINISH_STATUSES}", reason="INVALID_STATUS")
        check_int(attempt, "attempt", minimum=1, maximum=2**31 - 1)
        summary = check_document(summary, "summary")
        if not isinstance(error, str):
            raise InvalidArgumentError("error must be a string", reason="INVALID_FIELD", field="error")
        # Diagnostic text is kept, not refused: a NUL (which PostgreSQL text cannot hold) is replaced.
        error = error[:ERROR_LENGTH_MAX].replace("\x00", "\ufffd")
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> int | None:
            _, run = self._run(run_id)
            touched.append(run)
            return run.finish(audit, attempt=attempt, status=status, summary=summary, error=error)

        version, position = self._write(decide)
        return Receipt(self._answer(UUID(run_id), version, position), duplicate=version is not None)

    def note_summary(self, *, run_id: str, summary: dict, principal: str = "", request_id: str = "") -> Receipt:
        """Merge notes into the run's summary, also after it finished."""
        summary = check_document(summary, "summary")
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> int | None:
            _, run = self._run(run_id)
            touched.append(run)
            return run.note_summary(audit, summary=summary)

        version, position = self._write(decide)
        return Receipt(self._answer(UUID(run_id), version, position), duplicate=version is not None)

    # Spend.

    def _account(self, name: str) -> Account:
        check_reference(name, "account")
        return self._load(ledger_id("account", name), "account", "ACCOUNT_NOT_FOUND", name)

    def _parents(self, parent: str, touched: list[LedgerAggregate]) -> list[Account]:
        chain: list[Account] = []
        while parent:
            if len(chain) >= PARENT_DEPTH_MAX:
                raise InvalidArgumentError("accounts nest too deeply", reason="PARENT_TOO_DEEP")
            account = self._account(parent)
            touched.append(account)
            chain.append(account)
            parent = account.parent
        return chain

    def _chain(self, name: str, touched: list[LedgerAggregate]) -> tuple[Account, list[Account]]:
        account = self._account(name)
        touched.append(account)
        return account, self._parents(account.parent, touched)

    def open_account(self, *, account: str, parent: str = "", cap_usd_micro: int | None = None,
                     principal: str = "", request_id: str = "") -> Receipt:
        """Open a spend account (idempotent by name; a different parent or cap is a conflict)."""
        check_reference(account, "account")
        check_reference(parent, "parent", required=False)
        if _is_uuid(account):
            raise InvalidArgumentError("account names in the form of a uuid are reserved for the accounts of runs",
                                       reason="ACCOUNT_NAME_RESERVED", account=account)
        if cap_usd_micro is not None:
            check_usd_micro(cap_usd_micro, "cap_usd_micro")
        audit = self._audit(principal, request_id)
        account_id = ledger_id("account", account)

        def decide(touched: list[LedgerAggregate]) -> bool:
            try:
                existing = self.repository.get(account_id)
            except AggregateNotFoundError:
                check_id(account, "account")  # A new account takes a name under the identifier rules.
                self._parents(parent, touched)
                touched.append(Account._create(Account.Opened, id=account_id, name=account, parent=parent,
                                               cap=cap_usd_micro, **audit.fields()))
                return True
            if existing.parent != parent or existing.cap != cap_usd_micro:
                raise AlreadyExistsError(f"account {account} exists with another parent or cap", account=account)
            return False

        created, position = self._write(decide)
        return Receipt(self._answer(account_id, 1, position), duplicate=not created, created=created)

    def set_cap(self, *, account: str, cap_usd_micro: int | None, principal: str = "", request_id: str = "") -> Receipt:
        """Change an account's cap (None = uncapped). A cap below committed + held is refused."""
        if cap_usd_micro is not None:
            check_usd_micro(cap_usd_micro, "cap_usd_micro")
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> int | None:
            holder = self._account(account)
            touched.append(holder)
            return spend.set_cap(holder, audit, cap_usd_micro)

        version, position = self._write(decide)
        return Receipt(self._answer(ledger_id("account", account), version, position), duplicate=version is not None)

    def reserve(self, *, account: str, reservation_id: str, amount_usd_micro: int, basis: dict | None = None,
                ttl: timedelta | None = None, attempt: int = 0, principal: str = "", request_id: str = "") -> Receipt:
        """Hold an amount before a billable call. Raises SpendCapExceededError (recorded)."""
        check_id(reservation_id, "reservation_id")
        check_usd_micro(amount_usd_micro, "amount_usd_micro")
        basis = check_basis(basis)
        check_int(attempt, "attempt", maximum=2**31 - 1)
        ttl = RESERVATION_TTL_DEFAULT if ttl is None or ttl == timedelta(0) else ttl
        if not timedelta(0) < ttl <= RESERVATION_TTL_MAX:
            raise InvalidArgumentError("ttl must be positive and at most 7 days", reason="INVALID_TTL")
        audit = self._audit(principal, request_id)
        expires_at = audit.now + ttl

        def decide(touched: list[LedgerAggregate]) -> tuple[int | None, datetime]:
            holder, parents = self._chain(account, touched)
            try:
                version = spend.reserve(holder, parents, audit, reservation_id=reservation_id,
                                        amount=amount_usd_micro, basis=basis, expires_at=expires_at, attempt=attempt,
                                        recall=self._recall_spend(holder))
            except LedgerError:
                # The refusal is itself recorded for audit, with any expiries found on the way.
                pending = [a for a in touched if a.pending_events]
                if pending:
                    self.save(*pending)
                    self.projector.wake()
                raise
            entry = holder.entry(reservation_id, self._recall_spend(holder))
            return version, entry.get("expires_at")

        (version, expires), position = self._write(decide)
        return Receipt(self._answer(ledger_id("account", account), version, position), duplicate=version is not None,
                       expires_at=expires)

    def commit(self, *, account: str, reservation_id: str, actual_usd_micro: int, basis: dict | None = None,
               principal: str = "", request_id: str = "") -> Receipt:
        """Settle a reservation with the actual amount; above the hold it is an overrun."""
        check_reference(reservation_id, "reservation_id")
        check_usd_micro(actual_usd_micro, "actual_usd_micro")
        basis = check_basis(basis)
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> tuple[int | None, int]:
            holder, parents = self._chain(account, touched)
            return spend.commit(holder, parents, audit, reservation_id=reservation_id, actual=actual_usd_micro,
                                basis=basis, recall=self._recall_spend(holder))

        (version, overrun), position = self._write(decide)
        return Receipt(self._answer(ledger_id("account", account), version, position), duplicate=version is not None,
                       overrun_usd_micro=overrun)

    def release(self, *, account: str, reservation_id: str, reason: str = "", principal: str = "",
                request_id: str = "") -> Receipt:
        """Give a reservation back (on failure or when the call was not made)."""
        check_reference(reservation_id, "reservation_id")
        check_text(reason, "reason")
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> int | None:
            holder, parents = self._chain(account, touched)
            return spend.release(holder, parents, audit, reservation_id=reservation_id, reason=reason,
                                 recall=self._recall_spend(holder))

        version, position = self._write(decide)
        return Receipt(self._answer(ledger_id("account", account), version, position), duplicate=version is not None)

    def charge(self, *, account: str, charge_id: str, amount_usd_micro: int, basis: dict | None = None,
               reason: str = "", principal: str = "", request_id: str = "") -> Receipt:
        """Record spend after the fact, in full; what lies beyond the cap is an overrun."""
        check_id(charge_id, "charge_id")
        check_usd_micro(amount_usd_micro, "amount_usd_micro")
        basis = check_basis(basis)
        check_text(reason, "reason")
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> tuple[int | None, int]:
            holder, parents = self._chain(account, touched)
            return spend.charge(holder, parents, audit, charge_id=charge_id, amount=amount_usd_micro, basis=basis,
                                reason=reason, recall=self._recall_spend(holder))

        (version, overrun), position = self._write(decide)
        return Receipt(self._answer(ledger_id("account", account), version, position), duplicate=version is not None,
                       overrun_usd_micro=overrun)

    def expire_reservations(self, *, principal: str = "ledger", request_id: str = "") -> int:
        """The sweep: record SpendExpired for every pending reservation past its expiry.
        Returns how many expired."""
        now = self.clock()
        expired = 0
        # The overdue holds are found in the spend view: let it reflect every write first.
        self.wait(self.head())
        for name in self.views.accounts_with_overdue_holds(now):
            audit = Audit(principal, request_id, now)

            def decide(touched: list[LedgerAggregate], name: str = name) -> int:
                holder, parents = self._chain(name, touched)
                return spend.expire_overdue(holder, parents, audit)

            count, _ = self._write(decide)
            expired += count
        return expired

    @_storage_read
    def account_now(self, account: str) -> dict[str, Any]:
        """An account's totals straight from its aggregate (no projection in between)."""
        with self._lock:
            return self._account(account).summary()

    # Registry.

    def register(self, *, family: str, artifact_uri: str, digest: str, source_run_id: str = "",
                 source_step: int = 0, metadata: dict | None = None, principal: str = "",
                 request_id: str = "") -> Receipt:
        """Register an immutable version (never promotes). Idempotent by digest."""
        check_reference(family, "family")
        check_text(artifact_uri, "artifact_uri")
        if not artifact_uri:
            raise InvalidArgumentError("artifact_uri is required", reason="MISSING_FIELD", field="artifact_uri")
        digest = _sha256_digest(digest)
        check_reference(source_run_id, "source_run_id", required=False)
        check_int(source_step, "source_step")
        fields = {"artifact_uri": artifact_uri, "digest": digest, "source_run_id": source_run_id,
                  "source_step": source_step, "metadata": check_document(metadata, "metadata")}
        audit = self._audit(principal, request_id)
        family_id = ledger_id("family", family)

        def decide(touched: list[LedgerAggregate]) -> tuple[int, int | None]:
            try:
                aggregate = self.repository.get(family_id)
            except AggregateNotFoundError:
                check_id(family, "family")  # A new family takes a name under the identifier rules.
                aggregate = Family._create(Family.Created, id=family_id, name=family, **audit.fields())
            touched.append(aggregate)
            return aggregate.register(audit, version_fields=fields)

        (number, version), position = self._write(decide)
        return Receipt(self._answer(family_id, version, position), duplicate=version is not None, version=number)

    def _family(self, name: str) -> Family:
        check_reference(name, "family")
        return self._load(ledger_id("family", name), "family", "FAMILY_NOT_FOUND", name)

    def promote(self, *, family: str, version: int, expected_current: int, verdict: dict, principal: str = "",
                request_id: str = "") -> Receipt:
        """Compare-and-set promotion through a passing gate verdict {passed, reason, stats}."""
        check_int(version, "version", minimum=1, maximum=2**31 - 1)
        check_int(expected_current, "expected_current", maximum=2**31 - 1)
        verdict = check_document(verdict, "verdict")
        audit = self._audit(principal, request_id)
        return self._promotion(family, audit, lambda f: f.promote(audit, version=version,
                                                                  expected_current=expected_current, verdict=verdict))

    def rollback(self, *, family: str, version: int, expected_current: int, reason: str, principal: str = "",
                 request_id: str = "") -> Receipt:
        """Promote an earlier, once-promoted version again, with a reason."""
        check_int(version, "version", minimum=1, maximum=2**31 - 1)
        check_int(expected_current, "expected_current", maximum=2**31 - 1)
        check_text(reason, "reason")
        audit = self._audit(principal, request_id)
        return self._promotion(family, audit, lambda f: f.rollback(audit, version=version,
                                                                   expected_current=expected_current, reason=reason))

    def _promotion(self, family: str, audit: Audit, act: Callable[[Family], int | None]) -> Receipt:
        def decide(touched: list[LedgerAggregate]) -> tuple[int | None, int, int]:
            aggregate = self._family(family)
            touched.append(aggregate)
            version = act(aggregate)
            entry = next(p for p in reversed(aggregate.promotions)
                         if version is None or p["event_version"] == version)
            return version, entry["version"], entry["previous"]

        (version, current, previous), position = self._write(decide)
        return Receipt(self._answer(ledger_id("family", family), version, position), duplicate=version is not None,
                       version=current, previous=previous)

    # Reads come from the views; each may wait for a position first (read-your-writes).

    def wait(self, position: int, timeout_s: float = 5.0) -> None:
        """Block until every view reflects `position`, else raise UnavailableError."""
        if position > 0 and not self.projector.wait(position, timeout_s):
            self._check_projection()
            raise UnavailableError(f"the views did not reach position {position} in {timeout_s} s",
                                   reason="VIEW_NOT_CAUGHT_UP", position=position)

    @_storage_read
    def head(self) -> int:
        """The position of the newest event in the log (0 when empty)."""
        return self.storage.head()

    def check(self) -> int:
        """What health follows: the head of the log, read from storage, while the views are
        projected. Raises UnavailableError when storage cannot be read or projection stopped."""
        self._check_projection()
        return self.head()

    def _check_projection(self) -> None:
        failure = self.projector.failure
        if failure is not None:
            raise UnavailableError(f"the views are stopped: {failure}", reason="PROJECTION_FAILED",
                                   position=failure.position)

    @_storage_read
    def run_state(self, run_id: str, *, min_position: int = 0, timeout_s: float = 5.0) -> dict[str, Any]:
        """The RunState of ledger.queries.ViewReader.run_state. Raises NotFoundError."""
        check_reference(run_id, "run_id")
        self.wait(min_position, timeout_s)
        state = self.views.run_state(run_id, self.clock())
        if state is None:
            raise NotFoundError(f"no run {run_id}", reason="RUN_NOT_FOUND", run_id=run_id)
        return state

    @_storage_read
    def series(self, run_id: str, *, from_step: int = 0, limit: int = 1000, metrics: Sequence[str] = (),
               include_superseded: bool = False, min_position: int = 0, timeout_s: float = 5.0) -> dict[str, Any]:
        """A page of a run's series (one record per step unless superseded ones are asked for)."""
        check_int(from_step, "from_step")
        check_int(limit, "limit", minimum=1, maximum=PAGE_SIZE_MAX)
        self.run_state(run_id, min_position=min_position, timeout_s=timeout_s)
        return self.views.series(run_id, from_step=from_step, limit=limit, metrics=tuple(metrics),
                                 include_superseded=include_superseded)

    @_storage_read
    def account(self, account: str, *, min_position: int = 0, timeout_s: float = 5.0) -> dict[str, Any]:
        check_reference(account, "account")
        self.wait(min_position, timeout_s)
        found = self.views.account(account)
        if found is None:
            raise NotFoundError(f"no account {account}", reason="ACCOUNT_NOT_FOUND", account=account)
        return found

    @_storage_read
    def reservations(self, account: str, *, limit: int = 1000, after_position: int = 0, min_position: int = 0,
                     timeout_s: float = 5.0) -> list[dict[str, Any]]:
        self.account(account, min_position=min_position, timeout_s=timeout_s)
        check_int(limit, "limit", minimum=1, maximum=PAGE_SIZE_MAX)
        return self.views.reservations(account, limit=limit, after_position=after_position)

    @_storage_read
    def family(self, family: str, *, min_position: int = 0, timeout_s: float = 5.0) -> dict[str, Any]:
        check_reference(family, "family")
        self.wait(min_position, timeout_s)
        found = self.views.family(family)
        if found is None:
            raise NotFoundError(f"no family {family}", reason="FAMILY_NOT_FOUND", family=family)
        return found

    @_storage_read
    def list_runs(self, *, limit: int = 100, after: tuple[float, str] | None = None, status: str = "",
                  min_position: int = 0, timeout_s: float = 5.0) -> list[dict[str, Any]]:
        """Runs, newest first; `after` is the (opened_epoch, run_id) of the previous page's last."""
        check_int(limit, "limit", minimum=1, maximum=PAGE_SIZE_MAX + 1)
        self.wait(min_position, timeout_s)
        return self.views.list_runs(limit=limit, after=after, status=status)

    @_storage_read
    def families(self, *, min_position: int = 0, timeout_s: float = 5.0) -> list[dict[str, Any]]:
        """Every registry family with its current version and number of versions."""
        self.wait(min_position, timeout_s)
        return self.views.families()

    @_storage_read
    def read_events(self, *, from_position: int = 1, limit: int = 1000, types: Sequence[str] = (),
                    originator_ids: Sequence[str] = (), bytes_max: int | None = None) -> list[dict[str, Any]]:
        """Events of the log from a position, decoded: {position, type, originator_id,
        originator_version, timestamp, principal, request_id, data}. With `bytes_max` the page
        also ends before the event that would take its stored bytes past that budget; its first
        event is in it however large, so a reader that pages on always gets past every event."""
        check_int(from_position, "from_position")
        check_int(limit, "limit", minimum=1, maximum=PAGE_SIZE_MAX)
        if bytes_max is not None:
            check_int(bytes_max, "bytes_max", minimum=1)
        topics = [topic for name in types for topic in event_topics(name)]
        if types and not topics:
            return []
        ids = [UUID(originator_id) for originator_id in originator_ids]
        out: list[dict[str, Any]] = []
        start, stored_bytes, largest = max(1, from_position), 0, 1
        # Without a budget the page is read at once; with one, in windows that the budget left
        # would hold at the largest size seen so far (the first window is one event), so no more
        # than about a page of stored events is ever held.
        window = limit if bytes_max is None else 1
        while len(out) < limit:
            asked = min(window, limit - len(out))
            if ids:
                notifications = self.storage.select_notifications_of(ids, start, asked, topics)
            else:
                notifications = self.recorder.select_notifications(start, asked, topics=topics)
            for notification in notifications:
                size = len(notification.state)
                if bytes_max is not None and out and stored_bytes + size > bytes_max:
                    return out
                stored_bytes, largest = stored_bytes + size, max(largest, size)
                out.append(self._event(notification))
            if len(notifications) < asked or bytes_max is None:
                return out
            start = notifications[-1].id + 1
            window = max(1, (bytes_max - stored_bytes) // largest)
        return out

    def _event(self, notification: Any) -> dict[str, Any]:
        data = self.mapper.transcoder.decode(notification.state)
        data.pop("originator_topic", None)
        return {
            "position": notification.id,
            "type": notification.topic.rsplit(":", 1)[-1],
            "originator_id": str(notification.originator_id),
            "originator_version": notification.originator_version,
            "timestamp": data.pop("timestamp", None),
            "principal": data.pop("principal", ""),
            "request_id": data.pop("request_id", ""),
            "data": data,
        }


def _is_uuid(name: str) -> bool:
    """Whether a name reads as a uuid (in any case, with or without braces or dashes)."""
    try:
        UUID(name)
    except ValueError:
        return False
    return True


def _sha256_digest(digest: Any) -> str:
    """A content digest as "sha256:<64 lowercase hex>"; a bare hex sha256 is accepted too."""
    hexdigest = digest[7:] if isinstance(digest, str) and digest.startswith("sha256:") else digest
    if not isinstance(hexdigest, str) or len(hexdigest) != 64 or any(c not in "0123456789abcdef" for c in hexdigest):
        raise InvalidArgumentError('digest must be "sha256:" and 64 lowercase hex digits', reason="INVALID_DIGEST")
    return "sha256:" + hexdigest
