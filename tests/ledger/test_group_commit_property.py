"""A hypothesis state machine that drives the ledger's gathered write path: rules queue commands
(reservations, commits, releases, step batches from the current or a fenced attempt, new
attempts, retries of earlier commands), and `commit_group` sends what is queued from one thread
per command as ONE group, in the order queued (tests.ledger.test_group_commit.gathered). A small
reference model decides the same commands one after the other and predicts each one's answer;
the ledger must give exactly that answer to each, so a refusal never changes its neighbours'
outcome and every command sees the state its predecessors in the group left.

Invariants after every group, for the team account and both trainers: committed + pending <=
cap, and the totals equal the model's (read from the aggregates, and from a ledger opened afresh
on the same file, that is, from the log); the run holds one StepsRecorded event per batch the
model accepted, and its last step is the model's.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from ledger import CapExceeded, Conflict, Ledger, NotFound, Refused
from ledger.domain.reasons import Reason
from tests.ledger.conftest import FakeClock
from tests.ledger.test_group_commit import gathered, topics

TRAINERS = ("trainer-a", "trainer-b")
AMOUNTS = st.integers(min_value=1, max_value=60)
GROUP_MAX = 6


@dataclass
class Hold:
    account: str
    amount: int
    state: str  # pending | committed | released | refused
    remaining: int = 0  # what the refusing cap had left


@dataclass
class Model:
    caps: dict[str, int | None]
    parent: dict[str, str]
    committed: dict[str, int] = field(default_factory=dict)
    pending: dict[str, int] = field(default_factory=dict)
    holds: dict[str, Hold] = field(default_factory=dict)
    attempt: int = 1
    next_step: int = 0
    last_step: int | None = None
    batches: int = 0

    def chain(self, account: str) -> list[str]:
        return [account, *([self.parent[account]] if self.parent[account] else [])]

    def remaining(self, account: str) -> int | None:
        cap = self.caps[account]
        return None if cap is None else cap - self.committed.get(account, 0) - self.pending.get(account, 0)

    def move(self, account: str, pending: int, committed: int) -> None:
        for holder in self.chain(account):
            self.pending[holder] = self.pending.get(holder, 0) + pending
            self.committed[holder] = self.committed.get(holder, 0) + committed

    # Each returns the predicted answer: ("ok", detail) or (error class, reason).

    def reserve(self, account: str, hold_id: str, amount: int) -> tuple[Any, Any]:
        known = self.holds.get(hold_id)
        if known is not None:
            if (known.account, known.amount) != (account, amount):
                return Conflict, Reason.EXISTS_WITH_DIFFERENT_PAYLOAD
            if known.state == "refused":
                return CapExceeded, known.remaining
            return "duplicate", None
        for holder in self.chain(account):
            left = self.remaining(holder)
            if left is not None and amount > left:
                self.holds[hold_id] = Hold(account, amount, "refused", left)
                return CapExceeded, left
        self.holds[hold_id] = Hold(account, amount, "pending")
        self.move(account, amount, 0)
        return "ok", None

    def settle(self, hold_id: str, commit: bool) -> tuple[Any, Any]:
        hold = self.holds.get(hold_id)
        if hold is None:
            return NotFound, Reason.RESERVATION_NOT_FOUND
        # Releasing a refused hold answers as a repeat: nothing is held.
        if hold.state == ("committed" if commit else "released") or (not commit and hold.state == "refused"):
            return "duplicate", None
        if hold.state != "pending":
            return Refused, None
        hold.state = "committed" if commit else "released"
        self.move(hold.account, -hold.amount, hold.amount if commit else 0)
        return "ok", None

    def append(self, attempt: int) -> tuple[Any, Any]:
        if attempt != self.attempt:
            return Refused, Reason.ATTEMPT_SUPERSEDED
        first = self.next_step
        self.next_step += 5
        self.last_step, self.batches = first + 4, self.batches + 1
        return "ok", first


class GroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="ledger-groups-"))
        self.path = str(self.directory / "ledger.db")
        self.clock = FakeClock()
        self.ledger = Ledger.open(self.path, clock=self.clock, project=False)
        self.queued: list[tuple[str, dict[str, Any]]] = []
        self.sent: list[tuple[str, dict[str, Any]]] = []  # commands already answered, for retries
        self.counter = 0

    def teardown(self) -> None:
        try:
            self.ledger.close()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    @initialize(
        team_cap=st.sampled_from([None, 0, 60, 150]),
        trainer_caps=st.tuples(st.sampled_from([None, 40, 100]), st.sampled_from([None, 40, 100])),
    )
    def open_accounts(self, team_cap: int | None, trainer_caps: tuple[int | None, int | None]) -> None:
        caps = {"team": team_cap, **dict(zip(TRAINERS, trainer_caps, strict=True))}
        self.model = Model(caps=caps, parent={"team": "", **dict.fromkeys(TRAINERS, "team")})
        self.ledger.open_account(account="team", cap_usd_micro=team_cap)
        for name in TRAINERS:
            self.ledger.open_account(account=name, parent="team", cap_usd_micro=caps[name])
        self.run_id = self.ledger.open_run(run_key="groups").run_id
        self.ledger.start_attempt(run_id=self.run_id, attempt_id="a1")

    # Queueing.

    @rule(account=st.sampled_from(TRAINERS), amount=AMOUNTS)
    def queue_reserve(self, account: str, amount: int) -> None:
        self.make_room()
        self.counter += 1
        self.queued.append(("reserve", {"account": account, "reservation_id": f"r{self.counter}", "amount": amount}))

    @rule(data=st.data(), commit=st.booleans())
    def queue_settle(self, data: st.DataObject, commit: bool) -> None:
        self.make_room()
        if not self.held():
            return
        hold_id = data.draw(st.sampled_from(self.held()))
        self.queued.append(("commit" if commit else "release", {"reservation_id": hold_id}))

    @rule(stale=st.booleans())
    def queue_append(self, stale: bool) -> None:
        self.make_room()
        self.queued.append(("append", {"stale": stale}))

    @rule()
    def queue_new_attempt(self) -> None:
        self.make_room()
        self.queued.append(("attempt", {}))

    @rule(data=st.data())
    def queue_retry(self, data: st.DataObject) -> None:
        """The very same request again: answered as the first was, whatever the group around it
        does."""
        self.make_room()
        if self.sent:
            self.queued.append(data.draw(st.sampled_from(self.sent)))

    def make_room(self) -> None:
        if len(self.queued) >= GROUP_MAX:
            self.commit_group()

    def held(self) -> list[str]:
        queued = {args["reservation_id"] for kind, args in self.queued if kind == "reserve"}
        return sorted(set(self.model.holds) | queued)

    # The group.

    def call(self, kind: str, args: dict[str, Any], attempt: int, first: int) -> Any:
        ledger = self.ledger
        if kind == "reserve":
            return lambda: ledger.reserve(
                account=args["account"], reservation_id=args["reservation_id"], amount_usd_micro=args["amount"]
            )
        if kind in ("commit", "release"):
            account = self.account_of(args["reservation_id"])
            if kind == "commit":
                return lambda: ledger.commit(
                    account=account, reservation_id=args["reservation_id"], actual_usd_micro=self.amount_of(args)
                )
            return lambda: ledger.release(account=account, reservation_id=args["reservation_id"])
        if kind == "append":
            steps = list(range(first, first + 5))
            return lambda: ledger.append_steps(
                run_id=self.run_id, attempt=attempt, steps=steps, metrics={"loss": [0.5] * 5}
            )
        return lambda: ledger.start_attempt(run_id=self.run_id, attempt_id=f"a{attempt}", resume_from_step=None)

    def account_of(self, hold_id: str) -> str:
        hold = self.model.holds.get(hold_id)
        if hold is not None:
            return hold.account
        queued = [
            args["account"] for kind, args in self.queued if kind == "reserve" and args["reservation_id"] == hold_id
        ]
        return queued[0] if queued else TRAINERS[0]

    def amount_of(self, args: dict[str, Any]) -> int:
        hold = self.model.holds.get(args["reservation_id"])
        return hold.amount if hold is not None else 1

    @rule()
    def commit_group(self) -> None:
        if not self.queued:
            return
        calls, predictions = [], []
        for kind, args in self.queued:
            if kind == "reserve":
                predicted = self.model.reserve(args["account"], args["reservation_id"], args["amount"])
                calls.append(self.call(kind, args, 0, 0))
            elif kind in ("commit", "release"):
                # The account and amount are those the model knows when the command is queued.
                calls.append(self.call(kind, args, 0, 0))
                predicted = self.model.settle(args["reservation_id"], kind == "commit")
            elif kind == "append":
                attempt = self.model.attempt - 1 if args["stale"] and self.model.attempt > 1 else self.model.attempt
                first = self.model.next_step
                predicted = self.model.append(attempt)
                calls.append(self.call(kind, args, attempt, first))
            else:
                self.model.attempt += 1
                predicted = ("ok", self.model.attempt)
                calls.append(self.call(kind, args, self.model.attempt, 0))
            predictions.append(predicted)
        outcomes, _ = gathered(self.ledger, *calls)
        for (kind, _args), (expected, detail), outcome in zip(self.queued, predictions, outcomes, strict=True):
            self.check(kind, expected, detail, outcome)
        self.sent += [command for command in self.queued if command[0] == "reserve"]
        self.queued = []

    @staticmethod
    def check(kind: str, expected: Any, detail: Any, outcome: Any) -> None:
        if expected in ("ok", "duplicate"):
            assert not isinstance(outcome, Exception), (kind, expected, outcome)
            assert outcome.duplicate == (expected == "duplicate"), (kind, outcome)
            if kind == "attempt":
                assert outcome.attempt == detail
            return
        assert isinstance(outcome, expected), (kind, expected, outcome)
        if expected is CapExceeded:
            assert outcome.remaining_usd_micro == detail
        elif detail is not None:
            assert outcome.reason == detail

    # Invariants.

    @invariant()
    def caps_hold_and_totals_agree(self) -> None:
        if not hasattr(self, "model"):
            return
        for name in ("team", *TRAINERS):
            now = self.ledger.account_now(name)
            assert (now.committed_usd_micro, now.pending_usd_micro) == (
                self.model.committed.get(name, 0),
                self.model.pending.get(name, 0),
            )
            if now.cap_usd_micro is not None:
                assert now.committed_usd_micro + now.pending_usd_micro <= now.cap_usd_micro

    @invariant()
    def the_run_holds_one_batch_per_accepted_append(self) -> None:
        if not hasattr(self, "model") or self.queued:
            return
        assert topics(self.ledger, self.run_id).count("StepsRecorded") == self.model.batches

    def teardown_check(self) -> None:
        """The log folds to the same totals in a ledger opened afresh."""
        folded = Ledger.open(self.path, clock=self.clock, project=False)
        try:
            for name in ("team", *TRAINERS):
                assert folded.account_now(name) == self.ledger.account_now(name)
        finally:
            folded.close()

    @rule()
    def reopen(self) -> None:
        self.commit_group()
        self.teardown_check()


GroupMachine.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestGroupCommit = GroupMachine.TestCase
