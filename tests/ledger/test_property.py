"""A hypothesis state machine against a small reference model (TigerBeetle's auditor idea): the
model predicts the one allowed answer of every command, and after every step the ledger (its
aggregates and its views) must agree with it. Restarts from the SQLite file happen mid-sequence.

Invariants checked after every step, for every account and every parent:
- committed + pending - overrun <= cap, read from the aggregate and from the view;
- the model's totals equal the ledger's;
and for the run: the series has one record per step, strictly increasing, equal to the model's;
an append from a superseded attempt is refused (ATTEMPT_SUPERSEDED); RunState agrees.
Retries (same id, same payload) are no-ops answering the first position; the same id with
another payload is refused with AlreadyExistsError.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ledger import (
    AlreadyExistsError,
    FailedPreconditionError,
    InvalidArgumentError,
    Ledger,
    LedgerError,
    NotFoundError,
    SpendCapExceededError,
)
from tests.ledger.conftest import FakeClock

CAPS = st.sampled_from([None, 0, 50, 100, 200, 400])
AMOUNTS = st.integers(min_value=0, max_value=120)
TTL_MINUTES = st.sampled_from([1, 5, 15, 60])
POOL = ["p0", "p1", "p2", "p3", "p4"]


# The reference model.


@dataclass
class Entry:
    kind: str  # reservation | charge
    state: str  # pending | committed | released | expired | refused | charged
    amount: int
    attempt: int = 0
    expires_at: datetime | None = None
    actual: int = 0
    overrun: int = 0
    refused_by: str = ""
    remaining: int = 0
    position: int = 0  # of the first answer (reserve or charge)
    settled_position: int | None = None  # of the commit or release, when known


@dataclass
class ModelAccount:
    name: str
    parent: str
    cap: int | None
    committed: int = 0
    pending: int = 0
    overrun: int = 0
    opened_position: int = 0
    entries: dict[str, Entry] = field(default_factory=dict)

    @property
    def remaining(self) -> int | None:
        return None if self.cap is None else max(0, self.cap - self.committed - self.pending)

    def excess(self, amount: int) -> int:
        remaining = self.remaining
        return 0 if remaining is None else max(0, amount - remaining)

    def totals(self) -> dict[str, Any]:
        return {"account": self.name, "parent": self.parent, "cap": self.cap, "committed": self.committed,
                "pending": self.pending, "remaining": self.remaining, "overrun": self.overrun}


@dataclass
class Record:
    step: int
    attempt: int
    loss: float
    superseded: bool = False


@dataclass
class Checkpoint:
    attempt: int
    step: int
    expires_at: datetime | None
    superseded: bool = False


@dataclass
class Batch:
    attempt: int
    steps: list[int]
    loss: list[float]
    position: int


class LedgerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="ledger-property-"))
        self.path = str(self.directory / "ledger.db")
        self.clock = FakeClock()
        self.ledger = Ledger.open(self.path, clock=self.clock)
        self.accounts: dict[str, ModelAccount] = {}
        self.counter = 0
        # Successful commands that may be retried: (method, arguments, receipt).
        self.history: list[tuple[str, dict[str, Any], Any]] = []
        # The run.
        self.run_id = ""
        self.attempt = 0
        self.floor: int | None = None  # resume point of the current attempt
        self.last_step: int | None = None
        self.records: list[Record] = []
        self.checkpoints: list[Checkpoint] = []
        self.batches: list[Batch] = []
        self.attempt_ids: dict[str, tuple[int | None, int, int]] = {}  # id -> (resume, number, position)

    def teardown(self) -> None:
        try:
            self.ledger.close()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    # Helpers.

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def chain(self, name: str) -> list[ModelAccount]:
        found = []
        while name:
            found.append(self.accounts[name])
            name = self.accounts[name].parent
        return found

    def refused(self, error: type[LedgerError], call: Any, *, reason: str | None = None,
                recorded: int = 0) -> LedgerError:
        """`call` raises `error` (with `reason`) and records exactly `recorded` events."""
        head = self.ledger.head()
        with pytest.raises(error) as caught:
            call()
        if reason is not None:
            assert caught.value.reason == reason, caught.value
        assert self.ledger.head() == head + recorded
        return caught.value

    def fresh_write(self, receipt: Any) -> None:
        assert not receipt.duplicate
        assert receipt.position == self.ledger.head()

    def expire_holds(self, account: ModelAccount, now: datetime) -> tuple[int, int]:
        """Expire `account`'s overdue holds, rolling up onto its parents. Returns how many
        expired and how many events that records (a SpendExpired and a roll-up per parent)."""
        parents = self.chain(account.name)[1:]
        expired = 0
        for entry in account.entries.values():
            if entry.state == "pending" and entry.expires_at is not None and entry.expires_at <= now:
                entry.state = "expired"
                for holder in (account, *parents):
                    holder.pending -= entry.amount
                expired += 1
        return expired, expired * (1 + len(parents))

    def live_records(self) -> list[Record]:
        return sorted((r for r in self.records if not r.superseded), key=lambda r: r.step)

    # Setup: a team account and a run under it.

    @initialize(team_cap=CAPS, run_cap=CAPS)
    def open_run(self, team_cap: int | None, run_cap: int | None) -> None:
        receipt = self.ledger.open_account(account="team", cap_usd_micro=team_cap)
        self.accounts["team"] = ModelAccount("team", "", team_cap, opened_position=receipt.position)
        receipt = self.ledger.open_run(run_key="run", cap_usd_micro=run_cap, parent_account="team")
        self.fresh_write(receipt)
        self.run_id = receipt.run_id
        self.accounts[self.run_id] = ModelAccount(self.run_id, "team", run_cap)
        again = self.ledger.open_run(run_key="run", cap_usd_micro=run_cap, parent_account="team")
        assert (again.duplicate, again.position, again.run_id) == (True, receipt.position, self.run_id)

    # Spend.

    @rule(data=st.data(), cap=CAPS)
    def open_account(self, data: st.DataObject, cap: int | None) -> None:
        name = data.draw(st.sampled_from(POOL), label="name")
        parents = [""] + [a.name for a in self.accounts.values() if len(self.chain(a.name)) <= 2]
        parent = data.draw(st.sampled_from(parents), label="parent")
        existing = self.accounts.get(name)
        if existing is None:
            receipt = self.ledger.open_account(account=name, parent=parent, cap_usd_micro=cap)
            self.fresh_write(receipt)
            self.accounts[name] = ModelAccount(name, parent, cap, opened_position=receipt.position)
            self.history.append(("open_account", {"account": name, "parent": parent, "cap_usd_micro": cap}, receipt))
        elif (existing.parent, existing.cap) == (parent, cap):
            receipt = self.ledger.open_account(account=name, parent=parent, cap_usd_micro=cap)
            assert (receipt.duplicate, receipt.position) == (True, existing.opened_position)
        else:
            self.refused(AlreadyExistsError, lambda: self.ledger.open_account(account=name, parent=parent,
                                                                              cap_usd_micro=cap))

    @rule(data=st.data(), cap=CAPS)
    def set_cap(self, data: st.DataObject, cap: int | None) -> None:
        account = self.accounts[data.draw(st.sampled_from(sorted(self.accounts)), label="account")]
        floor = account.committed + account.pending - account.overrun
        if cap == account.cap:
            assert self.ledger.set_cap(account=account.name, cap_usd_micro=cap).duplicate
        elif cap is not None and cap < floor:
            self.refused(FailedPreconditionError, lambda: self.ledger.set_cap(account=account.name, cap_usd_micro=cap),
                         reason="CAP_BELOW_SPEND")
        else:
            self.fresh_write(self.ledger.set_cap(account=account.name, cap_usd_micro=cap))
            account.cap = cap

    @rule(data=st.data(), amount=AMOUNTS, ttl=TTL_MINUTES, attempt=st.integers(0, 2))
    def reserve(self, data: st.DataObject, amount: int, ttl: int, attempt: int) -> None:
        account = self.accounts[data.draw(st.sampled_from(sorted(self.accounts)), label="account")]
        rid = self.fresh("r")
        now = self.clock.now
        arguments = {"account": account.name, "reservation_id": rid, "amount_usd_micro": amount,
                     "ttl": timedelta(minutes=ttl), "attempt": attempt}
        _, expired_events = self.expire_holds(account, now)
        chain = self.chain(account.name)
        for holder in chain:
            if holder.remaining is not None and amount > holder.remaining:
                error = self.refused(SpendCapExceededError, lambda: self.ledger.reserve(**arguments),
                                     recorded=expired_events + 1)
                assert isinstance(error, SpendCapExceededError)
                assert (error.account, error.remaining_usd_micro) == (holder.name, holder.remaining)
                event("reserve refused by " + ("the account" if holder is account else "a parent"))
                account.entries[rid] = Entry("reservation", "refused", amount, attempt, refused_by=holder.name,
                                             remaining=holder.remaining)
                self.history.append(("reserve", arguments, None))
                return
        receipt = self.ledger.reserve(**arguments)
        self.fresh_write(receipt)
        assert receipt.expires_at == now + timedelta(minutes=ttl)
        for holder in chain:
            holder.pending += amount
        account.entries[rid] = Entry("reservation", "pending", amount, attempt, expires_at=now + timedelta(minutes=ttl),
                                     position=receipt.position)
        self.history.append(("reserve", arguments, receipt))

    def pick_entry(self, data: st.DataObject, kind: str | None = None) -> tuple[ModelAccount, str, Entry] | None:
        entries = [(account, key, entry) for account in self.accounts.values()
                   for key, entry in account.entries.items() if kind is None or entry.kind == kind]
        if not entries:
            return None
        # Pending holds are the interesting ones: prefer them.
        pending = [e for e in entries if e[2].state == "pending"]
        pool = pending if pending and data.draw(st.booleans(), label="prefer pending") else entries
        return pool[data.draw(st.integers(0, len(pool) - 1), label="entry")]

    @rule(data=st.data(), delta=st.sampled_from([-30, -1, 0, 0, 1, 25, 80]))
    def commit(self, data: st.DataObject, delta: int) -> None:
        picked = self.pick_entry(data)
        if picked is None:
            return
        account, key, entry = picked
        actual = max(0, entry.amount + delta)
        arguments = {"account": account.name, "reservation_id": key, "actual_usd_micro": actual}
        call = lambda: self.ledger.commit(**arguments)  # noqa: E731
        parents = self.chain(account.name)[1:]
        if entry.state == "committed":
            if actual == entry.actual:
                receipt = call()
                assert (receipt.duplicate, receipt.position, receipt.overrun_usd_micro) == (
                    True, entry.settled_position, entry.overrun)
            else:
                self.refused(AlreadyExistsError, call)
        elif entry.state in ("released", "refused", "charged"):
            self.refused(FailedPreconditionError, call, reason=f"RESERVATION_{entry.state.upper()}")
        elif entry.state == "pending":
            overrun = max(0, actual - entry.amount)
            event("commit with overrun" if overrun else "commit within the hold")
            receipt = call()
            self.fresh_write(receipt)
            assert receipt.overrun_usd_micro == overrun
            for holder in (account, *parents):
                holder.pending -= entry.amount
                holder.committed += actual
                holder.overrun += overrun
            entry.state, entry.actual, entry.overrun, entry.settled_position = (
                "committed", actual, overrun, receipt.position)
            self.history.append(("commit", arguments, receipt))
        else:  # Expired: a late commit, charged in full; each account's overrun is its own excess.
            overrun = account.excess(actual)
            excesses = [parent.excess(actual) for parent in parents]
            event("late commit")
            receipt = call()
            self.fresh_write(receipt)
            assert receipt.overrun_usd_micro == overrun
            account.committed += actual
            account.overrun += overrun
            for parent, excess in zip(parents, excesses):
                parent.committed += actual
                parent.overrun += excess
            entry.state, entry.actual, entry.overrun, entry.settled_position = (
                "committed", actual, overrun, receipt.position)
            self.history.append(("commit", arguments, receipt))

    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        picked = self.pick_entry(data)
        if picked is None:
            return
        account, key, entry = picked
        arguments = {"account": account.name, "reservation_id": key, "reason": "not made"}
        call = lambda: self.ledger.release(**arguments)  # noqa: E731
        if entry.state in ("released", "expired", "refused"):
            receipt = call()
            assert receipt.duplicate
            if entry.state == "released":
                assert receipt.position == entry.settled_position
        elif entry.state in ("committed", "charged"):
            self.refused(FailedPreconditionError, call, reason=f"RESERVATION_{entry.state.upper()}")
        else:
            receipt = call()
            self.fresh_write(receipt)
            for holder in self.chain(account.name):
                holder.pending -= entry.amount
            entry.state, entry.settled_position = "released", receipt.position
            self.history.append(("release", arguments, receipt))

    @rule(data=st.data(), amount=AMOUNTS)
    def charge(self, data: st.DataObject, amount: int) -> None:
        account = self.accounts[data.draw(st.sampled_from(sorted(self.accounts)), label="account")]
        cid = self.fresh("c")
        arguments = {"account": account.name, "charge_id": cid, "amount_usd_micro": amount, "reason": "bill"}
        chain = self.chain(account.name)
        excesses = [holder.excess(amount) for holder in chain]
        receipt = self.ledger.charge(**arguments)
        self.fresh_write(receipt)
        assert receipt.overrun_usd_micro == excesses[0]
        for holder, excess in zip(chain, excesses):
            holder.committed += amount
            holder.overrun += excess
        account.entries[cid] = Entry("charge", "charged", amount, actual=amount, overrun=excesses[0],
                                     position=receipt.position, settled_position=receipt.position)
        self.history.append(("charge", arguments, receipt))

    @rule(minutes=st.sampled_from([1, 4, 10, 16, 61]))
    def expire(self, minutes: int) -> None:
        """Advance the clock and sweep: every overdue pending hold expires, and only those."""
        now = self.clock.advance(minutes=minutes)
        outcomes = [self.expire_holds(account, now) for account in self.accounts.values()]
        head = self.ledger.head()
        assert self.ledger.expire_reservations() == sum(expired for expired, _ in outcomes)
        if any(expired for expired, _ in outcomes):
            event("sweep expired holds")
        assert self.ledger.head() - head == sum(events for _, events in outcomes)
        assert self.ledger.expire_reservations() == 0

    @rule(data=st.data())
    def retry(self, data: st.DataObject) -> None:
        """A command sent again with the same id and payload is a no-op answering the first."""
        if not self.history:
            return
        method, arguments, first = self.history[data.draw(st.integers(0, len(self.history) - 1), label="which")]
        head = self.ledger.head()
        if method == "reserve" and first is None:
            entry = self.accounts[arguments["account"]].entries[arguments["reservation_id"]]
            error = self.refused(SpendCapExceededError, lambda: self.ledger.reserve(**arguments))
            assert isinstance(error, SpendCapExceededError)
            assert (error.account, error.remaining_usd_micro) == (entry.refused_by, entry.remaining)
            return
        if method == "open_account":
            account = self.accounts[arguments["account"]]
            if account.cap != arguments["cap_usd_micro"]:
                self.refused(AlreadyExistsError, lambda: self.ledger.open_account(**arguments))
                return
        event(f"retry {method}")
        answer = getattr(self.ledger, method)(**arguments)
        assert answer.duplicate, (method, arguments)
        assert answer.position == first.position, (method, arguments, first, answer)
        assert answer.overrun_usd_micro == first.overrun_usd_micro
        assert answer.expires_at == first.expires_at
        assert self.ledger.head() == head

    @rule(data=st.data())
    def conflict(self, data: st.DataObject) -> None:
        """The same id with another payload is refused, and nothing is recorded."""
        picked = self.pick_entry(data)
        if picked is None:
            return
        account, key, entry = picked
        if entry.kind == "charge":
            options = [lambda: self.ledger.charge(account=account.name, charge_id=key,
                                                  amount_usd_micro=entry.amount + 1),
                       lambda: self.ledger.reserve(account=account.name, reservation_id=key,
                                                   amount_usd_micro=entry.amount)]
        else:
            options = [lambda: self.ledger.reserve(account=account.name, reservation_id=key,
                                                   amount_usd_micro=entry.amount + 1, attempt=entry.attempt),
                       lambda: self.ledger.reserve(account=account.name, reservation_id=key,
                                                   amount_usd_micro=entry.amount, attempt=entry.attempt + 1),
                       lambda: self.ledger.charge(account=account.name, charge_id=key, amount_usd_micro=1)]
            if entry.state == "committed":
                options.append(lambda: self.ledger.commit(account=account.name, reservation_id=key,
                                                          actual_usd_micro=entry.actual + 1))
        self.refused(AlreadyExistsError, options[data.draw(st.integers(0, len(options) - 1), label="option")])

    # The run.

    @rule(data=st.data(), with_id=st.booleans())
    def start_attempt(self, data: st.DataObject, with_id: bool) -> None:
        now = self.clock.now
        usable = [c for c in self.checkpoints if not c.superseded and (c.expires_at is None or c.expires_at > now)]
        resume = None
        if usable and data.draw(st.booleans(), label="resume"):
            resume = usable[data.draw(st.integers(0, len(usable) - 1), label="checkpoint")].step
        expired = [c for c in self.checkpoints if not c.superseded and c.expires_at is not None and c.expires_at <= now]
        if expired and data.draw(st.booleans(), label="try expired"):
            self.refused(FailedPreconditionError,
                         lambda: self.ledger.start_attempt(run_id=self.run_id, resume_from_step=expired[0].step),
                         reason="CHECKPOINT_EXPIRED")
        attempt_id = self.fresh("attempt-") if with_id else ""
        receipt = self.ledger.start_attempt(run_id=self.run_id, attempt_id=attempt_id, resume_from_step=resume)
        self.fresh_write(receipt)
        self.attempt += 1
        assert receipt.attempt == self.attempt
        floor = -1 if resume is None else resume
        for record in self.records:
            if record.step > floor:
                record.superseded = True
        for checkpoint in self.checkpoints:
            if checkpoint.step > floor:
                checkpoint.superseded = True
        event("attempt resumed" if resume is not None else "attempt from scratch")
        self.floor = resume
        self.last_step = resume
        self.batches = []
        if attempt_id:
            self.attempt_ids[attempt_id] = (resume, self.attempt, receipt.position)

    @precondition(lambda self: self.attempt_ids)
    @rule(data=st.data())
    def retry_attempt(self, data: st.DataObject) -> None:
        attempt_id = data.draw(st.sampled_from(sorted(self.attempt_ids)), label="attempt id")
        resume, number, position = self.attempt_ids[attempt_id]
        receipt = self.ledger.start_attempt(run_id=self.run_id, attempt_id=attempt_id, resume_from_step=resume)
        assert (receipt.duplicate, receipt.position, receipt.attempt) == (True, position, number)
        self.refused(AlreadyExistsError, lambda: self.ledger.start_attempt(
            run_id=self.run_id, attempt_id=attempt_id, resume_from_step=resume, label="other"))

    @precondition(lambda self: self.attempt >= 1)
    @rule(size=st.integers(1, 6), gap=st.integers(0, 2), seed=st.integers(0, 1000))
    def append_steps(self, size: int, gap: int, seed: int) -> None:
        first = (self.last_step if self.last_step is not None else 0) + 1 + gap
        steps = list(range(first, first + size))
        loss = [seed / 100 + i / 1000 for i in range(size)]
        receipt = self.ledger.append_steps(run_id=self.run_id, attempt=self.attempt, steps=steps,
                                           metrics={"loss": loss})
        self.fresh_write(receipt)
        assert receipt.last_step == steps[-1]
        self.records.extend(Record(step, self.attempt, value) for step, value in zip(steps, loss))
        self.batches.append(Batch(self.attempt, steps, loss, receipt.position))
        self.last_step = steps[-1]

    @precondition(lambda self: self.batches)
    @rule(data=st.data())
    def retry_steps(self, data: st.DataObject) -> None:
        batch = self.batches[data.draw(st.integers(0, len(self.batches) - 1), label="batch")]
        head = self.ledger.head()
        receipt = self.ledger.append_steps(run_id=self.run_id, attempt=batch.attempt, steps=batch.steps,
                                           metrics={"loss": batch.loss})
        assert (receipt.duplicate, receipt.position) == (True, batch.position)
        assert self.ledger.head() == head
        other = [value + 1.0 for value in batch.loss]
        self.refused(AlreadyExistsError, lambda: self.ledger.append_steps(
            run_id=self.run_id, attempt=batch.attempt, steps=batch.steps, metrics={"loss": other}),
            reason="EXISTS_WITH_DIFFERENT_PAYLOAD")

    @precondition(lambda self: self.last_step is not None and (self.floor is None or self.last_step > self.floor))
    @rule(ttl=st.sampled_from([None, 10, 60]))
    def save_checkpoint(self, ttl: int | None) -> None:
        step = self.last_step
        assert step is not None
        if any(c.attempt == self.attempt and c.step == step for c in self.checkpoints):
            return
        expires_at = None if ttl is None else self.clock.now + timedelta(minutes=ttl)
        receipt = self.ledger.save_checkpoint(run_id=self.run_id, attempt=self.attempt, step=step, backend="hf",
                                              uri=f"file:///ckpt/{self.attempt}/{step}", expires_at=expires_at)
        self.fresh_write(receipt)
        self.checkpoints.append(Checkpoint(self.attempt, step, expires_at))

    @precondition(lambda self: self.attempt >= 1 and self.last_step is not None)
    @rule(data=st.data())
    def steps_out_of_order(self, data: st.DataObject) -> None:
        """A step the current attempt never recorded, at or below its last one, is refused."""
        assert self.last_step is not None
        recorded = {step for batch in self.batches for step in batch.steps}
        low = 0 if self.floor is None else self.floor + 1
        gaps = [step for step in range(low, self.last_step + 1) if step not in recorded]

        def append(step: int) -> Any:
            return self.ledger.append_steps(run_id=self.run_id, attempt=self.attempt, steps=[step])

        if gaps:
            step = data.draw(st.sampled_from(gaps), label="gap")
            self.refused(InvalidArgumentError, lambda: append(step), reason="STEPS_NOT_INCREASING")
        if self.floor is not None:
            self.refused(InvalidArgumentError, lambda: append(self.floor), reason="STEP_BEFORE_RESUME")

    @rule()
    def restart(self) -> None:
        """Close the application and open it again from its SQLite file."""
        event("restart")
        head = self.ledger.head()
        self.ledger.close()
        self.ledger = Ledger.open(self.path, clock=self.clock)
        assert self.ledger.head() == head

    # Invariants.

    @invariant()
    def spend_agrees_and_no_cap_is_crossed(self) -> None:
        head = self.ledger.head()
        for name, model in self.accounts.items():
            now = self.ledger.account_now(name)
            view = self.ledger.account(name, min_position=head)
            assert now == model.totals(), (name, now, model.totals())
            assert view == model.totals(), (name, view, model.totals())
            for totals in (now, view):
                if totals["cap"] is not None:
                    assert totals["committed"] + totals["pending"] - totals["overrun"] <= totals["cap"]
            assert model.pending == sum(e.amount for a in self.accounts.values() if name in
                                        [c.name for c in self.chain(a.name)]
                                        for e in a.entries.values() if e.state == "pending")

    @invariant()
    def series_has_one_record_per_step(self) -> None:
        head = self.ledger.head()
        series = self.ledger.series(self.run_id, min_position=head, limit=10_000)
        live = self.live_records()
        assert series["steps"] == [r.step for r in live]
        assert all(a < b for a, b in zip(series["steps"], series["steps"][1:]))
        assert series["attempts"] == [r.attempt for r in live]
        if live:
            assert series["metrics"]["loss"]["values"] == [r.loss for r in live]
        everything = self.ledger.series(self.run_id, include_superseded=True, limit=10_000)
        expected = sorted(self.records, key=lambda r: (r.step, r.attempt))
        assert list(zip(everything["steps"], everything["attempts"], everything["superseded"])) == [
            (r.step, r.attempt, r.superseded) for r in expected]

    @invariant()
    def run_state_agrees(self) -> None:
        state = self.ledger.run_state(self.run_id, min_position=self.ledger.head())
        assert state["current_attempt"] == self.attempt
        assert state["last_step"] == self.last_step
        now = self.clock.now
        usable = [c for c in self.checkpoints if not c.superseded and (c.expires_at is None or c.expires_at > now)]
        best = max(usable, key=lambda c: (c.step, c.attempt)) if usable else None
        assert (state["checkpoint"]["step"] if state["checkpoint"] else None) == (best.step if best else None)
        assert state["resume"]["from_step"] == (best.step if best else 0)
        expired = sorted((c.step, c.attempt) for c in self.checkpoints
                         if not c.superseded and c.expires_at is not None and c.expires_at <= now)
        assert sorted((c["step"], c["attempt"]) for c in state["expired_checkpoints"]) == expired
        assert state["spend"] == {k: v for k, v in self.accounts[self.run_id].totals().items()
                                  if k not in ("account", "parent")}

    @invariant()
    def superseded_attempts_are_fenced(self) -> None:
        if self.attempt < 2:
            return
        self.refused(FailedPreconditionError, lambda: self.ledger.append_steps(
            run_id=self.run_id, attempt=self.attempt - 1, steps=[10**9]), reason="ATTEMPT_SUPERSEDED")
        self.refused(NotFoundError, lambda: self.ledger.append_steps(
            run_id=self.run_id, attempt=self.attempt + 1, steps=[10**9]), reason="ATTEMPT_NOT_FOUND")


LedgerMachine.TestCase.settings = settings(
    max_examples=40, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestLedgerMachine = LedgerMachine.TestCase
