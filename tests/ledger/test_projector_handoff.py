"""The projector applies the events its own process saved as they were handed over, without
reading them back from the log; anything it was not handed (other writers' events, offers past
its bound) it reads from the log, and the views come out the same as a rebuild from the log."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ledger import Ledger
from ledger.domain.limits import BATCH_STEPS_MAX
from ledger.views.projector import CHUNK_ROWS, HANDED_EVENTS_MAX

from .conftest import dump_views


def _batch(first: int, count: int = 10) -> dict[str, Any]:
    steps = list(range(first, first + count))
    return {"steps": steps, "metrics": {"loss": [1.0 / step for step in steps]}}


def _log_reads(ledger: Ledger) -> dict[str, int]:
    """Counts the projector's reads of the log from now on, empty ones too ("reads"), and the
    events they returned ("rows"): one dict, updated."""
    counts = {"reads": 0, "rows": 0}
    select = ledger.recorder.select_notifications

    def counting(*args: Any, **kwargs: Any) -> Any:
        notifications = select(*args, **kwargs)
        counts["reads"] += 1
        counts["rows"] += len(notifications)
        return notifications

    ledger.recorder.select_notifications = counting  # type: ignore[method-assign]
    return counts


@pytest.fixture
def other(database: str) -> Iterator[Ledger]:
    """Another process's writer, on the same store."""
    writer = Ledger.open(database, project=False)
    try:
        yield writer
    finally:
        writer.close()


def test_a_projector_that_keeps_up_reads_none_of_its_own_events_back(ledger: Ledger) -> None:
    run = ledger.open_run(run_key="handed", cap_usd_micro=10**9)
    ledger.start_attempt(run_id=run.run_id, attempt_id="a1")
    ledger.wait(ledger.head())
    read = _log_reads(ledger)
    # The projector is held while the writes are made: a wake between a commit and its handover
    # (the poll, PostgreSQL's NOTIFY, a catch-up still looping) would read that event from the
    # log instead, rightly but by chance.
    with ledger.projector._projecting:
        for first in range(1, 200, 10):
            ledger.append_steps(run_id=run.run_id, attempt=1, **_batch(first))
        ledger.reserve(account=run.run_id, reservation_id="r1", amount_usd_micro=500)
        last = ledger.commit(account=run.run_id, reservation_id="r1", actual_usd_micro=400)
    ledger.wait(last.position)

    assert read["rows"] == 0  # Without the handover, all 22 events are read back.
    state = ledger.run_state(run.run_id, min_position=last.position)
    assert state.last_step == 200
    live = dump_views(ledger)
    ledger.projector.stop()
    ledger.projector.rebuild()
    assert dump_views(ledger) == live


def test_events_another_writer_saved_between_ours_are_read_from_the_log(ledger: Ledger, other: Ledger) -> None:
    ours = ledger.open_run(run_key="ours", cap_usd_micro=10**9)
    theirs = other.open_run(run_key="theirs", cap_usd_micro=10**9)
    ledger.start_attempt(run_id=ours.run_id, attempt_id="a1")
    other.start_attempt(run_id=theirs.run_id, attempt_id="a1")
    for first in range(1, 100, 10):
        ledger.append_steps(run_id=ours.run_id, attempt=1, **_batch(first))
        other.append_steps(run_id=theirs.run_id, attempt=1, **_batch(first, 5))
        other.reserve(account=theirs.run_id, reservation_id=f"r{first}", amount_usd_micro=100)
    last = ledger.append_steps(run_id=ours.run_id, attempt=1, **_batch(101))
    ledger.wait(max(last.position, ledger.head()), 30)

    assert ledger.run_state(ours.run_id).last_step == 110
    assert ledger.run_state(theirs.run_id).last_step == 95
    assert ledger.account(theirs.run_id).pending_usd_micro == 1_000
    live = dump_views(ledger)
    ledger.projector.stop()
    ledger.projector.rebuild()
    assert dump_views(ledger) == live


def test_offers_past_the_bound_are_dropped_and_the_log_fills_in(ledger: Ledger) -> None:
    run = ledger.open_run(run_key="bounded", cap_usd_micro=None)
    ledger.start_attempt(run_id=run.run_id, attempt_id="a1")
    ledger.wait(ledger.head())
    # Offers that never line up with the projector's position (far ahead of the log) fill the
    # handover to its bound; nothing past it is kept.
    far = 10**12
    ledger.projector.offer([(far + n, object()) for n in range(HANDED_EVENTS_MAX)])
    ledger.projector.offer([(far + HANDED_EVENTS_MAX, object())])
    assert len(ledger.projector._handed) == HANDED_EVENTS_MAX

    receipt = ledger.append_steps(run_id=run.run_id, attempt=1, **_batch(1))
    assert len(ledger.projector._handed) == HANDED_EVENTS_MAX  # The batch's offer was dropped.
    ledger.wait(receipt.position, 30)
    assert ledger.run_state(run.run_id).last_step == 10  # Read from the log instead.


def test_a_ledger_that_does_not_project_keeps_no_offers(database: str) -> None:
    reader = Ledger.open(database, project=False)
    try:
        run = reader.open_run(run_key="reader", cap_usd_micro=None)
        reader.start_attempt(run_id=run.run_id, attempt_id="a1")
        reader.append_steps(run_id=run.run_id, attempt=1, **_batch(1))
        assert len(reader.projector._handed) == 0
    finally:
        reader.close()


def test_a_pass_that_applied_its_handover_does_not_read_the_log_for_more(ledger: Ledger) -> None:
    run = ledger.open_run(run_key="no-empty-reads", cap_usd_micro=10**9)
    ledger.wait(ledger.head())
    with ledger.projector._projecting:  # No background pass meanwhile: this thread's pass is the one.
        receipt = ledger.reserve(account=run.run_id, reservation_id="r1", amount_usd_micro=500)
        reads = _log_reads(ledger)
        assert ledger.projector._pass() == 1  # What the background thread runs when woken.
    # Without the rule, each pass read the log once more after its handover, and found nothing.
    assert reads["reads"] == 0
    assert ledger.projector.position >= receipt.position
    assert ledger.account(run.run_id).pending_usd_micro == 500


def test_a_wake_for_an_offer_a_pass_already_took_reads_nothing(ledger: Ledger) -> None:
    run = ledger.open_run(run_key="late-wake", cap_usd_micro=10**9)
    ledger.wait(ledger.head())
    with ledger.projector._projecting:
        ledger.reserve(account=run.run_id, reservation_id="r1", amount_usd_micro=100)
        ledger.reserve(account=run.run_id, reservation_id="r2", amount_usd_micro=100)
        assert ledger.projector._pass() == 2  # Both offers; the second offer's wake is still set.
        reads = _log_reads(ledger)
        assert ledger.projector._pass() == 0  # That wake's pass.
    assert reads["reads"] == 0
    assert ledger.account(run.run_id).pending_usd_micro == 200


def test_an_offer_behind_a_gap_makes_the_pass_read_the_log(ledger: Ledger, other: Ledger) -> None:
    ours = ledger.open_run(run_key="gap-ours", cap_usd_micro=10**9)
    theirs = other.open_run(run_key="gap-theirs", cap_usd_micro=10**9)
    ledger.wait(ledger.head())
    with ledger.projector._projecting:
        foreign = other.reserve(account=theirs.run_id, reservation_id="r1", amount_usd_micro=200)
        mine = ledger.reserve(account=ours.run_id, reservation_id="r1", amount_usd_micro=100)
        assert mine.position > foreign.position
        ledger.projector._look = False  # Woken by the offer alone.
        assert ledger.projector._pass() == 2  # The other's event from the log, then ours.


def test_events_read_ahead_past_a_handover_are_applied_in_the_same_pass(ledger: Ledger, other: Ledger) -> None:
    ours = ledger.open_run(run_key="ahead-ours", cap_usd_micro=10**9)
    theirs = other.open_run(run_key="ahead-theirs", cap_usd_micro=10**9)
    other.start_attempt(run_id=theirs.run_id, attempt_id="a1")
    ledger.wait(ledger.head())
    with ledger.projector._projecting:
        # Two batches that fill a chunk: what the read returns past them is kept for the next.
        assert 2 * BATCH_STEPS_MAX >= CHUNK_ROWS
        for first in (1, BATCH_STEPS_MAX + 1):
            other.append_steps(run_id=theirs.run_id, attempt=1, **_batch(first, BATCH_STEPS_MAX))
        ledger.reserve(account=ours.run_id, reservation_id="r1", amount_usd_micro=100)  # Handed over.
        foreign = other.reserve(account=theirs.run_id, reservation_id="r1", amount_usd_micro=200)
        ledger.projector._look = True  # A waiter's wake: this pass reads the log.
        ledger.projector._pass()
        # The other's Reserve came in the same read as our handed event: it is applied now,
        # not left for a later pass.
        assert ledger.projector.position >= foreign.position


def test_another_writers_event_after_our_handover_is_still_projected(ledger: Ledger, other: Ledger) -> None:
    ours = ledger.open_run(run_key="ours-last", cap_usd_micro=10**9)
    theirs = other.open_run(run_key="theirs-last", cap_usd_micro=10**9)
    ledger.wait(ledger.head())
    with ledger.projector._projecting:
        mine = ledger.reserve(account=ours.run_id, reservation_id="r1", amount_usd_micro=100)
        foreign = other.reserve(account=theirs.run_id, reservation_id="r1", amount_usd_micro=200)
        assert foreign.position > mine.position
        assert ledger.projector._pass() == 1  # The handover only.
        assert ledger.projector.position == mine.position
    # A waiter for the other writer's position is answered: its wake reads the log.
    ledger.wait(foreign.position, 10)
    assert ledger.account(theirs.run_id).pending_usd_micro == 200
    assert ledger.account(ours.run_id).pending_usd_micro == 100


def test_catch_up_reads_the_log_to_its_head_after_the_handover(ledger: Ledger, other: Ledger) -> None:
    ours = ledger.open_run(run_key="ours-head", cap_usd_micro=10**9)
    theirs = other.open_run(run_key="theirs-head", cap_usd_micro=10**9)
    ledger.wait(ledger.head())
    with ledger.projector._projecting:
        ledger.reserve(account=ours.run_id, reservation_id="r1", amount_usd_micro=100)
        foreign = other.reserve(account=theirs.run_id, reservation_id="r1", amount_usd_micro=200)
        assert ledger.projector.catch_up() == 2  # The handed event, then the other's from the log.
        assert ledger.projector.position >= foreign.position
