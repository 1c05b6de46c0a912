"""Reads: the reader of the ledger application, which every bounded context is given with the
writer. It answers from the views (ledger.views.queries, as the read models of
ledger.views.models) and from the log itself. Each read of a view may first wait for a position
(read-your-writes); `check` is what health follows. Storage outages become Unavailable. The reads
of runs are ledger.application.run_reads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.persistence import ApplicationRecorder, Mapper, Notification

from ledger.application.outcomes import storage_read
from ledger.domain.errors import NotFound, Unavailable
from ledger.domain.limits import PAGE_SIZE_MAX, check_int, check_reference
from ledger.domain.reasons import Reason
from ledger.domain.topics import check_event_types, event_topics
from ledger.storage.base import Storage
from ledger.views import models

__all__ = ["Reads"]


class Reads:
    """The reader: the views, the log, and waiting for the views to reach a position."""

    def __init__(
        self,
        storage: Storage,
        projector: Any,
        recorder: ApplicationRecorder,
        mapper: Mapper[UUID],
        *,
        clock: Callable[[], datetime],
    ) -> None:
        self.storage = storage
        self.views = storage.views
        self.projector = projector
        self.recorder = recorder
        self.mapper = mapper
        self.clock = clock

    def wait(self, position: int, timeout_s: float = 5.0) -> None:
        """Block until every view reflects `position`, else raise Unavailable."""
        if position > 0 and not self.projector.wait(position, timeout_s):
            self._check_projection()
            raise Unavailable(
                f"the views did not reach position {position} in {timeout_s} s",
                reason=Reason.VIEW_NOT_CAUGHT_UP,
                position=position,
            )

    @storage_read
    def head(self) -> int:
        """The position of the newest event in the log (0 when empty)."""
        return self.storage.head()

    def check(self) -> int:
        """What health follows: the head of the log, read from storage, while the views are
        projected. Raises Unavailable when storage cannot be read or projection stopped."""
        self._check_projection()
        return self.head()

    def _check_projection(self) -> None:
        failure = self.projector.failure
        if failure is not None:
            raise Unavailable(
                f"the views are stopped: {failure}", reason=Reason.PROJECTION_FAILED, position=failure.position
            )

    @storage_read
    def spend_hours(
        self, account: str, *, min_position: int = 0, timeout_s: float = 5.0
    ) -> tuple[models.SpendHour, ...]:
        """What an account (a run's: its run id) committed in each UTC hour, oldest first.
        Raises NotFound."""
        check_reference(account, "account")
        self.wait(min_position, timeout_s)
        found = self.views.spend_hours(account)
        if found is None:
            raise NotFound(f"no account {account}", reason=Reason.ACCOUNT_NOT_FOUND, account=account)
        return found

    @storage_read
    def account_tree(
        self, *, limit: int = 1000, min_position: int = 0, timeout_s: float = 5.0
    ) -> tuple[models.Account, ...]:
        """Every account that is not a run's own (the caps people set), with its totals, parents
        before children (at most `limit`)."""
        check_int(limit, "limit", minimum=1, maximum=PAGE_SIZE_MAX)
        self.wait(min_position, timeout_s)
        return self.views.account_tree(limit)

    @storage_read
    def account(self, account: str, *, min_position: int = 0, timeout_s: float = 5.0) -> models.Account:
        check_reference(account, "account")
        self.wait(min_position, timeout_s)
        found = self.views.account(account)
        if found is None:
            raise NotFound(f"no account {account}", reason=Reason.ACCOUNT_NOT_FOUND, account=account)
        return found

    @storage_read
    def reservations(
        self, account: str, *, limit: int = 1000, after_position: int = 0, min_position: int = 0, timeout_s: float = 5.0
    ) -> models.ReservationPage:
        self.account(account, min_position=min_position, timeout_s=timeout_s)
        check_int(limit, "limit", minimum=1, maximum=PAGE_SIZE_MAX)
        return self.views.reservations(account, limit=limit, after_position=after_position)

    @storage_read
    def latest_holds(
        self, account: str, *, newest: int, pending_max: int, min_position: int = 0, timeout_s: float = 5.0
    ) -> tuple[list[models.Reservation], int, int]:
        """The account's latest pending entries (at most `pending_max`) then its latest `newest`
        others, each newest first, and how many entries and pending ones it has in all."""
        self.account(account, min_position=min_position, timeout_s=timeout_s)
        check_int(newest, "newest", minimum=1, maximum=PAGE_SIZE_MAX)
        check_int(pending_max, "pending_max", minimum=1, maximum=PAGE_SIZE_MAX)
        return self.views.latest_holds(account, newest=newest, pending_max=pending_max)

    @storage_read
    def family(self, family: str, *, min_position: int = 0, timeout_s: float = 5.0) -> models.Family:
        check_reference(family, "family")
        self.wait(min_position, timeout_s)
        found = self.views.family(family)
        if found is None:
            raise NotFound(f"no family {family}", reason=Reason.FAMILY_NOT_FOUND, family=family)
        return found

    @storage_read
    def families(
        self, *, after: str = "", limit: int | None = None, min_position: int = 0, timeout_s: float = 5.0
    ) -> list[models.FamilySummary]:
        """Registry families by name after `after` (at most `limit`; all when None), each with its
        current version and number of versions."""
        if limit is not None:
            check_int(limit, "limit", minimum=1, maximum=PAGE_SIZE_MAX + 1)
        self.wait(min_position, timeout_s)
        return self.views.families(after=after, limit=limit)

    @storage_read
    def read_events(
        self,
        *,
        from_position: int = 1,
        limit: int = 1000,
        types: Sequence[str] = (),
        originator_ids: Sequence[str] = (),
        bytes_max: int | None = None,
    ) -> list[dict[str, Any]]:
        """Events of the log from a position, decoded: {position, type, originator_id,
        originator_version, timestamp, principal, request_id, data}. With `bytes_max` the page
        also ends before the event that would take its stored bytes past that budget; its first
        event is in it however large, so a reader that pages on always gets past every event."""
        check_int(from_position, "from_position")
        check_int(limit, "limit", minimum=1, maximum=PAGE_SIZE_MAX)
        if bytes_max is not None:
            check_int(bytes_max, "bytes_max", minimum=1)
        check_event_types(types)
        topics = [topic for name in types for topic in event_topics(name)]
        ids = [UUID(originator_id) for originator_id in originator_ids]
        out: list[dict[str, Any]] = []
        start, stored_bytes, largest = max(1, from_position), 0, 1
        # Without a budget the page is read at once; with one, in windows that the budget left
        # would hold at the largest size seen so far (the first window is one event), so no more
        # than about a page of stored events is ever held.
        window = limit if bytes_max is None else 1
        while len(out) < limit:
            asked = min(window, limit - len(out))
            notifications: Sequence[Notification]
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

    def _event(self, notification: Notification) -> dict[str, Any]:
        data: dict[str, Any] = self.mapper.transcoder.decode(notification.state)
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
