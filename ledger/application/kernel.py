"""The write kernel of the ledger application: the eventsourcing Application it is.

`Kernel` opens the backend that ledger.backend chooses, with its views and projector, and saves
aggregates with the keys index (ledger.storage.keys) and snapshots. It makes the seams the
bounded contexts of the application are written over: the writer (ledger.application.writer: the
group commit every command's decision runs in), which loads aggregates through `aggregates`
(ledger.application.loading), and the reader (ledger.application.reads). `Ledger`
(ledger.application.ledger) composes the contexts over them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Self
from uuid import UUID

from eventsourcing.application import Application, ProcessingEvent
from eventsourcing.persistence import EventStore, InterfaceError, OperationalError, Recording

from ledger.application.loading import Aggregates
from ledger.application.outcomes import utc_now
from ledger.application.reads import Reads
from ledger.application.snapshots import TolerantSnapshots, snapshot_not_stored
from ledger.application.writer import Writer
from ledger.backend import open_storage, persistence_env, uses_postgres
from ledger.domain.accounts import Account
from ledger.domain.base import LedgerAggregate
from ledger.domain.bills import Bill
from ledger.domain.errors import Unavailable
from ledger.domain.registry import Family
from ledger.domain.runs import Run
from ledger.storage import transcoder
from ledger.storage.base import READ_ONLY, Storage, read_only
from ledger.storage.keys import event_keys
from ledger.storage.sqlite import read_only_uri
from ledger.storage.version import check_file_schema, check_schema, rebuild_stale_views

__all__ = ["Kernel"]


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
        # Called after each group commit with how many commands it answered and the events it
        # saved (services.runtime.metrics counts them); called under the write lock, so kept cheap.
        self.commit_listeners: list[Callable[[int, Sequence[Any]], None]] = []
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
            rebuild_stale_views(self.storage)  # Before the projector starts.
            # Every id the log holds is in the keys index before any command is decided, so a
            # retry is never answered as new: checked here, at open, with two grouped counts, so
            # that a lookup that finds nothing (every new id) costs one indexed query and no more.
            self.storage.reindex_keys()
        self.projector = self.storage.projector(self)
        self.aggregates = Aggregates(self.repository, self.recorder, self.mapper, self.storage)
        self.writer = Writer(
            self,
            self.aggregates,
            self.storage,
            self.projector,
            clock=lambda: self.clock(),
            commit_listeners=self.commit_listeners,
        )
        self.reader = Reads(self.storage, self.projector, self.recorder, self.mapper, clock=lambda: self.clock())
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
        events = [event for aggregate in aggregates for event in aggregate.collect_events()]
        processing_event = self.processing_event(events, {aggregate.id: aggregate for aggregate in aggregates})
        processing_event.saved_kwargs.update(kwargs)
        recordings = self.record(processing_event)
        self.take_snapshots(processing_event)
        return recordings

    def processing_event(self, events: Sequence[Any], aggregates: dict[UUID, LedgerAggregate]) -> ProcessingEvent[UUID]:
        """What one transaction saves: `events` of `aggregates`, with the client-made ids they use,
        which are indexed for good in the same transaction (ledger.storage.keys)."""
        processing_event: ProcessingEvent[UUID] = ProcessingEvent()
        processing_event.events.extend(events)
        processing_event.aggregates.update(aggregates)
        keys = [
            (event.originator_id, key, event.originator_version)
            for event in processing_event.events
            for key in event_keys(event)
        ]
        if keys:
            # In one order, so concurrent writers (PostgreSQL replicas) never lock rows crosswise.
            processing_event.saved_kwargs["keys"] = sorted(keys)
        return processing_event

    def record(self, processing_event: ProcessingEvent[UUID]) -> list[Recording[UUID]]:
        """Save what `processing_event` holds in one transaction."""
        return self._record(processing_event)

    def take_snapshots(self, processing_event: ProcessingEvent[UUID]) -> None:
        """Snapshot from the aggregate just saved, instead of the library's way of replaying it
        from the store since the last snapshot. An aggregate whose saved events reach a multiple
        of its interval is snapshotted as saved: at that version, or at its last event when the
        save holds later ones of it (a group commit), since a load starts from any snapshot at or
        below the version it wants. Only an aggregate whose state in memory is not what was saved
        (a refusal in its group left it stale) is replayed from the store. A snapshot the store
        cannot take is logged and left out (ledger.application.snapshots): the events it would
        have summed up are saved, and their writes are answered as saved."""
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
            try:
                if aggregate.version == last[aggregate_id]:
                    self.snapshots.put([type(aggregate).Snapshot.take(aggregate)])
                else:
                    self.take_snapshot(aggregate_id, version=version)
            except Exception as error:  # The events are saved: a snapshot left out costs a replay.
                snapshot_not_stored(aggregate_id, version, error)
