"""A StartAttempt retried with the same attempt id is the same request: another lease is another
payload, refused, never answered as if the lease asked for were held."""

from __future__ import annotations

import grpc
import pytest

from tests.service.support import Stubs, error_info, key
from trainledger.v1 import runs_pb2


def test_a_start_retried_with_another_lease_is_refused_and_the_first_lease_stays(stubs: Stubs) -> None:
    run_id = stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=key()), timeout=10).state.run.run_id
    first = runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a1", lease_s=2)
    started = stubs.runs.StartAttempt(first, timeout=10)
    # The same request again is a retry, answered with the first start.
    again = stubs.runs.StartAttempt(first, timeout=10)
    assert (again.attempt, again.duplicate) == (started.attempt, True)
    other = runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a1", lease_s=3_600)
    with pytest.raises(grpc.RpcError) as refused:
        stubs.runs.StartAttempt(other, timeout=10)
    assert refused.value.code() == grpc.StatusCode.ALREADY_EXISTS
    assert error_info(refused.value).reason == "EXISTS_WITH_DIFFERENT_PAYLOAD"
    state = stubs.runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id), timeout=10).state
    assert [attempt.lease_s for attempt in state.attempts] == [2]


def test_a_start_retried_without_a_lease_takes_the_lease_it_holds(stubs: Stubs) -> None:
    """A replay that never knew the lease (an outbox's pending open) retries the start as it was."""
    run_id = stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=key()), timeout=10).state.run.run_id
    started = stubs.runs.StartAttempt(
        runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a1", lease_s=600), timeout=10
    )
    again = stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a1"), timeout=10)
    assert (again.attempt, again.duplicate) == (started.attempt, True)
    state = stubs.runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id), timeout=10).state
    assert [attempt.lease_s for attempt in state.attempts] == [600]
