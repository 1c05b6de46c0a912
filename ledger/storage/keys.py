"""Client-made ids remembered for good: an index from (aggregate, key) to the versions of the
events that used the key, written in the same transaction as those events.

Aggregates keep only a bounded window of recent ids in their state (so loading one stays cheap
however long its history); an id that has left the window is recalled through this index and the
events it points at, so a retry at any distance is answered as the duplicate it is, and the same
id with another payload as a conflict. The keys of an event are a pure function of the event, so
the index can be rebuilt from the log (see `Storage.index_log`).
"""

from __future__ import annotations

from typing import Any

from ledger.domain.bills import line_key

__all__ = ["event_keys", "spend_key", "batch_key", "session_key", "line_key", "KEYED_EVENTS", "SEVERAL_KEYS_EVENTS"]

# The event classes that carry a key, by qualified name (resolved lazily to avoid an import cycle).
KEYED_EVENTS = (
    "Account.SpendReserved",
    "Account.SpendRefused",
    "Account.SpendCommitted",
    "Account.SpendReleased",
    "Account.SpendExpired",
    "Account.SpendCharged",
    "Account.SpendAdjusted",
    "Account.PlanReserved",
    "Account.PlanRefused",
    "Run.StepsRecorded",
    "Run.SessionLinked",
    "Bill.LinesBilled",
    "Bill.LinesRestated",
)
# Those of them whose one event may carry several keys (a bill's lines): a count of the versions
# the index holds cannot tell that one of an event's keys is missing.
SEVERAL_KEYS_EVENTS = ("Bill.LinesBilled", "Bill.LinesRestated")


def spend_key(reservation_or_charge_id: str) -> str:
    """The key of a reservation or a charge on its account."""
    return "spend:" + reservation_or_charge_id


def session_key(provider: str, session_id: str) -> str:
    """The key of a provider's session linked to a run."""
    return f"session:{provider}/{session_id}"


def batch_key(attempt: int, first_step: int, last_step: int) -> str:
    """The key of a step batch of an attempt."""
    return f"batch:{attempt}:{first_step}:{last_step}"


def event_keys(event: Any) -> tuple[str, ...]:
    """The keys an event makes known for good (none for most events)."""
    reservation_id = getattr(event, "reservation_id", None)
    if reservation_id is not None:
        return (spend_key(reservation_id),)
    charge_id = getattr(event, "charge_id", None) or getattr(event, "adjustment_id", None)
    if charge_id is not None:
        return (spend_key(charge_id),)
    session_id = getattr(event, "session_id", None)
    if session_id is not None:
        return (session_key(event.provider, session_id),)
    lines = getattr(event, "lines", None)
    if lines:
        return tuple(line_key(line["line_id"], line["start"], line["end"]) for line in lines)
    steps = getattr(event, "steps", None)
    if steps:
        return (batch_key(event.attempt, steps[0], steps[-1]),)
    return ()
