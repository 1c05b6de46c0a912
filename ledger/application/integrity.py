"""Integrity: the head of the log's hash chain, and a check of the whole log against it.

Every event is sealed in the transaction that writes it (ledger.storage.chain gives the digest and
its encoding). `verify` streams the log from position 1 in pages, recomputes every digest and
compares it with the stored seal, then checks that the chain passes through a head written down
earlier (`expect_head`), that every stored snapshot agrees with a fold of its aggregate's events up
to its version, and that the views agree with a rebuild from the log. It reports the first break
found, in that order of checks, as one of ledger.storage.chain.PROBLEMS. `read_events` adds each
event's digest (hex) for exports.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from eventsourcing.application import project_aggregate

from ledger.application.kernel import storage_read
from ledger.application.reads import Reads
from ledger.domain.errors import Invalid
from ledger.domain.reasons import Reason
from ledger.storage.chain import (
    HEAD_DIFFERS,
    SNAPSHOT_DISAGREES,
    VIEW_DISAGREES,
    Walk,
    pages,
)
from ledger.views.models import ChainHead, Verification
from ledger.views.scratch import ScratchViews, first_difference, ordered_select

__all__ = ["Integrity", "VERIFY_PAGE_EVENTS"]

#: Events (and seals) read per page while the chain is checked: bounds the memory a check takes.
VERIFY_PAGE_EVENTS = 1000
#: Snapshots of one aggregate read at a time.
SNAPSHOT_PAGE = 50
DIGEST_HEX = re.compile(r"[0-9a-f]{64}")


class Integrity(Reads):
    """The chain's head and the check of the log (`verify`)."""

    @storage_read
    def chain_head(self) -> ChainHead:
        """The newest sealed event's position and the chain's digest there ((0, 64 zeros) when empty)."""
        position, digest = self.storage.last_seal()
        return ChainHead(position=position, digest=digest.hex())

    @storage_read
    def verify(self, expect_head: ChainHead | None = None, *, views: bool = True) -> Verification:
        """Check the log from position 1: the chain, `expect_head` (the chain must pass through that
        position with that digest), every snapshot and, with `views`, every view table. Raises
        Invalid for a malformed `expect_head`; storage outages are Unavailable."""
        if expect_head is not None:
            self._check_head(expect_head)
        stop = max(self.storage.head(), self.storage.last_seal()[0])
        walk = Walk(watch=0 if expect_head is None else expect_head.position)
        walk.run(pages(self.storage.chain_page, stop, VERIFY_PAGE_EVENTS))
        head = ChainHead(position=walk.position, digest=walk.digest.hex())
        if walk.broken is not None:
            broken = walk.broken
            return Verification(
                ok=False,
                head=head,
                checked=walk.checked,
                broken_at=broken.position,
                problem=broken.problem,
                detail=broken.detail,
            )
        found = (
            (self._head_differs(expect_head, walk) if expect_head is not None else None)
            or self._snapshot_disagrees()
            or (self._view_disagrees() if views else None)
        )
        if found is not None:
            position, problem, detail = found
            return Verification(
                ok=False, head=head, checked=walk.checked, broken_at=position, problem=problem, detail=detail
            )
        return Verification(ok=True, head=head, checked=walk.checked)

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

    def _snapshot_disagrees(self) -> tuple[int, str, str] | None:
        """The first stored snapshot (by aggregate, then version) that a fold of its events contradicts."""
        if self.snapshots is None:
            return None
        decode = self.mapper.transcoder.decode
        for aggregate_id in self.storage.snapshot_ids():
            aggregate: Any = None
            version = 0
            while True:
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
                    fresh = self.mapper.to_stored_event(type(aggregate).Snapshot.take(aggregate))
                    if not _same_state(decode(snapshot.state), decode(fresh.state)) or snapshot.topic != fresh.topic:
                        return self._snapshot_problem(aggregate_id, version, "it differs from a fold of its events")
        return None

    def _snapshot_problem(self, aggregate_id: UUID, version: int, why: str) -> tuple[int, str, str]:
        try:
            position = self.storage.position_of(aggregate_id, version)
        except LookupError:
            position = 0
        return position, SNAPSHOT_DISAGREES, f"the snapshot of aggregate {aggregate_id} at version {version}: {why}"

    # Views.

    def _view_disagrees(self) -> tuple[int, str, str] | None:
        """The first view row that a rebuild of the views from the log contradicts. The rebuild is
        projected up to the live views' positions, then, inside one read of the live views, brought
        up to the positions that read sees (the live views may have moved meanwhile)."""
        scratch = ScratchViews(
            lambda start, limit, stop: self.recorder.select_notifications(start, limit, stop=stop),
            self.mapper.to_domain_event,
        )
        try:
            scratch.project(self.storage.tracking_positions())
            with self.storage.view_read() as read:
                positions = {
                    str(view): int(position) for view, position in read("SELECT view, position FROM view_tracking")
                }
                scratch.project(positions)
                collate = self.storage.byte_order
                difference = first_difference(scratch, lambda table: read(ordered_select(table, collate)))
        finally:
            scratch.close()
        if difference is None:
            return None
        return difference.position, VIEW_DISAGREES, difference.detail

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
        events = super().read_events(
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


def _same_state(stored: dict[str, Any], fresh: dict[str, Any]) -> bool:
    """Whether two snapshots' fields agree, apart from when each was taken."""
    return {k: v for k, v in stored.items() if k != "timestamp"} == {k: v for k, v in fresh.items() if k != "timestamp"}
