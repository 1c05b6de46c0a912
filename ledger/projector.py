"""Drives the views from the log: batched, exactly once, with an in-process signal for waiters.

SQLite offers no subscriptions, so the projector is a thread of ours: woken by the application
after each save (and by a short poll for writers in other processes), it reads the log after
the lowest view position in chunks, applies each chunk to every view that has not seen it, and
commits the view rows with the views' tracking positions in one transaction. A crash between
chunks re-applies nothing and skips nothing. `wait(position)` blocks on a condition variable,
not a sleep loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ledger.views import VIEWS, apply_events, handlers

__all__ = ["Projector"]

log = logging.getLogger(__name__)

CHUNK_EVENTS = 256
# A chunk stops growing past this many step rows, so one transaction never holds the writer
# lock for long.
CHUNK_ROWS = 20_000
POLL_S = 0.5
GATHER_S = 0.002


class Projector:
    """Projects `app`'s log into the views held by `database` (see ledger.storage)."""

    def __init__(self, app: Any, database: Any, *, poll_s: float = POLL_S) -> None:
        self.app = app
        self.database = database
        self.poll_s = poll_s
        self.handlers = handlers()
        self.positions = database.tracking_positions()
        self._condition = threading.Condition()
        # One projection at a time: the background thread, a reader projecting in its own thread
        # and rebuild() share the database's writer connection and the tracking positions.
        self._projecting = threading.RLock()
        self._wake = threading.Event()
        self._urgent = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.listeners: list[Callable[[int], None]] = []

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
        self._wake.set()

    def wait(self, position: int, timeout_s: float) -> bool:
        """Block until every view reflects `position` or the timeout passes."""
        if self._thread is None:  # Not running in the background: project in this thread.
            self.catch_up()
            return self.position >= position
        deadline = time.monotonic() + timeout_s
        with self._condition:
            while self.position < position:
                self._urgent.set()
                self._wake.set()
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._condition.wait(left)
        return True

    def _sleep(self) -> None:
        """Until woken (or the poll interval passes). Writers wake the projector after every
        save: gathering a few milliseconds of saves into one chunk keeps its transactions from
        contending with each write. A reader waiting for a position cuts the gathering short."""
        self._wake.wait(self.poll_s)
        if not self._urgent.is_set():
            self._urgent.wait(GATHER_S)
        self._wake.clear()
        self._urgent.clear()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sleep()
            try:
                self.catch_up()
                self.error = None
            except Exception as error:  # Keep projecting after a transient storage failure.
                self.error = error
                log.exception("projection failed; retrying")
                self._stop.wait(self.poll_s)

    def catch_up(self, stop: int | None = None) -> int:
        """Apply everything up to `stop` (default: the head). Returns events applied."""
        with self._projecting:
            return self._catch_up(stop)

    def _catch_up(self, stop: int | None) -> int:
        applied = 0
        while True:
            start = self.position + 1
            notifications = self.app.recorder.select_notifications(start, CHUNK_EVENTS, stop=stop)
            if not notifications:
                return applied
            events = self._decode_chunk(notifications)
            last = events[-1][0]
            positions = dict(self.positions)
            with self.database.transaction() as cursor:
                self._apply_chunk(cursor, positions, events)
            self.positions = positions
            applied += len(events)
            with self._condition:
                self._condition.notify_all()
            for listener in self.listeners:
                listener(last)

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

    def _apply_chunk(self, cursor: Any, positions: dict[str, int], events: list[tuple[int, Any]]) -> None:
        """Apply a chunk to every view that has not seen it, with its tracking position, in the
        caller's transaction; `positions` is updated to what the transaction records."""
        last = events[-1][0]
        for view in VIEWS:
            seen = positions[view]
            if seen >= last:
                continue
            apply_events(cursor, self.handlers[view], ((p, e) for p, e in events if p > seen))
            self.database.set_tracking(cursor, view, last)
            positions[view] = last

    def rebuild(self, views: tuple[str, ...] = VIEWS) -> int:
        """Drop `views` and project them again from position 0."""
        with self._projecting:
            self.database.drop(views)
            self.positions = self.database.tracking_positions()
            return self._catch_up(None)
