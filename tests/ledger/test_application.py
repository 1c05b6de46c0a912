"""The Ledger application as scenarios: what each command answers, and what a retry answers."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from ledger import CapExceeded, Conflict, Invalid, Ledger
from tests.ledger.conftest import DIGEST_A


def test_open_run_is_idempotent_by_key(ledger: Ledger) -> None:
    first = ledger.open_run(run_key="spec-fingerprint", name="sft", spec={"lr": 0.1}, cap_usd_micro=100)
    assert (first.created, first.duplicate) == (True, False)
    again = ledger.open_run(run_key="spec-fingerprint", name="sft", spec={"lr": 0.1}, cap_usd_micro=100)
    assert (again.created, again.duplicate, again.run_id, again.position) == (False, True, first.run_id, first.position)
    # Resume seeds, backend and cap are not part of the key: a resumed job finds its run again,
    # and a cap it gives is a recorded cap change; an absent one leaves the cap.
    resumed = ledger.open_run(run_key="spec-fingerprint", cap_usd_micro=5)
    assert (resumed.run_id, resumed.duplicate) == (first.run_id, True)
    assert resumed.position > first.position
    ledger.open_run(run_key="spec-fingerprint")
    state = ledger.run_state(first.run_id, min_position=resumed.position)
    assert state.run.run_key == "spec-fingerprint"
    assert state.spend.cap_usd_micro == 5


def test_every_write_answers_its_position_and_a_retry_answers_the_same(ledger: Ledger) -> None:
    """Identical retries are no-ops answering the first answer, also for writes that touch
    several aggregates (a run and its account, an account and its parents)."""
    ledger.open_account(account="team", cap_usd_micro=None)
    ledger.open_account(account="project", parent="team", cap_usd_micro=1_000)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("open_run", {"run_key": "k", "cap_usd_micro": 500, "parent_account": "project"}),
        ("open_account", {"account": "other", "parent": "project", "cap_usd_micro": 50}),
        ("reserve", {"account": "other", "reservation_id": "r1", "amount_usd_micro": 40}),
        ("commit", {"account": "other", "reservation_id": "r1", "actual_usd_micro": 45}),
        ("reserve", {"account": "other", "reservation_id": "r2", "amount_usd_micro": 1}),
        ("release", {"account": "other", "reservation_id": "r2"}),
        ("charge", {"account": "other", "charge_id": "c1", "amount_usd_micro": 20}),
        ("set_cap", {"account": "other", "cap_usd_micro": 100}),
        ("register", {"family": "f", "artifact_uri": "s3://m/1", "digest": DIGEST_A}),
        (
            "promote",
            {"family": "f", "version": 1, "expected_current": 0, "verdict": {"passed": True, "reason": "checked"}},
        ),
    ]
    for name, arguments in calls:
        first = getattr(ledger, name)(**arguments)
        assert (first.duplicate, first.position) == (False, ledger.head()), name
        head = ledger.head()
        again = getattr(ledger, name)(**arguments)
        assert again.duplicate, name
        assert again.position == first.position, name
        assert again.overrun_usd_micro == first.overrun_usd_micro, name
        assert ledger.head() == head, name


def test_run_commands_answer_positions_and_retries(ledger: Ledger) -> None:
    run_id = ledger.open_run(run_key="k").run_id
    calls: list[tuple[str, dict[str, Any]]] = [
        ("start_attempt", {"run_id": run_id, "attempt_id": "a1", "label": "host"}),
        ("append_steps", {"run_id": run_id, "attempt": 1, "steps": [1, 2], "metrics": {"loss": [1.0, 0.5]}}),
        ("save_checkpoint", {"run_id": run_id, "attempt": 1, "step": 2, "backend": "hf", "uri": "file:///c/2"}),
        ("finish_run", {"run_id": run_id, "attempt": 1, "status": "stopped", "summary": {"loss": 0.5}}),
    ]
    for name, arguments in calls:
        first = getattr(ledger, name)(**arguments)
        assert (first.duplicate, first.position) == (False, ledger.head()), name
        again = getattr(ledger, name)(**arguments)
        assert (again.duplicate, again.position) == (True, first.position), name
    assert ledger.run_state(run_id, min_position=ledger.head()).run.status == "stopped"


def test_the_finish_error_is_cut_to_2000_characters(ledger: Ledger) -> None:
    run_id = ledger.open_run(run_key="k").run_id
    ledger.start_attempt(run_id=run_id)
    receipt = ledger.finish_run(run_id=run_id, attempt=1, status="failed", error="traceback " * 1000)
    state = ledger.run_state(run_id, min_position=receipt.position)
    assert state.run.status == "failed"
    assert state.run.error == ("traceback " * 1000)[:2000]


def test_summary_notes_after_finish_keep_the_status(ledger: Ledger) -> None:
    run_id = ledger.open_run(run_key="k").run_id
    ledger.start_attempt(run_id=run_id)
    ledger.finish_run(run_id=run_id, attempt=1, status="done", summary={"loss": 0.5, "eval": 0.7})
    receipt = ledger.note_summary(run_id=run_id, summary={"loss": 0.45, "bill_usd_micro": 12})
    state = ledger.run_state(run_id, min_position=receipt.position)
    assert state.run.status == "done"
    assert state.run.summary == {"loss": 0.45, "eval": 0.7, "bill_usd_micro": 12}


def test_open_account_with_another_parent_or_cap_is_a_conflict(ledger: Ledger) -> None:
    ledger.open_account(account="team")
    ledger.open_account(account="project", parent="team", cap_usd_micro=10)
    head = ledger.head()
    with pytest.raises(Conflict):
        ledger.open_account(account="project", parent="", cap_usd_micro=10)
    with pytest.raises(Conflict):
        ledger.open_account(account="project", parent="team", cap_usd_micro=11)
    assert ledger.head() == head


def test_a_refused_reservation_is_recorded_and_answers_the_remaining_amount(ledger: Ledger) -> None:
    ledger.open_account(account="project", cap_usd_micro=100)
    run_id = ledger.open_run(run_key="k", cap_usd_micro=1_000, parent_account="project").run_id
    ledger.reserve(account=run_id, reservation_id="r1", amount_usd_micro=70)
    head = ledger.head()
    with pytest.raises(CapExceeded) as caught:
        ledger.reserve(account=run_id, reservation_id="r2", amount_usd_micro=31, attempt=1)
    assert (caught.value.account, caught.value.remaining_usd_micro) == ("project", 30)
    assert ledger.head() == head + 1
    [refusal] = ledger.read_events(from_position=head + 1)
    assert refusal["type"] == "Account.SpendRefused"
    assert refusal["data"]["refused_by"] == "project"
    trail = ledger.reservations(run_id, min_position=ledger.head())
    assert [(r.reservation_id, r.state) for r in trail.reservations] == [("r1", "pending"), ("r2", "refused")]


def test_a_restart_keeps_everything(sqlite_database: str) -> None:
    app = Ledger.open(sqlite_database)
    run_id = app.open_run(run_key="k", cap_usd_micro=100).run_id
    app.start_attempt(run_id=run_id)
    app.append_steps(run_id=run_id, attempt=1, steps=[1, 2, 3])
    app.reserve(account=run_id, reservation_id="r1", amount_usd_micro=60)
    head = app.head()
    app.close()
    app = Ledger.open(sqlite_database)
    try:
        assert app.head() == head
        assert app.account_now(run_id).pending_usd_micro == 60
        assert app.append_steps(run_id=run_id, attempt=1, steps=[1, 2, 3]).duplicate
        assert app.reserve(account=run_id, reservation_id="r1", amount_usd_micro=60).duplicate
        assert app.run_state(run_id, min_position=head).last_step == 3
    finally:
        app.close()


def test_a_ledger_written_before_the_keys_index_is_indexed_when_opened(sqlite_database: str) -> None:
    """Opening a ledger whose keys index is empty (written before it existed) indexes its log
    once: an id used before then is still a duplicate, at any distance."""
    import sqlite3

    first = Ledger.open(sqlite_database)
    try:
        first.open_account(account="team")
        charged = first.charge(account="team", charge_id="c0", amount_usd_micro=7)
        run_id = first.open_run(run_key="k").run_id
        first.start_attempt(run_id=run_id)
        appended = first.append_steps(run_id=run_id, attempt=1, steps=[1, 2])
    finally:
        first.close()
    with sqlite3.connect(sqlite_database) as side:
        assert side.execute("DELETE FROM stored_keys").rowcount == 2
    import ledger.domain.accounts
    import ledger.domain.runs

    windows = ledger.domain.accounts.SETTLED_WINDOW, ledger.domain.runs.BATCH_WINDOW
    ledger.domain.accounts.SETTLED_WINDOW, ledger.domain.runs.BATCH_WINDOW = 0, 0  # Every retry must use the index.
    reopened = Ledger.open(sqlite_database)
    try:
        reopened.charge(account="team", charge_id="c1", amount_usd_micro=1)  # Evicts c0 from the window.
        again = reopened.charge(account="team", charge_id="c0", amount_usd_micro=7)
        assert (again.duplicate, again.position) == (True, charged.position)
        reopened.append_steps(run_id=run_id, attempt=1, steps=[3])
        resent = reopened.append_steps(run_id=run_id, attempt=1, steps=[1, 2])
        assert (resent.duplicate, resent.position) == (True, appended.position)
    finally:
        reopened.close()
        ledger.domain.accounts.SETTLED_WINDOW, ledger.domain.runs.BATCH_WINDOW = windows


def test_a_key_deleted_from_an_event_of_several_keys_is_rebuilt_when_opened(sqlite_database: str) -> None:
    """One event of a bill records several lines, each with its key: losing one of its keys (the
    event's other key still indexed) is found at open too, and the line's retry is no new line."""
    import sqlite3
    from datetime import UTC, datetime, timedelta

    start = datetime(2026, 1, 1, tzinfo=UTC)
    lines = [
        {"line_id": name, "interval_start": start, "interval_end": start + timedelta(hours=1)}
        | {"amount_usd_micro": amount, "amount_text": text, "run_id": "x"}
        for name, amount, text in (("a", 150, "0.00015"), ("b", 40, "0.00004"))
    ]
    first = Ledger.open(sqlite_database)
    try:
        billed = first.record_billed_usage(provider="tinker", lines=lines)
        assert (billed.recorded, billed.duplicate) == (2, False)
    finally:
        first.close()
    with sqlite3.connect(sqlite_database) as side:
        assert side.execute("DELETE FROM stored_keys WHERE key LIKE 'line:b|%'").rowcount == 1
        assert side.execute("SELECT count(*) FROM stored_keys").fetchone() == (1,)
    reopened = Ledger.open(sqlite_database)
    try:
        again = reopened.record_billed_usage(provider="tinker", lines=lines)
        assert (again.recorded, again.unchanged, again.duplicate, again.position) == (0, 2, True, billed.position)
    finally:
        reopened.close()


def test_command_arguments_are_refused_when_built_whoever_builds_them(ledger: Ledger) -> None:
    from ledger.application.registry_commands import Register
    from ledger.application.spend_commands import Reserve

    head = ledger.head()
    for build in (
        lambda: Reserve(account="a", reservation_id="r 1", amount_usd_micro=1),
        lambda: ledger.reserve(account="a", reservation_id="r 1", amount_usd_micro=1),
    ):
        with pytest.raises(Invalid) as refused:
            build()
        assert (refused.value.reason, refused.value.metadata) == (
            "INVALID_FIELD",
            {"field": "reservation_id", "character": "U+0020"},
        )
    with pytest.raises(Invalid) as refused:
        Reserve(account="a", reservation_id="r1", amount_usd_micro=1, ttl=timedelta(days=8))
    assert refused.value.reason == "INVALID_TTL"
    # What the arguments normalise to is kept: a zero ttl is the default, a bare hex digest is prefixed.
    assert Reserve(account="a", reservation_id="r1", amount_usd_micro=1, ttl=timedelta(0)).ttl == timedelta(minutes=15)
    assert Register(family="f", artifact_uri="s3://m", digest="ab" * 32).digest == "sha256:" + "ab" * 32
    assert ledger.head() == head
