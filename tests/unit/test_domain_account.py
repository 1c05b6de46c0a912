"""Spend accounts, as unit tests: given events, when a command, then new events or an error."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ledger.domain import abandoned
from ledger.domain import spending as spend
from ledger.domain.accounts import Account
from ledger.domain.base import Audit, ledger_id
from ledger.domain.basis import CostBasis, check_basis, cost_basis, cost_usd_micro
from ledger.domain.errors import (
    CapExceeded,
    Conflict,
    Invalid,
    NotFound,
    Refused,
)
from ledger.domain.limits import check_usd_micro

NOW = datetime(2025, 1, 1, tzinfo=UTC)
LATER = NOW + timedelta(hours=1)
BASIS = {
    "price_sheet": "tinker-2025-01",
    "price_source": "https://example.com/prices",
    "tokens": [{"token_class": "train", "tokens": 1_000_000, "usd_micro_per_million_tokens": 400_000}],
}


def audit(now: datetime = NOW) -> Audit:
    return Audit("tester", "request-1", now)


def opened(name: str, cap: int | None, parent: str = "") -> Account:
    account = Account._create(
        Account.Opened, id=ledger_id("account", name), name=name, parent=parent, cap=cap, **audit().fields()
    )
    account.collect_events()
    return account


def chain(*caps: int | None) -> list[Account]:
    """run -> project -> team ... with the given caps, run first."""
    names = ["run", "project", "team", "org"][: len(caps)]
    accounts = [
        opened(name, cap, names[i + 1] if i + 1 < len(caps) else "")
        for i, (name, cap) in enumerate(zip(names, caps, strict=True))
    ]
    return accounts


def reserve(
    account: Account,
    parents: list[Account],
    rid: str,
    amount: int,
    *,
    basis: dict | None = None,
    expires_at: datetime = LATER,
    attempt: int = 1,
    now: datetime = NOW,
) -> int | None:
    return spend.reserve(
        account,
        parents,
        audit(now),
        reservation_id=rid,
        amount=amount,
        basis=cost_basis(check_basis(basis)),
        expires_at=expires_at,
        attempt=attempt,
    )


def events(*accounts: Account) -> list[list[Any]]:
    return [account.collect_events() for account in accounts]


def totals(account: Account) -> tuple[int | None, int, int, int]:
    return account.cap, account.committed, account.pending, account.overrun


def nothing_recorded(*accounts: Account) -> None:
    assert all(batch == [] for batch in events(*accounts))


class TestCaps:
    def test_no_cap_is_uncapped_but_tracked(self) -> None:
        account = opened("run", None)
        assert reserve(account, [], "r1", 5_000_000_000) is None
        [event] = account.collect_events()
        assert isinstance(event, Account.SpendReserved)
        assert account.summary().remaining_usd_micro is None
        spend.commit(account, [], audit(), reservation_id="r1", actual=4_000_000_000, basis=CostBasis())
        assert totals(account) == (None, 4_000_000_000, 0, 0)

    def test_cap_zero_spends_nothing(self) -> None:
        account = opened("run", 0)
        with pytest.raises(CapExceeded) as caught:
            reserve(account, [], "r1", 1)
        assert (caught.value.reason, caught.value.remaining_usd_micro, caught.value.account) == (
            "SPEND_CAP_EXCEEDED",
            0,
            "run",
        )
        [event] = account.collect_events()
        assert isinstance(event, Account.SpendRefused)
        assert totals(account) == (0, 0, 0, 0)

    @pytest.mark.parametrize("amount", [-1, -1_000_000])
    def test_negative_money_is_refused(self, amount: int) -> None:
        with pytest.raises(Invalid) as caught:
            check_usd_micro(amount, "amount_usd_micro")
        assert caught.value.reason == "NEGATIVE_AMOUNT"

    @pytest.mark.parametrize("amount", [1.0, True, "1", None])
    def test_money_is_integer_micro_dollars(self, amount: Any) -> None:
        with pytest.raises(Invalid) as caught:
            check_usd_micro(amount, "amount_usd_micro")
        assert caught.value.reason == "INVALID_AMOUNT"

    def test_cap_change_is_recorded_and_a_same_cap_is_a_no_op(self) -> None:
        account = opened("run", 100)
        assert spend.set_cap(account, audit(), 500) is None
        [event] = account.collect_events()
        assert isinstance(event, Account.CapSet) and event.cap == 500
        assert spend.set_cap(account, audit(), 500) == account.version
        nothing_recorded(account)
        assert spend.set_cap(account, audit(), None) is None
        assert account.cap is None

    def test_a_cap_below_what_is_committed_and_held_is_refused(self) -> None:
        account = opened("run", 100)
        reserve(account, [], "r1", 60)
        spend.commit(account, [], audit(), reservation_id="r1", actual=30, basis=CostBasis())
        reserve(account, [], "r2", 20)
        account.collect_events()
        with pytest.raises(Refused) as caught:
            spend.set_cap(account, audit(), 49)
        assert caught.value.reason == "CAP_BELOW_SPEND"
        assert caught.value.metadata["minimum_cap_usd_micro"] == "50"
        nothing_recorded(account)
        assert spend.set_cap(account, audit(), 50) is None


class TestReserve:
    def test_reserve_holds_the_amount_with_its_basis(self) -> None:
        account = opened("run", 100)
        assert reserve(account, [], "r1", 40, basis=check_basis(BASIS), attempt=2) is None
        [event] = account.collect_events()
        assert (event.reservation_id, event.amount, event.attempt, event.expires_at) == ("r1", 40, 2, LATER)
        assert event.basis == check_basis(BASIS)
        assert totals(account) == (100, 0, 40, 0)

    def test_reserve_up_to_the_cap_and_refuse_beyond_it_with_what_remains(self) -> None:
        account = opened("run", 100)
        reserve(account, [], "r1", 70)
        account.collect_events()
        with pytest.raises(CapExceeded) as caught:
            reserve(account, [], "r2", 31)
        assert caught.value.remaining_usd_micro == 30
        assert caught.value.metadata == {"account": "run", "remaining_usd_micro": "30"}
        [event] = account.collect_events()
        assert isinstance(event, Account.SpendRefused)
        assert (event.reservation_id, event.amount, event.refused_by, event.remaining) == ("r2", 31, "run", 30)
        assert totals(account) == (100, 0, 70, 0)
        assert reserve(account, [], "r3", 30) is None

    @pytest.mark.parametrize("refusing", [1, 2])
    def test_a_parent_cap_refuses_and_the_refusal_is_recorded_on_the_run(self, refusing: int) -> None:
        caps: list[int | None] = [None, None, None]
        caps[refusing] = 50
        run, *parents = chain(*caps)
        with pytest.raises(CapExceeded) as caught:
            reserve(run, parents, "r1", 51)
        holder = parents[refusing - 1]
        assert (caught.value.account, caught.value.remaining_usd_micro) == (holder.name, 50)
        run_events, *parent_events = events(run, *parents)
        assert [type(e) for e in run_events] == [Account.SpendRefused]
        assert run_events[0].refused_by == holder.name
        assert parent_events == [[], []]

    def test_a_reservation_rolls_up_onto_every_parent(self) -> None:
        run, project, team = chain(100, 200, None)
        reserve(run, [project, team], "r1", 40)
        run_events, project_events, team_events = events(run, project, team)
        assert [type(e) for e in run_events] == [Account.SpendReserved]
        for rolled in (project_events, team_events):
            [event] = rolled
            assert isinstance(event, Account.SpendRolledUp)
            assert (
                event.child,
                event.ref,
                event.kind,
                event.pending_delta,
                event.committed_delta,
                event.overrun_delta,
            ) == ("run", "r1", "reserve", 40, 0, 0)
        assert [totals(a)[1:] for a in (run, project, team)] == [(0, 40, 0)] * 3

    def test_parent_spend_of_other_children_counts(self) -> None:
        project = opened("project", 100)
        first = opened("first", None, "project")
        second = opened("second", None, "project")
        reserve(first, [project], "a", 80)
        with pytest.raises(CapExceeded) as caught:
            reserve(second, [project], "b", 21)
        assert (caught.value.account, caught.value.remaining_usd_micro) == ("project", 20)

    def test_retry_with_same_id_and_payload_is_a_no_op(self) -> None:
        run, project = chain(100, 100)
        reserve(run, [project], "r1", 40)
        first = run.version
        events(run, project)
        assert reserve(run, [project], "r1", 40) == first
        nothing_recorded(run, project)
        assert totals(project)[2] == 40

    @pytest.mark.parametrize("change", [{"amount": 41}, {"attempt": 2}, {"basis": {"price_sheet": "other"}}])
    def test_same_id_other_payload_is_refused(self, change: dict[str, Any]) -> None:
        account = opened("run", 100)
        reserve(account, [], "r1", 40)
        account.collect_events()
        fields = {"amount": 40, "attempt": 1, "basis": {}, **change}
        with pytest.raises(Conflict) as caught:
            reserve(account, [], "r1", fields["amount"], basis=fields["basis"], attempt=fields["attempt"])
        assert caught.value.reason == "EXISTS_WITH_DIFFERENT_PAYLOAD"
        nothing_recorded(account)

    def test_a_retry_of_a_refused_reservation_answers_the_same_refusal(self) -> None:
        account = opened("run", 10)
        with pytest.raises(CapExceeded):
            reserve(account, [], "r1", 11)
        account.collect_events()
        with pytest.raises(CapExceeded) as caught:
            reserve(account, [], "r1", 11)
        assert caught.value.remaining_usd_micro == 10
        nothing_recorded(account)

    def test_reserving_under_a_charge_id_is_refused(self) -> None:
        account = opened("run", 100)
        spend.charge(account, [], audit(), charge_id="c1", amount=5, basis=CostBasis(), reason="")
        account.collect_events()
        with pytest.raises(Conflict):
            reserve(account, [], "c1", 5)
        nothing_recorded(account)


class TestCommitReleaseExpire:
    def test_commit_below_the_reservation(self) -> None:
        run, project = chain(100, 100)
        reserve(run, [project], "r1", 40)
        events(run, project)
        assert spend.commit(run, [project], audit(), reservation_id="r1", actual=30, basis=CostBasis()) == (None, 0)
        [[committed], [rolled]] = events(run, project)
        assert (committed.reserved, committed.actual, committed.overrun, committed.late) == (40, 30, 0, False)
        assert (rolled.kind, rolled.pending_delta, rolled.committed_delta, rolled.overrun_delta) == (
            "commit",
            -40,
            30,
            0,
        )
        assert totals(run) == totals(project) == (100, 30, 0, 0)

    def test_commit_above_the_reservation_is_charged_in_full_and_flagged_as_overrun(self) -> None:
        run, project = chain(50, 1000)
        reserve(run, [project], "r1", 40)
        events(run, project)
        assert spend.commit(run, [project], audit(), reservation_id="r1", actual=70, basis=CostBasis()) == (None, 30)
        [[committed], [rolled]] = events(run, project)
        assert (committed.actual, committed.overrun) == (70, 30)
        assert rolled.overrun_delta == 30
        assert totals(run) == (50, 70, 0, 30)
        assert totals(project) == (1000, 70, 0, 30)
        # The invariant still holds: committed + pending - overrun <= cap.
        assert run.committed + run.pending - run.overrun <= run.cap

    def test_commit_retry_is_a_no_op_and_another_amount_is_refused(self) -> None:
        account = opened("run", 100)
        reserve(account, [], "r1", 40)
        spend.commit(account, [], audit(), reservation_id="r1", actual=45, basis=CostBasis())
        account.collect_events()
        first = account.version
        assert spend.commit(account, [], audit(), reservation_id="r1", actual=45, basis=CostBasis()) == (first, 5)
        nothing_recorded(account)
        with pytest.raises(Conflict):
            spend.commit(account, [], audit(), reservation_id="r1", actual=44, basis=CostBasis())

    def test_commit_of_an_unknown_reservation_is_not_found(self) -> None:
        account = opened("run", 100)
        with pytest.raises(NotFound) as caught:
            spend.commit(account, [], audit(), reservation_id="nope", actual=1, basis=CostBasis())
        assert caught.value.reason == "RESERVATION_NOT_FOUND"

    def test_release_gives_the_hold_back_and_a_retry_is_a_no_op(self) -> None:
        run, project = chain(100, 100)
        reserve(run, [project], "r1", 40)
        events(run, project)
        assert spend.release(run, [project], audit(), reservation_id="r1", reason="call failed") is None
        [[released], [rolled]] = events(run, project)
        assert (released.amount, released.reason) == (40, "call failed")
        assert (rolled.kind, rolled.pending_delta) == ("release", -40)
        assert totals(run) == totals(project) == (100, 0, 0, 0)
        assert spend.release(run, [project], audit(), reservation_id="r1", reason="") == run.version
        nothing_recorded(run, project)
        with pytest.raises(Refused) as caught:
            spend.commit(run, [project], audit(), reservation_id="r1", actual=1, basis=CostBasis())
        assert caught.value.reason == "RESERVATION_RELEASED"

    def test_release_of_a_committed_reservation_is_refused(self) -> None:
        account = opened("run", 100)
        reserve(account, [], "r1", 40)
        spend.commit(account, [], audit(), reservation_id="r1", actual=40, basis=CostBasis())
        account.collect_events()
        with pytest.raises(Refused) as caught:
            spend.release(account, [], audit(), reservation_id="r1", reason="")
        assert caught.value.reason == "RESERVATION_COMMITTED"

    def test_expiry_charges_an_unsettled_hold_as_reserved_and_a_late_commit_replaces_it(self) -> None:
        run, project = chain(100, 100)
        reserve(run, [project], "r1", 60)
        reserve(run, [project], "r2", 10, expires_at=LATER + timedelta(hours=1))
        events(run, project)
        assert abandoned.expire_overdue(run, [project], audit(LATER)) == 1
        [[settled], [rolled]] = events(run, project)
        assert isinstance(settled, Account.SpendSettled)
        assert (settled.reservation_id, settled.reserved, settled.amount) == ("r1", 60, 60)
        assert (settled.method, settled.reason) == ("as_reserved", "RESERVATION_EXPIRED")
        assert (rolled.kind, rolled.pending_delta, rolled.presumed_delta) == ("settle", -60, 60)
        for account in (run, project):
            assert (account.committed, account.presumed, account.pending, account.remaining) == (0, 60, 10, 30)
        # Never written off at $0: the presumed spend binds the cap as the hold did.
        with pytest.raises(CapExceeded):
            reserve(run, [project], "r3", 31, now=LATER)
        reserve(run, [project], "r4", 30, now=LATER)
        events(run, project)
        # The late commit replaces the settlement with the actual: 80 spent where 60 were presumed.
        assert spend.commit(run, [project], audit(LATER), reservation_id="r1", actual=80, basis=CostBasis()) == (
            None,
            20,
        )
        [[late], [rolled]] = events(run, project)
        assert (late.reserved, late.actual, late.replaced, late.overrun, late.late) == (0, 80, 60, 20, True)
        assert (rolled.kind, rolled.committed_delta, rolled.presumed_delta) == ("late_commit", 80, -60)
        assert rolled.overrun_delta == 20
        for account in (run, project):
            assert (account.committed, account.presumed) == (80, 0)
            assert account.committed + account.presumed + account.pending - account.overrun <= account.cap

    def test_an_abandoned_gpu_hold_is_charged_pro_rata_to_the_last_sign_of_life(self) -> None:
        account = opened("run", 1_000_000)
        # 60 s of one GPU at $3.60 an hour: 60,000 micro-dollars, one a millisecond.
        gpu = {"gpu": {"gpu_milliseconds": 60_000, "usd_micro_per_gpu_hour": 3_600_000, "gpu_count": 1}}
        reserve(account, [], "gpu", 60_000, basis=gpu, attempt=1)
        reserve(account, [], "tokens", 500, basis=BASIS, attempt=1)
        reserve(account, [], "later", 700, attempt=2)
        account.collect_events()
        seen = NOW + timedelta(seconds=23)
        settled = abandoned.settle_attempts(
            account,
            [],
            audit(NOW + timedelta(minutes=2)),
            below=2,
            reason=abandoned.SUPERSEDED,
            last_seen=lambda n: seen,
        )
        assert settled == 2
        by_id = {e.reservation_id: e for e in account.collect_events()}
        assert (by_id["gpu"].amount, by_id["gpu"].method, by_id["gpu"].last_seen_at) == (23_000, "pro_rata", seen)
        assert (by_id["tokens"].amount, by_id["tokens"].method) == (500, "as_reserved")
        assert {e.reason for e in by_id.values()} == {"ATTEMPT_SUPERSEDED"}
        assert (account.presumed, account.pending, account.committed) == (23_500, 700, 0)

    def test_a_pro_rata_charge_is_at_most_the_hold(self) -> None:
        account = opened("run", None)
        gpu = {"gpu": {"gpu_milliseconds": 10_000, "usd_micro_per_gpu_hour": 3_600_000, "gpu_count": 1}}
        reserve(account, [], "gpu", 10_000, basis=gpu, attempt=1)
        account.collect_events()
        abandoned.settle_attempts(
            account, [], audit(LATER), below=2, reason=abandoned.LOST, last_seen=lambda n: NOW + timedelta(minutes=5)
        )
        [settled] = account.collect_events()
        assert (settled.amount, settled.method, settled.reason) == (10_000, "pro_rata", "ATTEMPT_LOST")

    def test_late_commit_retry_answers_the_overrun_first_answered(self) -> None:
        account = opened("run", 100)
        reserve(account, [], "r1", 50)
        abandoned.expire_overdue(account, [], audit(LATER))
        assert spend.commit(account, [], audit(LATER), reservation_id="r1", actual=80, basis=CostBasis()) == (None, 0)
        account.collect_events()
        assert spend.commit(account, [], audit(LATER), reservation_id="r1", actual=80, basis=CostBasis()) == (
            account.version,
            0,
        )
        nothing_recorded(account)

    def test_reserve_expires_overdue_holds_before_checking_the_cap(self) -> None:
        account = opened("run", 100)
        reserve(account, [], "r1", 60)
        account.collect_events()
        # The overdue hold is settled (as reserved: 60 presumed spent) before the cap is checked.
        assert reserve(account, [], "r2", 40, now=LATER, expires_at=LATER + timedelta(minutes=15)) is None
        assert [type(e) for e in account.collect_events()] == [Account.SpendSettled, Account.SpendReserved]

    def test_releasing_an_expired_hold_is_a_no_op(self) -> None:
        account = opened("run", 100)
        reserve(account, [], "r1", 100)
        abandoned.expire_overdue(account, [], audit(LATER))
        account.collect_events()
        assert spend.release(account, [], audit(LATER), reservation_id="r1", reason="") == account.version
        nothing_recorded(account)


class TestCharge:
    def test_charge_after_the_fact_is_recorded_in_full_with_overrun_beyond_the_cap(self) -> None:
        run, project = chain(100, 1000)
        reserve(run, [project], "r1", 70)
        events(run, project)
        basis = check_basis(
            {
                "price_sheet": "modal",
                "gpu": {"gpu_milliseconds": 3_600_000, "usd_micro_per_gpu_hour": 50, "gpu_type": "H100"},
            }
        )
        assert spend.charge(
            run, [project], audit(), charge_id="c1", amount=50, basis=cost_basis(basis), reason="bill"
        ) == (
            None,
            20,
        )
        [[charged], [rolled]] = events(run, project)
        assert (charged.charge_id, charged.amount, charged.overrun, charged.reason) == ("c1", 50, 20, "bill")
        assert charged.basis == basis
        assert (rolled.kind, rolled.committed_delta, rolled.overrun_delta) == ("charge", 50, 0)
        assert totals(run) == (100, 50, 70, 20)
        assert totals(project) == (1000, 50, 70, 0)

    def test_charge_retry_is_a_no_op_answering_the_same_overrun(self) -> None:
        account = opened("run", 10)
        assert spend.charge(account, [], audit(), charge_id="c1", amount=15, basis=CostBasis(), reason="") == (None, 5)
        account.collect_events()
        assert spend.charge(account, [], audit(), charge_id="c1", amount=15, basis=CostBasis(), reason="") == (
            account.version,
            5,
        )
        nothing_recorded(account)
        with pytest.raises(Conflict):
            spend.charge(account, [], audit(), charge_id="c1", amount=16, basis=CostBasis(), reason="")

    def test_a_charge_id_cannot_reuse_a_reservation_id(self) -> None:
        account = opened("run", 100)
        reserve(account, [], "r1", 10)
        account.collect_events()
        with pytest.raises(Conflict):
            spend.charge(account, [], audit(), charge_id="r1", amount=10, basis=CostBasis(), reason="")
        nothing_recorded(account)


class TestBasis:
    def test_a_basis_is_structured_and_normalised(self) -> None:
        assert check_basis(None) == {}
        normal = check_basis(BASIS)
        assert normal == BASIS
        assert cost_usd_micro(normal) == 400_000

    def test_cost_rounds_up_in_integers(self) -> None:
        basis = check_basis(
            {
                "tokens": [{"token_class": "sample", "tokens": 1, "usd_micro_per_million_tokens": 1}],
                "gpu": {"gpu_milliseconds": 1, "usd_micro_per_gpu_hour": 1, "gpu_count": 2},
            }
        )
        assert cost_usd_micro(basis) == 2

    @pytest.mark.parametrize(
        "basis",
        [
            5,
            {"amount": 5},
            {"tokens": [{"token_class": "train", "tokens": -1}]},
            {"tokens": [{"token_class": "train", "tokens": 1, "usd_micro_per_million_tokens": 1.5}]},
            {"gpu": {"gpu_milliseconds": 1.0}},
            {"price_sheet": "x" * 257},
        ],
    )
    def test_a_bare_or_malformed_basis_is_refused(self, basis: Any) -> None:
        with pytest.raises(Invalid):
            check_basis(basis)
