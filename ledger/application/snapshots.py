"""Snapshots that cannot be decoded are passed over, never fatal.

A snapshot is only a shortcut: the aggregate's events say the same. When the stored snapshot that a
load would start from cannot be decoded (its bytes were damaged on disk), `TolerantSnapshots` logs
it once and offers the one before it instead (at most SNAPSHOTS_TRIED_MAX of them), else none, so
the aggregate is replayed from its events and its run keeps working. `trainledger verify` names the
damaged snapshot (ledger.application.integrity). Likewise a snapshot the store cannot take when it
is due (`snapshot_not_stored`) is logged and left out: the write it follows is saved all the same,
and the aggregate's next load replays the events the snapshot would have summed up.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any
from uuid import UUID

from eventsourcing.persistence import EventStore

__all__ = ["TolerantSnapshots", "SNAPSHOTS_TRIED_MAX", "snapshot_not_stored"]

log = logging.getLogger("trainledger.ledger")

#: Damaged snapshots passed over in one load before the aggregate is replayed from its first event.
SNAPSHOTS_TRIED_MAX = 4
# Damaged snapshots already logged (by aggregate and version), so each is logged once per process.
DAMAGED_REMEMBERED_MAX = 10_000


class TolerantSnapshots(EventStore[UUID]):
    """The application's snapshot store, passing over snapshots that cannot be decoded."""

    def __init__(self, store: EventStore[UUID]) -> None:
        super().__init__(store.mapper, store.recorder)
        self._logged: set[tuple[UUID, int]] = set()
        self._lock = threading.Lock()

    def get(
        self,
        originator_id: UUID,
        *,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> Iterator[Any]:
        if not desc or limit != 1:  # Only the newest at or below a version is looked for by a load.
            yield from super().get(originator_id, gt=gt, lte=lte, desc=desc, limit=limit)
            return
        for _ in range(SNAPSHOTS_TRIED_MAX):
            stored = self.recorder.select_events(originator_id, gt=gt, lte=lte, desc=True, limit=1)
            if not stored:
                return
            try:
                snapshot = self.mapper.to_domain_event(stored[0])
            except Exception as error:  # Whatever the decoder makes of damaged bytes.
                self._damaged(originator_id, stored[0].originator_version, error)
                lte = stored[0].originator_version - 1
                continue
            yield snapshot
            return

    def _damaged(self, originator_id: UUID, version: int, error: Exception) -> None:
        with self._lock:
            if (originator_id, version) in self._logged or len(self._logged) >= DAMAGED_REMEMBERED_MAX:
                return
            self._logged.add((originator_id, version))
        log.error(
            "the snapshot of aggregate %s at version %d cannot be decoded (%s): passed over, the aggregate is"
            " loaded from its events; `trainledger verify` names it",
            originator_id,
            version,
            error,
        )


def snapshot_not_stored(originator_id: UUID, version: int, error: Exception) -> None:
    """A snapshot due after a saved write could not be stored: logged, never fatal to the write."""
    log.error(
        "the snapshot of aggregate %s at version %d could not be stored (%s): left out, the aggregate is"
        " loaded from its events",
        originator_id,
        version,
        error,
    )
