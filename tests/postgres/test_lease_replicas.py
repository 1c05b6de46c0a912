"""Leases over PostgreSQL with two `trainledger serve` replicas, each sweeping: a GPU-metered
trainer killed with kill -9 inside its holds (started on one replica, then on the other) reads
lost within lease_s + 5 s on both replicas, with exactly one AttemptLost in the log, and its
abandoned holds are each settled once, pro rata.

Needs TRAINLEDGER_TEST_DATABASE_URL."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from clients import LedgerClient
from tests.e2e.gpu_kills import kill_inside_holds, until_lost

# The replicas' fixtures (`launch` and the fresh schema's `url`); the module skips itself without
# TRAINLEDGER_TEST_DATABASE_URL.
from tests.postgres.test_replicas import POSTGRES_URL, Process, launch, schema, serve, url  # noqa: F401

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(180), pytest.mark.subprocess]

LEASE_S = 4


def test_a_killed_trainer_reads_lost_on_both_replicas_recorded_once(
    launch: Callable[..., list[Process]],  # noqa: F811
    url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    assert POSTGRES_URL
    replicas = launch(serve(url), serve(url))
    addresses = [replica.address for replica in replicas]
    elapsed = kill_inside_holds(addresses, "gpu-kill-pg", tmp_path, kills=2, lease_s=LEASE_S, seed=7)
    assert all(seconds > 2 for seconds in elapsed)
    with LedgerClient(addresses[0]) as first, LedgerClient(addresses[1]) as second:
        run_id = first.open_run(run_key="gpu-kill-pg").state.run.run_id
        lost = until_lost(first, run_id, LEASE_S + 5)
        assert lost.current_attempt == 2
        assert until_lost(second, run_id, 5).attempts[-1].lost_at == lost.attempts[-1].lost_at
        # Both replicas keep sweeping: give them a few more rounds to record it again, if they would.
        time.sleep(3)
        events = [event for event in first.read_events(types=["AttemptLost"]) if event.originator_id == run_id]
        assert len(events) == 1
        assert events[0].data_json["attempt"] == 2
        account_id = next(
            event.originator_id
            for event in first.read_events(types=["Account.Opened"])
            if event.data_json["name"] == run_id
        )
        settled = [
            event.data_json for event in first.read_events(types=["SpendSettled"]) if event.originator_id == account_id
        ]
        assert sorted(s["reason"] for s in settled) == ["ATTEMPT_LOST", "ATTEMPT_SUPERSEDED"]
        assert all(s["method"] == "pro_rata" and s["amount"] > 0 for s in settled), settled
