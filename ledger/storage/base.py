"""What every storage backend gives the application, whichever database holds the log.

eventsourcing records the events; a Storage adds what the library does not: the database holding
the views (schema, transactions, tracking), the position of a stored event for idempotent answers,
the keys index (ledger.storage.keys), the seals of the hash chain (ledger.storage.chain) and which
errors mean "storage unavailable". The two backends, ledger.storage.sqlite and
ledger.storage.postgres, subclass it; ledger.backend picks one.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.persistence import InterfaceError, Notification, OperationalError

from ledger.domain.topics import event_topics
from ledger.storage.chain import ChainRow
from ledger.storage.keys import KEYED_EVENTS, SEVERAL_KEYS_EVENTS, event_keys
from ledger.views.projector import Projector
from ledger.views.queries import ViewReader

__all__ = [
    "KeyRow",
    "Storage",
    "INDEX_PAGE_EVENTS",
    "READ_ONLY",
    "ViewRead",
    "keyed_topics",
    "read_only",
    "tracking_upsert",
]

log = logging.getLogger("trainledger.ledger")

# Keys rows are written with the events they index: (aggregate id, key, the event's version).
KeyRow = tuple[UUID, str, int]
# Events read per page when the keys index is built from the log, or the log is filtered.
INDEX_PAGE_EVENTS = 1000
#: Runs one SELECT on the views inside a read of them all as of one moment; its rows, fetched lazily.
ViewRead = Callable[[str], Iterable[Any]]


#: The setting (in eventsourcing's environment, from Kernel.open(read_only=True)) that opens a ledger to
#: check it: its storage never writes (SQLite: read-only connections; PostgreSQL: read-only
#: transactions), makes no tables and rebuilds no index.
READ_ONLY = "LEDGER_READ_ONLY"


def read_only(app: Application[UUID]) -> bool:
    """Whether `app` was opened to check its storage, never to write it."""
    return app.env.get(READ_ONLY, "") == "y"


def keyed_topics() -> list[str]:
    """The stored topics of the events that carry keys (ledger.storage.keys)."""
    return [topic for name in KEYED_EVENTS for topic in event_topics(name)]


@functools.cache
def tracking_upsert(views: int) -> str:
    """The statement that sets the tracking positions of `views` views at once: parameters
    (view, position) for each (the same in SQLite and PostgreSQL)."""
    return (
        "INSERT INTO view_tracking (view, position) VALUES "
        + ", ".join(["(?, ?)"] * views)
        + " ON CONFLICT (view) DO UPDATE SET position = excluded.position"
    )


class Storage:
    """What a backend provides to the application and the projector."""

    #: True when other processes may write the same log (refusals are re-checked on fresh state).
    shared = False
    outage_errors: tuple[type[BaseException], ...] = (OperationalError, InterfaceError)
    #: What ORDER BY adds to a text column to sort it in byte order (SQLite's own order).
    byte_order = ""
    #: The names of the tables the views' connection sees (a file last written by an older version
    #: may lack a view's table until it is opened to write).
    tables_select = "SELECT name FROM sqlite_master WHERE type = 'table'"
    views: ViewReader
    app: Application[UUID]

    def projector(self, app: Application[UUID]) -> Projector:
        return Projector(app, self)

    def position_of(self, originator_id: UUID, version: int) -> int:
        """The log position of an aggregate's event; LookupError when there is none."""
        raise NotImplementedError

    def head(self) -> int:
        """The position of the newest event in the log (0 when empty)."""
        raise NotImplementedError

    def key_versions(self, originator_id: UUID, key: str) -> list[int]:
        """The versions of the events of `originator_id` that used `key` (ledger.storage.keys), oldest first."""
        raise NotImplementedError

    def latest_key_versions(self, originator_id: UUID, keys: Sequence[str]) -> dict[str, int]:
        """The latest version that used each of `keys` (those used at all), in a few queries."""
        raise NotImplementedError

    def index_log(self) -> int:
        """Write the keys of every event in the log into the index (idempotent). Returns the
        number of keys written."""
        topics = keyed_topics()
        written, start = 0, 1
        while True:
            page = self.app.recorder.select_notifications(start, INDEX_PAGE_EVENTS, topics=topics)
            if not page:
                return written
            rows: list[KeyRow] = []
            for notification in page:
                event = self.app.mapper.to_domain_event(notification)
                rows += [(event.originator_id, key, event.originator_version) for key in event_keys(event)]
            self.insert_keys(rows)
            written += len(rows)
            start = page[-1].id + 1

    def insert_keys(self, rows: list[KeyRow]) -> None:
        raise NotImplementedError

    def reindex_keys(self) -> int:
        """Rebuild from the log the keys of every aggregate whose keyed events the index does not
        all cover (rows deleted behind the ledger's back, or a ledger written before the index
        existed), so a retried id is never taken for a new one. Grouped counts when the index is
        whole; the events of an aggregate found short are read again, and so are those of every
        aggregate whose one event may carry several keys (a bill's lines, SEVERAL_KEYS_EVENTS),
        where a lost key leaves its version indexed. Returns the keys written."""
        topics = keyed_topics()
        logged, indexed = self.keyed_event_counts(topics)
        several = set(self.keyed_event_counts([t for name in SEVERAL_KEYS_EVENTS for t in event_topics(name)])[0])
        wanted, written = set(topics), 0
        for aggregate_id, count in logged.items():
            # The log is counted first: writers made since add their events and keys together, so
            # an index found short of the log's count lacks keys, whatever was written meanwhile.
            if indexed.get(aggregate_id, 0) >= count and aggregate_id not in several:
                continue
            version = 0
            while True:
                stored = self.app.recorder.select_events(aggregate_id, gt=version, limit=INDEX_PAGE_EVENTS)
                if not stored:
                    break
                version = stored[-1].originator_version
                rows = [
                    (aggregate_id, key, event.originator_version)
                    for event in (self.app.mapper.to_domain_event(s) for s in stored if s.topic in wanted)
                    for key in event_keys(event)
                ]
                missing = list(set(rows) - self.indexed(rows)) if rows else []
                if missing:
                    self.insert_keys(missing)
                    written += len(missing)
        if written:
            log.warning("the keys index lacked %d keys that events of the log made: rebuilt them from the log", written)
        return written

    def keyed_event_counts(self, topics: Sequence[str]) -> tuple[dict[UUID, int], dict[UUID, int]]:
        """By aggregate: how many of its events have one of `topics`, and how many of its
        versions the keys index holds."""
        raise NotImplementedError

    def indexed(self, rows: Sequence[KeyRow]) -> set[KeyRow]:
        """Those of `rows` that the keys index holds."""
        raise NotImplementedError

    def keys_count(self) -> int:
        """How many rows the keys index holds."""
        raise NotImplementedError

    def key_rows(self, after: KeyRow | None, limit: int) -> list[KeyRow]:
        """The first `limit` rows of the keys index after `after`, in the index's order."""
        raise NotImplementedError

    # The hash chain (ledger.storage.chain).

    def seals_missing(self) -> bool:
        """Whether the log holds events but no seals (a ledger written before the chain existed)."""
        raise NotImplementedError

    def seal_log(self) -> int:
        """Seal the whole log in one transaction that holds off every writer (when it has no seals
        yet; else nothing). Returns the number of events sealed."""
        raise NotImplementedError

    def last_seal(self) -> tuple[int, bytes]:
        """The head of the chain as stored: the newest seal's (position, digest); (0, genesis) when none."""
        raise NotImplementedError

    def chain_page(self, after: int, stop: int, limit: int) -> tuple[list[ChainRow], list[tuple[int, bytes]]]:
        """The first `limit` events and the first `limit` seals with positions in (after, stop], in
        position order (a Pager of ledger.storage.chain)."""
        raise NotImplementedError

    def digests(self, positions: Sequence[int]) -> dict[int, bytes]:
        """The stored digests of `positions` , by position; none for a position without a seal."""
        raise NotImplementedError

    def snapshot_ids(self) -> list[UUID]:
        """The aggregates that have stored snapshots."""
        raise NotImplementedError

    def view_read(self) -> AbstractContextManager[ViewRead]:
        """Read the views (their tables and view_tracking) as of one moment."""
        raise NotImplementedError

    def select_notifications_of(
        self, originator_ids: list[UUID], start: int, limit: int, topics: list[str]
    ) -> list[Notification]:
        """Notifications of the given aggregates from position `start`. This fallback filters
        the whole log; backends override it with an indexed query."""
        found: list[Notification] = []
        while len(found) < limit:
            page = self.app.recorder.select_notifications(start, INDEX_PAGE_EVENTS, topics=topics)
            if not page:
                break
            found += [n for n in page if n.originator_id in originator_ids]
            start = page[-1].id + 1
        return found[:limit]

    def tracking_positions(self) -> dict[str, int]:
        """Each view's committed position."""
        raise NotImplementedError

    def transaction(self) -> AbstractContextManager[Any]:
        """A write transaction on the views; its cursor is what their handlers write with."""
        raise NotImplementedError

    def lock_tracking(self, cursor: Any) -> dict[str, int]:
        """The views' positions, read (and held) inside the caller's transaction."""
        raise NotImplementedError

    def set_tracking(self, cursor: Any, views: Sequence[str], position: int) -> None:
        """Move `views` to `position` inside the caller's transaction."""
        raise NotImplementedError

    def drop(self, views: tuple[str, ...]) -> None:
        """Empty `views` and reset their positions (a rebuild projects them again)."""
        raise NotImplementedError

    def close(self) -> None:
        pass
