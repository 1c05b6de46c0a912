"""The one GPU meter (clients.integrations.meter) on a stand-in ledger: holds reserved before each
interval, the time used committed after it, a refused hold, the time after it, a commit retried.
The price is 1 micro-dollar per GPU millisecond, so amounts read as milliseconds."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from clients.errors import SpendCapExceeded, Unavailable
from clients.integrations.meter import GpuMeter
from clients.integrations.pricing import GpuPrice
from clients.models import ChargeReceipt, CommitReceipt, ReserveReceipt

PRICE = GpuPrice(3_600_000, gpu_type="test", sheet="test")  # 1 micro-USD per millisecond


class Ledger:
    """What the meter calls on a client: reserve, commit and charge, recorded; `cap` refuses a
    reservation that would go over it, `down` makes commits fail as an outage does."""

    def __init__(self, cap: int | None = None) -> None:
        self.cap, self.down = cap, False
        self.calls: list[tuple[Any, ...]] = []
        self.held: dict[str, int] = {}
        self.spent = 0

    def reserve(
        self, *, account: str, amount_usd_micro: int, reservation_id: str, basis: Any, ttl_s: float, attempt: int
    ) -> ReserveReceipt:
        if self.cap is not None and self.spent + sum(self.held.values()) + amount_usd_micro > self.cap:
            self.calls.append(("refused", amount_usd_micro))
            remaining = self.cap - self.spent - sum(self.held.values())
            raise SpendCapExceeded(
                "SPEND_CAP_EXCEEDED",
                "over",
                {"remaining_usd_micro": str(remaining)},
                code=grpc.StatusCode.RESOURCE_EXHAUSTED,
            )
        assert basis["gpu"]["gpu_milliseconds"] == amount_usd_micro and ttl_s == 2 * 60 + 60
        self.calls.append(("reserve", amount_usd_micro))
        self.held[reservation_id] = amount_usd_micro
        return ReserveReceipt(reservation_id=reservation_id)

    def commit(self, *, account: str, reservation_id: str, actual_usd_micro: int, basis: Any) -> CommitReceipt:
        if self.down:
            raise Unavailable("UNAVAILABLE", "down", code=grpc.StatusCode.UNAVAILABLE)
        self.calls.append(("commit", actual_usd_micro))
        del self.held[reservation_id]
        self.spent += actual_usd_micro
        return CommitReceipt()

    def charge(self, *, account: str, amount_usd_micro: int, basis: Any, reason: str) -> ChargeReceipt:
        self.calls.append(("charge", amount_usd_micro))
        self.spent += amount_usd_micro
        return ChargeReceipt(charge_id="c1")


class Recorder:
    run_id, attempt, account = "run", 1, "run"

    def __init__(self, client: Ledger) -> None:
        self.client = client

    def require_open(self) -> None:
        pass


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def meter(ledger: Ledger, clock: Clock, **options: Any) -> GpuMeter:
    return GpuMeter(Recorder(ledger), PRICE, interval_s=60.0, clock=clock, **options)  # type: ignore[arg-type]


def test_each_interval_is_held_before_and_committed_after() -> None:
    ledger, clock = Ledger(), Clock()
    with meter(ledger, clock) as metered:
        clock.now = 59.0
        assert not metered.tick()
        clock.now = 61.5
        assert metered.tick()  # 61.5 s used: committed, the next 60 s held
        clock.now = 70.0
    assert ledger.calls == [("reserve", 60_000), ("commit", 61_500), ("reserve", 60_000), ("commit", 8_500)]
    assert metered.gpu_milliseconds == 70_000 == metered.committed_usd_micro and not ledger.held


def test_a_refused_hold_stops_and_the_time_after_it_is_charged_or_not() -> None:
    ledger, clock = Ledger(cap=100_000), Clock()
    metered = meter(ledger, clock).start()
    clock.now = 60.0
    with pytest.raises(SpendCapExceeded):
        metered.tick()  # 60,000 spent, 60,000 more would cross 100,000
    clock.now = 65.0
    metered.stop()
    assert ledger.calls == [("reserve", 60_000), ("commit", 60_000), ("refused", 60_000), ("charge", 5_000)]
    assert [i["reserved_usd_micro"] for i in metered.intervals] == [60_000, 0]

    ledger, clock = Ledger(cap=100_000), Clock()
    metered = meter(ledger, clock, charge_unheld=False).start()
    clock.now = 60.0
    with pytest.raises(SpendCapExceeded):
        metered.tick()
    clock.now = 65.0
    metered.stop()
    assert ledger.calls == [("reserve", 60_000), ("commit", 60_000), ("refused", 60_000)]


def test_lookahead_ends_an_interval_early_and_holds_what_remains() -> None:
    ledger, clock = Ledger(cap=90_000), Clock()
    metered = meter(ledger, clock, lookahead=True, charge_unheld=False).start()
    for second in (10.0, 20.0, 30.0):  # steps of 10 s: the next may take 2 x 10 + 0.05 s
        clock.now = second
        assert not metered.tick()
    clock.now = 40.0  # 40 + 20.05 > 60: due before the next step outruns the hold
    assert metered.tick()
    # 40,000 committed; 50,000 left, under the 60,000 asked: that is held, since it covers a step.
    assert ledger.calls == [("reserve", 60_000), ("commit", 40_000), ("refused", 60_000), ("reserve", 50_000)]
    clock.now = 50.0
    assert not metered.tick()  # 10 s into a 50 s hold
    clock.now = 70.0  # due (30 + 40.05 > 50); 30,000 committed, 20,000 left: less than a step of 40.05 s
    with pytest.raises(SpendCapExceeded):
        metered.tick()
    metered.stop()
    assert ledger.calls[4:] == [("commit", 30_000), ("refused", 60_000)] and ledger.spent == 70_000


def test_interval_steps_end_an_interval() -> None:
    ledger, clock = Ledger(), Clock()
    metered = meter(ledger, clock, interval_steps=3).start(step=0)
    clock.now = 1.0
    assert not metered.tick(2)
    assert metered.tick(3)
    assert not metered.tick(4, last=True)  # training ends here: stop() settles
    metered.stop()
    assert ledger.calls == [("reserve", 60_000), ("commit", 1_000), ("reserve", 60_000), ("commit", 0)]


def test_a_commit_the_ledger_cannot_take_now_is_tried_again() -> None:
    ledger, clock = Ledger(), Clock()
    metered = meter(ledger, clock).start()
    ledger.down = True
    clock.now = 60.0
    assert metered.tick()  # the commit fails; the next hold is still had
    ledger.down = False
    clock.now = 90.0
    metered.stop()  # both intervals committed now
    assert ledger.calls == [("reserve", 60_000), ("reserve", 60_000), ("commit", 60_000), ("commit", 30_000)]
    assert not ledger.held
