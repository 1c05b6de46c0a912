"""Ledger.append_steps_all: a stream's step batches submitted together, decided in their order in
as few transactions as group commit makes of them, each answered as append_steps answers it. The
batches are a sequence: once one is refused, none after it is recorded, as if each had been sent
only once the one before it was answered."""

from __future__ import annotations

import threading
from typing import Any
from uuid import UUID

import pytest

from ledger import Conflict, Invalid, Ledger, LedgerError, Refused
from ledger.application.outcomes import Receipt
from ledger.domain.reasons import Reason
from tests.ledger.test_group_commit import insert_count


def opened(ledger: Ledger, key: str) -> str:
    run_id = ledger.open_run(run_key=key).run_id
    ledger.start_attempt(run_id=run_id, attempt_id=f"{key}-a1")
    return run_id


def batch(run_id: str, first: int, count: int = 10, *, attempt: int = 1, loss: float = 1.0) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "attempt": attempt,
        "steps": list(range(first, first + count)),
        "metrics": {"loss": [loss] * count},
    }


def recorded_steps(ledger: Ledger, run_id: str) -> list[int]:
    """The first step of every batch the run's log holds, in log order."""
    recorder: Any = ledger.recorder
    firsts = []
    for stored in recorder.select_events(UUID(run_id)):
        if stored.topic.endswith("StepsRecorded"):
            firsts.append(ledger.mapper.to_domain_event(stored).steps[0])
    return firsts


def receipts(outcomes: list[Any]) -> list[Receipt]:
    assert all(isinstance(outcome, Receipt) for outcome in outcomes), outcomes
    return outcomes


@pytest.fixture
def run(ledger: Ledger) -> str:
    return opened(ledger, "append-all")


def test_batches_go_in_one_transaction_in_order_each_with_its_position(ledger: Ledger, run: str) -> None:
    with insert_count(ledger) as count:
        answered = receipts(ledger.append_steps_all([batch(run, 10 * n) for n in range(5)]))
    assert count[0] == 1
    positions = [receipt.position for receipt in answered]
    assert positions == sorted(positions) and len(set(positions)) == 5
    assert [receipt.last_step for receipt in answered] == [9, 19, 29, 39, 49]
    assert not any(receipt.duplicate for receipt in answered)
    assert recorded_steps(ledger, run) == [0, 10, 20, 30, 40]
    # Each answer is its own batch's: the same batch alone again answers with it.
    assert ledger.append_steps(**batch(run, 20)).position == positions[2]


def test_a_refused_batch_records_those_before_it_and_none_after_it(ledger: Ledger, run: str) -> None:
    ledger.append_steps(**batch(run, 0))
    submitted = [
        batch(run, 10),
        batch(run, 20),
        batch(run, 0, loss=2.0),  # Steps already recorded, with another payload.
        batch(run, 30),
        batch(run, 40),
    ]
    with insert_count(ledger) as count:
        first, second, refused, *after = ledger.append_steps_all(submitted)
    assert count[0] == 1
    assert isinstance(first, Receipt) and isinstance(second, Receipt) and second.last_step == 29
    assert isinstance(refused, Conflict) and refused.reason == Reason.EXISTS_WITH_DIFFERENT_PAYLOAD
    assert len(after) == 2 and all(isinstance(outcome, LedgerError) for outcome in after)
    assert recorded_steps(ledger, run) == [0, 10, 20]
    assert ledger.run_state(run, min_position=second.position).last_step == 29
    # The batches after the refused one were never recorded: sent again (fixed), they are new.
    again = receipts(ledger.append_steps_all(submitted[3:]))
    assert [receipt.duplicate for receipt in again] == [False, False]
    assert recorded_steps(ledger, run) == [0, 10, 20, 30, 40]


def test_a_batch_of_a_fenced_attempt_stops_the_batches_after_it(ledger: Ledger, run: str) -> None:
    ledger.start_attempt(run_id=run, attempt_id="append-all-a2")
    first, fenced, after = ledger.append_steps_all(
        [batch(run, 0, attempt=2), batch(run, 100, attempt=1), batch(run, 10, attempt=2)]
    )
    assert isinstance(first, Receipt) and first.last_step == 9
    assert isinstance(fenced, Refused) and fenced.reason == Reason.ATTEMPT_SUPERSEDED
    assert isinstance(after, LedgerError)
    assert recorded_steps(ledger, run) == [0]


def test_a_batch_that_is_not_valid_stops_the_batches_after_it(ledger: Ledger, run: str) -> None:
    outcomes = ledger.append_steps_all([batch(run, 0), batch(run, 10, loss=float("nan")), batch(run, 20)])
    assert isinstance(outcomes[0], Receipt) and isinstance(outcomes[1], Invalid)
    assert outcomes[1].reason == Reason.NON_FINITE_METRIC and len(outcomes) == 2
    assert recorded_steps(ledger, run) == [0]


def test_duplicates_inside_a_submission_answer_as_the_first_time(ledger: Ledger, run: str) -> None:
    submitted = [batch(run, 0), batch(run, 10), batch(run, 0), batch(run, 20), batch(run, 10)]
    answered = receipts(ledger.append_steps_all(submitted))
    assert [receipt.duplicate for receipt in answered] == [False, False, True, False, True]
    assert answered[2].position == answered[0].position and answered[4].position == answered[1].position
    assert recorded_steps(ledger, run) == [0, 10, 20]
    # The whole submission again: every batch a duplicate, with the same positions.
    retried = receipts(ledger.append_steps_all(submitted))
    assert all(receipt.duplicate for receipt in retried)
    assert [r.position for r in retried] == [r.position for r in answered]


def test_submissions_on_several_runs_at_once_keep_each_its_order_and_its_refusal(ledger: Ledger) -> None:
    runs = [opened(ledger, f"append-all-{n}") for n in range(4)]
    for run_id in runs:
        ledger.append_steps(**batch(run_id, 0))
    outcomes: dict[str, list[Any]] = {}
    start = threading.Barrier(len(runs))

    def stream(index: int, run_id: str) -> None:
        submitted = [batch(run_id, 10 * n) for n in range(1, 30)]
        if index % 2:
            submitted[10] = batch(run_id, 0, loss=3.0)  # Refused: the runs of odd index stop there.
        start.wait()
        answered: list[Any] = []
        for first in range(0, len(submitted), 5):
            answered += ledger.append_steps_all(submitted[first : first + 5])
            if isinstance(answered[-1], Exception):
                break
        outcomes[run_id] = answered

    threads = [threading.Thread(target=stream, args=(index, run_id)) for index, run_id in enumerate(runs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for index, run_id in enumerate(runs):
        answered = outcomes[run_id]
        if index % 2:
            assert [type(o) is Receipt for o in answered] == [True] * 10 + [False] * 5
            assert isinstance(answered[10], Conflict)
            assert recorded_steps(ledger, run_id) == list(range(0, 110, 10))
        else:
            assert len(receipts(answered)) == 29
            assert recorded_steps(ledger, run_id) == list(range(0, 300, 10))
        positions = [o.position for o in answered if isinstance(o, Receipt)]
        assert positions == sorted(positions)


def test_a_group_past_a_snapshot_version_snapshots_the_run_as_saved(sqlite_database: str) -> None:
    ledger = Ledger.open(sqlite_database)
    try:
        run_id = opened(ledger, "snapshot")  # Versions 1 and 2: 210 batches take it to 212.
        submitted = [batch(run_id, step, 1) for step in range(210)]
        answered = receipts(ledger.append_steps_all(submitted))
        # The groups are of GROUP_COMMANDS_MAX commands at most: version 200 is in the second,
        # which ends at 212, and the run is snapshotted there, as saved, not replayed from the log.
        snapshots: Any = ledger.snapshots
        assert [s.originator_version for s in snapshots.get(UUID(run_id))] == [212]
        assert ledger.verify(views=False).ok
    finally:
        ledger.close()
    reopened = Ledger.open(sqlite_database)
    try:
        retry = reopened.append_steps(**submitted[-1])
        assert retry.duplicate and retry.position == answered[-1].position and retry.last_step == 209
        assert reopened.append_steps(**batch(run_id, 210, 1)).last_step == 210
    finally:
        reopened.close()
