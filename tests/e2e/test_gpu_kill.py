"""A GPU-metered trainer killed with kill -9 inside each of five hold intervals, against a real
`trainledger serve` over SQLite: each abandoned hold is settled by the ledger pro rata to the
trainer's last sign of life (the four superseded by the next start, the fifth when its lease
lapses), so the run's recorded spend is within 10% of the GPU time that actually elapsed, not $0;
and the run whose trainer is gone reads lost within lease_s + 5 s."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from clients import LedgerClient
from tests.e2e.gpu_kills import kill_inside_holds, until_lost
from tests.e2e.gpu_trainer import HOLD_MS, RATE_USD_MICRO_PER_GPU_HOUR
from tests.e2e.test_serve_guards import Servers, environment, trainledger

pytestmark = [pytest.mark.timeout(240), pytest.mark.subprocess]

LEASE_S = 4
KILLS = 5
USD_MICRO_PER_SECOND = RATE_USD_MICRO_PER_GPU_HOUR // 3_600


def check_spend(client: LedgerClient, run_id: str, elapsed: list[float]) -> None:
    """The run's spend is the ledger's pro-rata settlements of the five holds (one event each),
    within 10% of the GPU time each actually had."""
    account_id = next(
        event.originator_id
        for event in client.read_events(types=["Account.Opened"])
        if event.data_json["name"] == run_id
    )
    settled = [
        event.data_json for event in client.read_events(types=["SpendSettled"]) if event.originator_id == account_id
    ]
    assert [s["reason"] for s in settled] == ["ATTEMPT_SUPERSEDED"] * (KILLS - 1) + ["ATTEMPT_LOST"]
    assert {s["method"] for s in settled} == {"pro_rata"}
    assert all(0 < s["amount"] < s["reserved"] == HOLD_MS for s in settled), settled
    spend = client.get_run_state(run_id=run_id, min_position=client.get_head().position).spend
    actual_usd_micro = sum(elapsed) * USD_MICRO_PER_SECOND
    recorded = spend.committed_usd_micro + spend.presumed_usd_micro
    assert (spend.committed_usd_micro, spend.pending_usd_micro) == (0, 0)
    assert spend.presumed_usd_micro == sum(s["amount"] for s in settled)
    print(f"recorded {recorded} micro-dollars for {sum(elapsed):.2f} s of GPU time ({actual_usd_micro:.0f})")
    assert abs(recorded - actual_usd_micro) <= 0.10 * actual_usd_micro, (recorded, actual_usd_micro, elapsed)


def test_a_gpu_trainer_killed_inside_each_hold_records_the_gpu_time_it_had(servers: Servers, tmp_path: Path) -> None:
    _, address = servers.start(tmp_path / "ledger.db")
    elapsed = kill_inside_holds([address], "gpu-kill", tmp_path, kills=KILLS, lease_s=LEASE_S, seed=24)
    with LedgerClient(address) as client:
        run_id = client.open_run(run_key="gpu-kill").state.run.run_id
        lost = until_lost(client, run_id, LEASE_S + 5)
        assert lost.current_attempt == KILLS
        assert lost.attempts[-1].lost_at is not None and lost.attempts[-1].last_seen_at is not None
        [listed] = [run for run in client.list_runs().runs if run.run_id == run_id]
        assert listed.status == "lost"
        check_spend(client, run_id, elapsed)
        presumed = client.get_run_state(run_id=run_id).spend.presumed_usd_micro
    # What a person reads: the run listed as lost, its presumed spend apart from committed.
    listed_text = cli(address, "runs", "list", "--status", "lost")
    assert "gpu-kill" in listed_text and "lost" in listed_text
    shown = cli(address, "runs", "show", run_id)
    dollars = f"{presumed // 1_000_000}.{presumed % 1_000_000:06d}".rstrip("0")
    dollars += "0" * max(0, 2 - len(dollars.split(".")[1]))  # cents always, more digits only when there are
    assert f"$0.00 committed, ${dollars} presumed," in shown, shown
    assert "lost" in shown


def cli(address: str, *args: str) -> str:
    done = subprocess.run(
        [*trainledger(), *args, "--address", address], capture_output=True, text=True, env=environment(), timeout=60
    )
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout
