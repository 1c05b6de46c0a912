"""`spend show` and `runs show` show a run's plan hold: what was planned, drawn by its holds and is
still held, and its state. Expected text is written out here."""

from __future__ import annotations

import json

import pytest

from ledger import Ledger
from tests.test_cli import run_cli


def test_spend_and_runs_show_the_plan_hold(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "data.db")
    ledger = Ledger.open(path)
    run = ledger.open_run(run_key="planned-key", name="planned", cap_usd_micro=5_000_000)
    ledger.start_attempt(run_id=run.run_id, attempt_id="a1")
    ledger.reserve_plan(account=run.run_id, reservation_id="plan-1", amount_usd_micro=2_000_000, attempt=1)
    ledger.reserve(account=run.run_id, reservation_id="call-1", amount_usd_micro=500_000, attempt=1)
    ledger.wait(ledger.head())
    ledger.close()

    shown = run_cli(capsys, "spend", "show", "planned-key", "--db", path)
    assert "plan:      $2.00 planned, $0.50 drawn, $1.50 held (pending)" in shown
    assert "pending:   $2.00" in shown
    listed = json.loads(run_cli(capsys, "spend", "show", "planned-key", "--db", path, "--json"))
    assert listed["account"]["plan"] == {
        "reservation_id": "plan-1",
        "state": "pending",
        "planned_usd_micro": 2_000_000,
        "drawn_usd_micro": 500_000,
        "held_usd_micro": 1_500_000,
    }
    assert [(r["reservation_id"], r["kind"]) for r in listed["reservations"]] == [
        ("plan-1", "plan"),
        ("call-1", "reservation"),
    ]
    state = run_cli(capsys, "runs", "show", "planned-key", "--db", path)
    assert "; plan $2.00 planned, $0.50 drawn, $1.50 held (pending)" in state
