"""Readiness: up is not caught up. A server is ready when every view is within
READY_LAG_EVENTS_MAX events of the log's head (as the views' tracking rows in storage say, so a
server whose views are projected by workers is judged the same way), the oldest event a view has
not applied is at most READY_LAG_S_MAX seconds old (a few events nobody projects, with no
projection worker running, make writes wait as surely as many), and the newest TAIL_EVENTS
events of the log chain from the seal before them (ledger.storage.chain). The server's probe
(services.server) asks once a second; gRPC health and /readyz follow the answer, /healthz only
says the process answers. A check that fails, or a storage probe that fails or hangs, is not
ready either: /readyz never keeps an answer that health has dropped. The first time the server
is ready, and each time it is ready again, it logs one line.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Any

import msgspec

from ledger import Ledger
from ledger.domain.errors import Unavailable
from ledger.storage.chain import Walk
from ledger.storage.transcoder import MsgspecTranscoder, ext_hook

__all__ = ["Readiness", "READY_LAG_EVENTS_MAX", "READY_LAG_S_MAX", "TAIL_EVENTS", "unapplied_age_s"]

log = logging.getLogger("trainledger.services")

READY_LAG_EVENTS_MAX = 1000
READY_LAG_S_MAX = 60.0
TAIL_EVENTS = 100


class Readiness:
    """Whether the server's views are caught up and its log's tail is intact."""

    def __init__(
        self,
        ledger: Ledger,
        *,
        lag_events_max: int = READY_LAG_EVENTS_MAX,
        lag_s_max: float = READY_LAG_S_MAX,
        tail_events: int = TAIL_EVENTS,
    ):
        self.ledger = ledger
        self.lag_events_max, self.lag_s_max, self.tail_events = lag_events_max, lag_s_max, tail_events
        self.ready = False
        self.why = "not checked yet"
        self._tail_checked = 0  # The log's end as of the last tail check that passed.
        self._lock = threading.Lock()

    def update(self) -> bool:
        """Check now (reads storage: call it in a worker thread); returns whether ready. A check
        that fails leaves the server not ready, and raises."""
        try:
            why = self.problem()
        except Unavailable as error:
            why = f"storage unavailable: {str(error).removeprefix('storage is unavailable: ')}"
        except Exception as error:
            self.lost(f"the readiness check failed: {error}")
            raise
        self._settle(why)
        return self.ready

    def lost(self, why: str) -> None:
        """Not ready, for `why`: the check failed, or the storage probe around it failed or hangs."""
        self._settle(why or "the readiness check failed")

    def _settle(self, why: str) -> None:
        with self._lock:
            was, self.ready, self.why = self.ready, not why, why or "caught up"
        if self.ready and not was:
            log.info("ready: the views are within %d events of the log and its tail is intact", self.lag_events_max)
        elif was and not self.ready:
            log.warning("not ready: %s", why)

    def storage_unavailable(self, why: str) -> None:
        """The storage probe failed or hung: not ready, whatever the views said last."""
        self._settle(f"storage unavailable: {why.removeprefix('storage is unavailable: ')}")

    def problem(self) -> str:
        """Why the server is not ready ("" when it is)."""
        ledger = self.ledger
        failure = ledger.projector.failure
        if failure is not None:
            return f"the views are stopped: {failure}"
        storage = ledger.storage
        head = storage.head()
        positions = storage.tracking_positions()
        lagging = min(positions.values(), default=head)
        if head - lagging > self.lag_events_max:
            return f"the views are {head - lagging} events behind the log (at most {self.lag_events_max})"
        if head > lagging:
            age_s = unapplied_age_s(ledger, lagging)
            if age_s > self.lag_s_max:
                return (
                    f"the views have not applied an event {age_s:.0f} s old (at most {self.lag_s_max:.0f} s): "
                    "is a projection worker (trainledger project) running?"
                )
        return self.broken_tail()

    def broken_tail(self) -> str:
        """Why the newest events of the log do not chain from the seal before them ("" when they
        do). Incremental: only events sealed since the last check that passed are read again (at
        most tail_events of them), so an idle server reads no event."""
        storage = self.ledger.storage
        stop = max(storage.head(), storage.last_seal()[0])
        if stop == self._tail_checked:
            return ""
        after = max(self._tail_checked, stop - self.tail_events - 1, 0)
        rows, seals = storage.chain_page(after, stop, stop - after + 1)
        walk = Walk()
        anchor = bytes(storage.digests([after]).get(after) or b"") if after > 0 else b""
        if anchor:
            walk.position, walk.digest = after, anchor
        elif after > 0:
            # No event at `after` (PostgreSQL's positions may skip): start from the first seal after it.
            if not seals:
                return f"no seal after position {after}"
            walk.position, walk.digest = seals[0][0], bytes(seals[0][1])
            rows = [row for row in rows if row[0] > walk.position]
            seals = seals[1:]
        sealed = dict(seals)
        present = {row[0] for row in rows}
        walk.feed(list(rows), sealed, [position for position in sealed if position not in present])
        if walk.broken is not None:
            return f"the log's tail is broken at position {walk.broken.position}: {walk.broken.problem}"
        self._tail_checked = stop
        return ""


class _Stamped(msgspec.Struct):
    """The time of a stored event (ledger.storage.transcoder), all else skipped unread: a bill's
    event holds thousands of lines."""

    timestamp: Any = None


_STAMP = msgspec.msgpack.Decoder(_Stamped, ext_hook=ext_hook)


def unapplied_age_s(ledger: Ledger, position: int) -> float:
    """How old the first event after `position` is, by the ledger's clock (0.0 when none)."""
    notifications = ledger.recorder.select_notifications(position + 1, 1)
    if not notifications:
        return 0.0
    transcoder, state = ledger.mapper.transcoder, notifications[0].state
    if isinstance(transcoder, MsgspecTranscoder):
        stamp = _STAMP.decode(state).timestamp
    else:
        stamp = transcoder.decode(state).get("timestamp")
    if isinstance(stamp, datetime):
        return max(0.0, (ledger.clock() - stamp).total_seconds())
    return 0.0
