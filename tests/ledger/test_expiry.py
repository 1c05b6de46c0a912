"""The expiry sweep under an injected clock: every overdue pending reservation is settled by the
ledger (presumed spent, never at $0), and a commit after expiry is recorded as late and replaces
the settlement. On each backend."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ledger import CapExceeded, Ledger
from ledger.domain.base import ledger_id
from ledger.domain.entries import AccountTotals
from tests.ledger.conftest import FakeClock, summary_of


def test_the_sweep_settles_every_overdue_reservation_as_presumed_spend(ledger: Ledger, clock: FakeClock) -> None:
    ledger.open_account(account="team", cap_usd_micro=1_000)
    first = ledger.open_run(run_key="a", cap_usd_micro=100, parent_account="team").run_id
    second = ledger.open_run(run_key="b", cap_usd_micro=None, parent_account="team").run_id
    ledger.reserve(account=first, reservation_id="short", amount_usd_micro=60, ttl=timedelta(minutes=5))
    ledger.reserve(account=first, reservation_id="default", amount_usd_micro=40)  # 15 minutes
    ledger.reserve(account=second, reservation_id="short", amount_usd_micro=500, ttl=timedelta(minutes=5))
    ledger.reserve(account=second, reservation_id="long", amount_usd_micro=100, ttl=timedelta(hours=1))
    ledger.reserve(account="team", reservation_id="own", amount_usd_micro=10, ttl=timedelta(minutes=1))
    with pytest.raises(CapExceeded):
        ledger.reserve(account=first, reservation_id="more", amount_usd_micro=1)

    clock.advance(minutes=4)
    assert ledger.expire_reservations() == 1  # only team's own, 1 minute
    clock.advance(minutes=1)  # exactly at the 5-minute expiry: overdue
    head = ledger.head()
    assert ledger.expire_reservations() == 2
    settled = ledger.read_events(from_position=head + 1, types=["SpendSettled"])
    assert sorted(
        (e["originator_id"], e["data"]["reservation_id"], e["data"]["amount"], e["data"]["reason"]) for e in settled
    ) == sorted(
        [
            (str(ledger_id("account", first)), "short", 60, "RESERVATION_EXPIRED"),
            (str(ledger_id("account", second)), "short", 500, "RESERVATION_EXPIRED"),
        ]
    )
    # Holds with no GPU-time basis are presumed spent as reserved, never written off at $0.
    assert {e["data"]["method"] for e in settled} == {"as_reserved"}
    assert all(e["principal"] == "ledger" for e in settled)
    assert (ledger.account_now(first).pending_usd_micro, ledger.account_now(first).presumed_usd_micro) == (40, 60)
    assert (ledger.account_now("team").pending_usd_micro, ledger.account_now("team").presumed_usd_micro) == (140, 570)
    viewed = ledger.account(first, min_position=ledger.head())
    assert (viewed.pending_usd_micro, viewed.presumed_usd_micro, viewed.committed_usd_micro) == (40, 60, 0)
    assert ledger.account("team").presumed_usd_micro == 570
    # The presumed spend keeps binding the cap.
    with pytest.raises(CapExceeded):
        ledger.reserve(account=first, reservation_id="again", amount_usd_micro=1)

    clock.advance(hours=2)
    assert ledger.expire_reservations() == 2
    assert ledger.expire_reservations() == 0
    for name, presumed in ((first, 100), (second, 600), ("team", 710)):
        assert (ledger.account_now(name).pending_usd_micro, ledger.account_now(name).presumed_usd_micro) == (
            0,
            presumed,
        )
        assert ledger.account(name, min_position=ledger.head()).pending_usd_micro == 0
        assert summary_of(ledger.account(name)) == ledger.account_now(name)
    states = {r.reservation_id: r.state for r in ledger.reservations(first).reservations}
    assert states == {"short": "settled", "default": "settled", "more": "refused", "again": "refused"}


def test_a_commit_after_expiry_replaces_the_presumed_spend(ledger: Ledger, clock: FakeClock) -> None:
    ledger.open_account(account="team", cap_usd_micro=150)
    run_id = ledger.open_run(run_key="a", cap_usd_micro=100, parent_account="team").run_id
    ledger.reserve(account=run_id, reservation_id="r1", amount_usd_micro=80, ttl=timedelta(minutes=1))
    clock.advance(minutes=2)
    assert ledger.expire_reservations() == 1
    ledger.reserve(account=run_id, reservation_id="r2", amount_usd_micro=20)
    head = ledger.head()
    receipt = ledger.commit(account=run_id, reservation_id="r1", actual_usd_micro=110)
    # The 80 presumed are replaced by the 110 spent: 30 lie beyond the run's cap; the team had 50 left.
    assert receipt.overrun_usd_micro == 30
    [late] = ledger.read_events(from_position=head + 1, types=["SpendCommitted"])
    assert (late["data"]["late"], late["data"]["reserved"], late["data"]["actual"], late["data"]["overrun"]) == (
        True,
        0,
        110,
        30,
    )
    assert late["data"]["replaced"] == 80
    assert ledger.account_now(run_id) == AccountTotals(
        account=run_id,
        parent="team",
        cap_usd_micro=100,
        committed_usd_micro=110,
        presumed_usd_micro=0,
        pending_usd_micro=20,
        remaining_usd_micro=0,
        overrun_usd_micro=30,
    )
    assert ledger.account_now("team").overrun_usd_micro == 0
    [r1] = [
        r for r in ledger.reservations(run_id, min_position=receipt.position).reservations if r.reservation_id == "r1"
    ]
    assert (r1.state, r1.actual_usd_micro, r1.overrun_usd_micro, r1.reason) == (
        "committed",
        110,
        30,
        "committed late, replacing the ledger's settlement",
    )
    assert summary_of(ledger.account(run_id)) == ledger.account_now(run_id)
    # A retry of the late commit answers the first answer.
    again = ledger.commit(account=run_id, reservation_id="r1", actual_usd_micro=110)
    assert (again.duplicate, again.position, again.overrun_usd_micro) == (True, receipt.position, 30)


def test_the_sweep_sees_a_reservation_the_views_have_not_projected_yet(sqlite_database: str, clock: FakeClock) -> None:
    app = Ledger.open(sqlite_database, clock=clock, project=False)
    try:
        app.open_account(account="a", cap_usd_micro=10)
        app.reserve(account="a", reservation_id="r1", amount_usd_micro=10, ttl=timedelta(seconds=1))
        assert app.projector.position < app.head()
        clock.advance(seconds=1)
        app.projector.start()  # The sweep waits for the views to reflect every write first.
        assert app.expire_reservations() == 1
        assert app.account_now("a").pending_usd_micro == 0
    finally:
        app.close()


def test_a_reservation_in_time_is_not_expired(ledger: Ledger, clock: FakeClock) -> None:
    ledger.open_account(account="a", cap_usd_micro=10)
    receipt = ledger.reserve(account="a", reservation_id="r1", amount_usd_micro=10, ttl=timedelta(minutes=10))
    assert receipt.expires_at == clock.now + timedelta(minutes=10)
    clock.advance(minutes=9, seconds=59)
    assert ledger.expire_reservations() == 0
    commit = ledger.commit(account="a", reservation_id="r1", actual_usd_micro=10)
    assert commit.overrun_usd_micro == 0
    [event] = ledger.read_events(from_position=commit.position, types=["SpendCommitted"])
    assert event["data"]["late"] is False
