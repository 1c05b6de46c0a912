"""Providers' bills through the Ledger's methods, on each backend: recording lines (new, repeated,
restated, refused), attribution, the figures of the reconciliation and of the run's and account's
totals, the adjustments that bring committed spend to the bill, and session links.

Every expected figure is worked out by hand from the rules of ledger.views.bills' docstring and
written out here. The clock is the FakeClock (2025-01-01 00:00 UTC): a commit made at 00:30 counts
in hour 0 (00:00-01:00), which a bill covers once its coverage reaches 01:00.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

import pytest

from ledger import Invalid, Ledger, NotFound
from ledger.domain.base import ledger_id
from ledger.domain.reasons import Reason
from ledger.views.models import (
    BillTotals,
    ProviderBill,
    ReconcileReport,
    Reconciliation,
    TokenClassDrift,
    UnattributedGroup,
)
from tests.ledger.conftest import START, FakeClock

H = timedelta(hours=1)
H0, H1, H2, H3 = START, START + H, START + 2 * H, START + 3 * H

TOKENS = {
    "price_sheet": "tinker-2025",
    "tokens": [
        {"token_class": "train", "tokens": 2_000_000, "usd_micro_per_million_tokens": 500_000},
        {"token_class": "sample", "tokens": 10_000, "usd_micro_per_million_tokens": 0},
    ],
}


def text_of(amount: int) -> str:
    """A provider's decimal figure for `amount` micro-dollars, written out the plain way."""
    sign = "-" if amount < 0 else ""
    return f"{sign}{abs(amount) // 1_000_000}.{abs(amount) % 1_000_000:06d}"


def line(
    line_id: str, start: datetime, amount: int | None, *, end: datetime | None = None, **extra: Any
) -> dict[str, Any]:
    """A bill line of the hour from `start` (or up to `end`); amount None: not priced yet."""
    found: dict[str, Any] = {
        "line_id": line_id,
        "interval_start": start,
        "interval_end": end if end is not None else start + H,
        "amount_usd_micro": amount,
        "amount_text": "" if amount is None else text_of(amount),
    }
    found.update(extra)
    return found


def spend(ledger: Ledger, account: str, rid: str, amount: int, basis: dict[str, Any] | None = None) -> None:
    """Spend `amount` on `account` now: a hold committed at the same amount."""
    ledger.reserve(account=account, reservation_id=rid, amount_usd_micro=amount, basis=basis)
    ledger.commit(account=account, reservation_id=rid, actual_usd_micro=amount, basis=basis)


def report(ledger: Ledger, **arguments: Any) -> ReconcileReport:
    answer: ReconcileReport = ledger.reconcile(min_position=ledger.head(), **arguments)[0]
    return answer


def run_row(ledger: Ledger, run_id: str, **arguments: Any) -> Reconciliation:
    rows = [row for row in report(ledger, **arguments).runs if row.run_id == run_id]
    assert len(rows) == 1, rows
    return rows[0]


def bill_of(ledger: Ledger, run_id: str, **arguments: Any) -> BillTotals:
    return run_row(ledger, run_id, **arguments).bill


def refused(ledger: Ledger, reason: Reason, **arguments: Any) -> Invalid:
    """record_billed_usage refuses with `reason` and records nothing."""
    head = ledger.head()
    with pytest.raises(Invalid) as caught:
        ledger.record_billed_usage(**arguments)
    assert caught.value.reason == reason, caught.value
    assert ledger.head() == head
    return caught.value


def totals(**figures: Any) -> BillTotals:
    return BillTotals(**figures)


@pytest.fixture
def run_id(ledger: Ledger, clock: FakeClock) -> str:
    """A run that committed $1 at 00:30 (hour 0)."""
    found = ledger.open_run(run_key="run-a", name="sft").run_id
    clock.advance(minutes=30)
    spend(ledger, found, "r1", 1_000_000)
    return found


# Recording.


class TestRecording:
    def test_new_lines_then_the_same_request_again(self, ledger: Ledger) -> None:
        lines = [line("a", H0, 150, run_id="x"), line("b", H0, 40, session_id="s")]
        first = ledger.record_billed_usage(provider="tinker", lines=lines, cost_data_through=H1)
        assert (first.duplicate, first.recorded, first.restated, first.unchanged) == (False, 2, 0, 0)
        assert first.position == ledger.head()
        head = ledger.head()
        again = ledger.record_billed_usage(provider="tinker", lines=lines, cost_data_through=H1)
        assert (again.duplicate, again.recorded, again.restated, again.unchanged) == (True, 0, 0, 2)
        assert again.position == first.position
        assert ledger.head() == head
        (provider,) = report(ledger).providers
        assert provider == ProviderBill(
            provider="tinker",
            billed_usd_micro=190,
            unattributed_usd_micro=190,
            lines=2,
            unattributed_lines=2,
            restatements=0,
            cost_data_through=H1,
            first_interval_start=H0,
            last_interval_end=H1,
        )

    def test_a_restatement_replaces_the_amount_and_keeps_the_previous(self, ledger: Ledger, run_id: str) -> None:
        first = ledger.record_billed_usage(
            provider="tinker", lines=[line("a", H0, 1_000_000, run_id=run_id), line("b", H0, 5, run_id=run_id)]
        )
        receipt = ledger.record_billed_usage(
            provider="tinker", lines=[line("a", H0, 1_250_000, run_id=run_id), line("b", H0, 5, run_id=run_id)]
        )
        assert (receipt.duplicate, receipt.recorded, receipt.restated, receipt.unchanged) == (False, 0, 1, 1)
        assert receipt.position == ledger.head() > first.position
        assert bill_of(ledger, run_id).billed_usd_micro == 1_250_005
        (provider,) = report(ledger).providers
        assert (provider.billed_usd_micro, provider.lines, provider.restatements) == (1_250_005, 2, 1)
        (event,) = ledger.read_events(from_position=receipt.position, types=["LinesRestated"])
        (restated,) = event["data"]["lines"]
        assert (restated["line_id"], restated["amount"], restated["amount_text"]) == ("a", 1_250_000, "1.250000")
        assert restated["previous"]["amount"] == 1_000_000
        assert restated["previous"]["amount_text"] == "1.000000"
        assert restated["previous"]["version"] == 2  # The bill's Opened is version 1, its first lines 2.
        # The restatement sent again is unchanged, and answers its own position.
        head = ledger.head()
        again = ledger.record_billed_usage(provider="tinker", lines=[line("a", H0, 1_250_000, run_id=run_id)])
        assert (again.duplicate, again.unchanged, again.position) == (True, 1, receipt.position)
        assert ledger.head() == head

    def test_a_line_sent_again_after_many_others_is_recognised(self, ledger: Ledger, run_id: str) -> None:
        first = ledger.record_billed_usage(provider="tinker", lines=[line("old", H0, 7, run_id=run_id)])
        for batch in range(40):
            ledger.record_billed_usage(
                provider="tinker",
                lines=[line(f"l{batch}-{i}", H0 + batch * H, 1, run_id=run_id) for i in range(25)],
            )
            spend(ledger, run_id, f"later-{batch}", 1)
        head = ledger.head()
        again = ledger.record_billed_usage(provider="tinker", lines=[line("old", H0, 7, run_id=run_id)])
        assert (again.duplicate, again.recorded, again.unchanged, again.position) == (True, 0, 1, first.position)
        assert ledger.head() == head
        restated = ledger.record_billed_usage(provider="tinker", lines=[line("old", H0, 8, run_id=run_id)])
        assert (restated.restated, restated.recorded) == (1, 0)
        assert bill_of(ledger, run_id).lines == 1 + 40 * 25

    def test_the_same_line_twice_in_one_request(self, ledger: Ledger) -> None:
        twice = [line("a", H0, 10), line("a", H0, 10)]
        receipt = ledger.record_billed_usage(provider="tinker", lines=twice)
        assert (receipt.recorded, receipt.unchanged) == (1, 0)
        # The same id over another interval is another line.
        other = ledger.record_billed_usage(provider="tinker", lines=[line("a", H1, 10)])
        assert other.recorded == 1
        error = refused(ledger, Reason.DUPLICATE_LINE, provider="tinker", lines=[line("b", H0, 10), line("b", H0, 11)])
        assert error.metadata["line"] == "1"
        assert report(ledger).providers[0].lines == 2

    def test_a_new_cost_data_through_alone_is_recorded(self, ledger: Ledger) -> None:
        ledger.record_billed_usage(provider="tinker", lines=[line("a", H0, 10)], cost_data_through=H1)
        receipt = ledger.record_billed_usage(provider="tinker", lines=[line("a", H0, 10)], cost_data_through=H2)
        assert (receipt.recorded, receipt.unchanged) == (0, 1)
        assert report(ledger).providers[0].cost_data_through == H2


class TestBadInput:
    def test_more_than_ten_thousand_lines(self, ledger: Ledger) -> None:
        lines = [line(f"l{i}", H0, 1) for i in range(10_001)]
        refused(ledger, Reason.BATCH_TOO_LARGE, provider="tinker", lines=lines)
        receipt = ledger.record_billed_usage(provider="tinker", lines=lines[:10_000])
        assert receipt.recorded == 10_000

    @pytest.mark.parametrize(
        ("change", "reason"),
        [
            ({"line_id": ""}, Reason.MISSING_FIELD),
            ({"interval_start": datetime(2025, 1, 1)}, Reason.INVALID_INTERVAL),  # Naive, on purpose.
            ({"interval_end": datetime(2025, 1, 1, 1)}, Reason.INVALID_INTERVAL),  # Naive.
            ({"interval_start": None}, Reason.INVALID_INTERVAL),
            ({"interval_end": H0}, Reason.INVALID_INTERVAL),
            ({"interval_end": H0 - H}, Reason.INVALID_INTERVAL),
            ({"interval_end": H0 + timedelta(days=400)}, Reason.INVALID_INTERVAL),
            ({"currency": "EUR"}, Reason.CURRENCY_NOT_SUPPORTED),
            ({"amount_text": "0.0000105"}, Reason.AMOUNT_TEXT_MISMATCH),  # 10 half-even, not 11
            ({"amount_text": "1.5"}, Reason.AMOUNT_TEXT_MISMATCH),
            ({"amount_text": "twelve"}, Reason.INVALID_AMOUNT),
            ({"quantities": {"train": math.nan}}, Reason.NON_FINITE_VALUE),
            ({"quantities": {"train": math.inf}}, Reason.NON_FINITE_VALUE),
            ({"quantities": {"train": -1.0}}, Reason.OUT_OF_RANGE),
        ],
    )
    def test_a_bad_line_refuses_the_whole_request(self, ledger: Ledger, change: dict[str, Any], reason: Reason) -> None:
        bad = {**line("bad", H0, 11), **change}
        if bad.get("interval_start") is None:
            del bad["interval_start"]
        error = refused(ledger, reason, provider="tinker", lines=[line("a", H0, 1), line("b", H0, 2), bad])
        assert error.metadata["line"] == "2"
        assert report(ledger).providers == ()

    def test_amount_text_rounds_half_even(self, ledger: Ledger) -> None:
        receipt = ledger.record_billed_usage(
            provider="tinker",
            lines=[
                {**line("a", H0, 10), "amount_text": "0.0000105"},
                {**line("b", H0, 12), "amount_text": "0.0000115"},
            ],
        )
        assert receipt.recorded == 2

    @pytest.mark.parametrize(
        ("provider", "reason"),
        [("", Reason.MISSING_FIELD), ("a/../b", Reason.INVALID_FIELD), ("p" * 300, Reason.STRING_TOO_LONG)],
    )
    def test_a_bad_provider(self, ledger: Ledger, provider: str, reason: Reason) -> None:
        refused(ledger, reason, provider=provider, lines=[line("a", H0, 1)])

    def test_nothing_to_record(self, ledger: Ledger) -> None:
        refused(ledger, Reason.EMPTY_BATCH, provider="tinker", lines=[])
        refused(
            ledger,
            Reason.INVALID_TIMESTAMP,
            provider="tinker",
            lines=[line("a", H0, 1)],
            cost_data_through=datetime(2025, 1, 1, 1),  # Naive.
        )


# Attribution.


class TestAttribution:
    def test_precedence_run_then_session_then_account(self, ledger: Ledger) -> None:
        ledger.open_account(account="team")
        first = ledger.open_run(run_key="first", parent_account="team").run_id
        second = ledger.open_run(run_key="second", parent_account="team").run_id
        ledger.start_attempt(run_id=second)
        ledger.link_session(run_id=second, provider="tinker", session_id="s2", attempt=1)
        stranger = str(ledger_id("run", "not-opened"))
        ledger.record_billed_usage(
            provider="tinker",
            lines=[
                line("run", H0, 1_000, run_id=first, session_id="s2", account="team"),
                line("session", H0, 200, run_id=stranger, session_id="s2", account="team"),
                line("account", H0, 30, run_id=stranger, session_id="s9", account="team"),
                line("nobody", H0, 4, run_id=stranger, account="nowhere"),
                line("bare", H0, 5, description="GPU hours"),
            ],
            cost_data_through=H1,
        )
        answer = report(ledger)
        assert {row.run_id: (row.bill.billed_usd_micro, row.bill.lines) for row in answer.runs} == {
            first: (1_000, 1),
            second: (200, 1),
        }
        (team,) = answer.accounts
        assert (team.account, team.bill.billed_usd_micro, team.bill.lines) == ("team", 1_230, 3)
        (provider,) = answer.providers
        assert (provider.billed_usd_micro, provider.unattributed_usd_micro) == (1_239, 9)
        assert (provider.lines, provider.unattributed_lines) == (5, 2)
        assert answer.unattributed == (
            UnattributedGroup(provider="tinker", source="GPU hours", billed_usd_micro=5, lines=1),
            UnattributedGroup(provider="tinker", source=f"run {stranger}", billed_usd_micro=4, lines=1),
        )

    def test_a_run_opened_later_and_a_session_linked_later_take_their_lines(self, ledger: Ledger) -> None:
        later = str(ledger_id("run", "later"))
        ledger.record_billed_usage(
            provider="tinker",
            lines=[line("by-id", H0, 300, run_id=later), line("by-session", H0, 20, session_id="s-late")],
        )
        assert report(ledger).runs == ()
        assert report(ledger).providers[0].unattributed_usd_micro == 320
        assert ledger.open_run(run_key="later").run_id == later
        assert bill_of(ledger, later).billed_usd_micro == 300
        other = ledger.open_run(run_key="other").run_id
        ledger.link_session(run_id=other, provider="tinker", session_id="s-late")
        assert bill_of(ledger, other).billed_usd_micro == 20
        assert report(ledger).providers[0].unattributed_usd_micro == 0
        # A session of another provider is another session.
        ledger.record_billed_usage(provider="modal", lines=[line("m", H0, 7, session_id="s-late")])
        assert bill_of(ledger, other).billed_usd_micro == 20

    def test_a_session_stays_with_the_first_run_linked(self, ledger: Ledger) -> None:
        one = ledger.open_run(run_key="one").run_id
        two = ledger.open_run(run_key="two").run_id
        ledger.link_session(run_id=one, provider="tinker", session_id="s")
        ledger.link_session(run_id=two, provider="tinker", session_id="s")
        ledger.record_billed_usage(provider="tinker", lines=[line("a", H0, 9, session_id="s")])
        assert [(row.run_id, row.bill.billed_usd_micro) for row in report(ledger).runs] == [(one, 9)]


# Figures.


class TestFigures:
    @pytest.mark.parametrize(
        ("billed", "drift", "percent", "flagged"),
        [
            (1_070_000, 70_000, 7.0, True),
            (1_050_000, 50_000, 5.0, False),  # Flagged only above the threshold.
            (1_040_000, 40_000, 4.0, False),
            (950_000, -50_000, -5.0, False),
            (930_000, -70_000, -7.0, True),
            (1_000_000, 0, 0.0, False),
        ],
    )
    def test_drift_and_percent(
        self, ledger: Ledger, run_id: str, billed: int, drift: int, percent: float, flagged: bool
    ) -> None:
        ledger.record_billed_usage(
            provider="tinker", lines=[line("a", H0, billed, run_id=run_id)], cost_data_through=H1
        )
        assert bill_of(ledger, run_id) == totals(
            estimated_usd_micro=1_000_000,
            billed_usd_micro=billed,
            drift_usd_micro=drift,
            drift_percent=percent,
            lines=1,
            flagged=flagged,
            unadjusted_usd_micro=drift,
        )

    def test_threshold_percent(self, ledger: Ledger, run_id: str) -> None:
        ledger.record_billed_usage(provider="tinker", lines=[line("a", H0, 1_070_000, run_id=run_id)])
        assert bill_of(ledger, run_id).flagged
        assert not bill_of(ledger, run_id, threshold_percent=10).flagged
        assert bill_of(ledger, run_id, threshold_percent=6.9).flagged
        assert not bill_of(ledger, run_id, threshold_percent=7).flagged
        answer = report(ledger, threshold_percent=10)
        assert answer.threshold_percent == 10
        with pytest.raises(Invalid) as caught:
            report(ledger, threshold_percent=-1)
        assert caught.value.reason == Reason.OUT_OF_RANGE

    def test_billed_against_no_estimate_is_flagged(self, ledger: Ledger) -> None:
        idle = ledger.open_run(run_key="idle").run_id
        ledger.record_billed_usage(provider="tinker", lines=[line("a", H0, 10, run_id=idle)])
        assert bill_of(ledger, idle) == totals(
            billed_usd_micro=10, drift_usd_micro=10, lines=1, flagged=True, unadjusted_usd_micro=10
        )

    def test_pending_bill_and_provisional_lines(self, ledger: Ledger, clock: FakeClock, run_id: str) -> None:
        clock.advance(hours=1)  # 01:30: hour 1.
        spend(ledger, run_id, "r2", 500_000)
        clock.advance(hours=1)  # 02:30: hour 2.
        spend(ledger, run_id, "r3", 200_000)
        ledger.record_billed_usage(
            provider="tinker",
            lines=[line("h0", H0, 1_020_000, run_id=run_id), line("h1", H1, 480_000, run_id=run_id)],
            cost_data_through=H1,
        )
        # Covered up to 01:00: hour 0's $1 is the covered estimate, hours 1 and 2 ($0.70) are
        # pending; the line of hour 1 ends after 01:00, so it is provisional.
        assert bill_of(ledger, run_id) == totals(
            estimated_usd_micro=1_700_000,
            billed_usd_micro=1_500_000,
            drift_usd_micro=20_000,
            drift_percent=2.0,
            pending_bill_usd_micro=700_000,
            provisional_usd_micro=480_000,
            lines=2,
            unadjusted_usd_micro=20_000,
        )
        # A cost_data_through of 02:00 covers hour 1: nothing is provisional, $0.20 is pending.
        ledger.record_billed_usage(provider="tinker", lines=[], cost_data_through=H2)
        assert bill_of(ledger, run_id) == totals(
            estimated_usd_micro=1_700_000,
            billed_usd_micro=1_500_000,
            drift_usd_micro=0,
            drift_percent=0.0,
            pending_bill_usd_micro=200_000,
            lines=2,
        )

    def test_without_cost_data_through_the_last_interval_is_covered(
        self, ledger: Ledger, clock: FakeClock, run_id: str
    ) -> None:
        clock.advance(hours=1)  # 01:30: hour 1.
        spend(ledger, run_id, "r2", 500_000)
        ledger.record_billed_usage(provider="tinker", lines=[line("h0", H0, 1_100_000, run_id=run_id)])
        assert bill_of(ledger, run_id) == totals(
            estimated_usd_micro=1_500_000,
            billed_usd_micro=1_100_000,
            drift_usd_micro=100_000,
            drift_percent=10.0,
            pending_bill_usd_micro=500_000,
            lines=1,
            flagged=True,
            unadjusted_usd_micro=100_000,
        )
        # The provider's last interval is its own, whoever it belongs to: a line of another run
        # ending at 02:00 covers hour 1 of this run too.
        other = ledger.open_run(run_key="other").run_id
        ledger.record_billed_usage(provider="tinker", lines=[line("o", H1, 1, run_id=other)])
        assert bill_of(ledger, run_id).pending_bill_usd_micro == 0
        assert bill_of(ledger, run_id).drift_usd_micro == -400_000

    def test_a_bill_covering_part_of_an_hour_leaves_that_hour_pending(self, ledger: Ledger, run_id: str) -> None:
        half = H0 + timedelta(minutes=30)
        ledger.record_billed_usage(
            provider="tinker",
            lines=[line("first-half", H0, 600_000, end=half, run_id=run_id)],
            cost_data_through=H0 + timedelta(minutes=45),
        )
        # The $1 committed at 00:30 counts in hour 0, which 00:45 does not cover: it is pending,
        # and the half hour billed stands against no covered estimate.
        assert bill_of(ledger, run_id) == totals(
            estimated_usd_micro=1_000_000,
            billed_usd_micro=600_000,
            drift_usd_micro=600_000,
            pending_bill_usd_micro=1_000_000,
            lines=1,
            flagged=True,
            unadjusted_usd_micro=600_000,
        )

    def test_the_earliest_coverage_of_the_providers_billing_a_run(
        self, ledger: Ledger, clock: FakeClock, run_id: str
    ) -> None:
        clock.advance(hours=1)
        spend(ledger, run_id, "r2", 500_000)
        ledger.record_billed_usage(
            provider="tinker", lines=[line("t", H0, 900_000, run_id=run_id)], cost_data_through=H2
        )
        ledger.record_billed_usage(
            provider="modal", lines=[line("m", H0, 100_000, run_id=run_id)], cost_data_through=H1
        )
        row = run_row(ledger, run_id)
        assert row.providers == ("modal", "tinker")
        assert row.bill == totals(
            estimated_usd_micro=1_500_000,
            billed_usd_micro=1_000_000,
            drift_usd_micro=0,
            drift_percent=0.0,
            pending_bill_usd_micro=500_000,
            lines=2,
        )

    def test_unpriced_lines(self, ledger: Ledger, run_id: str) -> None:
        ledger.record_billed_usage(
            provider="tinker",
            lines=[line("a", H0, 1_000_000, run_id=run_id), line("b", H0, None, run_id=run_id)],
            cost_data_through=H1,
        )
        assert bill_of(ledger, run_id) == totals(
            estimated_usd_micro=1_000_000,
            billed_usd_micro=1_000_000,
            drift_percent=0.0,
            lines=2,
            unpriced_lines=1,
        )
        # Priced later: a restatement.
        receipt = ledger.record_billed_usage(provider="tinker", lines=[line("b", H0, 30_000, run_id=run_id)])
        assert receipt.restated == 1
        assert bill_of(ledger, run_id).unpriced_lines == 0
        assert bill_of(ledger, run_id).drift_usd_micro == 30_000

    def test_token_classes(self, ledger: Ledger, clock: FakeClock) -> None:
        run = ledger.open_run(run_key="tokens").run_id
        clock.advance(minutes=30)
        spend(ledger, run, "r1", 1_000_000, TOKENS)
        clock.advance(hours=1)
        spend(ledger, run, "r2", 1_000_000, TOKENS)  # Hour 1: not covered.
        ledger.record_billed_usage(
            provider="tinker",
            lines=[
                line("train", H0, 950_000, run_id=run, quantities={"train": 1_900_000.0, "gpu_seconds": 60.0}),
                line("prefill", H0, 50_000, run_id=run, quantities={"prefill": 7_000.0}),
            ],
            cost_data_through=H1,
        )
        assert run_row(ledger, run).token_classes == (
            TokenClassDrift(
                token_class="train", ledger_tokens=2_000_000, billed_tokens=1_900_000, drift_tokens=-100_000
            ),
            TokenClassDrift(token_class="prefill", ledger_tokens=0, billed_tokens=7_000, drift_tokens=7_000),
        )

    def test_token_classes_count_only_bases_that_are_their_amounts_usage(
        self, ledger: Ledger, clock: FakeClock
    ) -> None:
        """Older clients committed a copy of the reservation's estimate as the actual basis, with
        another actual amount; such a basis is not the usage, and counts no tokens. (The ledger
        now refuses it: the commit is written here as those versions stored it.)"""
        from ledger.domain import spending
        from ledger.domain.base import Audit
        from ledger.domain.basis import cost_basis

        run = ledger.open_run(run_key="copied").run_id
        clock.advance(minutes=30)
        ledger.reserve(account=run, reservation_id="r1", amount_usd_micro=1_000_000, basis=TOKENS)
        holder = ledger.aggregates.account(run)
        audit = Audit("old-version", "", ledger.clock())
        spending.commit(holder, [], audit, reservation_id="r1", actual=1_200_000, basis=cost_basis(TOKENS))
        ledger.save(holder)
        # And a commit with the usage it really had: 400,000 train tokens at $0.50 per million.
        real = {
            "price_sheet": "tinker-2025",
            "tokens": [{"token_class": "train", "tokens": 400_000, "usd_micro_per_million_tokens": 500_000}],
        }
        ledger.reserve(account=run, reservation_id="r2", amount_usd_micro=1_000_000, basis=TOKENS)
        ledger.commit(account=run, reservation_id="r2", actual_usd_micro=200_000, basis=real)
        ledger.record_billed_usage(
            provider="tinker",
            lines=[line("train", H0, 1_400_000, run_id=run, quantities={"train": 2_800_000.0})],
            cost_data_through=H1,
        )
        assert run_row(ledger, run).token_classes == (
            TokenClassDrift(
                token_class="train", ledger_tokens=400_000, billed_tokens=2_800_000, drift_tokens=2_400_000
            ),
        )

    def test_accounts_roll_up_to_their_parents(self, ledger: Ledger, clock: FakeClock) -> None:
        ledger.open_account(account="org")
        ledger.open_account(account="team", parent="org")
        one = ledger.open_run(run_key="one", parent_account="team").run_id
        two = ledger.open_run(run_key="two", parent_account="team").run_id
        alone = ledger.open_run(run_key="alone").run_id
        clock.advance(minutes=30)
        spend(ledger, one, "r1", 1_000_000)
        spend(ledger, two, "r2", 2_000_000)
        ledger.charge(account="team", charge_id="c1", amount_usd_micro=100_000)
        clock.advance(hours=1)
        spend(ledger, two, "r3", 300_000)  # Hour 1: pending.
        ledger.record_billed_usage(
            provider="tinker",
            lines=[
                line("one", H0, 1_100_000, run_id=one),
                line("two", H0, 1_900_000, run_id=two),
                line("team", H0, 100_000, account="team"),
                line("alone", H0, 5, run_id=alone),
            ],
            cost_data_through=H1,
        )
        one_bill = totals(
            estimated_usd_micro=1_000_000,
            billed_usd_micro=1_100_000,
            drift_usd_micro=100_000,
            drift_percent=10.0,
            lines=1,
            flagged=True,
            unadjusted_usd_micro=100_000,
        )
        two_bill = totals(
            estimated_usd_micro=2_300_000,
            billed_usd_micro=1_900_000,
            drift_usd_micro=-100_000,
            drift_percent=-5.0,
            pending_bill_usd_micro=300_000,
            lines=1,
            unadjusted_usd_micro=-100_000,
        )
        team_bill = totals(
            estimated_usd_micro=3_400_000,
            billed_usd_micro=3_100_000,
            drift_usd_micro=0,
            drift_percent=0.0,
            pending_bill_usd_micro=300_000,
            lines=3,
        )
        answer = report(ledger)
        # Runs by the size of their drift, then by what was billed: two before one.
        assert [(row.run_id, row.parent, row.bill) for row in answer.runs] == [
            (two, "team", two_bill),
            (one, "team", one_bill),
            (alone, "", totals(billed_usd_micro=5, drift_usd_micro=5, lines=1, flagged=True, unadjusted_usd_micro=5)),
        ]
        assert [(row.account, row.parent, row.bill) for row in answer.accounts] == [
            ("org", "", team_bill),
            ("team", "org", team_bill),
        ]
        # The same figures on the run's and the account's totals.
        head = ledger.head()
        assert ledger.run_state(one, min_position=head).spend.bill == one_bill
        assert ledger.run_state(two, min_position=head).spend.bill == two_bill
        assert ledger.account("team", min_position=head).bill == team_bill
        assert ledger.account("org", min_position=head).bill == team_bill
        assert ledger.account(one, min_position=head).bill == one_bill
        # A reconciliation of one account is that account and what lies under it.
        scoped = report(ledger, account="team")
        assert sorted(row.run_id for row in scoped.runs) == sorted([one, two])
        assert [(row.account, row.bill) for row in scoped.accounts] == [("team", team_bill)]
        only = report(ledger, run_id=one)
        assert [row.bill for row in only.runs] == [one_bill]
        assert only.accounts == ()

    def test_no_bill_no_bill_totals(self, ledger: Ledger, run_id: str) -> None:
        head = ledger.head()
        assert ledger.run_state(run_id, min_position=head).spend.bill is None
        assert ledger.account(run_id, min_position=head).bill is None
        # Estimated only: the run's row says so, and nothing drifts.
        assert bill_of(ledger, run_id) == totals(estimated_usd_micro=1_000_000, pending_bill_usd_micro=1_000_000)

    def test_unknown_targets(self, ledger: Ledger) -> None:
        with pytest.raises(NotFound) as caught:
            report(ledger, run_id=str(ledger_id("run", "none")))
        assert caught.value.reason == Reason.RUN_NOT_FOUND
        with pytest.raises(NotFound) as found:
            report(ledger, account="none")
        assert found.value.reason == Reason.ACCOUNT_NOT_FOUND
        with pytest.raises(Invalid):
            report(ledger, run_id="a", account="b")


# Adjustments.


class TestAdjustments:
    def test_adjust_records_the_unadjusted_drift_once(self, ledger: Ledger, run_id: str) -> None:
        ledger.record_billed_usage(
            provider="tinker", lines=[line("a", H0, 1_070_000, run_id=run_id)], cost_data_through=H1
        )
        receipts, highest = ledger.adjust_to_bill(run_id=run_id)
        (receipt,) = receipts
        assert (receipt.account, receipt.run_id, receipt.amount_usd_micro, receipt.overrun_usd_micro) == (
            run_id,
            run_id,
            70_000,
            0,
        )
        assert highest == receipt.position == ledger.head()
        assert ledger.account(run_id, min_position=highest).committed_usd_micro == 1_070_000
        assert bill_of(ledger, run_id) == totals(
            estimated_usd_micro=1_000_000,
            billed_usd_micro=1_070_000,
            drift_usd_micro=70_000,
            drift_percent=7.0,
            adjusted_usd_micro=70_000,
            lines=1,
            flagged=True,
            unadjusted_usd_micro=0,
        )
        head = ledger.head()
        assert ledger.adjust_to_bill(run_id=run_id) == ([], 0)
        assert ledger.adjust_to_bill() == ([], 0)
        assert ledger.head() == head
        # A later restatement adjusts only the difference.
        ledger.record_billed_usage(provider="tinker", lines=[line("a", H0, 1_100_000, run_id=run_id)])
        (later,), _ = ledger.adjust_to_bill()
        assert (later.account, later.amount_usd_micro) == (run_id, 30_000)
        assert later.adjustment_id != receipt.adjustment_id
        assert ledger.account(run_id, min_position=later.position).committed_usd_micro == 1_100_000
        assert bill_of(ledger, run_id).unadjusted_usd_micro == 0
        (trail,) = [
            entry
            for entry in ledger.reservations(run_id, min_position=ledger.head()).reservations
            if entry.reservation_id == later.adjustment_id
        ]
        assert (trail.kind, trail.state, trail.amount_usd_micro) == ("adjustment", "adjusted", 30_000)

    def test_a_bill_below_the_estimate(self, ledger: Ledger, run_id: str) -> None:
        ledger.record_billed_usage(provider="tinker", lines=[line("a", H0, 900_000, run_id=run_id)])
        (receipt,), _ = ledger.adjust_to_bill(run_id=run_id)
        assert (receipt.amount_usd_micro, receipt.overrun_usd_micro) == (-100_000, 0)
        account = ledger.account(run_id, min_position=receipt.position)
        assert (account.committed_usd_micro, account.overrun_usd_micro) == (900_000, 0)
        assert account.bill is not None
        assert (account.bill.adjusted_usd_micro, account.bill.unadjusted_usd_micro) == (-100_000, 0)

    def test_pending_spend_is_not_adjusted(self, ledger: Ledger, clock: FakeClock, run_id: str) -> None:
        clock.advance(hours=1)
        spend(ledger, run_id, "r2", 400_000)  # Hour 1, after the bill's 01:00.
        ledger.record_billed_usage(
            provider="tinker", lines=[line("a", H0, 1_010_000, run_id=run_id)], cost_data_through=H1
        )
        (receipt,), _ = ledger.adjust_to_bill(run_id=run_id)
        assert receipt.amount_usd_micro == 10_000
        assert ledger.account(run_id, min_position=receipt.position).committed_usd_micro == 1_410_000

    def test_a_credit_beyond_what_was_committed_is_adjusted_once(self, ledger: Ledger) -> None:
        idle = ledger.open_run(run_key="idle").run_id
        ledger.record_billed_usage(provider="tinker", lines=[line("credit", H0, -100, run_id=idle)])
        # Nothing was committed, so nothing can be taken off: what the answer says was adjusted
        # is what the account's committed spend moved by, and asking again changes nothing.
        receipts, _ = ledger.adjust_to_bill(run_id=idle)
        account = ledger.account(idle, min_position=ledger.head())
        assert sum(receipt.amount_usd_micro for receipt in receipts) == account.committed_usd_micro == 0
        head = ledger.head()
        assert ledger.adjust_to_bill(run_id=idle) == ([], 0)
        assert ledger.head() == head

    def test_an_adjustment_across_the_run_cap_is_an_overrun(self, ledger: Ledger, clock: FakeClock) -> None:
        run = ledger.open_run(run_key="capped", cap_usd_micro=1_050_000).run_id
        clock.advance(minutes=30)
        spend(ledger, run, "r1", 1_000_000)
        ledger.record_billed_usage(provider="tinker", lines=[line("a", H0, 1_100_000, run_id=run)])
        (receipt,), _ = ledger.adjust_to_bill(run_id=run)
        assert (receipt.amount_usd_micro, receipt.overrun_usd_micro) == (100_000, 50_000)
        account = ledger.account(run, min_position=receipt.position)
        assert (account.committed_usd_micro, account.overrun_usd_micro, account.remaining_usd_micro) == (
            1_100_000,
            50_000,
            0,
        )
        assert account.committed_usd_micro + account.pending_usd_micro - account.overrun_usd_micro <= 1_050_000
        entries = ledger.reservations(run, min_position=receipt.position).reservations
        assert [(e.reservation_id, e.kind, e.state, e.amount_usd_micro, e.overrun_usd_micro) for e in entries] == [
            ("r1", "reservation", "committed", 1_000_000, 0),
            (receipt.adjustment_id, "adjustment", "adjusted", 100_000, 50_000),
        ]

    def test_an_adjustment_across_a_parent_cap(self, ledger: Ledger, clock: FakeClock) -> None:
        ledger.open_account(account="team", cap_usd_micro=1_020_000)
        run = ledger.open_run(run_key="under", parent_account="team").run_id
        clock.advance(minutes=30)
        spend(ledger, run, "r1", 1_000_000)
        ledger.reserve(account=run, reservation_id="held", amount_usd_micro=10_000)
        ledger.record_billed_usage(
            provider="tinker", lines=[line("a", H0, 1_100_000, run_id=run)], cost_data_through=H1
        )
        (receipt,), _ = ledger.adjust_to_bill()
        assert (receipt.account, receipt.amount_usd_micro, receipt.overrun_usd_micro) == (run, 100_000, 0)
        team = ledger.account("team", min_position=receipt.position)
        # The team had 1,020,000 - 1,010,000 = 10,000 left: 90,000 of the adjustment is overrun.
        assert (team.committed_usd_micro, team.pending_usd_micro, team.overrun_usd_micro) == (1_100_000, 10_000, 90_000)
        assert team.committed_usd_micro + team.pending_usd_micro - team.overrun_usd_micro <= 1_020_000
        assert ledger.account_now("team").overrun_usd_micro == 90_000

    def test_adjust_an_account_of_its_own_lines(self, ledger: Ledger, clock: FakeClock) -> None:
        ledger.open_account(account="team")
        run = ledger.open_run(run_key="under", parent_account="team").run_id
        clock.advance(minutes=30)
        ledger.charge(account="team", charge_id="c1", amount_usd_micro=500_000)
        spend(ledger, run, "r1", 1_000_000)
        ledger.record_billed_usage(
            provider="tinker",
            lines=[line("team", H0, 600_000, account="team"), line("run", H0, 1_000_000, run_id=run)],
        )
        (receipt,), _ = ledger.adjust_to_bill(account="team")
        assert (receipt.account, receipt.run_id, receipt.amount_usd_micro) == ("team", "", 100_000)
        assert ledger.adjust_to_bill() == ([], 0)

    def test_a_line_that_moves_to_a_run_is_adjusted_once(self, ledger: Ledger) -> None:
        ledger.open_account(account="team")
        run = ledger.open_run(run_key="under", parent_account="team").run_id
        ledger.record_billed_usage(provider="tinker", lines=[line("a", H0, 100, account="team", session_id="s")])
        (first,), _ = ledger.adjust_to_bill()
        assert (first.account, first.amount_usd_micro) == ("team", 100)
        ledger.link_session(run_id=run, provider="tinker", session_id="s")
        ledger.adjust_to_bill()
        # One line of $0.0001 against nothing estimated: $0.0001 committed in all, under the team.
        assert ledger.account_now("team").committed_usd_micro == 100
        (team,) = report(ledger).accounts
        assert team.bill.unadjusted_usd_micro == 0

    def test_unknown_targets(self, ledger: Ledger) -> None:
        with pytest.raises(NotFound) as caught:
            ledger.adjust_to_bill(run_id=str(ledger_id("run", "none")))
        assert caught.value.reason == Reason.RUN_NOT_FOUND


# Session links.


class TestLinkSession:
    def test_link_again_is_a_duplicate(self, ledger: Ledger) -> None:
        run = ledger.open_run(run_key="r").run_id
        ledger.start_attempt(run_id=run)
        first = ledger.link_session(run_id=run, provider="tinker", session_id="s", attempt=1)
        assert (first.duplicate, first.position) == (False, ledger.head())
        head = ledger.head()
        again = ledger.link_session(run_id=run, provider="tinker", session_id="s", attempt=1)
        assert (again.duplicate, again.position) == (True, first.position)
        assert ledger.head() == head
        other = ledger.link_session(run_id=run, provider="modal", session_id="s")
        assert (other.duplicate, other.position) == (False, ledger.head())

    def test_an_unknown_run_or_attempt(self, ledger: Ledger) -> None:
        run = ledger.open_run(run_key="r").run_id
        ledger.start_attempt(run_id=run)
        head = ledger.head()
        with pytest.raises(NotFound) as caught:
            ledger.link_session(run_id=str(ledger_id("run", "none")), provider="tinker", session_id="s")
        assert caught.value.reason == Reason.RUN_NOT_FOUND
        with pytest.raises(NotFound) as attempt:
            ledger.link_session(run_id=run, provider="tinker", session_id="s", attempt=2)
        assert attempt.value.reason == Reason.ATTEMPT_NOT_FOUND
        with pytest.raises(Invalid) as missing:
            ledger.link_session(run_id=run, provider="tinker", session_id="")
        assert missing.value.reason == Reason.MISSING_FIELD
        assert ledger.head() == head


def test_a_bill_restated_and_restated_back_is_adjusted_each_time(ledger: Ledger) -> None:
    """The same figures coming back (a line restated, then restated back) are adjusted again: the
    adjustment made for them the first time was taken back in between."""
    run_id = ledger.open_run(run_key="back-and-forth").run_id
    first = [line("a", H0, 745, run_id=run_id)]
    ledger.record_billed_usage(provider="tinker", lines=first)
    (up,), _ = ledger.adjust_to_bill(run_id=run_id)
    ledger.record_billed_usage(provider="tinker", lines=[line("a", H0, 0, run_id=run_id)])
    (down,), _ = ledger.adjust_to_bill(run_id=run_id)
    ledger.record_billed_usage(provider="tinker", lines=first)
    (again,), _ = ledger.adjust_to_bill(run_id=run_id)
    assert [r.amount_usd_micro for r in (up, down, again)] == [745, -745, 745]
    assert not again.duplicate and again.adjustment_id != up.adjustment_id
    assert ledger.account(run_id, min_position=ledger.head()).committed_usd_micro == 745
