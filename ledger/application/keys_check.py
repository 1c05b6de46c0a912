"""The keys index checked against the log, for `verify`: every key an event of the log makes
(ledger.storage.keys) is in the index, and the index holds nothing else.

The log is read in pages of keyed events, and each page's keys are looked up in the index at
once, so the check holds a page, never the log. The index is then counted: more rows than the
log makes means rows that no event made, and the first of them (in the index's order) is named.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ledger.storage.base import KeyRow, Storage, keyed_topics
from ledger.storage.chain import INDEX_DISAGREES
from ledger.storage.keys import event_keys

__all__ = ["keys_disagree"]

KEYS_PAGE_EVENTS = 1000


def keys_disagree(storage: Storage, mapper: Any, between: Callable[[], None], stop: int) -> tuple[int, str, str] | None:
    """The first place where the keys index and the log up to `stop` disagree: (position, problem,
    detail), or None. `between` is called between pages (it raises to end the check early)."""
    recorder = storage.app.recorder
    topics, start, expected = keyed_topics(), 1, 0
    while start <= stop:
        between()
        page = recorder.select_notifications(start, KEYS_PAGE_EVENTS, stop=stop, topics=topics)
        if not page:
            break
        rows: list[tuple[int, KeyRow]] = []
        for notification in page:
            event = mapper.to_domain_event(notification)
            keys = dict.fromkeys(event_keys(event))
            rows += [(notification.id, (event.originator_id, key, event.originator_version)) for key in keys]
        found = storage.indexed([row for _, row in rows])
        for position, row in rows:
            if row not in found:
                return (
                    position,
                    INDEX_DISAGREES,
                    f"the keys index lacks {row[1]!r} of aggregate {row[0]} (version {row[2]}), which this event"
                    " made: a retry of that id would be taken for a new one",
                )
        expected += len(rows)
        start = page[-1].id + 1
    return _unknown_row(storage, mapper, between, expected)


def _unknown_row(
    storage: Storage, mapper: Any, between: Callable[[], None], expected: int
) -> tuple[int, str, str] | None:
    """The first index row that no event of the log made, once the index holds more than `expected`
    rows (a second pass, over the index, only then)."""
    total = sum(len(rows) for rows in _index_pages(storage, between))
    if total <= expected:
        return None
    for rows in _index_pages(storage, between):
        for row in rows:
            if _made_by_its_event(storage, mapper, row):
                continue
            try:
                position = storage.position_of(row[0], row[2])
            except LookupError:
                position = 0
            return (
                position,
                INDEX_DISAGREES,
                f"the keys index holds {row[1]!r} of aggregate {row[0]} (version {row[2]}), which no event"
                " of the log made",
            )
    return None  # The log was written to meanwhile: its new keys were not counted.


def _index_pages(storage: Storage, between: Callable[[], None]) -> Iterator[list[KeyRow]]:
    after: KeyRow | None = None
    while True:
        between()
        rows = storage.key_rows(after, KEYS_PAGE_EVENTS)
        if not rows:
            return
        yield rows
        after = rows[-1]


def _made_by_its_event(storage: Storage, mapper: Any, row: KeyRow) -> bool:
    stored = storage.app.recorder.select_events(row[0], gt=row[2] - 1, lte=row[2])
    return bool(stored) and row[1] in event_keys(mapper.to_domain_event(stored[0]))
