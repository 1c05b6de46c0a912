"""What every aggregate of the ledger shares: audit fields on every event, uuid5 ids."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate

__all__ = ["Audit", "LedgerAggregate", "NAMESPACE", "ledger_id"]

# Ids are uuid5 of a typed key in this namespace, so opening the same thing twice finds it again.
NAMESPACE = UUID("6f1d3c52-8a4e-5b7a-9c3d-2e8f4a1b7c60")


@lru_cache(maxsize=65_536)
def ledger_id(kind: str, key: str) -> UUID:
    """The aggregate id of the `kind` ("run", "account", "family") named `key`."""
    return uuid5(NAMESPACE, f"{kind}:{key}")


@dataclass(frozen=True)
class Audit:
    """Who asked, under which request id, and the server's time when it was recorded."""

    principal: str
    request_id: str
    now: datetime

    def fields(self) -> dict[str, object]:
        return {"principal": self.principal, "request_id": self.request_id, "timestamp": self.now}


class LedgerAggregate(Aggregate):
    """Base of the ledger's aggregates: every event carries a principal and a request id, and
    the event's timestamp is the server's time taken from the application's clock."""

    class Event(Aggregate.Event):
        principal: str
        request_id: str

    class Created(Event, Aggregate.Created):
        pass

    def record(self, event_class: type[Event], audit: Audit, **fields: object) -> None:
        """Record `event_class` with the audit fields; the event's apply() changes the state.

        The library's trigger_event made directly: the event at the next version, applied by the
        library's own `mutate` (which checks the id and version), then pending. The generic
        trigger_event copies the keyword arguments twice and checks explicit topics, which no
        event here has: a fifth of deciding a reserve and its commit."""
        event = event_class(  # type: ignore[call-arg]
            originator_id=self.id,
            originator_version=self.version + 1,
            timestamp=audit.now,
            principal=audit.principal,
            request_id=audit.request_id,
            **fields,
        )
        event.mutate(self)
        self._pending_events.append(event)
