"""The views contract: the same commands give the same reads on every backend (the `database`
fixture runs each test on SQLite, and on PostgreSQL when TRAINLEDGER_TEST_DATABASE_URL is set)."""

from __future__ import annotations

import pytest

from ledger import Ledger
from ledger.domain.errors import CapExceeded, Contended
from ledger.domain.reasons import Reason
from ledger.views.models import GateVerdict, Resume, StateHandle
from tests.ledger.conftest import FakeClock as Clock
from tests.ledger.conftest import dump_views


def _run_with_resume(ledger: Ledger, clock: Clock, key: str = "run-1") -> tuple[str, int]:
    """Attempt 1 records steps 0..9 with a checkpoint at 5; attempt 2 resumes from 5 and
    records 6..8. Returns (run_id, position of the last write)."""
    run_id = ledger.open_run(run_key=key, name="first", spec={"lr": 0.1}, cap_usd_micro=1_000_000).run_id
    ledger.start_attempt(run_id=run_id, label="a1")
    clock.advance(seconds=1)
    ledger.append_steps(
        run_id=run_id,
        attempt=1,
        steps=list(range(10)),
        tokens=[100] * 10,
        usd_micro=[7] * 10,
        metrics={"loss": [1.0 - s / 10 for s in range(10)]},
    )
    ledger.save_checkpoint(run_id=run_id, attempt=1, step=5, backend="local", uri="file:///ckpt/5", digest="d5")
    clock.advance(seconds=1)
    ledger.start_attempt(run_id=run_id, label="a2", resume_from_step=5)
    receipt = ledger.append_steps(run_id=run_id, attempt=2, steps=[6, 7, 8], metrics={"loss": [0.5, 0.4, 0.3]})
    return run_id, receipt.position


def test_run_state_through_open_attempt_steps_checkpoint_resume_finish(ledger: Ledger, clock: Clock) -> None:
    opened = ledger.open_run(run_key="run-1", name="first", spec={"lr": 0.1}, cap_usd_micro=1_000_000)
    state = ledger.run_state(opened.run_id, min_position=opened.position)
    assert state.run.status == "running" and state.run.spec == {"lr": 0.1}
    assert (state.attempts, state.current_attempt, state.last_step) == ((), 0, None)
    assert state.checkpoint is None and state.resume.available is False
    assert state.spend.cap_usd_micro == 1_000_000 and state.spend.remaining_usd_micro == 1_000_000

    run_id = opened.run_id
    ledger.start_attempt(run_id=run_id, label="a1")
    ledger.append_steps(run_id=run_id, attempt=1, steps=list(range(10)))
    saved = ledger.save_checkpoint(run_id=run_id, attempt=1, step=5, backend="local", uri="file:///ckpt/5", digest="d5")
    state = ledger.run_state(run_id, min_position=saved.position)
    assert (state.current_attempt, state.last_step) == (1, 9)
    assert state.checkpoint is not None
    assert state.checkpoint.step == 5 and state.checkpoint.handle.uri == "file:///ckpt/5"
    handle = StateHandle(backend="local", uri="file:///ckpt/5", fidelity="weights+optimizer")
    assert state.resume == Resume(
        available=True, from_step=5, handle=handle, sampler_uri="", spend_committed_usd_micro=0
    )

    resumed = ledger.start_attempt(run_id=run_id, label="a2", resume_from_step=5)
    state = ledger.run_state(run_id, min_position=resumed.position)
    assert (resumed.attempt, state.current_attempt, state.last_step) == (2, 2, 5)
    assert [(a.number, a.label, a.resumed_from_step, a.ended) for a in state.attempts] == [
        (1, "a1", None, True),
        (2, "a2", 5, False),
    ]
    assert state.checkpoint is not None and state.checkpoint.step == 5

    finished = ledger.finish_run(run_id=run_id, attempt=2, status="done", summary={"loss": 0.25})
    state = ledger.run_state(run_id, min_position=finished.position)
    assert state.run.status == "done" and state.run.summary == {"loss": 0.25}
    assert state.run.finished_at is not None and all(a.ended for a in state.attempts)
    assert state.position >= finished.position


def test_series_marks_the_steps_a_resume_superseded(ledger: Ledger, clock: Clock) -> None:
    run_id, position = _run_with_resume(ledger, clock)
    page = ledger.series(run_id, min_position=position)
    assert page.steps == tuple(range(9))
    assert page.attempts == (1,) * 6 + (2,) * 3
    assert [column.name for column in page.metrics] == ["loss"] and page.metrics[0].index == ()
    assert page.metrics[0].values == pytest.approx([1.0 - s / 10 for s in range(6)] + [0.5, 0.4, 0.3])
    assert page.tokens == (100,) * 6 + (0,) * 3 and page.usd_micro == (7,) * 6 + (0,) * 3
    assert not any(page.superseded) and page.next_from_step is None

    everything = ledger.series(run_id, include_superseded=True)
    assert list(zip(everything.steps, everything.attempts, everything.superseded, strict=True)) == [
        *((step, 1, False) for step in range(6)),
        (6, 1, True),
        (6, 2, False),
        (7, 1, True),
        (7, 2, False),
        (8, 1, True),
        (8, 2, False),
        (9, 1, True),
    ]

    first = ledger.series(run_id, limit=4)
    assert first.steps == (0, 1, 2, 3) and first.next_from_step == 4
    rest = ledger.series(run_id, from_step=first.next_from_step, limit=100, metrics=["loss"])
    assert rest.steps == (4, 5, 6, 7, 8) and rest.next_from_step is None


def test_spend_totals_and_audit_trail(ledger: Ledger) -> None:
    ledger.open_account(account="team", cap_usd_micro=10_000)
    run_id = ledger.open_run(run_key="spender", parent_account="team").run_id
    ledger.reserve(account=run_id, reservation_id="r1", amount_usd_micro=4_000)
    ledger.reserve(account=run_id, reservation_id="r2", amount_usd_micro=5_000)
    with pytest.raises(CapExceeded) as refused:
        ledger.reserve(account=run_id, reservation_id="r3", amount_usd_micro=2_000)
    assert (refused.value.account, refused.value.remaining_usd_micro) == ("team", 1_000)
    assert ledger.commit(account=run_id, reservation_id="r1", actual_usd_micro=4_500).overrun_usd_micro == 500
    ledger.release(account=run_id, reservation_id="r2", reason="call not made")
    last = ledger.charge(account=run_id, charge_id="c1", amount_usd_micro=300, reason="eval")

    run_account = ledger.account(run_id, min_position=last.position)
    assert (
        run_account.parent,
        run_account.cap_usd_micro,
        run_account.committed_usd_micro,
        run_account.pending_usd_micro,
        run_account.overrun_usd_micro,
        run_account.remaining_usd_micro,
    ) == ("team", None, 4_800, 0, 500, None)
    team = ledger.account("team")
    assert (team.cap_usd_micro, team.committed_usd_micro, team.pending_usd_micro) == (10_000, 4_800, 0)
    assert team.remaining_usd_micro == 10_000 - 4_800

    trail = ledger.reservations(run_id).reservations
    assert [
        (r.reservation_id, r.kind, r.state, r.amount_usd_micro, r.actual_usd_micro, r.overrun_usd_micro) for r in trail
    ] == [
        ("r1", "reservation", "committed", 4_000, 4_500, 500),
        ("r2", "reservation", "released", 5_000, 0, 0),
        ("r3", "reservation", "refused", 2_000, 0, 0),
        ("c1", "charge", "charged", 300, 300, 0),
    ]
    assert trail[1].reason == "call not made" and "team" in trail[2].reason
    positions = [r.position for r in trail]
    assert positions == sorted(positions) and len(set(positions)) == 4
    rest = ledger.reservations(run_id, after_position=positions[1]).reservations
    assert [r.reservation_id for r in rest] == ["r3", "c1"]


def test_registry_current_version_and_history(ledger: Ledger) -> None:
    assert ledger.register(family="fam", artifact_uri="s3://m/1", digest="a" * 64, metadata={"n": 1}).version == 1
    assert ledger.register(family="fam", artifact_uri="s3://m/2", digest="b" * 64).version == 2
    passed = {"passed": True, "reason": "gate", "stats": {"acc": 0.9}}
    ledger.promote(family="fam", version=1, expected_current=0, verdict=passed)
    ledger.promote(family="fam", version=2, expected_current=1, verdict=passed)
    with pytest.raises(Contended) as moved:
        ledger.promote(family="fam", version=1, expected_current=1, verdict=passed)
    assert moved.value.reason == Reason.CURRENT_VERSION_MOVED
    last = ledger.rollback(family="fam", version=1, expected_current=2, reason="regression")

    family = ledger.family("fam", min_position=last.position)
    assert family.current == 1
    assert [(v.version, v.artifact_uri, v.metadata) for v in family.versions] == [
        (1, "s3://m/1", {"n": 1}),
        (2, "s3://m/2", {}),
    ]
    assert [(h.kind, h.version, h.previous, h.refusal, h.expected_current) for h in family.history] == [
        ("promote", 1, 0, "", 0),
        ("promote", 2, 1, "", 0),
        ("refused", 1, 2, "CURRENT_VERSION_MOVED", 1),
        ("rollback", 1, 2, "", 0),
    ]
    assert family.history[3].reason == "regression"
    assert family.history[0].verdict == GateVerdict(passed=True, reason="gate", stats={"acc": 0.9})


def test_rebuild_gives_identical_views(ledger: Ledger, clock: Clock) -> None:
    _run_with_resume(ledger, clock)
    test_spend_totals_and_audit_trail(ledger)
    ledger.register(family="fam", artifact_uri="s3://m/1", digest="a" * 64)
    ledger.promote(family="fam", version=1, expected_current=0, verdict={"passed": True, "reason": "checked"})
    ledger.wait(ledger.head())
    ledger.projector.stop()
    before = dump_views(ledger)
    assert before["view_series"] and before["view_reservations"] and before["view_promotions"]

    assert ledger.projector.rebuild() > 0
    assert dump_views(ledger) == before
    assert ledger.projector.rebuild(("series",)) > 0
    assert dump_views(ledger) == before
