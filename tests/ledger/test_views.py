"""The views, on each backend: RunState, series, the spend audit trail, the registry; rebuilds
from position 0; and reads that wait for a position (read-your-writes)."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from ledger import CapExceeded, Ledger, Unavailable
from ledger.domain.base import ledger_id
from ledger.domain.entries import AccountTotals
from ledger.domain.errors import Refused
from ledger.views.models import Account, BillTotals, GateVerdict, MetricColumn, Resume, SpendTotals, StateHandle
from tests.ledger.conftest import DIGEST_A, DIGEST_B, DIGEST_C, FakeClock, dump_views, summary_of


def basis(tokens: int) -> dict[str, object]:
    """A basis of `tokens` train tokens at a micro-dollar each: it works out to `tokens` micro-dollars."""
    return {
        "price_sheet": "tinker-2025",
        "price_source": "https://example.com/pricing",
        "tokens": [{"token_class": "train", "tokens": tokens, "usd_micro_per_million_tokens": 1_000_000}],
    }


def steps(ledger: Ledger, run_id: str, attempt: int, first: int, last: int, **extra: Any) -> int:
    numbers = list(range(first, last + 1))
    return ledger.append_steps(
        run_id=run_id,
        attempt=attempt,
        steps=numbers,
        tokens=[100] * len(numbers),
        metrics={"loss": [float(n) + attempt / 10 for n in numbers]},
        **extra,
    ).position


def checkpoint(
    ledger: Ledger, run_id: str, attempt: int, step: int, clock: FakeClock, ttl: timedelta | None = None
) -> int:
    return ledger.save_checkpoint(
        run_id=run_id,
        attempt=attempt,
        step=step,
        backend="tinker",
        uri=f"tinker://ckpt/{attempt}/{step}",
        sampler_uri=f"tinker://sampler/{step}",
        expires_at=None if ttl is None else clock.now + ttl,
        digest=f"d{step}",
    ).position


def scenario(ledger: Ledger, clock: FakeClock) -> dict[str, Any]:
    """Something in every view table: three runs (one resumed, with its plan, objective, a scored
    checkpoint, a deleted one and a dataset; one retracted), accounts with a parent, every kind of
    reservation outcome, and a registry family with a rollback and a version made from a
    checkpoint."""
    ledger.open_account(account="team", cap_usd_micro=10_000)
    run_id = ledger.open_run(
        run_key="run-a",
        name="sft",
        spec={"lr": 1e-4},
        cap_usd_micro=1_000,
        parent_account="team",
        max_steps=20,
        objective=("eval_loss", "min"),
    ).run_id
    other = ledger.open_run(run_key="run-b").run_id
    ledger.start_attempt(run_id=run_id, attempt_id="a1", label="host-1")
    steps(ledger, run_id, 1, 1, 5)
    steps(ledger, run_id, 1, 6, 10)
    checkpoint(ledger, run_id, 1, 4, clock)
    checkpoint(ledger, run_id, 1, 8, clock)
    ledger.start_attempt(run_id=run_id, attempt_id="a2", label="host-2", resume_from_step=4)
    steps(ledger, run_id, 2, 5, 7)
    checkpoint(ledger, run_id, 2, 6, clock, ttl=timedelta(hours=1))
    ledger.save_checkpoint(
        run_id=run_id, attempt=2, step=7, backend="local", uri="file:///c/7", digest="d7", scores={"eval_loss": 0.4}
    )
    # The superseded checkpoint of attempt 1 at step 8 is reclaimed.
    ledger.delete_checkpoint(run_id=run_id, attempt=1, step=8, reason="superseded")
    ledger.record_dataset(
        run_id=run_id,
        role="train",
        digest="sha256:" + "d" * 64,
        format="sft",
        rows=100,
        tokens=2_000,
        source_uri="file:///data/train.jsonl",
        report={"dropped": {"too_long": 2}, "gate": "passed"},
    )
    ledger.open_run(run_key="run-d", source_checkpoint={"run_id": run_id, "step": 7, "uri": "file:///c/7"})
    retracted = ledger.open_run(run_key="run-c").run_id
    ledger.retract_run(run_id=retracted, reason="leaked eval data")
    ledger.start_attempt(run_id=other)
    steps(ledger, other, 1, 1, 3)
    ledger.finish_run(run_id=other, attempt=1, status="done", summary={"loss": 0.1})
    ledger.note_summary(run_id=other, summary={"eval": 0.9})
    ledger.set_tags(run_id=other, tags={"team": "vision", "stage": "a"})
    ledger.set_tags(run_id=other, tags={"sweep": "lr"}, remove=["stage"])
    ledger.record_report(run_id=other, kind="holdout", report={"metric": "loss", "before": 2.5, "after": 1.5})
    ledger.record_report(run_id=other, kind="notes", report={"seed": 1})
    ledger.record_report(run_id=other, kind="notes", report={"judge": "v2"})
    ledger.reserve(account=run_id, reservation_id="r-commit", amount_usd_micro=100, basis=basis(100), attempt=2)
    ledger.commit(account=run_id, reservation_id="r-commit", actual_usd_micro=150, basis=basis(150))
    ledger.reserve(account=run_id, reservation_id="r-release", amount_usd_micro=50, attempt=2)
    ledger.release(account=run_id, reservation_id="r-release", reason="call not made")
    ledger.reserve(account=run_id, reservation_id="r-expire", amount_usd_micro=70, ttl=timedelta(minutes=5))
    with pytest.raises(CapExceeded):
        ledger.reserve(account=run_id, reservation_id="r-refused", amount_usd_micro=10_000)
    ledger.charge(account=run_id, charge_id="c-bill", amount_usd_micro=30, basis=basis(30), reason="provider bill")
    ledger.reserve(account=run_id, reservation_id="r-pending", amount_usd_micro=20, ttl=timedelta(hours=2))
    clock.advance(minutes=10)
    assert ledger.expire_reservations() == 1
    ledger.register(
        family="llama",
        artifact_uri="s3://m/1",
        digest=DIGEST_A,
        source_run_id=run_id,
        source_step=4,
        metadata={"eval": 0.5},
    )
    ledger.register(
        family="llama",
        artifact_uri="s3://m/2",
        digest=DIGEST_B,
        source_checkpoint={"run_id": run_id, "step": 7, "checkpoint_digest": "d7"},
    )
    ledger.register(family="llama", artifact_uri="s3://m/3", digest=DIGEST_C)
    ledger.promote(family="llama", version=1, expected_current=0, verdict={"passed": True, "reason": "ok"})
    ledger.promote(
        family="llama", version=3, expected_current=1, verdict={"passed": True, "reason": "checked", "stats": {"a": 1}}
    )
    ledger.rollback(family="llama", version=1, expected_current=3, reason="v3 regressed")
    # A refused promotion (recorded), an alias and a retired family.
    with pytest.raises(Refused):
        ledger.promote(family="llama", version=2, expected_current=1, verdict={"passed": False, "reason": "worse"})
    ledger.move_alias(family="llama", alias="production", version=1, expected_version=0)
    ledger.register(family="old", artifact_uri="s3://old/1", digest=DIGEST_A)
    ledger.retire_family(family="old", reason="replaced by llama")
    # A provider's bill: a line of the run by its id, one of the other run by its linked session
    # (restated once), and the other run's adjustment to it.
    ledger.link_session(run_id=other, provider="tinker", session_id="sess-b", attempt=1)
    hour = clock.now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    line = {"interval_start": hour, "interval_end": hour + timedelta(hours=1), "quantities": {"train": 100.0}}
    ledger.record_billed_usage(
        provider="tinker",
        lines=[
            {**line, "line_id": "a", "amount_usd_micro": 150, "amount_text": "0.00015", "run_id": run_id},
            {**line, "line_id": "b", "amount_usd_micro": 40, "amount_text": "0.00004", "session_id": "sess-b"},
        ],
        cost_data_through=hour + timedelta(hours=1),
    )
    ledger.record_billed_usage(
        provider="tinker",
        lines=[{**line, "line_id": "b", "amount_usd_micro": 45, "amount_text": "0.000045", "session_id": "sess-b"}],
    )
    ledger.adjust_to_bill(run_id=other)
    return {"run_id": run_id, "other": other}


class TestRunState:
    def test_resume_points_at_the_most_progressed_unexpired_checkpoint(self, ledger: Ledger, clock: FakeClock) -> None:
        run_id = ledger.open_run(run_key="k", name="sft", cap_usd_micro=500).run_id
        ledger.start_attempt(run_id=run_id, attempt_id="a1", label="host")
        steps(ledger, run_id, 1, 1, 10)
        checkpoint(ledger, run_id, 1, 4, clock, ttl=timedelta(hours=1))
        checkpoint(ledger, run_id, 1, 6, clock)
        position = checkpoint(ledger, run_id, 1, 8, clock, ttl=timedelta(hours=1))
        state = ledger.run_state(run_id, min_position=position)
        assert state.checkpoint is not None and state.checkpoint.step == 8
        assert state.expired_checkpoints == ()
        clock.advance(hours=2)
        state = ledger.run_state(run_id, min_position=position)
        assert state.checkpoint is not None and state.checkpoint.step == 6
        handle = StateHandle(backend="tinker", uri="tinker://ckpt/1/6", fidelity="weights+optimizer")
        assert state.checkpoint.handle == handle
        assert state.checkpoint.sampler_uri == "tinker://sampler/6"
        assert state.checkpoint.digest == "d6"
        assert [c.step for c in state.expired_checkpoints] == [4, 8]
        assert state.expired_checkpoint_count == 2
        assert state.resume == Resume(
            available=True, from_step=6, handle=handle, sampler_uri="tinker://sampler/6", spend_committed_usd_micro=0
        )
        assert state.resume.handle is not None and state.resume.handle.uri == "tinker://ckpt/1/6"
        assert state.last_step == 10
        assert state.current_attempt == 1
        assert state.position >= position
        assert state.run.status == "running"
        assert state.run.name == "sft"
        assert state.run.opened_at.tzinfo is not None

    def test_a_run_whose_checkpoints_all_expired_has_no_resume_handle(self, ledger: Ledger, clock: FakeClock) -> None:
        run_id = ledger.open_run(run_key="k").run_id
        ledger.start_attempt(run_id=run_id)
        position = checkpoint(ledger, run_id, 1, 3, clock, ttl=timedelta(minutes=1))
        clock.advance(minutes=2)
        state = ledger.run_state(run_id, min_position=position)
        assert state.checkpoint is None
        assert state.resume.available is False
        assert state.resume.handle is None
        assert [c.step for c in state.expired_checkpoints] == [3]

    def test_attempts_resume_and_spend(self, ledger: Ledger, clock: FakeClock) -> None:
        run_id = ledger.open_run(run_key="k", cap_usd_micro=500).run_id
        ledger.start_attempt(run_id=run_id, attempt_id="a1", label="host-1")
        steps(ledger, run_id, 1, 1, 10)
        checkpoint(ledger, run_id, 1, 5, clock)
        checkpoint(ledger, run_id, 1, 8, clock)
        ledger.reserve(account=run_id, reservation_id="r1", amount_usd_micro=100)
        ledger.commit(account=run_id, reservation_id="r1", actual_usd_micro=120)
        ledger.reserve(account=run_id, reservation_id="r2", amount_usd_micro=30)
        position = ledger.start_attempt(run_id=run_id, attempt_id="a2", label="host-2", resume_from_step=5).position
        state = ledger.run_state(run_id, min_position=position)
        assert [(a.number, a.attempt_id, a.label, a.resumed_from_step, a.ended) for a in state.attempts] == [
            (1, "a1", "host-1", None, True),
            (2, "a2", "host-2", 5, False),
        ]
        assert state.current_attempt == 2
        assert state.last_step == 5
        # The checkpoint above the resume point is superseded: neither used nor listed as expired.
        assert state.checkpoint is not None and state.checkpoint.step == 5
        assert state.expired_checkpoints == ()
        assert state.spend == SpendTotals(
            cap_usd_micro=500,
            committed_usd_micro=120,
            pending_usd_micro=30,
            remaining_usd_micro=350,
            overrun_usd_micro=20,
        )
        assert state.resume.spend_committed_usd_micro == 120
        position = steps(ledger, run_id, 2, 6, 7)
        assert ledger.run_state(run_id, min_position=position).last_step == 7


class TestSeries:
    def test_one_record_per_step_after_a_resume(self, ledger: Ledger, clock: FakeClock) -> None:
        run_id = ledger.open_run(run_key="k").run_id
        ledger.start_attempt(run_id=run_id)
        steps(ledger, run_id, 1, 1, 5)
        steps(ledger, run_id, 1, 6, 10)
        checkpoint(ledger, run_id, 1, 6, clock)
        ledger.start_attempt(run_id=run_id, resume_from_step=6)
        position = steps(ledger, run_id, 2, 7, 9)
        series = ledger.series(run_id, min_position=position)
        assert series.steps == tuple(range(1, 10))
        assert series.attempts == (1,) * 6 + (2,) * 3
        assert series.superseded == (False,) * 9
        assert series.tokens == (100,) * 9
        assert series.metrics == (
            MetricColumn(name="loss", values=tuple([n + 0.1 for n in range(1, 7)] + [n + 0.2 for n in (7, 8, 9)])),
        )
        assert series.next_from_step is None
        everything = ledger.series(run_id, include_superseded=True)
        assert list(zip(everything.steps, everything.attempts, everything.superseded, strict=True)) == (
            [(n, 1, False) for n in range(1, 7)]
            + [x for n in (7, 8, 9) for x in ((n, 1, True), (n, 2, False))]
            + [(10, 1, True)]
        )

    def test_a_new_attempt_without_resume_supersedes_everything(self, ledger: Ledger) -> None:
        run_id = ledger.open_run(run_key="k").run_id
        ledger.start_attempt(run_id=run_id)
        steps(ledger, run_id, 1, 1, 4)
        ledger.start_attempt(run_id=run_id)
        position = steps(ledger, run_id, 2, 1, 2)
        series = ledger.series(run_id, min_position=position)
        assert (series.steps, series.attempts) == ((1, 2), (2, 2))

    def test_pages_and_sparse_metrics(self, ledger: Ledger) -> None:
        run_id = ledger.open_run(run_key="k").run_id
        ledger.start_attempt(run_id=run_id)
        position = ledger.append_steps(
            run_id=run_id,
            attempt=1,
            steps=[1, 2, 3, 4, 5],
            metrics={"loss": [5.0, 4.0, 3.0, 2.0, 1.0], "eval_loss": {"values": [3.5], "index": [2]}},
        ).position
        page = ledger.series(run_id, limit=2, min_position=position)
        assert page.steps == (1, 2)
        assert page.next_from_step == 3
        assert page.metric("eval_loss") is None
        page = ledger.series(run_id, from_step=page.next_from_step, limit=2)
        assert page.steps == (3, 4)
        # Columns by name; a sparse one with its index into the page, a dense one without.
        assert page.metrics == (
            MetricColumn(name="eval_loss", values=(3.5,), index=(0,)),
            MetricColumn(name="loss", values=(3.0, 2.0)),
        )
        assert page.metric("loss") == MetricColumn(name="loss", values=(3.0, 2.0))
        only = ledger.series(run_id, metrics=["eval_loss"])
        assert [column.name for column in only.metrics] == ["eval_loss"]


class TestSpendAndRegistry:
    def test_the_audit_trail_has_every_reservation_with_basis_and_outcome(
        self, ledger: Ledger, clock: FakeClock
    ) -> None:
        ids = scenario(ledger, clock)
        run_id = ids["run_id"]
        page = ledger.reservations(run_id, min_position=ledger.head())
        assert page.after_position is None  # Not a full page: none follows.
        trail = {r.reservation_id: r for r in page.reservations}
        assert list(trail) == ["r-commit", "r-release", "r-expire", "r-refused", "c-bill", "r-pending"]
        commit = trail["r-commit"]
        assert (
            commit.kind,
            commit.state,
            commit.amount_usd_micro,
            commit.actual_usd_micro,
            commit.overrun_usd_micro,
            commit.attempt,
        ) == ("reservation", "committed", 100, 150, 50, 2)
        assert (commit.basis, commit.actual_basis) == (basis(100), basis(150))
        assert (trail["r-release"].state, trail["r-release"].reason) == ("released", "call not made")
        assert trail["r-release"].actual_basis is None
        # Expired unsettled: the ledger settles it, presumed spent as reserved (never at $0).
        expired = trail["r-expire"]
        assert (expired.state, expired.actual_usd_micro) == ("settled", expired.amount_usd_micro)
        assert expired.reason == "RESERVATION_EXPIRED: presumed spent as reserved"
        assert trail["r-refused"].state == "refused"
        assert "remained" in trail["r-refused"].reason
        assert (
            trail["c-bill"].kind,
            trail["c-bill"].state,
            trail["c-bill"].actual_usd_micro,
            trail["c-bill"].reason,
        ) == ("charge", "charged", 30, "provider bill")
        assert trail["r-pending"].state == "pending"
        assert trail["r-pending"].expires_at == trail["r-pending"].reserved_at + timedelta(hours=2)
        first = ledger.reservations(run_id, limit=2)
        assert [r.reservation_id for r in first.reservations] == ["r-commit", "r-release"]
        rest = ledger.reservations(run_id, after_position=first.after_position or 0)
        assert [r.reservation_id for r in rest.reservations] == ["r-expire", "r-refused", "c-bill", "r-pending"]
        account = ledger.account(run_id)
        # The bill's line of 150 against the 250 estimated (a commit of 150, a charge of 30 and
        # the 70 of the expired hold presumed spent), all in hours the bill covers: 100 below the
        # estimate, flagged (beyond 5%). The team's row rolls up the run's.
        billed = BillTotals(
            estimated_usd_micro=250,
            billed_usd_micro=150,
            drift_usd_micro=-100,
            drift_percent=-100 * 100 / 250,
            lines=1,
            flagged=True,
            unadjusted_usd_micro=-100,
        )
        assert account == Account(
            account=run_id,
            parent="team",
            cap_usd_micro=1_000,
            committed_usd_micro=180,
            pending_usd_micro=20,
            remaining_usd_micro=730,
            overrun_usd_micro=50,
            bill=billed,
            presumed_usd_micro=70,
        )
        assert ledger.account("team") == Account(
            account="team",
            parent="",
            cap_usd_micro=10_000,
            committed_usd_micro=180,
            pending_usd_micro=20,
            remaining_usd_micro=9_730,
            overrun_usd_micro=50,
            bill=billed,
            presumed_usd_micro=70,
        )
        assert ledger.account_now(run_id) == AccountTotals(
            account=run_id,
            parent="team",
            cap_usd_micro=1_000,
            committed_usd_micro=180,
            presumed_usd_micro=70,
            pending_usd_micro=20,
            remaining_usd_micro=730,
            overrun_usd_micro=50,
        )

    def test_the_registry_view_has_versions_current_and_history(self, ledger: Ledger, clock: FakeClock) -> None:
        ids = scenario(ledger, clock)
        family = ledger.family("llama", min_position=ledger.head())
        assert family.current == 1
        assert [(v.version, v.artifact_uri, v.digest) for v in family.versions] == [
            (1, "s3://m/1", "sha256:" + DIGEST_A),
            (2, "s3://m/2", "sha256:" + DIGEST_B),
            (3, "s3://m/3", "sha256:" + DIGEST_C),
        ]
        assert (family.versions[0].source_run_id, family.versions[0].source_step, family.versions[0].metadata) == (
            ids["run_id"],
            4,
            {"eval": 0.5},
        )
        assert family.versions[0].source_checkpoint is None
        # A version made from a checkpoint names it, and its run and step with it.
        made = family.versions[1]
        assert (made.source_run_id, made.source_step) == (ids["run_id"], 7)
        assert made.source_checkpoint is not None
        assert (made.source_checkpoint.run_id, made.source_checkpoint.step) == (ids["run_id"], 7)
        # The attempt that saved it, resolved when the request named none.
        assert (made.source_checkpoint.attempt, made.source_checkpoint.checkpoint_digest) == (2, "d7")
        assert not made.source_retracted
        assert (family.versions[2].source_run_id, family.versions[2].source_step) == ("", 0)
        assert [(h.version, h.previous, h.kind, h.reason) for h in family.history] == [
            (1, 0, "promote", ""),
            (3, 1, "promote", ""),
            (1, 3, "rollback", "v3 regressed"),
            (2, 1, "refused", "the gate did not pass: worse"),
        ]
        assert family.history[0].verdict == GateVerdict(passed=True, reason="ok", stats={}, mode="asserted")
        assert family.history[1].verdict == GateVerdict(passed=True, reason="checked", stats={"a": 1}, mode="asserted")
        assert family.history[2].verdict is None
        assert (family.history[3].refusal, family.history[3].verdict.mode) == ("GATE_NOT_PASSED", "asserted")
        assert [(a.alias, a.version) for a in family.aliases] == [("production", 1)]
        assert family.versions[0].aliases == ("production",) and family.retired is None
        retired = ledger.family("old").retired
        assert retired is not None and retired.reason == "replaced by llama"
        assert [(f.family, f.current, f.version_count) for f in ledger.families()] == [("llama", 1, 3), ("old", 0, 1)]


class TestRebuild:
    def test_rebuild_from_position_zero_gives_identical_views(self, ledger: Ledger, clock: FakeClock) -> None:
        scenario(ledger, clock)
        ledger.wait(ledger.head())
        before = dump_views(ledger)
        assert all(before[table] for table in before), [t for t in before if not before[t]]
        ledger.projector.rebuild()
        assert dump_views(ledger) == before

    @pytest.mark.parametrize("view", ["runs", "series", "spend", "registry", "bill"])
    def test_one_view_rebuilds_alone(self, ledger: Ledger, clock: FakeClock, view: str) -> None:
        scenario(ledger, clock)
        ledger.wait(ledger.head())
        before = dump_views(ledger)
        ledger.projector.rebuild((view,))
        assert dump_views(ledger) == before

    def test_rebuilds_and_the_background_projector_do_not_collide(self, ledger: Ledger, clock: FakeClock) -> None:
        scenario(ledger, clock)
        ledger.wait(ledger.head())
        before = dump_views(ledger)
        ledger.projector.poll_s = 0.001  # The background thread projects as often as it can.
        errors: list[BaseException] = []

        def rebuild() -> None:
            try:
                for _ in range(8):
                    ledger.projector.rebuild()
            except BaseException as error:  # Reported below, in the test's thread.
                errors.append(error)

        threads = [threading.Thread(target=rebuild) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        ledger.wait(ledger.head())
        assert dump_views(ledger) == before

    def test_a_restart_resumes_projecting_where_it_stopped(self, sqlite_database: str, clock: FakeClock) -> None:
        app = Ledger.open(sqlite_database, clock=clock)
        scenario(app, clock)
        app.wait(app.head())
        app.close()
        writer = Ledger.open(sqlite_database, clock=clock, project=False)
        run_id = writer.open_run(run_key="written-while-nothing-projected").run_id
        writer.start_attempt(run_id=run_id)
        steps(writer, run_id, 1, 1, 4)
        assert writer.projector.position < writer.head()
        writer.close()
        app = Ledger.open(sqlite_database, clock=clock)
        try:
            app.wait(app.head())
            resumed = dump_views(app)
            app.projector.rebuild()
            assert dump_views(app) == resumed
            assert app.run_state(run_id).last_step == 4
        finally:
            app.close()


class TestReadYourWrites:
    def test_a_read_with_min_position_sees_the_write(self, ledger: Ledger) -> None:
        run_id = ledger.open_run(run_key="k").run_id
        ledger.start_attempt(run_id=run_id)
        for step in range(1, 31):
            position = ledger.append_steps(run_id=run_id, attempt=1, steps=[step]).position
            state = ledger.run_state(run_id, min_position=position)
            assert state.last_step == step
            assert state.position >= position

    def test_the_projector_signals_waiters_through_its_condition(self, ledger: Ledger) -> None:
        """Waiting blocks on the projector's condition variable and is woken by notify_all when
        a chunk commits; nothing sleeps in a loop."""
        calls = {"wait": 0, "notify_all": 0, "woken": 0}

        class Spy(threading.Condition):
            def wait(self, timeout: float | None = None) -> bool:
                calls["wait"] += 1
                woken = super().wait(timeout)
                calls["woken"] += int(woken)
                return woken

            def notify_all(self) -> None:
                calls["notify_all"] += 1
                super().notify_all()

        ledger.projector._condition = Spy()
        run_id = ledger.open_run(run_key="k").run_id
        position = ledger.start_attempt(run_id=run_id).position
        assert ledger.run_state(run_id, min_position=position).current_attempt == 1
        assert calls["notify_all"] >= 1
        # Whenever the reader had to wait, it was the projector's signal that woke it.
        assert calls["woken"] == calls["wait"]

    def test_a_position_never_reached_is_unavailable(self, ledger: Ledger) -> None:
        run_id = ledger.open_run(run_key="k").run_id
        with pytest.raises(Unavailable) as caught:
            ledger.run_state(run_id, min_position=ledger.head() + 10, timeout_s=0.05)
        assert caught.value.reason == "VIEW_NOT_CAUGHT_UP"

    def test_a_reader_never_projects_and_follows_the_projecting_process(self, sqlite_database: str) -> None:
        writer = Ledger.open(sqlite_database)
        reader = Ledger.open(sqlite_database, project=False)
        try:
            run_id = writer.open_run(run_key="k").run_id
            position = writer.start_attempt(run_id=run_id).position
            assert reader.run_state(run_id, min_position=position).current_attempt == 1
            writer.projector.stop()
            late = writer.append_steps(run_id=run_id, attempt=1, steps=[1]).position
            with pytest.raises(Unavailable) as caught:
                reader.run_state(run_id, min_position=late, timeout_s=0.2)
            assert caught.value.reason == "VIEW_NOT_CAUGHT_UP"
            assert reader.storage.tracking_positions() == writer.storage.tracking_positions()
            assert max(reader.storage.tracking_positions().values()) < late
        finally:
            reader.close()
            writer.close()


def test_a_log_with_an_id_counted_twice_by_an_older_version_still_projects(sqlite_database: str) -> None:
    """Versions before the keys index forgot ids beyond a window and recorded a retry of an old
    charge or reservation as new. Such a log stays readable: the views project it (the row
    shows the latest event for the id) and their totals equal the aggregate's."""
    from ledger.domain import spending as spend
    from ledger.domain.base import Audit
    from ledger.domain.basis import CostBasis

    app = Ledger.open(sqlite_database)
    try:
        app.open_account(account="team")
        app.charge(account="team", charge_id="c0", amount_usd_micro=1_000)
        app.reserve(account="team", reservation_id="r0", amount_usd_micro=50)
        app.release(account="team", reservation_id="r0", reason="not made")
        # What an older version wrote: the same ids recorded again as new events.
        holder = app.aggregates.account("team")
        holder.settled.clear()
        audit = Audit("old-version", "", app.clock())
        spend.charge(holder, [], audit, charge_id="c0", amount=1_000, basis=CostBasis(), reason="resent")
        spend.reserve(
            holder,
            [],
            audit,
            reservation_id="r0",
            amount=50,
            basis=CostBasis(),
            expires_at=app.clock() + timedelta(minutes=5),
            attempt=0,
        )
        app.save(holder)
        app.wait(app.head())
        assert app.projector.failure is None
        assert summary_of(app.account("team")) == app.account_now("team")
        assert app.account_now("team").committed_usd_micro == 2_000
        before = dump_views(app)
        app.projector.rebuild()
        assert dump_views(app) == before
    finally:
        app.close()


def test_each_projector_keeps_its_own_names(sqlite_database: str, tmp_path: Path) -> None:
    """Account and family names are kept per projector, not per process: a second ledger in the
    same process knows none of the first's, and projects its own through its own."""
    first = Ledger.open(sqlite_database)
    second = Ledger.open(str(tmp_path / "second.db"))
    try:
        first.open_account(account="team")
        first.register(family="llama", artifact_uri="s3://m/1", digest=DIGEST_A)
        first.wait(first.head())
        team, llama = ledger_id("account", "team"), ledger_id("family", "llama")
        cursor = first.views.connect().cursor()
        assert (first.projector.names.lookup(cursor, team), first.projector.names.lookup(cursor, llama)) == (
            "team",
            "llama",
        )
        cursor = second.views.connect().cursor()
        for known_elsewhere in (team, llama):
            with pytest.raises(LookupError):
                second.projector.names.lookup(cursor, known_elsewhere)
        second.open_account(account="team", cap_usd_micro=5)
        second.reserve(account="team", reservation_id="r1", amount_usd_micro=2)
        second.wait(second.head())
        assert (second.account("team").cap_usd_micro, second.account("team").pending_usd_micro) == (5, 2)
        assert first.account("team").cap_usd_micro is None
    finally:
        second.close()
        first.close()


def test_indexes_declared_after_a_file_was_made_are_added_when_it_is_opened(sqlite_database: str) -> None:
    import sqlite3

    from ledger.views.schema import TABLES

    Ledger.open(sqlite_database).close()
    with sqlite3.connect(sqlite_database) as side:
        dropped = [
            name
            for (name,) in side.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name LIKE 'view_%' AND sql IS NOT NULL"
            )
        ]
        for name in dropped:
            side.execute(f"DROP INDEX {name}")
    assert len(dropped) == sum(len(indexes) for _, _, indexes, _ in TABLES.values())
    Ledger.open(sqlite_database).close()
    with sqlite3.connect(sqlite_database) as side:
        again = [
            name
            for (name,) in side.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name LIKE 'view_%' AND sql IS NOT NULL"
            )
        ]
    assert sorted(again) == sorted(dropped)


def test_runs_pages_walk_every_run_once_newest_first_ties_by_id_down(ledger: Ledger, clock: FakeClock) -> None:
    """ListRuns pages continue from the (opened_at, run_id) of the previous page's last run: runs
    opened at the same moment are ordered by id, downwards, and none is skipped or repeated, with
    or without a status filter or retracted runs."""
    opened: list[tuple[float, str, str]] = []
    for n in range(11):
        if n % 4 == 0:
            clock.advance(seconds=1)  # Runs opened in the same second tie on opened_at.
        run_id = ledger.open_run(run_key=f"page-{n}", name=f"page {n}").run_id
        ledger.start_attempt(run_id=run_id)
        status = "running"
        if n % 3 == 0:
            ledger.finish_run(run_id=run_id, attempt=1, status="done")
            status = "done"
        if n == 5:
            ledger.retract_run(run_id=run_id, reason="bad data")
        opened.append((clock.now.timestamp(), run_id, status))
    ledger.wait(ledger.head())
    newest_first = sorted(opened, reverse=True)
    retracted = opened[5][1]

    def walk(limit: int, **filters: Any) -> list[str]:
        seen: list[str] = []
        after = None
        while True:
            page = ledger.list_runs(limit=limit, after=after, **filters)
            seen += [run.run_id for run in page.runs]
            assert len(page.runs) <= limit
            if page.after is None:
                return seen
            assert page.after == (page.runs[-1].opened_at.timestamp(), page.runs[-1].run_id)
            after = page.after

    for limit in (1, 2, 3, 5, 100):
        assert walk(limit) == [r for _, r, _ in newest_first if r != retracted]
        assert walk(limit, include_retracted=True) == [r for _, r, _ in newest_first]
        assert walk(limit, status="done") == [r for _, r, s in newest_first if s == "done"]
        assert walk(limit, status="running") == [r for _, r, s in newest_first if s == "running" and r != retracted]


@pytest.mark.parametrize("seed", range(6))
def test_a_chunk_rolls_up_as_its_batches_merged_one_at_a_time_in_log_order(seed: int) -> None:
    """The chart view's rollup of a chunk, computed for every group at once, holds for each
    bucket what aggregating each batch's part of it and merging those in log order gives: over
    several runs, attempts and metrics (one sparse), batches out of step order or overlapping
    within a group (a log may hold them), and equal values (the earliest step is kept)."""
    import random
    import uuid
    from datetime import UTC, datetime

    from ledger.domain.runs import Run
    from ledger.views.series.rollup import ROLLUP_SHIFTS, STEPS_METRIC, ChartRollup, aggregate, merge

    rng = random.Random(seed)
    runs = [uuid.UUID(int=rng.getrandbits(128)) for _ in range(3)]
    rollup = ChartRollup()
    expected: dict[tuple[Any, ...], tuple[Any, int]] = {}

    def fold(run: uuid.UUID, attempt: int, metric: str, steps: list[int], values: list[float] | None, at: int) -> None:
        for shift in ROLLUP_SHIFTS[-1:] if metric == STEPS_METRIC else ROLLUP_SHIFTS:
            buckets: dict[int, list[int]] = {}
            for i, step in enumerate(steps):
                buckets.setdefault(step >> shift, []).append(i)
            for bucket, where in buckets.items():
                part = aggregate([steps[i] for i in where], None if values is None else [values[i] for i in where])
                key = (str(run), metric, 1 << shift, bucket, attempt)
                held = expected.get(key)
                expected[key] = (part, at) if held is None else (merge(held[0], part), max(held[1], at))

    for position in range(1, 41):
        run, attempt = rng.choice(runs), rng.choice((1, 1, 2))
        start = rng.choice((0, 60, 500, 4_000, 40_000, rng.randrange(70_000)))
        span = rng.choice((1, 3, 100, 700, 5_000))
        steps = sorted(rng.sample(range(start, start + span), rng.randrange(1, min(span, 300) + 1)))
        dense = [rng.choice((0.5, 1.0, 2.0, rng.random())) for _ in steps]
        index = sorted(rng.sample(range(len(steps)), rng.randrange(1, len(steps) + 1)))
        sparse = [rng.choice((-1.0, 3.0)) for _ in index]
        event = Run.StepsRecorded(
            originator_id=run,
            originator_version=position,
            timestamp=datetime.now(UTC),
            principal="",
            request_id="",
            attempt=attempt,
            steps=steps,
            tokens=None,
            usd_micro=None,
            metrics={"loss": {"values": dense, "index": None}, "eval": {"values": sparse, "index": index}},
            digest="",
        )
        rollup.add(event, position)
        fold(run, attempt, STEPS_METRIC, steps, None, position)
        fold(run, attempt, "loss", steps, dense, position)
        fold(run, attempt, "eval", [steps[i] for i in index], sparse, position)

    rows = sorted(rollup.rows())
    assert rows == sorted((*key, *agg, at) for key, (agg, at) in expected.items())
    assert rollup.rows() == []


def test_a_series_page_from_inside_a_batch_keeps_each_sparse_value_at_its_step(ledger: Ledger) -> None:
    """A page that starts inside a batch holds the batch's tail: dense metrics from that step,
    and a sparse metric's values at the steps that carry them, indexed into the page."""
    run_id = ledger.open_run(run_key="tail").run_id
    ledger.start_attempt(run_id=run_id)
    ledger.append_steps(
        run_id=run_id,
        attempt=1,
        steps=list(range(10, 20)),
        tokens=list(range(100, 110)),
        metrics={"loss": [float(n) for n in range(10)], "eval": {"values": [0.1, 0.4, 0.8], "index": [1, 4, 8]}},
    )
    ledger.append_steps(run_id=run_id, attempt=1, steps=[20, 21], metrics={"eval": {"values": [0.9], "index": [1]}})
    ledger.wait(ledger.head())
    page = ledger.series(run_id, from_step=14, limit=1_000)
    assert page.steps == (14, 15, 16, 17, 18, 19, 20, 21)
    assert page.tokens == (104, 105, 106, 107, 108, 109, 0, 0)
    assert page.metrics == (
        MetricColumn(name="eval", values=(0.4, 0.8, 0.9), index=(0, 4, 7)),
        MetricColumn(name="loss", values=(4.0, 5.0, 6.0, 7.0, 8.0, 9.0), index=(0, 1, 2, 3, 4, 5)),
    )
    page = ledger.series(run_id, from_step=15, limit=3, metrics=("eval",))
    assert (page.steps, page.metrics, page.next_from_step) == (
        (15, 16, 17),
        (),
        18,
    )
    page = ledger.series(run_id, from_step=19, limit=1_000, metrics=("eval",))
    assert page.steps == (19, 20, 21) and page.metrics == (MetricColumn(name="eval", values=(0.9,), index=(2,)),)


@pytest.mark.parametrize("mode", ["min", "max"])
def test_run_state_names_the_checkpoint_retention_ranks_best(ledger: Ledger, clock: FakeClock, mode: str) -> None:
    """RunState's best checkpoint is the one ledger.domain.retention.best picks over the run's
    checkpoints (BestCheckpoint's answer): over equal scores, checkpoints without the score,
    expired, deleted and superseded ones, as the clock moves."""
    import random

    from ledger import Conflict, Invalid, NotFound, Refused

    rng = random.Random(mode)
    run_id = ledger.open_run(run_key=f"best-{mode}", objective=("loss", mode)).run_id
    ledger.start_attempt(run_id=run_id)
    attempt, step, floor = 1, 0, 0
    saved: list[int] = []

    def agree() -> None:
        ledger.wait(ledger.head())
        found = ledger.views.best_checkpoint(run_id, metric="loss", mode=mode, include_superseded=False, now=clock.now)
        assert ledger.run_state(run_id).best_checkpoint == (found.checkpoint if found else None)

    for _ in range(150):
        step += rng.randrange(1, 4)
        scores = rng.choice(({"loss": rng.choice((0.5, 1.0, 2.0))}, {"acc": 0.9}, {}, {"loss": rng.random()}))
        ttl = rng.choice((None, timedelta(seconds=rng.randrange(1, 30))))
        ledger.save_checkpoint(
            run_id=run_id,
            attempt=attempt,
            step=step,
            backend="hf",
            uri=f"file:///ck/{attempt}/{step}",
            expires_at=None if ttl is None else clock.now + ttl,
            scores=scores,
        )
        saved.append(step)
        roll = rng.random()
        if roll < 0.4:
            try:
                ledger.delete_checkpoint(run_id=run_id, attempt=attempt, step=rng.randrange(floor + 1, step + 1))
            except (Conflict, Invalid, NotFound, Refused):
                pass  # Protected, or no checkpoint there.
        elif roll < 0.5 and saved:
            back = rng.choice(saved)
            try:
                ledger.start_attempt(run_id=run_id, resume_from_step=back)
            except (Conflict, Invalid, NotFound, Refused):
                pass  # Its checkpoint was deleted or has expired.
            else:
                attempt, step, floor, saved = attempt + 1, back, back, []
        clock.advance(seconds=rng.randrange(0, 5))
        agree()
    for _ in range(4):
        clock.advance(seconds=10)
        agree()


def test_run_state_never_names_a_deleted_checkpoint_best(ledger: Ledger, clock: FakeClock) -> None:
    """Once the best checkpoint expires, the next best usable one is named, never a deleted one
    that scored better."""
    run_id = ledger.open_run(run_key="best-deleted", objective=("loss", "min")).run_id
    ledger.start_attempt(run_id=run_id)
    for step, loss, ttl in ((1, 0.1, timedelta(seconds=5)), (2, 0.2, None), (3, 0.3, None), (4, 0.9, None)):
        ledger.save_checkpoint(
            run_id=run_id,
            attempt=1,
            step=step,
            backend="hf",
            uri=f"file:///ck/{step}",
            expires_at=None if ttl is None else clock.now + ttl,
            scores={"loss": loss},
        )
    ledger.delete_checkpoint(run_id=run_id, attempt=1, step=2)
    ledger.wait(ledger.head())
    best = ledger.run_state(run_id).best_checkpoint
    assert best is not None and best.step == 1
    clock.advance(seconds=10)
    best = ledger.run_state(run_id).best_checkpoint
    assert best is not None and best.step == 3
    assert ledger.best_checkpoint(run_id).checkpoint == best
