"""The last sign of life a GPU hold is settled by is never coarse, whatever the lease: an
attempt with a long lease that beats while it holds GPU time leaves a recent enough sign of life
that a crash inside the hold is charged for the time it ran, not $0."""

from __future__ import annotations

import time

from tests.service.support import Stubs
from tests.service.test_leases import account_id, events, gpu_basis, start
from trainledger.leases import HEARTBEAT_PERIOD_MAX_S
from trainledger.v1 import runs_pb2, spend_pb2

# An hour's lease: a twentieth of it (three minutes) is far longer than the hold below.
LONG_LEASE_S = 3_600


def test_a_long_leased_attempt_killed_inside_a_gpu_hold_is_charged_for_the_time_it_beat(stubs: Stubs) -> None:
    run_id = start(stubs, lease_s=LONG_LEASE_S, cap=10_000_000)
    stubs.spend.Reserve(
        spend_pb2.ReserveRequest(
            account=run_id, reservation_id="gpu-long", amount_usd_micro=600_000, basis=gpu_basis(600_000), attempt=1
        ),
        timeout=10,
    )
    # The trainer runs on the GPU and its heartbeat thread beats (as often as the client would
    # with the shortest period); then it is killed with kill -9.
    beat_s = HEARTBEAT_PERIOD_MAX_S * 2 + 1
    began = time.monotonic()
    while time.monotonic() - began < beat_s:
        stubs.runs.Heartbeat(runs_pb2.HeartbeatRequest(run_id=run_id, attempt=1), timeout=10)
        time.sleep(0.2)
    stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a2"), timeout=10)
    [settled] = events(stubs, "SpendSettled", account_id(stubs, run_id))
    assert (settled["reason"], settled["method"]) == ("ATTEMPT_SUPERSEDED", "pro_rata")
    # One micro-dollar a millisecond: at least the time beaten, less one heartbeat period.
    assert settled["amount"] >= (beat_s - HEARTBEAT_PERIOD_MAX_S - 0.5) * 1000
    assert settled["last_seen_at"] is not None
    assert settled["amount"] < 600_000
