"""A hypothesis state machine against a small reference model (TigerBeetle's auditor idea): the
model predicts the one allowed answer of every command, and after every step the ledger (its
aggregates and its views) must agree with it. Restarts from the SQLite file happen mid-sequence.

Invariants checked after every step, for every account and every parent:
- committed + presumed + pending - overrun <= cap, read from the aggregate and from the view
  (presumed: what the ledger charged for abandoned holds; overrun: flagged spend beyond a hold
  or a cap);
- the model's totals equal the ledger's (aggregate and view);
and for the run: the series holds one record per step, strictly increasing, equal to the
model's; an append from a superseded attempt is refused (ATTEMPT_SUPERSEDED); RunState agrees.
Abandoned holds (an attempt superseded, a lease lapsed, an expiry passed) are settled by the
ledger as the model predicts: GPU-time holds pro rata to the attempt's last sign of life, others
as reserved; a late commit replaces the settlement. Leases lapse (the run reads lost) exactly
when the model says, heartbeats are recorded only when nothing renewed the lease lately, and a
lost attempt that writes again is running again.
Retries (same id, same payload) are no-ops answering the first position; the same id with
another payload is refused with Conflict; refusals record nothing (a refused
reservation records exactly its refusal and the expiries found on the way).

The windows of recent ids that aggregates keep in their state are shrunk to a few entries here,
so that nearly every retry and conflict reaches an id that has left its window: ids must be
remembered for good (the keys index), at any distance. A reader (a second Ledger on the same
file that never projects) reads beside the projector after every step, and projection never
stops on an event the domain accepted.
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

import ledger.domain.accounts
import ledger.domain.runs
from ledger import CapExceeded, Conflict, Invalid, Ledger, LedgerError, NotFound, Refused
from ledger.domain.entries import AccountTotals
from ledger.domain.reasons import Reason
from ledger.views.models import SpendTotals
from tests.ledger.conftest import FakeClock, summary_of

CAPS = st.sampled_from([None, 0, 50, 100, 200, 400])
LEASES = st.sampled_from([None, 2, 30])
# One GPU at $3.60 an hour: a GPU-time hold of N micro-dollars holds N milliseconds.
GPU_RATE_USD_MICRO_PER_HOUR = 3_600_000
AMOUNTS = st.integers(min_value=0, max_value=120)
POOL = ["p0", "p1", "p2", "p3"]


# The reference model.


@dataclass
class Entry:
    """A reservation or a charge, as the model expects the account to hold it."""

    kind: str  # reservation | charge
    state: str  # pending | committed | released | settled | refused | charged
    amount: int
    attempt: int = 0
    expires_at: datetime | None = None
    actual: int = 0
    overrun: int = 0
    refused_by: str = ""
    remaining: int = 0
    settled_position: int | None = None  # of the commit or release, when it came from a receipt
    reason: str = ""  # of a release
    gpu: bool = False  # a GPU-time basis: settled pro rata when abandoned
    granted_at: datetime | None = None
    presumed: int = 0  # what the ledger charged when it settled the hold


@dataclass
class ModelAccount:
    name: str
    parent: str
    cap: int | None
    committed: int = 0
    pending: int = 0
    overrun: int = 0
    presumed: int = 0
    opened_position: int = 0
    entries: dict[str, Entry] = field(default_factory=dict)

    @property
    def remaining(self) -> int | None:
        return None if self.cap is None else max(0, self.cap - self.committed - self.presumed - self.pending)

    def excess(self, amount: int) -> int:
        """What of `amount`, spent without a hold, lies beyond the cap."""
        remaining = self.remaining
        return 0 if remaining is None else max(0, amount - remaining)

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


class LedgerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.windows = (ledger.domain.accounts.SETTLED_WINDOW, ledger.domain.runs.BATCH_WINDOW)
        ledger.domain.accounts.SETTLED_WINDOW, ledger.domain.runs.BATCH_WINDOW = 3, 2
        self.directory = Path(tempfile.mkdtemp(prefix="ledger-property-"))
        self.path = str(self.directory / "ledger.db")
        self.clock = FakeClock()
        self.ledger = Ledger.open(self.path, clock=self.clock)
        self.reader = Ledger.open(self.path, clock=self.clock, project=False)
        self.accounts: dict[str, ModelAccount] = {}
        self.counter = 0
        # Successful commands that may be retried: (method, arguments, receipt or None when
        # the first answer was a CapExceeded).
        self.history: list[tuple[str, dict[str, Any], Any]] = []
        # The run.
        self.run_id = ""
        self.attempt = 0
        self.floor: int | None = None  # the resume point of the current attempt
        self.last_step: int | None = None
        self.records: list[Record] = []
        self.checkpoints: list[Checkpoint] = []
        self.recorded: set[int] = set()  # steps recorded by the current attempt
        self.status = "running"
        self.lease_s = 60
        self.seen: dict[int, datetime] = {}  # each attempt's last sign of life in the run

    def teardown(self) -> None:
        try:
            self.reader.close()
            self.ledger.close()
        finally:
            ledger.domain.accounts.SETTLED_WINDOW, ledger.domain.runs.BATCH_WINDOW = self.windows
            shutil.rmtree(self.directory, ignore_errors=True)

    # Helpers.

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def chain(self, name: str) -> list[ModelAccount]:
        """The account and its parents, nearest first."""
        found = []
        while name:
            found.append(self.accounts[name])
            name = self.accounts[name].parent
        return found

    def pick_account(self, data: st.DataObject) -> ModelAccount:
        return self.accounts[data.draw(st.sampled_from(sorted(self.accounts)), label="account")]

    def refused(self, error: type[LedgerError], call: Any, *, reason: Reason | None = None, recorded: int = 0) -> Any:
        """`call` raises `error` (with `reason`) and records exactly `recorded` events."""
        head = self.ledger.head()
        with pytest.raises(error) as caught:
            call()
        if reason is not None:
            assert caught.value.reason == reason, caught.value
        assert self.ledger.head() == head + recorded
        return caught.value

    def fresh_write(self, receipt: Any) -> None:
        """A new write answers with the newest position of the log."""
        assert not receipt.duplicate
        assert receipt.position == self.ledger.head()

    def settle_holds(self, account: ModelAccount, entries: list[Entry], reason: str) -> int:
        """The ledger settles `entries` (pending holds of `account`), rolling up onto its parents:
        a GPU-time hold of an attempt the run knows pro rata to its last sign of life (the later
        of the run's and of the attempt's latest pending grant), any other as reserved. Returns
        how many events that records (a SpendSettled and a roll-up per parent)."""
        parents = self.chain(account.name)[1:]
        grants: dict[int, datetime] = {}
        for other in account.entries.values():
            if other.state == "pending" and other.granted_at is not None:
                grants[other.attempt] = max(other.granted_at, grants.get(other.attempt, other.granted_at))
        for entry in entries:
            seen = self.seen.get(entry.attempt) if account.name == self.run_id and entry.attempt > 0 else None
            if entry.gpu and seen is not None and entry.granted_at is not None:
                seen = max(seen, grants[entry.attempt])
                elapsed_ms = max(0, int((seen - entry.granted_at).total_seconds() * 1000))
                entry.presumed = min(entry.amount, elapsed_ms)
                event("a GPU hold settled pro rata" + (" in part" if entry.presumed < entry.amount else ""))
            else:
                entry.presumed = entry.amount
                event("a hold settled as reserved")
            entry.state, entry.reason = "settled", reason
            for holder in (account, *parents):
                holder.pending -= entry.amount
                holder.presumed += entry.presumed
        return len(entries) * (1 + len(parents))

    def expire_holds(self, account: ModelAccount, now: datetime) -> tuple[int, int]:
        """Settle `account`'s overdue holds. Returns how many and how many events that records."""
        overdue = [
            entry
            for entry in account.entries.values()
            if entry.state == "pending" and entry.expires_at is not None and entry.expires_at <= now
        ]
        return len(overdue), self.settle_holds(account, overdue, "RESERVATION_EXPIRED")

    def usable_checkpoints(self) -> list[Checkpoint]:
        now = self.clock.now
        return [c for c in self.checkpoints if not c.superseded and (c.expires_at is None or c.expires_at > now)]

    def expired_checkpoints(self) -> list[Checkpoint]:
        now = self.clock.now
        return [c for c in self.checkpoints if not c.superseded and c.expires_at is not None and c.expires_at <= now]

    # Setup: a team account, a run under it, and its first attempt.

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
        self.start(resume=None, attempt_id="attempt-0")

    # Spend.

    @rule(data=st.data(), cap=CAPS)
    def open_account(self, data: st.DataObject, cap: int | None) -> None:
        """Open an account under no parent or an existing one, so that chains are at most an
        account and two parents; opening an existing name again is a retry or a conflict."""
        name = data.draw(st.sampled_from(POOL), label="name")
        parent = data.draw(
            st.sampled_from([""] + sorted(a for a in self.accounts if len(self.chain(a)) <= 2)), label="parent"
        )
        existing = self.accounts.get(name)
        call = lambda: self.ledger.open_account(account=name, parent=parent, cap_usd_micro=cap)  # noqa: E731
        if existing is None:
            receipt = call()
            self.fresh_write(receipt)
            self.accounts[name] = ModelAccount(name, parent, cap, opened_position=receipt.position)
        elif (existing.parent, existing.cap) == (parent, cap):
            receipt = call()
            assert (receipt.duplicate, receipt.position) == (True, existing.opened_position)
        else:
            self.refused(Conflict, call)

    @rule(data=st.data(), cap=CAPS)
    def set_cap(self, data: st.DataObject, cap: int | None) -> None:
        account = self.pick_account(data)
        floor = account.committed + account.presumed + account.pending - account.overrun
        call = lambda: self.ledger.set_cap(account=account.name, cap_usd_micro=cap)  # noqa: E731
        if cap == account.cap:
            assert call().duplicate
        elif cap is not None and cap < floor:
            self.refused(Refused, call, reason=Reason.CAP_BELOW_SPEND)
        else:
            self.fresh_write(call())
            account.cap = cap

    @rule(
        data=st.data(),
        amount=AMOUNTS,
        ttl=st.sampled_from([1, 5, 15, 60]),
        attempt=st.integers(0, 2),
        gpu=st.booleans(),
    )
    def reserve(self, data: st.DataObject, amount: int, ttl: int, attempt: int, gpu: bool) -> None:
        """Reserve under a fresh id (GPU time, or an amount known only in total): the account's
        overdue holds are settled first, then the amount is held on the account and every parent,
        or refused by the first that cannot hold it. The run's own account is picked most often:
        its holds are the ones a new attempt or a lapsed lease abandons."""
        on_the_run = data.draw(st.booleans(), label="on the run")
        account = self.accounts[self.run_id] if on_the_run else self.pick_account(data)
        rid = self.fresh("r")
        now = self.clock.now
        arguments: dict[str, Any] = {
            "account": account.name,
            "reservation_id": rid,
            "amount_usd_micro": amount,
            "ttl": timedelta(minutes=ttl),
            "attempt": attempt,
        }
        if gpu:
            line = {"gpu_milliseconds": amount, "usd_micro_per_gpu_hour": GPU_RATE_USD_MICRO_PER_HOUR, "gpu_count": 1}
            arguments["basis"] = {"price_sheet": "gpu", "gpu": line}
        if account.name == self.run_id and 0 < attempt < self.attempt:
            # A fenced-off attempt takes no new hold on the run's account; nothing is recorded.
            self.refused(Refused, lambda: self.ledger.reserve(**arguments), reason=Reason.ATTEMPT_SUPERSEDED)
            event("reserve by a superseded attempt refused")
            return
        _, expiry_events = self.expire_holds(account, now)
        chain = self.chain(account.name)
        for holder in chain:
            if holder.remaining is not None and amount > holder.remaining:
                error = self.refused(
                    CapExceeded,
                    lambda: self.ledger.reserve(**arguments),
                    reason=Reason.SPEND_CAP_EXCEEDED,
                    recorded=expiry_events + 1,
                )
                assert (error.account, error.remaining_usd_micro) == (holder.name, holder.remaining)
                event("reserve refused by " + ("the account" if holder is account else "a parent"))
                account.entries[rid] = Entry(
                    "reservation", "refused", amount, attempt, refused_by=holder.name, remaining=holder.remaining
                )
                self.history.append(("reserve", arguments, None))
                return
        receipt = self.ledger.reserve(**arguments)
        self.fresh_write(receipt)
        assert receipt.expires_at == now + timedelta(minutes=ttl)
        for holder in chain:
            holder.pending += amount
        account.entries[rid] = Entry(
            "reservation", "pending", amount, attempt, expires_at=now + timedelta(minutes=ttl), gpu=gpu, granted_at=now
        )
        self.history.append(("reserve", arguments, receipt))

    def pick_entry(self, data: st.DataObject) -> tuple[ModelAccount, str, Entry] | None:
        entries = [
            (account, key, entry) for account in self.accounts.values() for key, entry in account.entries.items()
        ]
        if not entries:
            return None
        # Pending holds and those the ledger settled are the interesting ones: prefer them.
        live = [e for e in entries if e[2].state in ("pending", "settled")]
        pool = live if live and data.draw(st.integers(0, 3), label="prefer live") else entries
        return pool[data.draw(st.integers(0, len(pool) - 1), label="entry")]

    @rule(data=st.data(), release=st.booleans(), delta=st.sampled_from([-30, -1, 0, 0, 1, 25, 80]))
    def settle(self, data: st.DataObject, release: bool, delta: int) -> None:
        """Commit (actual below, equal to or above the hold) or release a reservation in any
        state; the model says which answer is the only right one."""
        picked = self.pick_entry(data)
        if picked is None:
            return
        account, key, entry = picked
        if release:
            self.release(account, key, entry)
        else:
            self.commit(account, key, entry, max(0, entry.amount + delta))

    def commit(self, account: ModelAccount, key: str, entry: Entry, actual: int) -> None:
        arguments = {"account": account.name, "reservation_id": key, "actual_usd_micro": actual}
        call = lambda: self.ledger.commit(**arguments)  # noqa: E731
        parents = self.chain(account.name)[1:]
        if entry.state == "committed":
            if actual == entry.actual:
                receipt = call()
                assert (receipt.duplicate, receipt.position, receipt.overrun_usd_micro) == (
                    True,
                    entry.settled_position,
                    entry.overrun,
                )
            else:
                self.refused(Conflict, call)
            return
        if entry.state in ("released", "refused", "charged"):
            self.refused(Refused, call, reason=Reason[f"RESERVATION_{entry.state.upper()}"])
            return
        replaced = entry.presumed if entry.state == "settled" else 0
        if entry.state == "pending":
            overrun = max(0, actual - entry.amount)
            overruns = [overrun] * len(parents)
            event("commit with overrun" if overrun else "commit within the hold")
        else:  # Settled by the ledger: a late commit replacing the settlement, charged in full;
            # each account's overrun is its own excess beyond what the settlement held.
            overrun = account.excess(actual - replaced)
            overruns = [parent.excess(actual - replaced) for parent in parents]
            event("late commit" + (" with overrun" if overrun else ""))
        receipt = call()
        self.fresh_write(receipt)
        assert receipt.overrun_usd_micro == overrun
        held = entry.amount if entry.state == "pending" else 0
        for holder, holder_overrun in zip((account, *parents), (overrun, *overruns), strict=False):
            holder.pending -= held
            holder.presumed -= replaced
            holder.committed += actual
            holder.overrun += holder_overrun
        entry.state, entry.actual, entry.overrun, entry.settled_position = (
            "committed",
            actual,
            overrun,
            receipt.position,
        )
        self.history.append(("commit", arguments, receipt))

    def release(self, account: ModelAccount, key: str, entry: Entry) -> None:
        arguments = {"account": account.name, "reservation_id": key, "reason": "not made"}
        call = lambda: self.ledger.release(**arguments)  # noqa: E731
        if entry.state in ("released", "settled", "refused"):
            receipt = call()
            assert receipt.duplicate
            if entry.settled_position is not None:
                assert receipt.position == entry.settled_position
        elif entry.state in ("committed", "charged"):
            self.refused(Refused, call, reason=Reason[f"RESERVATION_{entry.state.upper()}"])
        else:
            receipt = call()
            self.fresh_write(receipt)
            for holder in self.chain(account.name):
                holder.pending -= entry.amount
            entry.state, entry.settled_position = "released", receipt.position
            self.history.append(("release", arguments, receipt))

    @rule(data=st.data(), amount=AMOUNTS)
    def charge(self, data: st.DataObject, amount: int) -> None:
        """An after-the-fact charge is recorded in full; what lies beyond each cap is overrun."""
        account = self.pick_account(data)
        cid = self.fresh("c")
        arguments = {"account": account.name, "charge_id": cid, "amount_usd_micro": amount, "reason": "bill"}
        chain = self.chain(account.name)
        overruns = [holder.excess(amount) for holder in chain]
        receipt = self.ledger.charge(**arguments)
        self.fresh_write(receipt)
        assert receipt.overrun_usd_micro == overruns[0]
        for holder, overrun in zip(chain, overruns, strict=False):
            holder.committed += amount
            holder.overrun += overrun
        account.entries[cid] = Entry(
            "charge", "charged", amount, actual=amount, overrun=overruns[0], settled_position=receipt.position
        )
        self.history.append(("charge", arguments, receipt))

    @rule(minutes=st.sampled_from([1, 4, 10, 16, 61]))
    def expire(self, minutes: int) -> None:
        """Advance the clock and sweep: every overdue pending hold is settled, and only those."""
        now = self.clock.advance(minutes=minutes)
        outcomes = [self.expire_holds(account, now) for account in self.accounts.values()]
        head = self.ledger.head()
        assert self.ledger.expire_reservations() == sum(expired for expired, _ in outcomes)
        assert self.ledger.head() - head == sum(events for _, events in outcomes)
        assert self.ledger.expire_reservations() == 0
        if any(expired for expired, _ in outcomes):
            event("sweep expired holds")

    @precondition(lambda self: self.history)
    @rule(data=st.data())
    def retry(self, data: st.DataObject) -> None:
        """A command sent again with the same id and payload is a no-op answering the first
        answer (also a step batch resent by a superseded attempt)."""
        method, arguments, first = self.history[data.draw(st.integers(0, len(self.history) - 1), label="which")]
        event(f"retry {method}")
        call = lambda: getattr(self.ledger, method)(**arguments)  # noqa: E731
        if method == "reserve" and first is None:
            entry = self.accounts[arguments["account"]].entries[arguments["reservation_id"]]
            error = self.refused(CapExceeded, call)
            assert (error.account, error.remaining_usd_micro) == (entry.refused_by, entry.remaining)
            return
        head = self.ledger.head()
        answer = call()
        assert answer.duplicate, (method, arguments)
        assert answer.position == first.position, (method, arguments, first, answer)
        assert (answer.overrun_usd_micro, answer.expires_at, answer.attempt) == (
            first.overrun_usd_micro,
            first.expires_at,
            first.attempt,
        )
        assert self.ledger.head() == head

    @precondition(lambda self: self.history)
    @rule(data=st.data())
    def conflict(self, data: st.DataObject) -> None:
        """The same id with another payload is refused, and nothing is recorded."""
        method, arguments, _ = self.history[data.draw(st.integers(0, len(self.history) - 1), label="which")]
        if method == "append_steps":
            other = {**arguments, "metrics": {"loss": [value + 1.0 for value in arguments["metrics"]["loss"]]}}
            if arguments["attempt"] < self.attempt:  # Not a resend: the superseded attempt is fenced.
                self.refused(Refused, lambda: self.ledger.append_steps(**other), reason=Reason.ATTEMPT_SUPERSEDED)
            else:
                self.refused(
                    Conflict, lambda: self.ledger.append_steps(**other), reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD
                )
            return
        if method == "start_attempt":
            other = {**arguments, "label": "another host"}
            self.refused(Conflict, lambda: self.ledger.start_attempt(**other))
            return
        account = self.accounts[arguments["account"]]
        key = arguments.get("reservation_id") or arguments["charge_id"]
        entry = account.entries[key]
        if entry.kind == "charge":
            options = [
                lambda: self.ledger.charge(account=account.name, charge_id=key, amount_usd_micro=entry.amount + 1),
                lambda: self.ledger.reserve(account=account.name, reservation_id=key, amount_usd_micro=entry.amount),
            ]
        else:
            options = [
                lambda: self.ledger.reserve(
                    account=account.name, reservation_id=key, amount_usd_micro=entry.amount + 1, attempt=entry.attempt
                ),
                lambda: self.ledger.reserve(
                    account=account.name, reservation_id=key, amount_usd_micro=entry.amount, attempt=entry.attempt + 1
                ),
                lambda: self.ledger.charge(account=account.name, charge_id=key, amount_usd_micro=1),
            ]
            if entry.state == "committed":
                options.append(
                    lambda: self.ledger.commit(
                        account=account.name, reservation_id=key, actual_usd_micro=entry.actual + 1
                    )
                )
        self.refused(Conflict, options[data.draw(st.integers(0, len(options) - 1), label="option")])

    # The run.

    def start(self, *, resume: int | None, attempt_id: str, lease_s: int | None = None) -> None:
        arguments = {"run_id": self.run_id, "attempt_id": attempt_id, "resume_from_step": resume, "lease_s": lease_s}
        receipt = self.ledger.start_attempt(**arguments)
        self.fresh_write(receipt)
        self.attempt += 1
        assert receipt.attempt == self.attempt
        self.status, self.lease_s = "running", 60 if lease_s is None else lease_s
        self.seen[self.attempt] = self.clock.now
        # The holds of the attempts it fences off are settled at once, never at $0.
        account = self.accounts[self.run_id]
        fenced = [e for e in account.entries.values() if e.state == "pending" and 0 < e.attempt < self.attempt]
        if fenced:
            event("a new attempt settled a fenced hold")
        self.settle_holds(account, fenced, "ATTEMPT_SUPERSEDED")
        # Everything above the resume point that earlier attempts recorded is superseded.
        floor = -1 if resume is None else resume
        for item in (*self.records, *self.checkpoints):
            if item.step > floor:
                item.superseded = True
        self.floor = self.last_step = resume
        self.recorded = set()
        if attempt_id:
            self.history.append(("start_attempt", arguments, receipt))

    @rule(data=st.data(), with_id=st.booleans(), lease_s=LEASES)
    def start_attempt(self, data: st.DataObject, with_id: bool, lease_s: int | None) -> None:
        """A new attempt, resumed from a usable checkpoint or from scratch; resuming from an
        expired checkpoint is refused."""
        expired = self.expired_checkpoints()
        if expired and data.draw(st.booleans(), label="try an expired checkpoint"):
            self.refused(
                Refused,
                lambda: self.ledger.start_attempt(run_id=self.run_id, resume_from_step=expired[0].step),
                reason=Reason.CHECKPOINT_EXPIRED,
            )
        usable = self.usable_checkpoints()
        resume = None
        if usable and data.draw(st.integers(0, 3), label="resume"):
            resume = usable[data.draw(st.integers(0, len(usable) - 1), label="checkpoint")].step
        event("attempt resumed" if resume is not None else "attempt from scratch")
        self.start(resume=resume, attempt_id=self.fresh("attempt-") if with_id else "", lease_s=lease_s)

    @rule(
        data=st.data(),
        size=st.integers(1, 6),
        gap=st.integers(0, 2),
        seed=st.integers(0, 1000),
        ttl=st.sampled_from(["none", None, 10, 60]),
    )
    def append_steps(self, data: st.DataObject, size: int, gap: int, seed: int, ttl: str | int | None) -> None:
        """One batch (one event) after the last step, sometimes followed by a checkpoint at its
        last step (no expiry, or 10 or 60 minutes); then a step the attempt never recorded, at
        or below its last, is refused."""
        first = (self.last_step if self.last_step is not None else 0) + 1 + gap
        steps = list(range(first, first + size))
        loss = [seed / 100 + i / 1000 for i in range(size)]
        arguments = {"run_id": self.run_id, "attempt": self.attempt, "steps": steps, "metrics": {"loss": loss}}
        receipt = self.ledger.append_steps(**arguments)
        self.fresh_write(receipt)
        assert receipt.last_step == steps[-1]
        if self.status == "lost":
            event("a lost attempt wrote again")
        self.status, self.seen[self.attempt] = "running", self.clock.now
        self.records.extend(Record(step, self.attempt, value) for step, value in zip(steps, loss, strict=False))
        self.recorded.update(steps)
        self.history.append(("append_steps", arguments, receipt))
        self.last_step = steps[-1]
        if ttl != "none":
            expires_at = None if ttl is None else self.clock.now + timedelta(minutes=int(ttl))
            self.fresh_write(
                self.ledger.save_checkpoint(
                    run_id=self.run_id,
                    attempt=self.attempt,
                    step=self.last_step,
                    backend="hf",
                    uri=f"file:///ckpt/{self.attempt}/{self.last_step}",
                    expires_at=expires_at,
                )
            )
            self.checkpoints.append(Checkpoint(self.attempt, self.last_step, expires_at))
        low = 0 if self.floor is None else self.floor + 1
        gaps = [step for step in range(low, self.last_step + 1) if step not in self.recorded]
        if gaps:
            # Below the batches an attempt keeps in its state, a step in a gap cannot be told
            # from one in an older batch: either way it is refused and nothing is recorded.
            step = data.draw(st.sampled_from(gaps), label="gap")
            error = self.refused(
                LedgerError, lambda: self.ledger.append_steps(run_id=self.run_id, attempt=self.attempt, steps=[step])
            )
            assert (type(error), error.reason) in (
                (Invalid, Reason.STEPS_NOT_INCREASING),
                (Conflict, Reason.STEP_ALREADY_RECORDED),
            )
        if self.floor is not None:
            self.refused(
                Invalid,
                lambda: self.ledger.append_steps(run_id=self.run_id, attempt=self.attempt, steps=[self.floor]),
                reason=Reason.STEP_BEFORE_RESUME,
            )

    @rule(milliseconds=st.sampled_from([0, 7, 40, 150]))
    def tick(self, milliseconds: int) -> None:
        """Time passes a little: what a GPU-time hold held so far grows."""
        self.clock.advance(milliseconds=milliseconds)

    @rule(seconds=st.sampled_from([0.05, 1, 3, 31, 61]))
    def sweep_leases(self, seconds: float) -> None:
        """Advance the clock and sweep the leases: the run is lost exactly when its current
        attempt's lease has lapsed, and that attempt's pending holds are settled with it."""
        now = self.clock.advance(seconds=seconds)
        lapsed = self.status == "running" and self.seen[self.attempt] + timedelta(seconds=self.lease_s) <= now
        head = self.ledger.head()
        assert self.ledger.sweep_leases() == int(lapsed)
        recorded = 0
        if lapsed:
            event("a lease lapsed")
            self.status = "lost"
            account = self.accounts[self.run_id]
            held = [e for e in account.entries.values() if e.state == "pending" and 0 < e.attempt <= self.attempt]
            recorded = 1 + self.settle_holds(account, held, "ATTEMPT_LOST")
        assert self.ledger.head() - head == recorded
        assert self.ledger.sweep_leases() == 0

    @rule()
    def heartbeat(self) -> None:
        """A heartbeat is recorded only when nothing renewed the lease in its last twentieth; a
        lost attempt's heartbeat makes it running again."""
        now = self.clock.now
        head = self.ledger.head()
        receipt = self.ledger.heartbeat(run_id=self.run_id, attempt=self.attempt)
        stale = now - self.seen[self.attempt] >= timedelta(seconds=self.lease_s / 20)
        if self.status == "lost" or stale:
            event("heartbeat recorded" + (" by a lost attempt" if self.status == "lost" else ""))
            self.fresh_write(receipt)
            assert self.ledger.head() == head + 1
            self.status, self.seen[self.attempt] = "running", now
        else:
            assert receipt.duplicate and self.ledger.head() == head

    @rule()
    def restart(self) -> None:
        """Close the application and open it again from its SQLite file."""
        event("restart")
        head = self.ledger.head()
        self.ledger.close()
        self.ledger = Ledger.open(self.path, clock=self.clock)
        assert self.ledger.head() == head

    @rule(data=st.data(), cap=CAPS, other_parent=st.booleans())
    def reopen_run(self, data: st.DataObject, cap: int | None, other_parent: bool) -> None:
        """OpenRun of the existing run: a cap given is a cap change under SetCap's rules, an
        absent one leaves it; another parent is refused; nothing is half-applied."""
        account = self.accounts[self.run_id]
        parent = data.draw(st.sampled_from(sorted(self.accounts)), label="parent") if other_parent else ""
        call = lambda: self.ledger.open_run(run_key="run", cap_usd_micro=cap, parent_account=parent)  # noqa: E731
        floor = account.committed + account.presumed + account.pending - account.overrun
        if parent and parent != account.parent:
            self.refused(Refused, call, reason=Reason.PARENT_ACCOUNT_DIFFERS)
        elif cap is None or cap == account.cap:
            head = self.ledger.head()
            assert call().duplicate
            assert self.ledger.head() == head
        elif cap < floor:
            self.refused(Refused, call, reason=Reason.CAP_BELOW_SPEND)
        else:
            receipt = call()
            assert receipt.duplicate and not receipt.created and receipt.position == self.ledger.head()
            account.cap = cap

    @rule()
    def open_a_run_account_first(self) -> None:
        """The account of a run that is not opened yet cannot be taken by OpenAccount."""
        from ledger.domain.base import ledger_id

        run_id = str(ledger_id("run", self.fresh("later-run-")))
        self.refused(
            Invalid,
            lambda: self.ledger.open_account(account=run_id, cap_usd_micro=None),
            reason=Reason.ACCOUNT_NAME_RESERVED,
        )

    # Invariants.

    @invariant()
    def spend_agrees_and_no_cap_is_crossed(self) -> None:
        head = self.ledger.head()
        for name, model in self.accounts.items():
            now = self.ledger.account_now(name)
            view = summary_of(self.ledger.account(name, min_position=head))
            beside = summary_of(self.reader.account(name, min_position=head))
            assert now == model.totals(), (name, now, model.totals())
            assert view == model.totals(), (name, view, model.totals())
            assert beside == model.totals(), (name, beside, model.totals())
            for totals in (now, view):
                if totals.cap_usd_micro is not None:
                    spent = totals.committed_usd_micro + totals.presumed_usd_micro + totals.pending_usd_micro
                    assert spent - totals.overrun_usd_micro <= totals.cap_usd_micro

    @invariant()
    def series_has_one_record_per_step(self) -> None:
        series = self.ledger.series(self.run_id, min_position=self.ledger.head(), limit=10_000)
        live = sorted((r for r in self.records if not r.superseded), key=lambda r: r.step)
        assert list(series.steps) == [r.step for r in live]
        assert all(a < b for a, b in zip(series.steps, series.steps[1:], strict=False))
        assert list(series.attempts) == [r.attempt for r in live]
        loss = series.metric("loss")
        assert (list(loss.values) if loss is not None else []) == [r.loss for r in live]
        everything = self.ledger.series(self.run_id, include_superseded=True, limit=10_000)
        expected = sorted(self.records, key=lambda r: (r.step, r.attempt))
        assert list(zip(everything.steps, everything.attempts, everything.superseded, strict=True)) == [
            (r.step, r.attempt, r.superseded) for r in expected
        ]

    @invariant()
    def run_state_agrees(self) -> None:
        state = self.ledger.run_state(self.run_id, min_position=self.ledger.head())
        assert state.current_attempt == self.attempt
        assert state.run.status == self.status
        current = state.attempts[-1]
        assert (current.lease_s, current.lost_at is not None) == (self.lease_s, self.status == "lost")
        assert state.last_step == self.last_step
        usable = self.usable_checkpoints()
        best = max(usable, key=lambda c: (c.step, c.attempt)) if usable else None
        assert (state.checkpoint.step if state.checkpoint else None) == (best.step if best else None)
        assert state.resume.from_step == (best.step if best else 0)
        assert sorted((c.step, c.attempt) for c in state.expired_checkpoints) == sorted(
            (c.step, c.attempt) for c in self.expired_checkpoints()
        )
        model = self.accounts[self.run_id]
        assert state.spend == SpendTotals(
            cap_usd_micro=model.cap,
            committed_usd_micro=model.committed,
            pending_usd_micro=model.pending,
            remaining_usd_micro=model.remaining,
            overrun_usd_micro=model.overrun,
            presumed_usd_micro=model.presumed,
        )

    @invariant()
    def every_event_projects(self) -> None:
        assert self.ledger.projector.failure is None
        self.ledger.wait(self.ledger.head())

    @invariant()
    def superseded_attempts_are_fenced(self) -> None:
        if self.attempt >= 2:
            self.refused(
                Refused,
                lambda: self.ledger.append_steps(run_id=self.run_id, attempt=self.attempt - 1, steps=[10**9]),
                reason=Reason.ATTEMPT_SUPERSEDED,
            )
        self.refused(
            NotFound,
            lambda: self.ledger.append_steps(run_id=self.run_id, attempt=self.attempt + 1, steps=[10**9]),
            reason=Reason.ATTEMPT_NOT_FOUND,
        )


LedgerMachine.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestLedgerMachine = LedgerMachine.TestCase
