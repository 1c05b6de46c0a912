"""The benchmarks' contract: each judges its figures against the project's goals and prints, as its
last line, one JSON object with the figures, the goals judged and the command that reruns it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.goals import Goal, last_line, verdicts

REPO = Path(__file__).resolve().parents[1]


def test_a_rate_meets_a_lower_bound_and_a_latency_an_upper_one() -> None:
    rate, latency = Goal("pairs_ratio", 0.6, True), Goal("p99_ms", 30, False)
    assert rate.met(0.6) and not rate.met(0.59)
    assert latency.met(30) and not latency.met(30.5)
    assert (rate.text, latency.text) == (">= 0.6", "<= 30")


def test_only_measured_figures_are_judged() -> None:
    goals = (Goal("pairs_ratio", 0.6, True, "no-op calls/s / 2"), Goal("p99_ms", 30, False))
    judged = verdicts({"pairs_ratio": 0.41, "note": "text"}, goals)
    assert judged == {
        "pairs_ratio": {"value": 0.41, "goal": ">= 0.6", "meets_goal": False, "against": "no-op calls/s / 2"}
    }


def test_the_last_line_carries_figures_goals_load_and_command(capsys: pytest.CaptureFixture[str]) -> None:
    line = last_line({"pairs_ratio": 0.7}, verdicts({"pairs_ratio": 0.7}, (Goal("pairs_ratio", 0.6, True),)), "cmd", [])
    whole = json.loads(line)
    assert whole["pairs_ratio"] == 0.7
    assert whole["goals"]["pairs_ratio"]["meets_goal"] is True
    assert whole["command"] == "cmd"
    assert "load_average_after" in whole
    assert "goal pairs_ratio: 0.7 meets >= 0.6" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.subprocess
def test_ledger_core_in_its_smallest_run_prints_its_ratios_last(tmp_path: Path) -> None:
    command = [sys.executable, "bench/ledger_core.py", "--batches", "3", "--rounds", "2", "--pairs", "20"]
    command += ["--block", "10", "--writers", "2", "--writer-pairs", "5", "--grow-to", "3000"]
    environment = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp_path)}
    done = subprocess.run(command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    whole = json.loads(done.stdout.strip().splitlines()[-1])
    for ratio in ("steps_projector_ratio", "reserve_commit_ceiling_ratio"):
        assert whole[ratio] > 0
        assert isinstance(whole["goals"][ratio]["meets_goal"], bool)
    assert whole["bytes_per_step"] > 0
    assert whole["raw_sqlite_setting"].startswith("journal_mode=")
    assert whole["command"].endswith("--grow-to 3000")
