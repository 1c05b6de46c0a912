"""A RunState read on SQLite runs a fixed handful of indexed statements: as many for a run of a
hundred steps and three checkpoints as for one of ten thousand steps and sixty checkpoints.
Counted with SQLite's own trace callback on the reading thread's connection."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from ledger import Ledger

NOW = datetime(2026, 1, 1, tzinfo=UTC)
# The most statements a read may run: one for each table it reads (the run, its attempts, lease,
# plan, datasets, reports, tags, spend, reservations, lineage both ways, the bill providers, the
# tracking position), three for its checkpoints (is any live, the latest live one, the expired
# ones) and one for the best on its objective (the scored ones, whole: the chosen one needs no other).
STATEMENTS_MAX = 17


def _statements(ledger: Ledger, run_id: str) -> int:
    executed: list[str] = []
    connection = ledger.storage.views.query.connect()
    connection.set_trace_callback(executed.append)  # type: ignore[attr-defined]
    try:
        state = ledger.run_state(run_id)
    finally:
        connection.set_trace_callback(None)  # type: ignore[attr-defined]
    assert state.best_checkpoint is not None and state.checkpoint is not None
    return len(executed)


def test_a_run_state_read_runs_as_many_statements_however_large_the_run(tmp_path: Path) -> None:
    clock = [NOW]
    ledger = Ledger.open(str(tmp_path / "ledger.db"), clock=lambda: clock[0])
    try:
        run = ledger.open_run(run_key="size", cap_usd_micro=10**9, objective=("eval_loss", "min"))
        ledger.start_attempt(run_id=run.run_id, attempt_id="a1")
        ledger.append_steps(run_id=run.run_id, attempt=1, steps=list(range(1, 101)), metrics={"loss": [0.5] * 100})
        for step in (10, 20, 30):
            ledger.save_checkpoint(
                run_id=run.run_id, attempt=1, step=step, backend="hf", uri=f"/ck/{step}", scores={"eval_loss": 1 / step}
            )
        ledger.save_checkpoint(
            run_id=run.run_id, attempt=1, step=40, backend="tinker", uri="t://40", expires_at=NOW + timedelta(hours=1)
        )
        ledger.record_dataset(run_id=run.run_id, role="train", digest="d" * 64, format="chat", rows=12)
        ledger.reserve(account=run.run_id, reservation_id="r1", amount_usd_micro=700)
        ledger.wait(ledger.commit(account=run.run_id, reservation_id="r1", actual_usd_micro=600).position)
        clock[0] = NOW + timedelta(hours=2)  # The Tinker checkpoint has expired.
        small = _statements(ledger, run.run_id)

        for first in range(101, 10_001, 1_000):
            steps = list(range(first, first + 1_000))
            ledger.append_steps(run_id=run.run_id, attempt=1, steps=steps, metrics={"loss": [0.5] * 1_000})
        for step in range(100, 10_001, 200):
            ledger.save_checkpoint(
                run_id=run.run_id, attempt=1, step=step, backend="hf", uri=f"/ck/{step}", scores={"eval_loss": 1 / step}
            )
        ledger.wait(ledger.head())
        large = _statements(ledger, run.run_id)
    finally:
        ledger.close()

    assert small == large
    assert small <= STATEMENTS_MAX
