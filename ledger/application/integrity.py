"""Integrity: the head of the log's hash chain, and a check of the whole log against it.

Every event is sealed in the transaction that writes it (ledger.storage.chain gives the digest and
its encoding). `verify` streams the log from position 1 in pages, recomputes every digest and
compares it with the stored seal, then checks that the chain passes through a head written down
earlier (`expect_head`), that the keys index holds exactly the keys the log makes
(ledger.application.keys_check), that every stored snapshot can be decoded and agrees with a fold of
its aggregate's events up to its version, and that the views agree with a rebuild from the log. It
reports the first break found, in that order of checks, as one of ledger.storage.chain.PROBLEMS. It
only reads (open the ledger with read_only=True and nothing can write), one page at a time, one
verification at a time per ledger, and stops between pages when its caller asks it to.

Sealing a log without seals is never a side effect of opening or checking it: `seal_log` does it on
an admin's word and records it (ledger.domain.seals). `chain_tail_break` is what `serve` checks
before it writes. `read_events` adds each event's digest (hex) for exports.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, project_aggregate
from eventsourcing.persistence import EventStore

from ledger.application.context import Context
from ledger.application.keys_check import KeysCheck
from ledger.application.outcomes import Receipt, storage_read
from ledger.application.reads import Reads
from ledger.application.writer import Writer
from ledger.domain.base import LedgerAggregate
from ledger.domain.errors import Exhausted, Invalid, Refused
from ledger.domain.limits import check_text
from ledger.domain.reasons import Reason
from ledger.domain.seals import SEALS_BOOK_ID, SealBook
from ledger.storage.chain import (
    GENESIS,
    HEAD_DIFFERS,
    SEAL_MISSING,
    SNAPSHOT_DISAGREES,
    VIEW_DISAGREES,
    ChainBreak,
    Walk,
    pages,
)
from ledger.views.models import ChainHead, Verification
from ledger.views.schema import TABLES
from ledger.views.scratch import ScratchViews, first_difference, ordered_select

__all__ = ["Integrity", "Progress", "Stopped", "STAGES", "TAIL_EVENTS", "VERIFY_PAGE_EVENTS"]

#: Events (and seals) read per page while the chain is checked: bounds the memory a check takes.
VERIFY_PAGE_EVENTS = 1000
#: The events at the end of the chain that `serve` checks before it writes (chain_tail_break).
TAIL_EVENTS = 1000
# How far below the tail's first position a seal is looked for (PostgreSQL's positions may skip).
TAIL_PROBE = 64
#: What a verification checks, in order: the stages its progress names.
STAGES = ("chain", "keys", "snapshots", "views")
#: Told, between pages, the stage a verification is in and how many events of the chain it checked.
Progress = Callable[[str, int], None]
UNSEALED = (
    "the log holds events but no seals (written before the chain existed, or its seals were deleted):"
    " nothing in it can be verified; an admin who has checked it by other means seals it with"
    " `trainledger seal --reason TEXT`"
)
REASON_CHARS_MAX = 2_000
# The longest a verification sleeps after a page to leave the interpreter to other threads.
YIELD_MAX_S = 0.05
#: Snapshots of one aggregate read at a time.
SNAPSHOT_PAGE = 50
DIGEST_HEX = re.compile(r"[0-9a-f]{64}")


class Stopped(Exception):
    """A verification ended early because its caller asked it to stop (`verify(stop=...)`): in
    `stage`, with `checked` events of the chain checked."""

    def __init__(self, stage: str, checked: int) -> None:
        super().__init__(f"the verification was stopped by its caller ({stage}, {checked} events checked)")
        self.stage = stage
        self.checked = checked


class Integrity(Context):
    """The chain's head and the check of the log (`verify`); the explicit sealing of a log that
    has no seals (`seal_log`)."""

    def __init__(
        self, writer: Writer, reader: Reads, *, events: EventStore[UUID], snapshots: EventStore[UUID] | None
    ) -> None:
        super().__init__(writer, reader)
        #: The events and the snapshots of the aggregates (None when the application takes none).
        self.events = events
        self.snapshots = snapshots
        #: Held by the verification running now: one at a time per ledger (VERIFY_BUSY otherwise).
        self.verifying = threading.Lock()

    @storage_read
    def chain_head(self) -> ChainHead:
        """The newest sealed event's position and the chain's digest there ((0, 64 zeros) when empty)."""
        position, digest = self.storage.last_seal()
        return ChainHead(position=position, digest=digest.hex())

    @storage_read
    def verify(
        self,
        expect_head: ChainHead | None = None,
        *,
        views: bool = True,
        stop: threading.Event | None = None,
        progress: Progress | None = None,
        yield_share: float = 0.0,
    ) -> Verification:
        """Check the log from position 1: the chain, `expect_head` (the chain must pass through that
        position with that digest), the keys index, every snapshot and, with `views`, every view
        table. Reads only, a page at a time. One runs at a time per ledger: another raises
        Exhausted (VERIFY_BUSY). Between pages it looks at `stop` (set: raises Stopped) and tells
        `progress` (the stage, the events checked so far), and sleeps `yield_share` of the time
        the page took (at most YIELD_MAX_S: beside a server's calls). Raises Invalid for a malformed
        `expect_head`; storage outages are Unavailable."""
        if expect_head is not None:
            self._check_head(expect_head)
        if not self.verifying.acquire(blocking=False):
            raise Exhausted("a verification of this ledger is running already: try later", reason=Reason.VERIFY_BUSY)
        try:
            return self._verify(expect_head, views, _Pace(stop, progress, yield_share))
        finally:
            self.verifying.release()

    def _verify(self, expect_head: ChainHead | None, views: bool, pace: _Pace) -> Verification:
        stop = max(self.storage.head(), self.storage.last_seal()[0])
        walk = Walk(watch=0 if expect_head is None else expect_head.position)
        if stop and self.storage.last_seal()[0] == 0:
            return Verification(
                ok=False, head=ChainHead(position=0, digest=GENESIS.hex()), checked=0, broken_at=1,
                problem=SEAL_MISSING, detail=UNSEALED,
            )  # fmt: skip
        keys = KeysCheck(self.storage, self.aggregates.mapper)
        for page in pages(self.storage.chain_page, stop, VERIFY_PAGE_EVENTS):
            pace.between("chain", walk.checked)
            walk.feed(*page)
            if walk.broken is not None:
                break
            keys.feed(page[0])
        else:
            walk.finish()
        pace.checked = walk.checked
        head = ChainHead(position=walk.position, digest=walk.digest.hex())
        if walk.broken is not None:
            broken = walk.broken
            return Verification(
                ok=False, head=head, checked=walk.checked, broken_at=broken.position, problem=broken.problem,
                detail=broken.detail,
            )  # fmt: skip
        found = (
            (self._head_differs(expect_head, walk) if expect_head is not None else None)
            or keys.finish(lambda: pace.between("keys"))
            or self._snapshot_disagrees(pace)
            or (self._view_disagrees(pace) if views else None)
        )
        if found is not None:
            position, problem, detail = found
            return Verification(
                ok=False, head=head, checked=walk.checked, broken_at=position, problem=problem, detail=detail
            )
        return Verification(ok=True, head=head, checked=walk.checked)

    @storage_read
    def chain_tail_break(self, events: int = TAIL_EVENTS) -> ChainBreak | None:
        """The first break in the last `events` events of the chain (and their seals), or in the
        seals' presence at all: what `serve` checks before it writes. None when they hold."""
        head, (sealed, _) = self.storage.head(), self.storage.last_seal()
        if head == 0 and sealed == 0:
            return None
        if sealed == 0:
            return ChainBreak(1, SEAL_MISSING, UNSEALED)
        after, previous = 0, GENESIS
        start = max(0, head - events)
        if start > 0:
            known = self.storage.digests(list(range(max(1, start - TAIL_PROBE), start + 1)))
            if known:
                after = max(known)
                previous = bytes(known[after])
        walk = Walk()
        walk.position, walk.digest = after, previous
        walk.run(pages(self.storage.chain_page, max(head, sealed), VERIFY_PAGE_EVENTS, after))
        return walk.broken

    @storage_read
    def seal_log(self, *, reason: str, principal: str = "", request_id: str = "") -> Receipt:
        """Seal a log that holds no seals (one written before the chain existed, or whose seals were
        deleted), and record it in the seal book (LogSealed: who, why, how many events, up to
        where). This covers whatever the log holds now, edits included: an admin's decision, never
        a side effect. Raises Invalid (no reason), Refused (LOG_SEALED_ALREADY: verify it instead)."""
        reason = check_text(reason, "reason", limit=REASON_CHARS_MAX)
        if not reason.strip():
            raise Invalid("say why the log is sealed (--reason)", reason=Reason.MISSING_FIELD, field="reason")
        audit = self.writer.audit(principal, request_id)
        refusal = Refused(
            "the log holds seals already: verify it (a broken chain is evidence, not something to seal over)",
            reason=Reason.LOG_SEALED_ALREADY,
        )
        if self.storage.last_seal()[0] != 0:
            raise refusal
        sealed = self.storage.seal_log()  # Nothing when another process sealed it first.
        if sealed == 0 and self.storage.head() > 0:
            raise refusal
        head = self.storage.last_seal()[0]

        def decide(touched: list[LedgerAggregate]) -> None:
            try:
                book: SealBook = self.aggregates.repository.get(SEALS_BOOK_ID)
            except AggregateNotFoundError:
                book = SealBook.open(audit)
            book.sealed(audit, reason=reason, events_sealed=sealed, head_position=head)
            touched.append(book)

        _, position = self.writer.write(decide)
        return Receipt(position or 0)

    @staticmethod
    def _check_head(expect_head: ChainHead) -> None:
        if not isinstance(expect_head.position, int) or expect_head.position < 1:
            raise Invalid("expect_head's position must be a log position (1 or more)", reason=Reason.OUT_OF_RANGE)
        if not isinstance(expect_head.digest, str) or not DIGEST_HEX.fullmatch(expect_head.digest):
            raise Invalid(
                "expect_head's digest must be 64 lowercase hexadecimal characters", reason=Reason.INVALID_FIELD
            )

    @staticmethod
    def _head_differs(expect_head: ChainHead, walk: Walk) -> tuple[int, str, str] | None:
        position = expect_head.position
        if walk.watched is None:
            detail = (
                f"the log ends at position {walk.position}"
                if position > walk.position
                else "no event of the log is at this position"
            )
            return position, HEAD_DIFFERS, f"the head written down is not in the chain: {detail}"
        if walk.watched.hex() != expect_head.digest:
            return position, HEAD_DIFFERS, f"the chain's digest here is {walk.watched.hex()}, not {expect_head.digest}"
        return None

    # Snapshots.

    def _snapshot_disagrees(self, pace: _Pace) -> tuple[int, str, str] | None:
        """The first stored snapshot (by aggregate, then version) that a fold of its events
        contradicts, or that cannot be decoded at all."""
        if self.snapshots is None:
            return None
        decode = self.aggregates.mapper.transcoder.decode
        for aggregate_id in self.storage.snapshot_ids():
            aggregate: Any = None
            version = 0
            while True:
                pace.between("snapshots")
                stored = self.snapshots.recorder.select_events(aggregate_id, gt=version, limit=SNAPSHOT_PAGE)
                if not stored:
                    break
                for snapshot in stored:
                    events = self.events.get(aggregate_id, gt=version, lte=snapshot.originator_version)
                    aggregate = project_aggregate(aggregate, events)
                    version = snapshot.originator_version
                    if aggregate is None or aggregate.version != version:
                        return self._snapshot_problem(
                            aggregate_id, version, "its aggregate has no event at its version"
                        )
                    fresh = self.aggregates.mapper.to_stored_event(type(aggregate).Snapshot.take(aggregate))
                    try:
                        state = decode(snapshot.state)
                    except Exception as error:  # Whatever the decoder makes of damaged bytes.
                        return self._snapshot_problem(aggregate_id, version, f"it cannot be decoded ({error})")
                    if not _same_state(state, decode(fresh.state)) or snapshot.topic != fresh.topic:
                        return self._snapshot_problem(aggregate_id, version, "it differs from a fold of its events")
        return None

    def _snapshot_problem(self, aggregate_id: UUID, version: int, why: str) -> tuple[int, str, str]:
        try:
            position = self.storage.position_of(aggregate_id, version)
        except LookupError:
            position = 0
        return position, SNAPSHOT_DISAGREES, f"the snapshot of aggregate {aggregate_id} at version {version}: {why}"

    # Views.

    def _view_disagrees(self, pace: _Pace) -> tuple[int, str, str] | None:
        """The first view row that a rebuild of the views from the log contradicts. The rebuild is
        projected up to the live views' positions, then, inside one read of the live views, brought
        up to the positions that read sees (the live views may have moved meanwhile)."""
        scratch = ScratchViews(
            lambda start, limit, stop: self.aggregates.recorder.select_notifications(start, limit, stop=stop),
            self.aggregates.mapper.to_domain_event,
        )
        try:
            scratch.project(self.storage.tracking_positions(), between=lambda: pace.between("views"))
            with self.storage.view_read() as read:
                positions = {
                    str(view): int(position) for view, position in read("SELECT view, position FROM view_tracking")
                }
                scratch.project(positions, between=lambda: pace.between("views"))
                collate = self.storage.byte_order
                built = self._built_views(positions, read)
                difference = first_difference(scratch, lambda table: read(ordered_select(table, collate)), views=built)
        finally:
            scratch.close()
        if difference is None:
            return None
        return difference.position, VIEW_DISAGREES, difference.detail

    def _built_views(self, positions: dict[str, int], read: Any) -> set[str]:
        """The views the live database has projected and holds every table of: a view newer than
        the ledger's last writable open (which makes its tables and projects it) has nothing to
        contradict yet."""
        present = {str(name) for (name,) in read(self.storage.tables_select)}
        missing = {owner for table, (*_, owner) in TABLES.items() if table not in present}
        return {view for view in positions if view not in missing}

    # Exports.

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
        """Reads.read_events, each event with its seal's `digest` (64 lowercase hex characters; ""
        for an event without a seal, which `verify` reports)."""
        events = self.reader.read_events(
            from_position=from_position,
            limit=limit,
            types=types,
            originator_ids=originator_ids,
            bytes_max=bytes_max,
        )
        if events:
            digests = self.storage.digests([event["position"] for event in events])
            for event in events:
                digest = digests.get(event["position"])
                event["digest"] = "" if digest is None else bytes(digest).hex()
        return events


class _Pace:
    """Between two pages of a verification: stop when asked to, and say how far it got."""

    def __init__(self, stop: threading.Event | None, progress: Progress | None, yield_share: float) -> None:
        self.stop = stop
        self.progress = progress
        self.yield_share = yield_share
        self.checked = 0
        self._page_started = time.perf_counter()

    def between(self, stage: str, checked: int | None = None) -> None:
        """Before the next page of `stage`; `checked`: the events of the chain checked so far
        (the same as before when not given)."""
        if checked is not None:
            self.checked = checked
        if self.yield_share:
            # Beside a server's calls: after each page, leave the interpreter to the other threads
            # for a share of the time the page took.
            time.sleep(min(YIELD_MAX_S, (time.perf_counter() - self._page_started) * self.yield_share))
            self._page_started = time.perf_counter()
        if self.stop is not None and self.stop.is_set():
            raise Stopped(stage, self.checked)
        if self.progress is not None:
            self.progress(stage, self.checked)


def _same_state(stored: dict[str, Any], fresh: dict[str, Any]) -> bool:
    """Whether two snapshots' fields agree, apart from when each was taken."""
    return {k: v for k, v in stored.items() if k != "timestamp"} == {k: v for k, v in fresh.items() if k != "timestamp"}
