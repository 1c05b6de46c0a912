"""What a call costs in trips to a worker thread (services.runtime.edge: Edge.client_calls), over
the wire: a read or a write of the hot paths goes to a thread once, the read with its lineage as
the caller's scope sees it, the write with the totals it answers; a no-op call never goes. A
scoped token's call asks whether its run or account lies under the scope once per run or account
(services.runtime.auth: Gate.within), not once per call."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ledger import Ledger
from tests.service.support import Served, Stubs, batch, error_info, open_run
from trainledger.v1 import runs_pb2, spend_pb2

WHO = {"principal": "setup", "request_id": ""}


def trips(served: Served, call: Callable[[], Any]) -> int:
    """The trips to a worker thread that `call` (one call over the wire, returned) took, the
    token book's reads left out (at most one a second: services.runtime.auth.CACHE_S)."""
    edge, gate = served.server.edge, served.server.gate
    before, book_before = edge.client_calls, gate.book_reads
    call()
    return int((edge.client_calls - before) - (gate.book_reads - book_before))


def test_get_run_state_reads_in_one_trip(served: Served, stubs: Stubs) -> None:
    run_id = open_run(stubs).state.run.run_id
    appended = stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(10))), timeout=10)
    caught_up = runs_pb2.GetRunStateRequest(run_id=run_id, min_position=appended.position)
    assert trips(served, lambda: stubs.runs.GetRunState(caught_up, timeout=10)) == 1
    answer = stubs.runs.GetRunState(caught_up, timeout=10)
    assert (answer.state.run.run_id, answer.state.last_step) == (run_id, 9)
    assert trips(served, lambda: stubs.runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id), timeout=10)) == 1


def test_reserve_and_commit_each_write_in_one_trip(served: Served, stubs: Stubs) -> None:
    account = open_run(stubs, cap=10_000).state.run.run_id
    reserve = spend_pb2.ReserveRequest(account=account, reservation_id="r1", amount_usd_micro=1_000)
    assert trips(served, lambda: stubs.spend.Reserve(reserve, timeout=10)) == 1
    commit = spend_pb2.CommitRequest(account=account, reservation_id="r1", actual_usd_micro=900)
    assert trips(served, lambda: stubs.spend.Commit(commit, timeout=10)) == 1
    assert stubs.spend.Reserve(reserve, timeout=10).account.committed_usd_micro == 900


def test_a_health_check_takes_no_trip(served: Served, stubs: Stubs) -> None:
    health = health_pb2_grpc.HealthStub(stubs.channel)
    assert trips(served, lambda: health.Check(health_pb2.HealthCheckRequest(), timeout=10)) == 0


def test_a_scoped_token_asks_about_its_run_and_account_once(tmp_path: Path) -> None:
    ledger = Ledger.open(str(tmp_path / "ledger.db"))
    served = None
    try:
        for account, parent in (("team-a", ""), ("team-b", "")):
            ledger.open_account(account=account, parent=parent, cap_usd_micro=None, **WHO)
        opened = ledger.open_run(
            run_key="scoped", name="r", spec={}, parent_account="team-a", cap_usd_micro=10**9, **WHO
        )
        other = ledger.open_run(run_key="other", name="o", spec={}, parent_account="team-b", cap_usd_micro=None, **WHO)
        bearer = ledger.issue_token(holder="trainer-a", role="trainer", account="team-a", **WHO).bearer
        served = Served(ledger)
        stubs, metadata = served.stubs, (("authorization", f"Bearer {bearer}"),)
        read = runs_pb2.GetRunStateRequest(run_id=opened.run_id, min_position=opened.position)
        first = trips(served, lambda: stubs.runs.GetRunState(read, metadata=metadata, timeout=10))
        assert first == 2  # Whether the run is under team-a, then the read.
        assert trips(served, lambda: stubs.runs.GetRunState(read, metadata=metadata, timeout=10)) == 1
        for n in range(2):
            reserve = spend_pb2.ReserveRequest(account=opened.run_id, reservation_id=f"r{n}", amount_usd_micro=1)
            assert trips(served, functools.partial(stubs.spend.Reserve, reserve, metadata=metadata, timeout=10)) == 1
        # What lies outside the scope is refused each time it is asked about.
        for _ in range(2):
            with pytest.raises(grpc.RpcError) as refused:
                stubs.runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=other.run_id), metadata=metadata, timeout=10)
            assert (refused.value.code(), error_info(refused.value).reason) == (
                grpc.StatusCode.PERMISSION_DENIED,
                "OUTSIDE_SCOPE",
            )
    finally:
        if served is not None:
            served.close()
        ledger.close()
