"""The exception hierarchy, built from the ErrorInfo reasons a real server sends."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from clients import (
    AlreadyExists,
    AsyncLedgerClient,
    AttemptSuperseded,
    CurrentVersionMoved,
    FailedPrecondition,
    GateNotPassed,
    InvalidArgument,
    LedgerClient,
    LedgerClientError,
    NotFound,
    RunFinished,
    SpendCapExceeded,
    Unavailable,
    error_from_rpc,
)
from tests.client.conftest import new_run
from tests.client.server_thread import free_port


def test_not_found_and_invalid_argument_carry_reason_and_metadata(client: LedgerClient) -> None:
    with pytest.raises(NotFound) as caught:
        client.get_run_state(run_id="no-such-run")
    assert caught.value.reason == "RUN_NOT_FOUND"
    assert caught.value.code == grpc.StatusCode.NOT_FOUND
    run_id, attempt = new_run(client)
    with pytest.raises(InvalidArgument) as caught:
        client.append_steps(run_id=run_id, attempt=attempt, steps=[1], metrics={"loss": [float("nan")]})
    assert (caught.value.reason, caught.value.metadata.get("metric")) == ("NON_FINITE_METRIC", "loss")


def test_same_batch_is_a_duplicate_and_a_different_payload_already_exists(client: LedgerClient) -> None:
    run_id, attempt = new_run(client)
    first = client.append_steps(run_id=run_id, attempt=attempt, steps=[1, 2], metrics={"loss": [1.0, 0.5]})
    again = client.append_steps(run_id=run_id, attempt=attempt, steps=[1, 2], metrics={"loss": [1.0, 0.5]})
    assert (again.duplicate, again.position) == (True, first.position)
    with pytest.raises(AlreadyExists) as caught:
        client.append_steps(run_id=run_id, attempt=attempt, steps=[1, 2], metrics={"loss": [9.0, 0.5]})
    assert caught.value.reason == "EXISTS_WITH_DIFFERENT_PAYLOAD"


def test_spend_cap_exceeded_says_what_remains(client: LedgerClient) -> None:
    run_id, attempt = new_run(client, cap_usd_micro=10_000)
    client.reserve(account=run_id, amount_usd_micro=4_000, attempt=attempt)
    with pytest.raises(SpendCapExceeded) as caught:
        client.reserve(account=run_id, amount_usd_micro=7_000, attempt=attempt)
    assert (caught.value.account, caught.value.remaining_usd_micro) == (run_id, 6_000)
    assert caught.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    # The message is for people: dollars, and the run by its name with its id after.
    assert caught.value.message == f"reserving $0.007 would cross the cap of run test ({run_id}): $0.006 remains"


def test_fencing_and_finish_are_failed_preconditions(client: LedgerClient) -> None:
    run_id, first = new_run(client)
    second = client.start_attempt(run_id=run_id, label="second").attempt
    with pytest.raises(AttemptSuperseded) as caught:
        client.append_steps(run_id=run_id, attempt=first, steps=[1])
    assert isinstance(caught.value, FailedPrecondition)
    client.finish_run(run_id=run_id, attempt=second, status="done")
    with pytest.raises(RunFinished):
        client.append_steps(run_id=run_id, attempt=second, steps=[1])


def test_promotion_refusals(client: LedgerClient) -> None:
    one = client.register(family="fam", artifact_uri="s3://a/1", digest="1" * 64).version
    two = client.register(family="fam", artifact_uri="s3://a/2", digest="2" * 64).version
    with pytest.raises(GateNotPassed):
        client.promote(family="fam", version=one, expected_current=0, verdict={"passed": False, "reason": "eval"})
    client.promote(
        family="fam",
        version=one,
        expected_current=0,
        verdict={"passed": True, "reason": "checked", "stats": {"acc": 0.9}},
    )
    with pytest.raises(CurrentVersionMoved) as caught:
        client.promote(family="fam", version=two, expected_current=0, verdict={"passed": True, "reason": "checked"})
    assert caught.value.reason == "CURRENT_VERSION_MOVED"
    assert client.get_current(family="fam").version == one


def test_no_server_maps_by_status_code() -> None:
    with LedgerClient(f"127.0.0.1:{free_port()}", timeout_s=2.0, retries=0) as client:
        with pytest.raises(Unavailable) as caught:
            client.get_run_state(run_id="x")
    assert caught.value.reason == "UNAVAILABLE" and caught.value.metadata == {}


def test_a_status_without_details_falls_back_on_the_code() -> None:
    class Bare(grpc.RpcError):
        def code(self) -> grpc.StatusCode:
            return grpc.StatusCode.FAILED_PRECONDITION

        def details(self) -> str:
            return "from a proxy"

        def trailing_metadata(self) -> tuple:
            return ()

    error = error_from_rpc(Bare())
    assert type(error) is FailedPrecondition and error.reason == "FAILED_PRECONDITION"
    assert isinstance(error, LedgerClientError)


def test_async_client_maps_the_same_errors(server) -> None:
    async def scenario() -> None:
        async with AsyncLedgerClient(server.address, principal="tests") as client:
            with pytest.raises(NotFound) as caught:
                await client.get_run_state(run_id="no-such-run")
            assert caught.value.reason == "RUN_NOT_FOUND"
            opened = await client.open_run(run_key="async-key", name="a", cap_usd_micro=0)
            run_id = opened.state.run.run_id
            with pytest.raises(SpendCapExceeded):
                await client.reserve(account=run_id, amount_usd_micro=1)
            attempt = (await client.start_attempt(run_id=run_id, label="a")).attempt
            acks = [
                ack
                async for ack in client.record_steps(
                    [
                        {"run_id": run_id, "attempt": attempt, "steps": [1, 2], "metrics": {"loss": [1.0, 2.0]}},
                        {"run_id": run_id, "attempt": attempt, "steps": [3]},
                    ]
                )
            ]
            assert [(ack.sequence, ack.last_step) for ack in acks] == [(1, 2), (2, 3)]
            events = [event async for event in client.read_events(from_position=1, limit=2)]
            assert [event.position for event in events] == [1, 2]

    asyncio.run(scenario())
