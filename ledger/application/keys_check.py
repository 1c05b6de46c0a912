"""The keys index checked against the log, for `verify`: every key an event of the log makes
(ledger.storage.keys) is in the index, and the index holds nothing else.

`KeysCheck` is fed the pages of the log that the chain's walk reads (no second read of the log):
the keys of each page's keyed events are computed from their stored fields and looked up in the
index at once, so the check holds a page, never the log. Then the index is counted: more rows than
the log made means rows that no event made, and the first of them (in the index's order) is named.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from uuid import UUID

import msgspec

from ledger.storage.base import KeyRow, Storage, keyed_topics
from ledger.storage.chain import INDEX_DISAGREES, ChainRow
from ledger.storage.keys import event_keys
from ledger.storage.transcoder import MsgspecTranscoder, ext_hook

__all__ = ["KeysCheck"]

KEYS_PAGE_ROWS = 1000
Found = tuple[int, str, str]


class _Fields:
    """A stored event's fields, read as attributes (what event_keys reads)."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self._fields = fields

    def __getattr__(self, name: str) -> Any:
        return self._fields.get(name)


class _KeyFields(msgspec.Struct):
    """The fields of a stored event that event_keys reads: a step batch's metric columns (most of
    its bytes) are skipped, not decoded."""

    reservation_id: Any = None
    charge_id: Any = None
    adjustment_id: Any = None
    session_id: Any = None
    provider: Any = None
    lines: Any = None
    steps: Any = None
    attempt: Any = None


_KEY_FIELDS = msgspec.msgpack.Decoder(type=_KeyFields, ext_hook=ext_hook)


class KeysCheck:
    """The keys index against the log: `feed` each page of the log in order, then `finish`."""

    def __init__(self, storage: Storage, mapper: Any) -> None:
        self.storage = storage
        self.mapper = mapper
        self.topics = frozenset(keyed_topics())
        self.expected = 0
        self.found: Found | None = None

    def _decoded(self, state: bytes) -> Any:
        """The fields event_keys reads, of a stored event's state."""
        mapper = self.mapper
        if mapper.cipher:
            state = mapper.cipher.decrypt(state)
        if mapper.compressor:
            state = mapper.compressor.decompress(state)
        if isinstance(mapper.transcoder, MsgspecTranscoder):
            return _KEY_FIELDS.decode(state)
        return _Fields(mapper.transcoder.decode(state))

    def feed(self, events: list[ChainRow]) -> None:
        """Check the keys of a page of the log (ChainRows in position order)."""
        if self.found is not None:
            return
        rows: list[tuple[int, KeyRow]] = []
        for position, originator_id, version, topic, state in events:
            if topic not in self.topics:
                continue
            aggregate = UUID(bytes=originator_id)
            keys = dict.fromkeys(event_keys(self._decoded(state)))
            rows += [(position, (aggregate, key, version)) for key in keys]
        if not rows:
            return
        self.expected += len(rows)
        present = self.storage.indexed([row for _, row in rows])
        for position, row in rows:
            if row not in present:
                self.found = (
                    position,
                    INDEX_DISAGREES,
                    f"the keys index lacks {row[1]!r} of aggregate {row[0]} (version {row[2]}), which this event"
                    " made: a retry of that id would be taken for a new one",
                )
                return

    def finish(self, between: Callable[[], None]) -> Found | None:
        """The first disagreement: a key the log made that the index lacks, else a row of the
        index that no event made (looked for only when the index holds more rows than the log
        made). `between` is called between pages (it raises to end the check early)."""
        between()
        if self.found is not None:
            return self.found
        if self.storage.keys_count() <= self.expected:
            return None
        for rows in _index_pages(self.storage, between):
            for row in rows:
                if self._made_by_its_event(row):
                    continue
                try:
                    position = self.storage.position_of(row[0], row[2])
                except LookupError:
                    position = 0
                return (
                    position,
                    INDEX_DISAGREES,
                    f"the keys index holds {row[1]!r} of aggregate {row[0]} (version {row[2]}), which no event"
                    " of the log made",
                )
        return None  # The log was written to meanwhile: its new keys were not counted.

    def _made_by_its_event(self, row: KeyRow) -> bool:
        stored = self.storage.app.recorder.select_events(row[0], gt=row[2] - 1, lte=row[2])
        return bool(stored) and row[1] in event_keys(self._decoded(stored[0].state))


def _index_pages(storage: Storage, between: Callable[[], None]) -> Iterator[list[KeyRow]]:
    after: KeyRow | None = None
    while True:
        between()
        rows = storage.key_rows(after, KEYS_PAGE_ROWS)
        if not rows:
            return
        yield rows
        after = rows[-1]
