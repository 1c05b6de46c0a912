"""The hash chain over the log: each stored event sealed with a digest that covers every event before it.

Each event's seal is stored beside it (SQLite: table `stored_seals`; PostgreSQL: `<events table>_seals`;
columns `position`, `digest`) in the transaction that writes the event, so nothing acknowledged is ever
unsealed. Anyone can recompute the chain from an export without this code:

    digest(0) = 32 zero bytes (the genesis)
    digest(n) = SHA-256( digest(n-1)                  32 bytes, the digest of the previous event in the log
                      || position                     8 bytes, unsigned big-endian
                      || aggregate id                 16 bytes, the UUID's bytes in network order (RFC 4122)
                      || aggregate version            8 bytes, unsigned big-endian
                      || len(topic)                   8 bytes, unsigned big-endian
                      || topic                        the stored topic, UTF-8 ("module:Class.Event")
                      || len(state)                   8 bytes, unsigned big-endian
                      || state )                      the stored event's bytes exactly as recorded (MessagePack)

where `||` is concatenation, "previous" means the event with the next lower position that is in the log
(positions grow but may skip numbers on PostgreSQL; SQLite's have no gaps), and lengths count bytes. Every
variable field is preceded by its length and the others have a fixed width, so no two different events
encode alike. Digests are shown as 64 lowercase hexadecimal characters; the head of the chain is the
(position, digest) of the newest event, (0, the genesis) for an empty log. An auditor who writes the head
down can later prove that nothing at or before that position changed: the chain must still pass through
it.

A check walks the events and the seals in position order, recomputes each digest and stops at the first
break, named by one of PROBLEMS (ledger.application.integrity adds the snapshot, view and head checks).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from ledger.domain.errors import Refused
from ledger.domain.reasons import Reason

__all__ = [
    "GENESIS",
    "PROBLEMS",
    "ChainBreak",
    "ChainRow",
    "EVENT_CHANGED",
    "EVENT_MISSING",
    "EVENT_UNSEALED",
    "HEAD_DIFFERS",
    "INDEX_DISAGREES",
    "SEAL_MISSING",
    "SNAPSHOT_DISAGREES",
    "VIEW_DISAGREES",
    "Walk",
    "Pager",
    "event_digest",
    "pages",
    "seal_rows",
    "unsealed_refusal",
]

GENESIS = bytes(32)
DIGEST_BYTES = 32

#: The stored bytes of an event (its topic or state), or its aggregate version, differ from what was sealed;
#: so does an event moved to another position or two events swapped.
EVENT_CHANGED = "EVENT_CHANGED"
#: A seal with no event at its position: the event was deleted (or moved elsewhere).
EVENT_MISSING = "EVENT_MISSING"
#: An event that the chain does not include: a row inserted outside the ledger.
EVENT_UNSEALED = "EVENT_UNSEALED"
#: An event that the chain includes (the next seal links over it) whose own seal was deleted.
SEAL_MISSING = "SEAL_MISSING"
#: A stored snapshot that disagrees with a fold of its aggregate's events up to its version.
SNAPSHOT_DISAGREES = "SNAPSHOT_DISAGREES"
#: A view table that disagrees with a rebuild of the views from the log.
VIEW_DISAGREES = "VIEW_DISAGREES"
#: The chain does not pass through the head that was written down (expected).
HEAD_DIFFERS = "HEAD_DIFFERS"
#: The keys index of client-made ids (ledger.storage.keys) lacks a key an event made, or holds one
#: that no event made.
INDEX_DISAGREES = "INDEX_DISAGREES"
PROBLEMS = (
    EVENT_CHANGED,
    EVENT_MISSING,
    EVENT_UNSEALED,
    SEAL_MISSING,
    SNAPSHOT_DISAGREES,
    VIEW_DISAGREES,
    HEAD_DIFFERS,
    INDEX_DISAGREES,
)

_FIXED = struct.Struct(">32sQ16sQQ")
_LENGTH = struct.Struct(">Q")
_sha256 = hashlib.sha256


#: A stored event as the chain covers it: (position, aggregate id as 16 bytes, version, topic, state).
ChainRow = tuple[int, bytes, int, str, bytes]


# Topics as UTF-8, by topic: a log has a few dozen of them.
_topic_bytes: dict[str, bytes] = {}
TOPICS_CACHED_MAX = 4096


def _encoded(topic: str) -> bytes:
    encoded = _topic_bytes.get(topic)
    if encoded is None:
        encoded = topic.encode()
        if len(_topic_bytes) < TOPICS_CACHED_MAX:
            _topic_bytes[topic] = encoded
    return encoded


def event_digest(previous: bytes, position: int, originator_id: bytes, version: int, topic: str, state: bytes) -> bytes:
    """The digest of one event (the module's docstring gives the encoding)."""
    topic_bytes = _encoded(topic)
    return _sha256(
        _FIXED.pack(previous, position, originator_id, version, len(topic_bytes))
        + topic_bytes
        + _LENGTH.pack(len(state))
        + state
    ).digest()


def seal_rows(previous: bytes, rows: Iterable[ChainRow]) -> list[tuple[int, bytes]]:
    """(position, digest) of each row, chained from `previous`; rows in position order."""
    seals = []
    for row in rows:
        previous = event_digest(previous, *row)
        seals.append((row[0], previous))
    return seals


@dataclass(frozen=True)
class ChainBreak:
    """The first place where the chain breaks: the position, one of PROBLEMS, and what was found."""

    position: int
    problem: str
    detail: str


class Walk:
    """Walks the log in position order against the stored seals. Feed it pages (`feed`); it stops at
    the first break (`broken`). `position` and `digest` are the last event recomputed and found sealed
    (the verified head so far); `checked` counts the events verified; `watched` is the digest
    recomputed and found sealed at position `watch` (None until then)."""

    def __init__(self, *, watch: int = 0) -> None:
        self.position = 0
        self.digest = GENESIS
        self.checked = 0
        self.broken: ChainBreak | None = None
        self.watch = watch
        self.watched: bytes | None = None
        # An event without a seal, waiting for the next seal to tell an inserted row from a lost seal.
        self._unsealed: tuple[ChainRow, bytes] | None = None

    def feed(self, events: list[ChainRow], seals: dict[int, bytes], orphans: Iterable[int]) -> None:
        """Check a page: its events in position order, the seals stored for them, and the positions in
        the page's range that have a seal but no event."""
        if self.broken is not None:
            return
        missing = iter(sorted(orphans))
        next_missing = next(missing, None)
        if self._unsealed is None:
            # Events before the first orphan seal, while each matches its seal: the common case, in
            # one tight loop; the first that does not match is looked at again below.
            events = events[self._matching(events, seals, next_missing) :]
        for row in events:
            if self.broken is not None:
                return
            if next_missing is not None and next_missing < row[0]:
                self._break(next_missing, EVENT_MISSING, "a seal is stored at this position but its event is gone")
                return
            self._check(row, seals.get(row[0]))
        if next_missing is not None and self.broken is None:
            self._break(next_missing, EVENT_MISSING, "a seal is stored at this position but its event is gone")

    def _matching(self, events: list[ChainRow], seals: dict[int, bytes], before: int | None) -> int:
        """How many events from the first are sealed with the digest recomputed here (stopping at
        position `before`); the walk moves past them."""
        digest, watch, count = self.digest, self.watch, 0
        pack, pack_length, sha256, seal_of = _FIXED.pack, _LENGTH.pack, _sha256, seals.get
        for position, originator_id, version, topic, state in events:
            if before is not None and position > before:
                break
            topic_bytes = _topic_bytes.get(topic) or _encoded(topic)
            recomputed = sha256(
                pack(digest, position, originator_id, version, len(topic_bytes))
                + topic_bytes
                + pack_length(len(state))
                + state
            ).digest()
            if seal_of(position) != recomputed:
                break
            digest, count = recomputed, count + 1
            if position == watch:
                self.watched = recomputed
        if count:
            self.position, self.digest, self.checked = events[count - 1][0], digest, self.checked + count
        return count

    def run(self, pages: Iterable[tuple[list[ChainRow], dict[int, bytes], list[int]]]) -> None:
        """Walk every page of the log (see `feed`) until the first break, then `finish`."""
        for events, seals, orphans in pages:
            self.feed(events, seals, orphans)
            if self.broken is not None:
                return
        self.finish()

    def finish(self) -> None:
        """The log ended: an event left without a seal is an inserted row."""
        if self._unsealed is not None and self.broken is None:
            row = self._unsealed[0]
            self._break(row[0], EVENT_UNSEALED, "this event has no seal and nothing after it is sealed")

    def _check(self, row: ChainRow, sealed: bytes | None) -> None:
        if self._unsealed is not None:
            self._after_unsealed(row, sealed)
            return
        recomputed = event_digest(self.digest, *row)
        if sealed is None:
            self._unsealed = (row, recomputed)
        elif recomputed != sealed:
            self._break(row[0], EVENT_CHANGED, self._changed(row))
        else:
            self.position, self.digest, self.checked = row[0], recomputed, self.checked + 1
            if row[0] == self.watch:
                self.watched = recomputed

    def _after_unsealed(self, row: ChainRow, sealed: bytes | None) -> None:
        """The event before `row` had no seal: if `row`'s seal links over it, only its seal is gone;
        if `row`'s seal links over the last sealed event instead, it was inserted."""
        unsealed, unsealed_digest = self._unsealed  # type: ignore[misc]
        self._unsealed = None
        if sealed is not None and event_digest(unsealed_digest, *row) == sealed:
            self._break(unsealed[0], SEAL_MISSING, "the event is in the chain but its seal is gone")
        elif sealed is not None and event_digest(self.digest, *row) == sealed:
            self._break(unsealed[0], EVENT_UNSEALED, "this event was inserted: the chain passes over it")
        else:
            self._break(unsealed[0], EVENT_UNSEALED, "this event has no seal, nor does the chain link over it")

    def _changed(self, row: ChainRow) -> str:
        return (
            f"the event at this position (aggregate {row[1].hex()} version {row[2]},"
            f" {row[3].rsplit(':', 1)[-1]}) is not the one that was sealed"
        )

    def _break(self, position: int, problem: str, detail: str) -> None:
        self.broken = ChainBreak(position, problem, detail)


#: Reads the log and its seals: `pager(after, stop, limit)` gives the first `limit` events and the first
#: `limit` seals with positions in (after, stop], each in position order.
Pager = Callable[[int, int, int], tuple[list[ChainRow], list[tuple[int, bytes]]]]


def pages(
    pager: Pager, stop: int, limit: int, after: int = 0
) -> Iterator[tuple[list[ChainRow], dict[int, bytes], list[int]]]:
    """The log from `after` (exclusive) up to `stop` as pages for Walk.feed: (events, their seals,
    positions sealed but without an event), each page covering every position up to where both of
    its reads are known complete."""
    while after < stop:
        events, seals = pager(after, stop, limit)
        if not events and not seals:
            return
        bound = stop
        if len(events) == limit:
            bound = min(bound, events[-1][0])
        if len(seals) == limit:
            bound = min(bound, seals[-1][0])
        page = [row for row in events if row[0] <= bound]
        sealed = {position: digest for position, digest in seals if position <= bound}
        present = {row[0] for row in page}
        yield page, sealed, [position for position in sealed if position not in present]
        after = bound


def unsealed_refusal(last_sealed: int) -> Refused:
    """The refusal of a write to a log that has events without seals after its last seal
    (`last_sealed`, 0 when none): sealing the write alone would leave them unsealable."""
    return Refused(
        f"the log has events without seals (after position {last_sealed}): it takes no new write until"
        " sealed: run `trainledger seal --db FILE --reason TEXT` first (on the database, no server)",
        reason=Reason.LOG_UNSEALED,
        sealed_up_to=str(last_sealed),
    )
