"""Group commit (ledger.application.gather): writes that queue while a commit is in flight are
decided in order, each on the state its predecessors left, and saved in one transaction; each
keeps its own answer. A refused command changes nothing and its neighbours succeed.

`gathered` builds a group deterministically: it holds the ledger's write lock while a first
command (the leader) waits for it, queues the commands one by one in the order given, then
lets go: the leader commits alone and the queued commands go together in the next group. It
counts the transactions that inserted events, on the real recorder.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest

from ledger import CapExceeded, Invalid, Ledger, LedgerError, Refused
from ledger.domain.entries import AccountTotals
from ledger.domain.reasons import Reason
from tests.ledger.conftest import FakeClock

# How long the helper polls for a thread to reach the queue (never a test of timing).
QUEUE_WAIT_S = 30.0


@contextmanager
def insert_count(ledger: Ledger, *, leaving_out: threading.Thread | None = None) -> Iterator[list[int]]:
    """Counts the recorder's inserting transactions while the block runs ([count]), but for
    those of the thread `leaving_out`."""
    recorder: Any = ledger.recorder
    count = [0]
    insert = recorder.insert_events

    def counted(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is not leaving_out:
            count[0] += 1
        return insert(*args, **kwargs)

    recorder.insert_events = counted
    try:
        yield count
    finally:
        del recorder.insert_events


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + QUEUE_WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("a writer never reached the queue")
        time.sleep(0.001)


def gathered(ledger: Ledger, *calls: Callable[[], Any]) -> tuple[list[Any], int]:
    """Run `calls` as one group, in order. Returns each call's answer (its result, or the
    exception it raised) and how many transactions inserted their events."""
    writes: Any = ledger.writer.queue
    outcomes: list[Any] = [None] * len(calls)

    def call(index: int, function: Callable[[], Any]) -> None:
        try:
            outcomes[index] = function()
        except Exception as error:  # The answer under test.
            outcomes[index] = error

    lead = threading.Thread(target=ledger.open_account, kwargs={"account": f"lead-{uuid.uuid4().hex[:8]}"})
    threads = [threading.Thread(target=call, args=(index, function)) for index, function in enumerate(calls)]
    with insert_count(ledger, leaving_out=lead) as count:
        with ledger.writer.lock:
            lead.start()
            _until(lambda: writes._leading and writes.queued == 0)  # The leader took its group of one.
            for index, thread in enumerate(threads):
                thread.start()
                _until(lambda index=index: writes.queued == index + 1)
        lead.join()
        for thread in threads:
            thread.join()
    return outcomes, count[0]


@pytest.fixture
def run(ledger: Ledger) -> str:
    opened = ledger.open_run(run_key="group-run")
    ledger.start_attempt(run_id=opened.run_id, attempt_id="a1")
    return opened.run_id


def steps(first: int, count: int = 10) -> dict[str, Any]:
    return {"steps": list(range(first, first + count)), "metrics": {"loss": [1.0] * count}}


def topics(ledger: Ledger, aggregate_id: str) -> list[str]:
    recorder: Any = ledger.recorder
    return [stored.topic.rsplit(".", 1)[-1] for stored in recorder.select_events(UUID(aggregate_id))]


def test_writes_queued_during_a_commit_are_saved_in_one_transaction_each_with_its_position(ledger: Ledger) -> None:
    for name in ("a", "b", "c"):
        ledger.open_account(account=name, cap_usd_micro=1_000)
    outcomes, transactions = gathered(
        ledger,
        lambda: ledger.reserve(account="a", reservation_id="r1", amount_usd_micro=100),
        lambda: ledger.reserve(account="b", reservation_id="r1", amount_usd_micro=200),
        lambda: ledger.reserve(account="c", reservation_id="r1", amount_usd_micro=300),
    )
    assert transactions == 1
    positions = [receipt.position for receipt in outcomes]
    assert positions == sorted(positions) and len(set(positions)) == 3
    assert [ledger.account_now(name).pending_usd_micro for name in ("a", "b", "c")] == [100, 200, 300]
    # Each answer is the position of its own event: an identical retry answers the same.
    assert ledger.reserve(account="b", reservation_id="r1", amount_usd_micro=200).position == positions[1]


def test_each_spend_write_answers_its_account_totals_as_of_itself(ledger: Ledger) -> None:
    ledger.open_account(account="team", cap_usd_micro=1_000)
    outcomes, transactions = gathered(
        ledger,
        lambda: ledger.reserve(account="team", reservation_id="a", amount_usd_micro=100),
        lambda: ledger.reserve(account="team", reservation_id="b", amount_usd_micro=200),
        lambda: ledger.commit(account="team", reservation_id="a", actual_usd_micro=50),
        lambda: ledger.reserve(account="team", reservation_id="c", amount_usd_micro=300),
    )
    assert transactions == 1
    # Decided in one group, answered each with the totals its own write left, not the group's.
    assert [
        (r.account.pending_usd_micro, r.account.committed_usd_micro, r.account.remaining_usd_micro) for r in outcomes
    ] == [
        (100, 0, 900),
        (300, 0, 700),
        (200, 50, 750),
        (500, 50, 450),
    ]
    assert ledger.account_now("team").pending_usd_micro == 500
    # A retry answers the totals of the account as it is when retried.
    again = ledger.reserve(account="team", reservation_id="a", amount_usd_micro=100)
    assert again.duplicate and again.account is not None and again.account.pending_usd_micro == 500
    assert ledger.set_cap(account="team", cap_usd_micro=2_000).account == AccountTotals(
        account="team",
        parent="",
        cap_usd_micro=2_000,
        committed_usd_micro=50,
        presumed_usd_micro=0,
        pending_usd_micro=500,
        remaining_usd_micro=1_450,
        overrun_usd_micro=0,
    )


def test_a_refused_reservation_changes_nothing_and_its_neighbours_succeed(ledger: Ledger) -> None:
    ledger.open_account(account="team", cap_usd_micro=100)
    outcomes, transactions = gathered(
        ledger,
        lambda: ledger.reserve(account="team", reservation_id="a", amount_usd_micro=60),
        lambda: ledger.reserve(account="team", reservation_id="b", amount_usd_micro=60),
        lambda: ledger.reserve(account="team", reservation_id="c", amount_usd_micro=40),
        lambda: ledger.commit(account="team", reservation_id="a", actual_usd_micro=50),
    )
    assert transactions == 1
    reserved_a, refused_b, reserved_c, committed_a = outcomes
    assert isinstance(refused_b, CapExceeded) and refused_b.remaining_usd_micro == 40
    assert not reserved_a.duplicate and not reserved_c.duplicate and committed_a.overrun_usd_micro == 0
    assert ledger.account_now("team") == AccountTotals(
        account="team",
        parent="",
        cap_usd_micro=100,
        committed_usd_micro=50,
        presumed_usd_micro=0,
        pending_usd_micro=40,
        remaining_usd_micro=10,
        overrun_usd_micro=0,
    )
    # The refusal itself is recorded (for audit): a retry of b is refused the same way.
    with pytest.raises(CapExceeded) as again:
        ledger.reserve(account="team", reservation_id="b", amount_usd_micro=60)
    assert again.value.remaining_usd_micro == 40


def test_a_refusal_after_a_change_to_the_same_run_drops_only_its_own_event(
    ledger: Ledger, run: str, clock: FakeClock
) -> None:
    past = clock() - timedelta(hours=1)
    outcomes, transactions = gathered(
        ledger,
        lambda: ledger.append_steps(run_id=run, attempt=1, **steps(0)),
        # Refused after its event was triggered on the run the append above changed.
        lambda: ledger.save_checkpoint(run_id=run, attempt=1, step=9, backend="hf", uri="/ck9", expires_at=past),
        lambda: ledger.append_steps(run_id=run, attempt=1, **steps(10)),
        lambda: ledger.save_checkpoint(run_id=run, attempt=1, step=19, backend="hf", uri="/ck19"),
    )
    first, refused, second, checkpoint = outcomes
    assert isinstance(refused, Invalid) and refused.reason == Reason.CHECKPOINT_ALREADY_EXPIRED
    assert first.last_step == 9 and second.last_step == 19
    # The group ends before the refusal: what came before it commits, the rest in the next group.
    assert transactions == 2
    assert topics(ledger, run) == [
        "Opened",
        "AttemptStarted",
        "StepsRecorded",
        "StepsRecorded",
        "CheckpointSaved",
    ]
    state = ledger.run_state(run, min_position=checkpoint.position)
    assert (state.last_step, state.checkpoint.step if state.checkpoint else None) == (19, 19)


def test_the_run_reloaded_after_a_refused_change_holds_only_what_was_saved(
    ledger: Ledger, run: str, database: str, clock: FakeClock
) -> None:
    past = clock() - timedelta(hours=1)
    gathered(
        ledger,
        lambda: ledger.append_steps(run_id=run, attempt=1, **steps(0)),
        lambda: ledger.save_checkpoint(run_id=run, attempt=1, step=9, backend="hf", uri="/ck9", expires_at=past),
    )
    # The next write decides on the run as stored, not on the refused checkpoint.
    ledger.append_steps(run_id=run, attempt=1, **steps(10))
    reopened = Ledger.open(database, clock=clock, project=False)
    try:
        assert topics(reopened, run)[-2:] == ["StepsRecorded", "StepsRecorded"]
    finally:
        reopened.close()
    state = ledger.run_state(run, min_position=ledger.head())
    assert state.checkpoint is None and state.last_step == 19


def test_a_retry_in_the_same_group_answers_with_the_first_position(ledger: Ledger) -> None:
    ledger.open_account(account="team", cap_usd_micro=100)
    outcomes, transactions = gathered(
        ledger,
        lambda: ledger.reserve(account="team", reservation_id="a", amount_usd_micro=60),
        lambda: ledger.reserve(account="team", reservation_id="a", amount_usd_micro=60),
        lambda: ledger.reserve(account="team", reservation_id="a", amount_usd_micro=70),
    )
    first, retry, conflict = outcomes
    assert transactions == 1
    assert (retry.position, retry.duplicate, first.duplicate) == (first.position, True, False)
    assert isinstance(conflict, LedgerError) and conflict.reason == Reason.EXISTS_WITH_DIFFERENT_PAYLOAD
    assert ledger.account_now("team").pending_usd_micro == 60


def test_a_run_opened_twice_in_one_group_is_opened_once(ledger: Ledger) -> None:
    outcomes, transactions = gathered(
        ledger,
        lambda: ledger.open_run(run_key="twice", cap_usd_micro=500),
        lambda: ledger.open_run(run_key="twice", cap_usd_micro=500),
    )
    first, second = outcomes
    assert transactions == 1
    assert (first.created, second.created, second.duplicate) == (True, False, True)
    assert (second.run_id, second.position) == (first.run_id, first.position)
    assert topics(ledger, first.run_id) == ["Opened"]


def test_a_new_attempt_fences_the_old_one_within_a_group(ledger: Ledger, run: str) -> None:
    outcomes, transactions = gathered(
        ledger,
        lambda: ledger.append_steps(run_id=run, attempt=1, **steps(0)),
        lambda: ledger.start_attempt(run_id=run, attempt_id="a2", resume_from_step=None),
        lambda: ledger.append_steps(run_id=run, attempt=1, **steps(10)),
        lambda: ledger.append_steps(run_id=run, attempt=2, **steps(10)),
    )
    appended, started, fenced, resumed = outcomes
    assert transactions == 1
    assert started.attempt == 2
    assert isinstance(fenced, Refused) and fenced.reason == Reason.ATTEMPT_SUPERSEDED
    assert resumed.last_step == 19 and appended.last_step == 9
    assert topics(ledger, run).count("StepsRecorded") == 2


def test_a_lone_writer_commits_alone(ledger: Ledger) -> None:
    ledger.open_account(account="solo", cap_usd_micro=None)
    with insert_count(ledger) as count:
        for n in range(5):
            ledger.reserve(account="solo", reservation_id=f"r{n}", amount_usd_micro=1)
    assert count == [5]


def test_concurrent_writers_never_cross_a_shared_cap(ledger: Ledger, database: str, clock: FakeClock) -> None:
    ledger.open_account(account="team", cap_usd_micro=1_000)
    writers, tries, amount = 12, 20, 7
    for n in range(writers):
        ledger.open_account(account=f"trainer-{n}", parent="team")
    granted: list[list[int]] = [[] for _ in range(writers)]
    refused = [0] * writers
    failures: list[BaseException] = []
    start = threading.Barrier(writers)

    def writer(n: int) -> None:
        start.wait()
        try:
            for i in range(tries):
                try:
                    receipt = ledger.reserve(account=f"trainer-{n}", reservation_id=f"r{i}", amount_usd_micro=amount)
                except CapExceeded as refusal:
                    assert refusal.account == "team"
                    refused[n] += 1
                    continue
                granted[n].append(receipt.position)
                if i % 3 == 0:
                    ledger.commit(account=f"trainer-{n}", reservation_id=f"r{i}", actual_usd_micro=amount)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    positions = [position for mine in granted for position in mine]
    assert len(positions) == len(set(positions))
    # 1,000 // 7 = 142 holds fit under the team's cap; every other request was refused.
    assert (len(positions), sum(refused)) == (142, writers * tries - 142)
    team = ledger.account_now("team")
    assert team.committed_usd_micro + team.pending_usd_micro == 142 * amount <= 1_000
    # The log says the same: a ledger opened afresh folds the same totals.
    reopened = Ledger.open(database, clock=clock, project=False)
    try:
        assert reopened.account_now("team") == team
    finally:
        reopened.close()


def test_an_interrupted_leader_answers_its_group_and_hands_the_lead_on(ledger: Ledger) -> None:
    """A leader whose thread is interrupted (KeyboardInterrupt) while it commits a group answers
    every command of that group with the interruption; the writer queued behind the group is not
    lost: it leads the next group and is recorded."""
    for name in ("b", "c"):
        ledger.open_account(account=name, cap_usd_micro=1_000)
    writes: Any = ledger.writer.queue
    writes.group_max = 2

    def interrupt(touched: list[Any]) -> None:
        raise KeyboardInterrupt

    outcomes: dict[str, Any] = {}

    def call(name: str, function: Callable[[], Any]) -> None:
        try:
            outcomes[name] = function()
        except BaseException as error:  # The answer under test, an interruption included.
            outcomes[name] = error

    lead = threading.Thread(target=ledger.open_account, kwargs={"account": "lead"})
    threads = [
        threading.Thread(target=call, args=("a", lambda: ledger.writer.write(interrupt))),
        threading.Thread(
            target=call, args=("b", lambda: ledger.reserve(account="b", reservation_id="r", amount_usd_micro=10))
        ),
        threading.Thread(
            target=call, args=("c", lambda: ledger.reserve(account="c", reservation_id="r", amount_usd_micro=20))
        ),
    ]
    with ledger.writer.lock:
        lead.start()
        _until(lambda: writes._leading and writes.queued == 0)
        for index, thread in enumerate(threads):
            thread.start()
            _until(lambda index=index: writes.queued == index + 1)
    lead.join()
    for thread in threads:
        thread.join(QUEUE_WAIT_S)
        assert not thread.is_alive()
    assert isinstance(outcomes["a"], KeyboardInterrupt)
    assert isinstance(outcomes["b"], KeyboardInterrupt)
    assert ledger.account_now("b").pending_usd_micro == 0
    assert ledger.account_now("c").pending_usd_micro == 20
    assert not writes._leading and writes.queued == 0
