"""Providers' bills: recording bill lines, linking runs to providers' sessions, the reconciliation
(ledger.views.bills) and the adjustments that bring committed spend to what was billed.

Recording is idempotent by (provider, line id, interval): each line's key is looked up in the keys
index (ledger.storage.keys) in bulk, and the payload it last recorded is compared by digest, so
a bill pulled twice records nothing the second time, and a restated line is recorded as a
restatement beside the payload it replaces. All lines of a provider's bill are events of one Bill
aggregate, so two processes recording the same line race on its version and the loser sees the
winner's line when it decides again.

An adjustment is decided on the account's aggregate: the total the adjustments should reach
(drift over the covered time, from the views caught up with the log) minus what the account has
already adjusted. Its id is a digest of the figures and the account's version, so two callers
computing from the same bill and account record one adjustment (the second is its duplicate); one
computing from a later bill records only the difference.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from ledger.application.context import Context
from ledger.application.outcomes import Receipt, storage_read
from ledger.domain import run_notes
from ledger.domain import spending as spend
from ledger.domain.base import LedgerAggregate, ledger_id
from ledger.domain.bills import BILLED_LINES_MAX, Bill, check_line, checked_lines, line_key
from ledger.domain.errors import Invalid, NotFound
from ledger.domain.limits import PAGE_SIZE_MAX, check_id, check_int, check_reference, check_text
from ledger.domain.reasons import Reason
from ledger.views.bills import DEFAULT_THRESHOLD_PERCENT, Figures, totals
from ledger.views.models import ReconcileReport

__all__ = ["BillCommands", "BillReceipt", "AdjustmentReceipt", "RECONCILE_PAGE_DEFAULT"]

RECONCILE_PAGE_DEFAULT = 1_000


@dataclass(frozen=True)
class BillReceipt:
    """What recording bill lines answers: the position of the write (for a request with nothing
    new, of the latest write it repeats) and what became of the lines."""

    position: int
    duplicate: bool
    recorded: int
    restated: int
    unchanged: int


def _checked_lines(lines: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The lines of a request checked (ledger.domain.bills.check_line), by their key. Raises
    Invalid naming the first bad line's index."""
    if len(lines) > BILLED_LINES_MAX:
        raise Invalid(
            f"a request holds at most {BILLED_LINES_MAX} lines",
            reason=Reason.BATCH_TOO_LARGE,
            limit=BILLED_LINES_MAX,
        )
    # Checked once per batch, column by column; a batch with something to refuse perhaps is
    # checked again line by line, in order, for the refusal of its first bad line.
    checked = checked_lines(lines)
    if checked is not None:
        by_key = dict(checked)
        if len(by_key) == len(checked):
            return by_key  # No key twice: nothing to compare.
    by_key = {}
    for index, (key, line) in enumerate(checked if checked is not None else _each_checked(lines)):
        seen = by_key.get(key)
        if seen is not None and seen["digest"] != line["digest"]:
            raise Invalid(
                f"lines[{index}] repeats line {line['line_id']} of the same interval with another payload",
                reason=Reason.DUPLICATE_LINE,
                line=str(index),
            )
        by_key[key] = line
    return by_key


def _each_checked(lines: Sequence[Mapping[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for index, raw in enumerate(lines):
        line = check_line(raw, index)
        yield line_key(line["line_id"], line["start"], line["end"]), line


@dataclass(frozen=True)
class AdjustmentReceipt:
    account: str
    run_id: str
    adjustment_id: str
    amount_usd_micro: int
    overrun_usd_micro: int
    position: int
    duplicate: bool


class BillCommands(Context):
    """Bills, session links, reconciliation and adjustments."""

    def record_billed_usage(
        self,
        *,
        provider: str,
        lines: Sequence[Mapping[str, Any]],
        cost_data_through: datetime | None = None,
        validate_only: bool = False,
        principal: str = "",
        request_id: str = "",
    ) -> BillReceipt:
        """Record lines of `provider`'s bill (see the module's docstring). `validate_only`: check
        the request as a recording would and record nothing (the receipt is all zeros)."""
        check_id(provider, "provider")
        if not lines and cost_data_through is None:
            raise Invalid("a bill needs lines or a cost_data_through", reason=Reason.EMPTY_BATCH)
        if cost_data_through is not None and cost_data_through.tzinfo is None:
            raise Invalid("cost_data_through needs a time zone", reason=Reason.INVALID_TIMESTAMP)
        by_key = _checked_lines(lines)
        if validate_only:
            return BillReceipt(0, False, 0, 0, 0)
        audit = self.writer.audit(principal, request_id)
        bill_id = ledger_id("bill", provider)

        def decide(touched: list[LedgerAggregate]) -> tuple[int, int, int, int]:
            bill = self._bill(bill_id)
            if bill is None:
                bill = Bill._create(Bill.Opened, id=bill_id, provider=provider, **audit.fields())
                latest: dict[str, tuple[int, dict[str, Any]]] = {}
            else:
                latest = self._latest_lines(bill_id, list(by_key))
            touched.append(bill)
            new: list[dict[str, Any]] = []
            restated: list[dict[str, Any]] = []
            repeated = 0
            for key, line in by_key.items():
                known = latest.get(key)
                if known is None:
                    new.append(line)
                elif known[1]["digest"] == line["digest"]:
                    repeated = max(repeated, known[0])
                else:
                    version, previous = known
                    restated.append(
                        {
                            **line,
                            "previous": {
                                "amount": previous["amount"],
                                "amount_text": previous["amount_text"],
                                "digest": previous["digest"],
                                "version": version,
                            },
                        }
                    )
            bill.record_lines(audit, new, restated, cost_data_through)
            return len(new), len(restated), len(by_key) - len(new) - len(restated), repeated or bill.version

        (recorded, restated, unchanged, repeated), position = self.writer.write(decide)
        duplicate = position is None
        if position is None:
            position = self.storage.position_of(bill_id, repeated)
        return BillReceipt(position, duplicate and bool(lines), recorded, restated, unchanged)

    def _bill(self, bill_id: UUID) -> Bill | None:
        try:
            found: object = self.aggregates.repository.get(bill_id)
        except AggregateNotFoundError:
            return None
        assert isinstance(found, Bill), "a provider's bill id names another aggregate"
        return found

    def _latest_lines(self, bill_id: UUID, keys: list[str]) -> dict[str, tuple[int, dict[str, Any]]]:
        """key -> (version, line) of the latest event that recorded each known key."""
        versions = self.storage.latest_key_versions(bill_id, keys)
        wanted: dict[int, set[str]] = {}
        for key, version in versions.items():
            wanted.setdefault(version, set()).add(key)
        latest: dict[str, tuple[int, dict[str, Any]]] = {}
        for version, keys_there in wanted.items():
            for stored in self.aggregates.recorder.select_events(bill_id, gt=version - 1, lte=version):
                event = self.aggregates.mapper.to_domain_event(stored)
                for line in getattr(event, "lines", ()):
                    key = line_key(line["line_id"], line["start"], line["end"])
                    if key in keys_there:
                        latest[key] = (version, line)
        return latest

    def link_session(
        self,
        *,
        run_id: str,
        provider: str,
        session_id: str,
        attempt: int = 0,
        principal: str = "",
        request_id: str = "",
    ) -> Receipt:
        """Link a run to a provider's session (idempotent)."""
        check_id(provider, "provider")
        check_reference(session_id, "session_id")
        check_int(attempt, "attempt", maximum=2**31 - 1)
        audit = self.writer.audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> tuple[UUID, int | None]:
            uuid, run = self.aggregates.run(run_id)
            touched.append(run)
            return uuid, run_notes.link_session(run, audit, provider=provider, session_id=session_id, attempt=attempt)

        (uuid, version), position = self.writer.write(decide)
        return self.writer.receipt(uuid, version, position)

    @storage_read
    def reconcile(
        self,
        *,
        run_id: str = "",
        account: str = "",
        threshold_percent: float = 0.0,
        page_size: int = 0,
        offset: int = 0,
        min_position: int = 0,
        timeout_s: float = 5.0,
    ) -> tuple[ReconcileReport, bool]:
        """The reconciliation of ledger.views.bills.BillReads.reconcile; the bool says whether more
        runs follow the page."""
        threshold = self._threshold(threshold_percent)
        limit = check_int(page_size, "page_size", maximum=PAGE_SIZE_MAX) or RECONCILE_PAGE_DEFAULT
        self._check_target(run_id, account)
        self.reader.wait(min_position, timeout_s)
        self._known_target(run_id, account)
        return self.reader.views.reconcile(
            run_id=run_id,
            account=account,
            threshold_percent=threshold,
            limit=limit,
            offset=offset,
            position=self.reader.projector.position,
        )

    @staticmethod
    def _threshold(threshold_percent: float) -> float:
        if threshold_percent == 0:
            return DEFAULT_THRESHOLD_PERCENT
        if not 0 < threshold_percent <= 1_000:
            raise Invalid(
                "threshold_percent must be above 0 and at most 1000",
                reason=Reason.OUT_OF_RANGE,
                field="threshold_percent",
            )
        return threshold_percent

    @staticmethod
    def _check_target(run_id: str, account: str) -> None:
        if run_id and account:
            raise Invalid("name a run or an account, not both", reason=Reason.INVALID_FIELD, field="account")
        check_text(run_id, "run_id", limit=256)
        check_text(account, "account", limit=256)

    def _known_target(self, run_id: str, account: str) -> None:
        if run_id and self.reader.views.run_state(run_id, self.writer.clock()) is None:
            raise NotFound(f"no run {run_id}", reason=Reason.RUN_NOT_FOUND, run_id=run_id)
        if account and self.reader.views.account(account) is None:
            raise NotFound(f"no account {account}", reason=Reason.ACCOUNT_NOT_FOUND, account=account)

    def adjust_to_bill(
        self, *, run_id: str = "", account: str = "", principal: str = "", request_id: str = ""
    ) -> tuple[list[AdjustmentReceipt], int]:
        """Record each account's unadjusted drift (one run's, one account's own, or every one's) as
        an adjustment. Returns the adjustments and the highest position written (0: none)."""
        self._check_target(run_id, account)
        audit = self.writer.audit(principal, request_id)
        # The drift is read from the views: let them reflect every write first.
        self.reader.wait(self.reader.head())
        self._known_target(run_id, account)
        receipts: list[AdjustmentReceipt] = []
        highest = 0
        for target, figures in self.reader.views.adjust_targets(run_id=run_id, account=account):
            receipt = self._adjust(target, figures, audit, is_run=target == run_id or self._is_run(target))
            if receipt is not None:
                receipts.append(receipt)
                highest = max(highest, receipt.position)
        return receipts, highest

    def _is_run(self, name: str) -> bool:
        return self.reader.views.run_state(name, self.writer.clock()) is not None

    def _adjust(self, target: str, figures: Figures, audit: Any, *, is_run: bool) -> AdjustmentReceipt | None:
        bill_totals = totals(figures, DEFAULT_THRESHOLD_PERCENT)
        # What the adjustments should add up to: the drift over the time the bill covers.
        goal = bill_totals.drift_usd_micro
        facts = {
            "billed_usd_micro": figures.billed,
            "provisional_usd_micro": figures.provisional,
            "estimated_usd_micro": figures.estimated,
            "covered_estimate_usd_micro": figures.estimated_final,
            "lines": figures.lines,
            "providers": sorted(figures.providers),
            "drift_usd_micro": goal,
        }

        def decide(touched: list[LedgerAggregate]) -> tuple[int | None, int, int, str]:
            spend_account, parents = self.aggregates.with_parents(target, touched)
            adjusted = getattr(spend_account, "adjusted", 0)
            # Never below nothing spent (committed and presumed): a credit beyond it brings it to zero.
            amount = max(goal - adjusted, -(spend_account.committed + spend_account.presumed))
            if amount == 0:
                return 0, 0, 0, ""
            # The account's version too: the same figures may come back later (a line restated and
            # restated back), and must then be adjusted again, not answered as the first time.
            decided_on = (sorted(facts.items()), adjusted, amount, spend_account.version)
            digest = hashlib.blake2b(repr(decided_on).encode(), digest_size=8).hexdigest()
            adjustment_id = f"bill:{digest}"
            version, overrun = spend.adjust(
                spend_account,
                parents,
                audit,
                adjustment_id=adjustment_id,
                amount=amount,
                bill={**facts, "adjusted_before_usd_micro": adjusted},
                recall=self.aggregates.recall_spend(spend_account),
            )
            return version, amount, overrun, adjustment_id

        (version, amount, overrun, adjustment_id), position = self.writer.write(decide)
        if not adjustment_id:
            return None
        receipt = self.writer.receipt(ledger_id("account", target), version, position)
        return AdjustmentReceipt(
            account=target,
            run_id=target if is_run else "",
            adjustment_id=adjustment_id,
            amount_usd_micro=amount,
            overrun_usd_micro=overrun,
            position=receipt.position,
            duplicate=receipt.duplicate,
        )
