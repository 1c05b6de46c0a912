"""PostgresProjector: the projector of ledger.views.projector, exactly once across processes.

Each chunk is applied inside a transaction that first locks the views' tracking rows (SELECT ...
FOR UPDATE) and re-reads them, so two projectors never apply the same position; the loser of the
lock waits for the winner's commit, then sees the new positions and tells its own waiters. It is
woken by LISTEN on the channel eventsourcing NOTIFYs on every insert (a poll of a few seconds is
only a fallback), and NOTIFYs a views channel of its own with each chunk it commits.

Following (PostgresProjector.follow): a process that leaves projection to others (a server started
with --no-project, next to `trainledger project` workers) applies nothing; it reads the committed
tracking positions whenever the views channel says they moved, so its readers still wait for a
position (read-your-writes) without a thread each.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol
from uuid import UUID

import psycopg
from eventsourcing.application import Application
from psycopg.sql import SQL, Identifier

from ledger.domain.errors import Unavailable
from ledger.views.projector import ProjectionFailed, Projector
from ledger.views.store import ViewStore

__all__ = ["PostgresProjector", "ProjectedStorage"]

log = logging.getLogger("ledger.storage.postgres")

FALLBACK_POLL_S = 5.0
RETRY_MIN_S = 0.2
RETRY_MAX_S = 2.0
LISTEN_TIMEOUT_S = 0.1


class ProjectedStorage(ViewStore[Any], Protocol):
    """What PostgresProjector projects into and listens on: PostgresStorage (the ViewStore that
    the base Projector writes to, with its LISTEN channels)."""

    channel: str
    views_channel: str
    connect_kwargs: dict[str, Any]
    timeout_s: float


class PostgresProjector(Projector):
    """The projector of ledger.views.projector, exactly once across processes and woken by LISTEN.
    `start()` projects in the background; `follow()` instead only tracks what other processes
    (workers, other servers) have projected."""

    def __init__(self, app: Application[UUID], database: ProjectedStorage, *, poll_s: float = FALLBACK_POLL_S) -> None:
        super().__init__(app, database, poll_s=poll_s)
        self.database: ProjectedStorage = database
        self._listener: threading.Thread | None = None
        self.following = False
        self._own_backends: set[int] = getattr(app.recorder, "own_backends", set())

    def follow(self) -> None:
        """Run in the background without projecting: adopt the positions other processes
        commit (woken by their NOTIFY on the views channel, else by the fallback poll)."""
        if self._thread is None:
            self.following = True
        self.start()

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._listener = threading.Thread(target=self._listen, name="trainledger-listen", daemon=True)
            self._listener.start()
        super().start()

    def stop(self) -> None:
        super().stop()
        if self._listener is not None:
            self._listener.join(timeout=10)
            self._listener = None

    def _listen(self) -> None:
        """Wake the projector on every NOTIFY of the events' channel; reconnect after outages."""
        channel = self.database.views_channel if self.following else self.database.channel
        statement = SQL("LISTEN {}").format(Identifier(channel))
        kwargs = {
            **self.database.connect_kwargs,
            "autocommit": True,
            "connect_timeout": max(1, int(self.database.timeout_s)),
            # A server that vanished without closing the socket is noticed within seconds.
            "keepalives": 1,
            "keepalives_idle": 5,
            "keepalives_interval": 2,
            "keepalives_count": 3,
        }
        delay = RETRY_MIN_S
        failing = False
        while not self._stop.is_set():
            try:
                with psycopg.connect(**kwargs) as connection:
                    connection.execute(statement)
                    if failing:
                        log.info("listening on %s again", channel)
                    failing, delay = False, RETRY_MIN_S
                    self.wake()  # Inserts may have been missed while not listening.
                    while not self._stop.is_set():
                        for notify in connection.notifies(timeout=LISTEN_TIMEOUT_S, stop_after=1):
                            self._notified(notify)
            except psycopg.Error as error:
                if not failing:
                    log.warning("lost LISTEN %s (%s); reconnecting", channel, error)
                failing = True
                self._stop.wait(delay)
                delay = min(delay * 2, RETRY_MAX_S)

    def _notified(self, notify: psycopg.Notify) -> None:
        """Wake on a NOTIFY, unless it came from one of this process's inserts: the kernel hands
        their events over and wakes the projector itself (and a dropped offer makes the next pass
        read the log), so such a wake only made a pass that read the log and found nothing. A
        backend pid reused by another process after one of ours closed could hide its insert
        until this process's next write leaves a gap, or the fallback poll."""
        if self.following or notify.pid not in self._own_backends:
            self.wake()

    def _run(self) -> None:
        delay = RETRY_MIN_S
        while not self._stop.is_set():
            self._sleep()
            try:
                if self.following:
                    self._publish(self.database.tracking_positions())
                else:
                    self._pass()
            except ProjectionFailed as failure:
                self._fail(failure)
                return
            except Exception as error:  # Keep projecting after a transient storage failure.
                if isinstance(error, self.database.outage_errors + (Unavailable,)):
                    if self.error is None:
                        log.warning(
                            "%s paused, storage is unavailable (%s); retrying",
                            "following projections" if self.following else "projection",
                            error,
                        )
                else:
                    log.exception("projection failed; retrying")
                self.error = error
                self._stop.wait(delay)
                delay = min(delay * 2, RETRY_MAX_S)
                self.wake()
            else:
                if self.error is not None:
                    log.info("%s resumed", "following projections" if self.following else "projection")
                self.error = None
                delay = RETRY_MIN_S

    def _chunk_applied(self, cursor: Any, last: int) -> None:
        # Delivered on commit: followers adopt the new positions at once.
        cursor.execute("SELECT pg_notify(?, ?)", (self.database.views_channel, str(last)))
