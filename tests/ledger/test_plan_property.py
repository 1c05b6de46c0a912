"""Plans under a hypothesis state machine against a small reference model: a run's account under a
team account beside a sibling run, plans reserved, drawn by holds, committed, released, fenced off
by new attempts and expired, in any interleaving. The model predicts each answer; after every step
the aggregates and the views agree with it, and for every account committed + presumed + pending
(the undrawn plan included) - overrun never exceeds the cap."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from ledger import CapExceeded, Ledger, Refused
from ledger.domain.entries import AccountTotals
from ledger.domain.reasons import Reason
from tests.ledger.conftest import FakeClock, summary_of

AMOUNTS = st.integers(min_value=1, max_value=150)


@dataclass
class Hold:
    amount: int
    expires_at: datetime
    plan: bool = False
    attempt: int = 0
    undrawn: int = 0  # a plan's


@dataclass
class Model:
    name: str
    parent: str
    cap: int | None
    committed: int = 0
    pending: int = 0
    overrun: int = 0
    presumed: int = 0  # what the ledger charged for abandoned holds (here: as reserved, no GPU basis)
    holds: dict[str, Hold] = field(default_factory=dict)

    @property
    def remaining(self) -> int | None:
        return None if self.cap is None else max(0, self.cap - self.committed - self.presumed - self.pending)

    def totals(self) -> AccountTotals:
        return AccountTotals(
            account=self.name,
            parent=self.parent,
            cap_usd_micro=self.cap,
            committed_usd_micro=self.committed,
            presumed_usd_micro=self.presumed,
            pending_usd_micro=self.pending,
            remaining_usd_micro=self.remaining,
            overrun_usd_micro=self.overrun,
        )


class PlanMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="ledger-plans-"))
        self.clock = FakeClock()
        self.ledger = Ledger.open(str(self.directory / "ledger.db"), clock=self.clock)
        self.ledger.open_account(account="team", cap_usd_micro=400)
        self.run_id = self.ledger.open_run(run_key="run", cap_usd_micro=300, parent_account="team").run_id
        sibling = self.ledger.open_run(run_key="sibling", parent_account="team").run_id
        self.ledger.start_attempt(run_id=self.run_id, attempt_id="a1")
        self.attempt, self.counter = 1, 0
        self.accounts = {
            "team": Model("team", "", 400),
            self.run_id: Model(self.run_id, "team", 300),
            sibling: Model(sibling, "team", None),
        }

    def teardown(self) -> None:
        self.ledger.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def chain(self, name: str) -> list[Model]:
        found = []
        while name:
            found.append(self.accounts[name])
            name = found[-1].parent
        return found

    def move(self, name: str, pending: int, committed: int = 0, overrun: int = 0, presumed: int = 0) -> None:
        for model in self.chain(name):
            model.pending += pending
            model.committed += committed
            model.overrun += overrun
            model.presumed += presumed

    def abandon(self, name: str, hold: Hold) -> None:
        """A plan's undrawn part goes back (nothing was spent from it); a call's hold nobody
        settled is charged as reserved, presumed spent."""
        if hold.plan:
            self.move(name, -hold.undrawn)
        else:
            self.move(name, -hold.amount, presumed=hold.amount)

    def expire(self, name: str) -> None:
        model = self.accounts[name]
        for key, hold in list(model.holds.items()):
            if hold.expires_at <= self.clock.now:
                del model.holds[key]
                self.abandon(name, hold)

    def plan_of(self, name: str) -> tuple[str, Hold] | None:
        return next(((k, h) for k, h in self.accounts[name].holds.items() if h.plan), None)

    def fresh(self) -> str:
        self.counter += 1
        return f"id{self.counter}"

    @rule(amount=AMOUNTS, ttl=st.sampled_from([5, 30, 120]), own_attempt=st.booleans())
    def reserve_plan(self, amount: int, ttl: int, own_attempt: bool) -> None:
        attempt, key = self.attempt if own_attempt else 0, self.fresh()
        self.expire(self.run_id)  # nothing expires on the way to a plan: the model catches up first
        self.ledger.expire_reservations()
        call = lambda: self.ledger.reserve_plan(  # noqa: E731
            account=self.run_id,
            reservation_id=key,
            amount_usd_micro=amount,
            ttl=timedelta(minutes=ttl),
            attempt=attempt,
        )
        if self.plan_of(self.run_id) is not None:
            with pytest.raises(Refused) as refused:
                call()
            assert refused.value.reason == Reason.PLAN_ALREADY_HELD
        elif any(m.remaining is not None and amount > m.remaining for m in self.chain(self.run_id)):
            with pytest.raises(CapExceeded):
                call()
        else:
            call()
            expires_at = self.clock.now + timedelta(minutes=ttl)
            self.accounts[self.run_id].holds[key] = Hold(amount, expires_at, plan=True, attempt=attempt, undrawn=amount)
            self.move(self.run_id, amount)

    @rule(amount=AMOUNTS, sibling=st.booleans(), own_attempt=st.booleans())
    def reserve(self, amount: int, sibling: bool, own_attempt: bool) -> None:
        name = next(n for n in self.accounts if n not in ("team", self.run_id)) if sibling else self.run_id
        attempt, key = self.attempt if own_attempt else 0, self.fresh()
        self.expire(name)
        found = None if sibling else self.plan_of(name)
        drawn = 0
        if found is not None and found[1].attempt in (0, attempt) and found[1].expires_at > self.clock.now:
            drawn = min(amount, found[1].undrawn)
        call = lambda: self.ledger.reserve(  # noqa: E731
            account=name, reservation_id=key, amount_usd_micro=amount, attempt=attempt, ttl=timedelta(minutes=60)
        )
        if any(m.remaining is not None and amount - drawn > m.remaining for m in self.chain(name)):
            with pytest.raises(CapExceeded):
                call()
            return
        call()
        self.accounts[name].holds[key] = Hold(amount, self.clock.now + timedelta(minutes=60), attempt=attempt)
        if found is not None:
            found[1].undrawn -= drawn
        self.move(name, amount - drawn)

    @rule(data=st.data(), release=st.booleans(), delta=st.sampled_from([-20, 0, 0, 30]))
    def settle(self, data: st.DataObject, release: bool, delta: int) -> None:
        held = [
            (n, k)
            for n, m in self.accounts.items()
            for k in m.holds
            if self.accounts[n].holds[k].expires_at > self.clock.now
        ]
        if not held:
            return
        name, key = data.draw(st.sampled_from(sorted(held)))
        hold = self.accounts[name].holds[key]
        if hold.plan or release:
            self.ledger.release(account=name, reservation_id=key, reason="done")
            self.move(name, -(hold.undrawn if hold.plan else hold.amount))
        else:
            actual = max(0, hold.amount + delta)
            receipt = self.ledger.commit(account=name, reservation_id=key, actual_usd_micro=actual)
            assert receipt.overrun_usd_micro == max(0, actual - hold.amount)
            self.move(name, -hold.amount, actual, max(0, actual - hold.amount))
        del self.accounts[name].holds[key]

    @rule(minutes=st.sampled_from([1, 10, 40, 70]))
    def advance(self, minutes: int) -> None:
        self.clock.advance(minutes=minutes)
        for name in self.accounts:
            self.expire(name)
        self.ledger.expire_reservations()

    @rule()
    def start_attempt(self) -> None:
        self.expire(self.run_id)
        self.ledger.start_attempt(run_id=self.run_id, attempt_id=self.fresh())
        model = self.accounts[self.run_id]
        for key, hold in list(model.holds.items()):
            if 0 < hold.attempt <= self.attempt:  # the fenced attempt's plan goes back, its holds settle
                del model.holds[key]
                self.abandon(self.run_id, hold)
        self.attempt += 1

    @invariant()
    def spend_agrees_and_no_cap_is_crossed(self) -> None:
        head = self.ledger.head()
        for name, model in self.accounts.items():
            now = self.ledger.account_now(name)
            view = summary_of(self.ledger.account(name, min_position=head))
            assert now == model.totals() == view, (name, now, view, model.totals())
            if model.cap is not None:
                assert model.committed + model.presumed + model.pending - model.overrun <= model.cap


TestPlans = PlanMachine.TestCase
TestPlans.settings = settings(
    max_examples=25, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
