"""The goals the benchmarks are held to, and the last JSON line each prints.

Each figure is judged beside a ceiling measured in the same run where one exists (a ratio, so the
load on a shared machine cancels out), or alone where none does. A goal here is the project's:
never lowered to make a run pass. Goals are never test assertions: a run prints `meets_goal` for
each figure it measured and exits 0 either way.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Goal:
    """A bound on one figure: at least `bound` (rates, ratios) or at most (latencies)."""

    figure: str
    bound: float
    at_least: bool
    against: str = ""  # The ceiling the figure is a ratio to, or what it adds to it.

    def met(self, value: float) -> bool:
        return value >= self.bound if self.at_least else value <= self.bound

    @property
    def text(self) -> str:
        return f"{'>=' if self.at_least else '<='} {self.bound:,g}"


# bench/service.py over loopback gRPC, a `trainledger serve` process.
SERVICE = (
    Goal("reserve_pairs_ceiling_ratio_32_clients", 0.6, True, "Health.Check calls/s of the same 32 clients / 2"),
    Goal("reserve_p99_ms_32_clients", 30, False),
)
SERVICE_SQLITE = (
    Goal("reserve_p99_ms", 3, False),
    Goal("run_state_p99_ms_1m_steps", 1.5, False),
    Goal("get_run_state_p99_over_noop_ms", 0.5, False, "GetRunState p99 minus the no-op (Health.Check) p99"),
)
SERVICE_POSTGRES = (
    Goal("reserve_p99_ms", 5, False, "PostgreSQL's own round trip, SELECT 1 p99 (pg_roundtrip_p99_ms)"),
    Goal("run_state_p99_ms_1m_steps", 2, False, "PostgreSQL's own round trip, SELECT 1 p99 (pg_roundtrip_p99_ms)"),
)

# bench/ledger_core.py, in-process on SQLite. The absolute aims it printed before stay beside the
# ratios (the decision record on group commit names 10,000 pairs/s of 32 writers as the aim).
LEDGER_CORE = (
    Goal("steps_projector_ratio", 0.8, True, "steps/s of the same appends with the projector off"),
    Goal("reserve_commit_ceiling_ratio", 0.8, True, "durable one-row commits/s of raw SQLite, halved"),
    Goal("reserve_commit_per_s_32_writers", 4_000, True),
    Goal("steps_per_s", 500_000, True),
    Goal("reserve_commit_per_s", 2_000, True),
    Goal("run_state_p99_ms_1k_steps", 2, False),
    Goal("run_state_p99_ms_1m_steps", 2, False),
    Goal("rebuild_steps_per_s", 500_000, True),
)
LEDGER_CORE_AIMS = (Goal("reserve_commit_per_s_32_writers", 10_000, True),)

# bench/search.py: a page of a run search at 10,000 runs, over gRPC on loopback (the figure judged
# on SQLite, beside the no-op call over the same channel), on PostgreSQL, and in-process.
SEARCH = (
    Goal("search_p99_ms_10k_runs", 50, False, "the no-op (Health.Check) p99 over the same channel: noop_p99_ms"),
    Goal("search_p99_ms_10k_runs_postgres", 50, False, "noop_p99_ms_postgres"),
    Goal("search_p99_ms_10k_runs_in_process", 50, False),
)

# bench/reconcile.py and bench/trainer_overhead.py.
RECONCILE = (Goal("billed_lines_per_s", 50_000, True), Goal("reconcile_s", 5, False))
TRAINER = (
    Goal("overhead_ratio", 0.97, True, "steps/s of the same training without the ledger"),
    Goal("callback_cpu_us_per_logged_step", 100, False, "process CPU inside the callback's hooks"),
    Goal("callback_cpu_us_per_logged_step_net", 100, False, "less the same clock around a callback doing nothing"),
)


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages (empty where the system has none)."""
    try:
        return [round(load, 2) for load in os.getloadavg()]
    except OSError:
        return []


def size_label(steps: int) -> str:
    """1m for 1,000,000, 100k for 100,000: a size in a figure's name."""
    if steps >= 1_000_000 and steps % 1_000_000 == 0:
        return f"{steps // 1_000_000}m"
    return f"{steps // 1_000}k" if steps % 1_000 == 0 else str(steps)


def rerun(script: str, argv: list[str]) -> str:
    """The command that reruns a benchmark with the same flags, from the repository root."""
    return shlex.join(["PYTHONPATH=.", ".venv/bin/python", script, *argv])


def verdicts(figures: dict[str, Any], goals: tuple[Goal, ...], suffix: str = "") -> dict[str, dict[str, Any]]:
    """Each goal whose figure was measured: the value, the goal, what it is measured against, met or not."""
    judged: dict[str, dict[str, Any]] = {}
    for goal in goals:
        value = figures.get(goal.figure)
        if not isinstance(value, int | float):
            continue
        entry: dict[str, Any] = {"value": value, "goal": goal.text, "meets_goal": goal.met(value)}
        if goal.against:
            entry["against"] = goal.against
        judged[goal.figure + suffix] = entry
    return judged


def last_line(figures: dict[str, Any], goals: dict[str, dict[str, Any]], command: str, load_before: list[float]) -> str:
    """The benchmark's LAST line: its figures, the goals judged, the load averages and the command."""
    for name, entry in goals.items():
        met = "meets" if entry["meets_goal"] else "MISSES"
        print(f"  goal {name}: {entry['value']:,} {met} {entry['goal']}")
    whole = {**figures, "goals": goals, "load_average_before": load_before, "load_average_after": load_average()}
    whole["command"] = command
    print(f"rerun: {command}")
    return json.dumps(whole)
