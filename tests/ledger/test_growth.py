"""What grows with a run's history is capped or paged, and reads cost what their page costs: the
merged summary and documents have byte caps, RunState lists a bounded number of expired
checkpoints, series pages are bounded by bytes, and neither RunState nor a series page does work
in proportion to the checkpoints or superseded steps behind it. On each backend, except the work
counts, which count SQLite's virtual machine steps."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from ledger import Invalid, Ledger
from ledger.domain.limits import (
    BATCH_BYTES_MAX,
    DOCUMENT_BYTES_MAX,
    EXPIRED_CHECKPOINTS_LISTED,
    PAGE_BYTES_MAX,
    SUMMARY_BYTES_MAX,
)
from ledger.domain.reasons import Reason
from tests.ledger.conftest import DIGEST_A, FakeClock


def opened(ledger: Ledger) -> str:
    run_id = ledger.open_run(run_key="growing").run_id
    ledger.start_attempt(run_id=run_id)
    return run_id


def refused(ledger: Ledger, reason: Reason, command: str, **arguments: Any) -> None:
    """`command` is refused for `reason` and nothing is recorded."""
    head = ledger.head()
    with pytest.raises(Invalid) as caught:
        getattr(ledger, command)(**arguments)
    assert caught.value.reason == reason, caught.value.message
    assert ledger.head() == head


def test_the_merged_summary_is_capped_on_note_and_on_finish(ledger: Ledger) -> None:
    run_id = opened(ledger)
    note = 0
    while True:
        summary = {f"n{note}_{entry}": "x" * 4_000 for entry in range(10)}
        try:
            ledger.note_summary(run_id=run_id, summary=summary)
        except Invalid as error:
            assert error.reason == Reason.SUMMARY_TOO_LARGE
            break
        note += 1
        assert note * 40_000 <= SUMMARY_BYTES_MAX
    refused(
        ledger,
        Reason.SUMMARY_TOO_LARGE,
        "finish_run",
        run_id=run_id,
        attempt=1,
        status="done",
        summary={"last": "z" * 4_000, **{f"f{entry}": "z" * 4_000 for entry in range(10)}},
    )
    # Notes that replace values keep the size, and are accepted.
    ledger.note_summary(run_id=run_id, summary={"n0_0": "short"})
    ledger.finish_run(run_id=run_id, attempt=1, status="done", summary={"n0_1": "short"})
    summary = ledger.run_state(run_id, min_position=ledger.head()).run.summary
    assert summary["n0_0"] == summary["n0_1"] == "short"


def test_each_document_is_capped(ledger: Ledger) -> None:
    run_id = opened(ledger)
    big = {f"k{index}": "x" * 4_000 for index in range(DOCUMENT_BYTES_MAX // 4_000 + 1)}
    refused(ledger, Reason.DOCUMENT_TOO_LARGE, "open_run", run_key="other", spec=big)
    refused(ledger, Reason.DOCUMENT_TOO_LARGE, "note_summary", run_id=run_id, summary=big)
    refused(
        ledger,
        Reason.DOCUMENT_TOO_LARGE,
        "register",
        family="f",
        artifact_uri="s3://m/1",
        digest=DIGEST_A,
        metadata=big,
    )
    ledger.register(family="f", artifact_uri="s3://m/1", digest=DIGEST_A)
    refused(
        ledger,
        Reason.DOCUMENT_TOO_LARGE,
        "promote",
        family="f",
        version=1,
        expected_current=0,
        verdict={
            "passed": True,
            "reason": "checked",
            "stats": {"rows": ["x" * 4_000] * 250, "more": ["y" * 4_000] * 250},
        },
    )


def test_run_state_lists_the_most_recently_expired_checkpoints_and_counts_them(
    ledger: Ledger, clock: FakeClock
) -> None:
    run_id = opened(ledger)
    for step in range(40):
        ledger.save_checkpoint(
            run_id=run_id,
            attempt=1,
            step=step,
            backend="tinker",
            uri=f"tinker://c/{step}",
            expires_at=clock.now + timedelta(hours=1, seconds=step),
        )
    ledger.save_checkpoint(
        run_id=run_id,
        attempt=1,
        step=40,
        backend="tinker",
        uri="tinker://c/40",
        expires_at=clock.now + timedelta(days=30),
    )
    clock.advance(hours=2)
    state = ledger.run_state(run_id, min_position=ledger.head())
    assert state.checkpoint is not None and state.checkpoint.step == 40 and state.resume.from_step == 40
    assert [c.step for c in state.expired_checkpoints] == list(range(40 - EXPIRED_CHECKPOINTS_LISTED, 40))
    assert state.expired_checkpoint_count == 40
    # Superseded checkpoints are neither resumable nor listed as expired.
    ledger.start_attempt(run_id=run_id, resume_from_step=40)
    ledger.save_checkpoint(run_id=run_id, attempt=2, step=41, backend="tinker", uri="tinker://c/41")
    state = ledger.run_state(run_id, min_position=ledger.head())
    assert state.checkpoint is not None and state.checkpoint.step == 41 and state.expired_checkpoint_count == 40


def test_the_best_checkpoint_is_the_most_progressed_usable_one_whatever_expired_after_it(
    ledger: Ledger, clock: FakeClock
) -> None:
    run_id = opened(ledger)
    rng = random.Random(7)
    ttls = {}
    for step in range(60):
        ttl = rng.choice([None, 10, 3_000, 7_000])
        ttls[step] = ttl
        ledger.save_checkpoint(
            run_id=run_id,
            attempt=1,
            step=step,
            backend="tinker",
            uri=f"tinker://c/{step}",
            expires_at=None if ttl is None else clock.now + timedelta(seconds=ttl),
        )
    for elapsed in (0, 100, 5_000, 10_000):
        now = clock.now + timedelta(seconds=elapsed)
        usable = [s for s, ttl in ttls.items() if ttl is None or ttl > elapsed]
        expired = [s for s, ttl in ttls.items() if ttl is not None and ttl <= elapsed]
        reader = ledger.views
        ledger.wait(ledger.head())
        state = reader.run_state(run_id, now)
        assert state is not None
        assert (state.checkpoint.step if state.checkpoint else None) == (max(usable) if usable else None)
        assert state.expired_checkpoint_count == len(expired)
        recent = sorted(expired, key=lambda s: (ttls[s], s))[-EXPIRED_CHECKPOINTS_LISTED:]
        assert sorted(c.step for c in state.expired_checkpoints) == sorted(recent)


def reference_series(
    batches: list[tuple[int, list[int]]], floors: list[tuple[int, int]], from_step: int, include_superseded: bool
) -> list[tuple[int, int, bool]]:
    """(step, attempt, superseded) expected: a step of attempt a is superseded when a later
    attempt started from a floor below it."""
    out = []
    for attempt, numbers in batches:
        for step in numbers:
            superseded = any(later > attempt and step > floor for later, floor in floors)
            if step >= from_step and (include_superseded or not superseded):
                out.append((step, attempt, superseded))
    return sorted(out)


def test_series_pages_follow_the_current_line_across_resumes(ledger: Ledger) -> None:
    run_id = opened(ledger)
    batches: list[tuple[int, list[int]]] = []
    floors: list[tuple[int, int]] = []

    def record(attempt: int, first: int, last: int, size: int) -> None:
        for start in range(first, last + 1, size):
            numbers = list(range(start, min(start + size, last + 1)))
            ledger.append_steps(run_id=run_id, attempt=attempt, steps=numbers, metrics={"loss": [1.0] * len(numbers)})
            batches.append((attempt, numbers))

    def resume(attempt: int, floor: int) -> None:
        if floor != 90:  # Saved by attempt 1, still live after attempts 2 and 3 resumed above it.
            ledger.save_checkpoint(run_id=run_id, attempt=attempt - 1, step=floor, backend="hf", uri=f"file:///{floor}")
        ledger.start_attempt(run_id=run_id, resume_from_step=floor)
        floors.append((attempt, floor))

    record(1, 0, 299, 25)
    ledger.save_checkpoint(run_id=run_id, attempt=1, step=90, backend="hf", uri="file:///90")
    resume(2, 137)
    record(2, 138, 180, 7)
    resume(3, 160)
    record(3, 161, 400, 30)
    resume(4, 90)
    record(4, 91, 95, 2)
    ledger.wait(ledger.head())
    for include_superseded in (False, True):
        for from_step in (0, 89, 90, 91, 94, 120, 161, 500):
            for limit in (1, 7, 50, 1_000):
                expected = reference_series(batches, floors, from_step, include_superseded)
                got, start = [], from_step
                while True:
                    page = ledger.series(run_id, from_step=start, limit=limit, include_superseded=include_superseded)
                    got += list(zip(page.steps, page.attempts, page.superseded, strict=True))
                    assert len(page.steps) <= limit or include_superseded
                    if page.next_from_step is None:
                        break
                    start = page.next_from_step
                assert got == expected, (include_superseded, from_step, limit)


def test_a_series_page_is_bounded_by_bytes(ledger: Ledger) -> None:
    run_id = opened(ledger)
    for step in range(60):
        names = {f"m{step}.{column}." + "n" * 240: [0.5] for column in range(256)}
        ledger.append_steps(run_id=run_id, attempt=1, steps=[step], metrics=names)
    ledger.wait(ledger.head())
    page = ledger.series(run_id, limit=1_000)
    assert 0 < len(page.steps) < 60 and page.next_from_step == page.steps[-1] + 1
    size = sum(len(c.name) + 16 + 12 * len(c.values) for c in page.metrics)
    assert size <= PAGE_BYTES_MAX
    rest = ledger.series(run_id, from_step=page.next_from_step, limit=1_000)
    assert rest.steps[0] == page.steps[-1] + 1


def test_a_step_batch_is_bounded_by_bytes(ledger: Ledger) -> None:
    run_id = opened(ledger)
    steps = list(range(10_000))
    columns = BATCH_BYTES_MAX // (8 * len(steps))
    refused(
        ledger,
        Reason.BATCH_TOO_LARGE,
        "append_steps",
        run_id=run_id,
        attempt=1,
        steps=steps,
        metrics={f"m{index}": [0.5] * len(steps) for index in range(columns)},
    )
    ledger.append_steps(
        run_id=run_id, attempt=1, steps=steps, metrics={f"m{index}": [0.5] * len(steps) for index in range(columns - 2)}
    )


# Work that must not grow with history, counted in SQLite virtual machine steps (not time).


def vm_steps(ledger: Ledger, read: Callable[[], Any]) -> int:
    """How many tens of SQLite virtual machine instructions `read` runs on this thread's view
    connection (reading the whole of a history takes at least one per row)."""
    connection = ledger.views.connect()
    count = [0]

    def tick() -> int:
        count[0] += 1
        return 0

    read()  # Warm: the first read of a thread opens its connection.
    connection.set_progress_handler(tick, 10)
    try:
        read()
    finally:
        connection.set_progress_handler(None, 10)
    return count[0]


def test_run_state_work_does_not_grow_with_live_checkpoints(sqlite_database: str, clock: FakeClock) -> None:
    ledger = Ledger.open(sqlite_database, clock=clock)
    try:
        run_id = opened(ledger)
        work = []
        step = 0
        for total in (20, 600):
            while step < total:
                ledger.save_checkpoint(
                    run_id=run_id,
                    attempt=1,
                    step=step,
                    backend="tinker",
                    uri=f"tinker://c/{step}",
                    expires_at=clock.now + timedelta(days=1),
                )
                step += 1
            ledger.wait(ledger.head())
            work.append(vm_steps(ledger, lambda: ledger.run_state(run_id)))
        assert work[1] <= work[0] * 1.5 + 5, work
    finally:
        ledger.close()


def test_series_work_does_not_grow_with_superseded_steps(sqlite_database: str, clock: FakeClock) -> None:
    ledger = Ledger.open(sqlite_database, clock=clock)
    try:
        work = []
        for batches in (5, 150):
            run_id = ledger.open_run(run_key=f"superseded-{batches}").run_id
            ledger.start_attempt(run_id=run_id)
            ledger.save_checkpoint(run_id=run_id, attempt=1, step=0, backend="hf", uri="file:///0")
            for index in range(batches):
                numbers = list(range(1 + index * 100, 1 + (index + 1) * 100))
                ledger.append_steps(run_id=run_id, attempt=1, steps=numbers, metrics={"loss": [1.0] * 100})
            ledger.start_attempt(run_id=run_id, resume_from_step=0)
            ledger.append_steps(run_id=run_id, attempt=2, steps=[1, 2, 3], metrics={"loss": [2.0] * 3})
            ledger.wait(ledger.head())
            work.append(vm_steps(ledger, lambda run_id=run_id: ledger.series(run_id, limit=1_000)))
            assert ledger.series(run_id, limit=1_000).steps == (1, 2, 3)
        assert work[1] <= work[0] * 1.5 + 5, work
    finally:
        ledger.close()
