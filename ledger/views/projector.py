"""Drives the views from the log: batched, exactly once, with an in-process signal for waiters.

SQLite offers no subscriptions, so the projector is a thread of ours: woken by the application
after each save (and by a short poll for writers in other processes), it reads the log after
the lowest view position in chunks, applies each chunk to every view that has not seen it, and
commits the view rows with the views' tracking positions in one transaction. A crash between
chunks re-applies nothing and skips nothing. `wait(position)` blocks on a condition variable,
not a sleep loop.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from typing import Any
from uuid import UUID

from ledger.views.handlers import handlers
from ledger.views.handling import Names, apply_events, prepare
from ledger.views.provenance.lineage import touched
from ledger.views.schema import VIEWS
from ledger.views.store import ViewStore

__all__ = ["Projector", "ProjectionFailed"]

log = logging.getLogger(__name__)

CHUNK_EVENTS = 256
# A chunk stops growing past this many step rows, so one transaction never holds the writer
# lock for long.
CHUNK_ROWS = 20_000
POLL_S = 0.5
GATHER_S = 0.002
# How often a reader (a ledger opened with project=False) re-reads the committed positions
# while it waits for one.
FOLLOW_POLL_S = 0.05
# At most this many events (and steps in them) handed over by this process's writers wait for the
# projector; past that, offers are dropped and the projector reads those events from the log.
HANDED_EVENTS_MAX = 4 * CHUNK_EVENTS
HANDED_ROWS_MAX = 5 * CHUNK_ROWS


class ProjectionFailed(Exception):
    """Applying an event to the views failed for a reason other than a storage outage: a bug,
    since every event the domain accepts must project. The projector stops at `position` and
    says so (health turns NOT_SERVING) instead of retrying the same event forever."""

    def __init__(self, position: int, event: Any, error: BaseException) -> None:
        super().__init__(
            f"projecting the event at position {position} ({type(event).__qualname__}) failed: "
            f"{type(error).__name__}: {error}"
        )
        self.position = position


class Projector:
    """Projects `app`'s log into the views held by `database` (a ViewStore: ledger.storage.sqlite,
    ledger.storage.postgres).

    Only a started projector (`start()`) or an explicit `catch_up()`/`rebuild()` writes the views;
    a ledger opened to read (project=False) never projects: its `wait()` follows the positions
    that the projecting process commits. Every chunk re-reads the tracking positions inside its
    own transaction and applies only what they have not seen, so two projectors on one store can
    never both apply an event."""

    def __init__(self, app: Any, database: ViewStore[Any], *, poll_s: float = POLL_S) -> None:
        self.app = app
        self.database = database
        self.poll_s = poll_s
        #: Account and family names by aggregate id, this projector's own.
        self.names = Names()
        self.handlers = handlers(self.names)
        self.positions: dict[str, int] = database.tracking_positions()
        self._condition = threading.Condition()
        # One projection at a time in this process: the background thread and rebuild() share
        # the database's writer connection.
        self._projecting = threading.RLock()
        self._wake = threading.Event()
        self._urgent = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None
        #: Set when an event could not be projected (a bug): projection has stopped before it.
        self.failure: ProjectionFailed | None = None
        self.listeners: list[Callable[[int], None]] = []
        #: Called in the projector's thread after each chunk with the ids of the aggregates whose
        #: events it applied (and of the runs a run it applied was opened from: their children
        #: changed, lineage.touched), so that a waiter on one aggregate is woken by that aggregate alone;
        #: with None when that is not known (any aggregate may have changed).
        self.originator_listeners: list[Callable[[frozenset[UUID] | None], None]] = []
        # Events this process has just saved, with their positions (`offer`): applied as they are,
        # they are neither read back from the log nor decoded again.
        self._handed: collections.deque[tuple[int, Any, int]] = collections.deque()
        self._handed_rows = 0
        self._handed_lock = threading.Lock()
        # An offer was dropped since the log was last read: the next pass must read it.
        self._dropped = False
        # A wake other than an offer's (wake(), a waiter, the poll), or the first pass: the next
        # pass reads the log even when it was handed nothing.
        self._look = True
        # The views with a gathered handler (the chart's rollup): what they write is computed
        # before the chunk's transaction (`prepare`), so the writer lock is held to write it only.
        self._preparing = tuple(
            view for view in VIEWS if any(getattr(h, "gathered", False) for h in self.handlers[view].values())
        )

    @property
    def position(self) -> int:
        """The position every view has reached."""
        return min(self.positions.values())

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="trainledger-projector", daemon=True)
            self._thread.start()

    def follow(self) -> None:
        """Track what other processes project instead of projecting (shared storage only)."""
        raise NotImplementedError("only a shared database (PostgreSQL) is projected by other processes")

    def stop(self) -> None:
        self._stop.set()
        self._urgent.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def wake(self) -> None:
        """Project what the log holds now (other processes' events too)."""
        self._look = True
        self._wake.set()

    def offer(self, events: list[tuple[int, Any]]) -> None:
        """Hand over events just saved by this process, as (position, event) in position order, so
        that a running projector applies them without reading them back. Only a run of positions
        that follows the projector's own, with no number missing, is used: anything else is read
        from the log (another process's events, offers dropped past HANDED_*_MAX)."""
        if self._thread is None or not events:
            return
        handed = [(position, event, len(getattr(event, "steps", ()))) for position, event in events]
        rows = sum(count for *_, count in handed)
        with self._handed_lock:
            if len(self._handed) + len(handed) > HANDED_EVENTS_MAX or self._handed_rows + rows > HANDED_ROWS_MAX:
                self._dropped = True  # Dropped whole: the projector reads these from the log.
            else:
                self._handed.extend(handed)
                self._handed_rows += rows
        self._wake.set()

    def _take_handed(self, start: int, stop: int | None) -> list[tuple[int, Any]]:
        """The handed-over events from `start` on without a gap (a chunk's worth at most); those
        before `start` are forgotten."""
        taken: list[tuple[int, Any]] = []
        with self._handed_lock:
            handed = self._handed
            while handed and handed[0][0] < start:
                self._handed_rows -= handed.popleft()[2]
            rows = 0
            while handed and handed[0][0] == start + len(taken) and len(taken) < CHUNK_EVENTS and rows < CHUNK_ROWS:
                if stop is not None and handed[0][0] > stop:
                    break
                position, event, count = handed.popleft()
                self._handed_rows -= count
                rows += count
                taken.append((position, event))
        return taken

    def wait(self, position: int, timeout_s: float) -> bool:
        """Block until every view reflects `position` or the timeout passes (False at once when
        projection has failed)."""
        deadline = time.monotonic() + timeout_s
        if self._thread is None:  # A reader: follow what the projecting process commits.
            while True:
                self.positions = self.database.tracking_positions()
                left = deadline - time.monotonic()
                if self.position >= position or left <= 0:
                    return self.position >= position
                time.sleep(min(FOLLOW_POLL_S, left))
        with self._condition:
            while self.position < position:
                if self.failure is not None:
                    return False
                self._urgent.set()
                self.wake()
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._condition.wait(left)
        return True

    def _sleep(self) -> None:
        """Until woken (or the poll interval passes). Writers wake the projector after every
        save: gathering a few milliseconds of saves into one chunk keeps its transactions from
        contending with each write. A reader waiting for a position cuts the gathering short."""
        if not self._wake.wait(self.poll_s):
            self._look = True  # The poll: other processes' events are found by it.
        if not self._urgent.is_set():
            self._urgent.wait(GATHER_S)
        self._wake.clear()
        self._urgent.clear()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sleep()
            try:
                self._pass()
                self.error = None
            except ProjectionFailed as failure:
                self._fail(failure)
                return
            except Exception as error:  # A storage failure: keep trying.
                self.error = error
                log.warning("projection paused (%s: %s); retrying", type(error).__name__, error)
                self._stop.wait(self.poll_s)

    def _fail(self, failure: ProjectionFailed) -> None:
        """Stop projecting, loudly: the log says where and why, waiters are told at once."""
        self.failure = self.error = failure
        log.critical("projection stopped: %s", failure, exc_info=failure.__cause__)
        with self._condition:
            self._condition.notify_all()
        for listener in list(self.listeners):
            listener(self.position)

    def catch_up(self, stop: int | None = None) -> int:
        """Apply everything up to `stop` (default: the head). Returns events applied. Raises
        ProjectionFailed when an event cannot be applied for a reason other than storage."""
        with self._projecting:
            return self._catch_up(stop)

    def _pass(self) -> int:
        """One pass of the background thread, woken by an offer, wake() (a waiter, PostgreSQL's
        NOTIFY of another process's insert) or the poll: catch_up(), except that the log is read
        only when something other than an offer woke it or an offer was dropped, and not after
        what was handed over, or when an offer waits behind a gap. Other processes' events are
        read by a pass that looks (the first, the poll, a waiter's wake, the NOTIFY) or at the gap
        they leave before this process's next offer.
        Reading the log in every pass cost each save a read that almost always found nothing (one
        after the handover, and one more when a save's wake came after a pass had already taken
        its offer)."""
        look, self._look = self._look, False
        with self._projecting:
            return self._catch_up(None, look=look)

    def _catch_up(self, stop: int | None, *, look: bool | None = None) -> int:
        """Apply what was handed over and what the log holds. `look`: None (catch_up) reads the log
        whenever nothing is handed over; True or False, a background pass (see _pass)."""
        applied = 0
        # What the last read returned past the chunk it made (a chunk stops at CHUNK_ROWS steps),
        # and the position the next chunk must start from to use it: each event is read once.
        # Read again, a rebuild fetched each page of CHUNK_EVENTS events once per chunk of it.
        ahead: list[Any] = []
        ahead_from = 0
        handed = False
        while True:
            start = self.position + 1
            events = self._take_handed(start, stop)
            if events:
                handed = True
            else:
                if ahead and start == ahead_from:
                    notifications = ahead
                elif (
                    look is not None
                    and not self._dropped
                    and not self._handed
                    and (handed or not look)
                    and not (ahead and ahead[-1].id >= start)  # A read's rest the handover cut past.
                ):
                    return applied  # See _pass.
                else:
                    self._dropped = False  # This read reaches whatever the dropped offers held.
                    notifications = self.app.recorder.select_notifications(start, CHUNK_EVENTS, stop=stop)
                if not notifications:
                    return applied
                events = self._decode_chunk(notifications)
                ahead, ahead_from = list(notifications[len(events) :]), events[-1][0] + 1
            positions = self._apply_locked(start, events)
            self._publish(positions, touched(events))
            applied += len(events)

    def _apply_locked(self, start: int, events: list[tuple[int, Any]]) -> dict[str, int]:
        """Apply a chunk in one transaction that first re-reads the tracking positions (another
        projector may have moved them); returns the positions committed. A chunk that fails for
        a reason other than storage is applied again one event at a time, to find the event."""
        try:
            return self._apply_transaction(start, events)
        except self.database.outage_errors:
            raise
        except Exception:
            positions = self.positions
            for one in events:
                try:
                    positions = self._apply_transaction(start, [one])
                except self.database.outage_errors:
                    raise
                except Exception as error:
                    raise ProjectionFailed(one[0], one[1], error) from error
                self._publish(positions)
                start = one[0] + 1
            return positions

    def _apply_transaction(self, start: int, events: list[tuple[int, Any]]) -> dict[str, int]:
        """Apply `events`, read from position `start` on, unless a view has not seen everything
        before `start` (it was dropped by a rebuild elsewhere): the next round catches it up
        from its own position. Positions may skip numbers (PostgreSQL), never events."""
        # The rollup's rows are made before the transaction, for the positions last committed
        # here; a transaction that finds other positions (another projector moved them) makes
        # them again inside.
        assumed = dict(self.positions)
        prepared = {
            view: prepare(self.handlers[view], ((p, e) for p, e in events if p > assumed[view]))
            for view in self._preparing
            if assumed[view] < events[-1][0]
        }
        with self.database.transaction() as cursor:
            positions: dict[str, int] = self.database.lock_tracking(cursor)
            if min(positions.values()) >= start - 1:
                self._apply_chunk(cursor, positions, events, prepared if positions == assumed else {})
                self._chunk_applied(cursor, events[-1][0])
        return positions

    def _chunk_applied(self, cursor: Any, last: int) -> None:
        """A hook inside the chunk's transaction (PostgreSQL notifies followers from it)."""

    def _publish(self, positions: dict[str, int], originator_ids: frozenset[UUID] | None = None) -> None:
        """Adopt the committed positions and tell waiters and listeners; `originator_ids` are the
        aggregates of the events they cover (None: not known here)."""
        before = self.position
        self.positions = positions
        moved = self.position != before
        if moved:
            with self._condition:
                self._condition.notify_all()
            for listener in list(self.listeners):
                listener(self.position)
        # A chunk applied one event at a time (see _apply_locked) moved the positions already.
        if moved or originator_ids:
            for originator_listener in list(self.originator_listeners):
                originator_listener(originator_ids)

    def _decode_chunk(self, notifications: Any) -> list[tuple[int, Any]]:
        """(position, event) pairs of a chunk, cut short once it holds CHUNK_ROWS steps."""
        events: list[tuple[int, Any]] = []
        rows = 0
        for notification in notifications:
            event = self.app.mapper.to_domain_event(notification)
            events.append((notification.id, event))
            rows += len(getattr(event, "steps", ()))
            if rows >= CHUNK_ROWS:
                break
        return events

    def _apply_chunk(
        self,
        cursor: Any,
        positions: dict[str, int],
        events: list[tuple[int, Any]],
        prepared: dict[str, dict[int, list[Any]]] | None = None,
    ) -> None:
        """Apply a chunk to every view that has not seen it, with its tracking position, in the
        caller's transaction; `positions` is updated to what the transaction records. `prepared`:
        by view, the rows its gathered handlers made of the events after `positions[view]`."""
        last = events[-1][0]
        moved = []
        for view in VIEWS:
            seen = positions[view]
            if seen >= last:
                continue
            apply_events(
                cursor, self.handlers[view], ((p, e) for p, e in events if p > seen), (prepared or {}).get(view)
            )
            moved.append(view)
            positions[view] = last
        self.database.set_tracking(cursor, moved, last)

    def rebuild(self, views: tuple[str, ...] = VIEWS) -> int:
        """Drop `views` and project them again from position 0."""
        with self._projecting:
            self.database.drop(views)
            self.positions = self.database.tracking_positions()
            self.failure = None
            return self._catch_up(None)
