"""Authentication over the wire: bearer tokens, the principal on events, expired and revoked
tokens, what stays open, and when authentication is on."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from ledger import Ledger
from services import create_server
from services.server import StartupError
from tests.service.support import Served, error_info, key
from trainledger.v1 import common_pb2, events_pb2, runs_pb2

WHO = {"principal": "setup", "request_id": ""}


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


class Forced(Served):
    """A server started with `auth=True` (serve --auth)."""

    async def _start(self) -> tuple[Any, int]:
        server, port = create_server("127.0.0.1:0", ledger=self.ledger, auth=True)
        await server.start()
        return server, port


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ledger(tmp_path, clock: Clock) -> Iterator[Ledger]:
    opened = Ledger.open(str(tmp_path / "ledger.db"), clock=clock)
    yield opened
    opened.close()


@pytest.fixture
def served(ledger: Ledger) -> Iterator[Served]:
    server = Served(ledger)
    yield server
    server.close()


def bearer(value: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {value}"),)


def refusal(call: Any) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as raised:
        call()
    return raised.value.code(), error_info(raised.value).reason


def open_run(served: Served, metadata: Any) -> runs_pb2.OpenRunResponse:
    return served.stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=key(), name="n"), metadata=metadata)


def principals(served: Served, admin: str) -> list[str]:
    events = served.stubs.events.ReadEvents(events_pb2.ReadEventsRequest(limit=1000), metadata=bearer(admin))
    return [event.principal for event in events if event.type.startswith("Run.")]


def test_without_tokens_on_loopback_authentication_is_off_and_x_principal_is_recorded(served: Served) -> None:
    open_run(served, (("x-principal", "carol"),))
    admin = served.ledger.issue_token(holder="root", role="admin", **WHO).bearer
    time.sleep(1.1)  # The server reads the token book at most once a second.
    assert principals(served, admin) == ["carol"]


def test_a_trainer_token_with_x_principal_bob_still_records_the_tokens_principal(served: Served) -> None:
    trainer = served.ledger.issue_token(holder="alice", role="trainer", **WHO).bearer
    admin = served.ledger.issue_token(holder="root", role="admin", **WHO).bearer
    open_run(served, (*bearer(trainer), ("x-principal", "bob")))
    assert principals(served, admin) == ["alice"]


def test_a_token_works_as_soon_as_it_is_issued(served: Served) -> None:
    admin = served.ledger.issue_token(holder="root", role="admin", **WHO).bearer
    open_run(served, bearer(admin))  # The server has just read its token book.
    trainer = served.ledger.issue_token(holder="alice", role="trainer", **WHO).bearer
    assert open_run(served, bearer(trainer)).position > 0
    assert principals(served, admin)[-1] == "alice"


def test_once_a_token_exists_calls_without_a_good_one_are_unauthenticated(served: Served) -> None:
    issued = served.ledger.issue_token(holder="alice", role="trainer", **WHO)
    token_id = issued.token.token_id
    secret = issued.bearer.split("_", 2)[2]
    time.sleep(1.1)
    unauthenticated = grpc.StatusCode.UNAUTHENTICATED
    assert refusal(lambda: open_run(served, ())) == (unauthenticated, "TOKEN_MISSING")
    assert refusal(lambda: open_run(served, (("x-principal", "alice"),))) == (unauthenticated, "TOKEN_MISSING")
    assert refusal(lambda: open_run(served, bearer("nonsense"))) == (unauthenticated, "TOKEN_INVALID")
    wrong_secret = f"tl_{token_id}_{'A' * len(secret)}"
    assert refusal(lambda: open_run(served, bearer(wrong_secret))) == (unauthenticated, "TOKEN_INVALID")
    unknown_id = f"tl_{'0' * len(token_id)}_{secret}"
    assert refusal(lambda: open_run(served, bearer(unknown_id))) == (unauthenticated, "TOKEN_INVALID")
    basic = (("authorization", f"Basic {issued.bearer}"),)
    assert refusal(lambda: open_run(served, basic)) == (unauthenticated, "TOKEN_INVALID")
    assert open_run(served, bearer(issued.bearer)).position > 0


def test_an_expired_token_is_refused(served: Served, clock: Clock) -> None:
    issued = served.ledger.issue_token(
        holder="alice", role="trainer", expires_at=clock.now + timedelta(hours=1), **WHO
    ).bearer
    assert open_run(served, bearer(issued)).position > 0
    clock.now += timedelta(hours=2)
    assert refusal(lambda: open_run(served, bearer(issued))) == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_EXPIRED")


def test_a_token_revoked_by_another_process_is_refused_within_two_seconds(served: Served, tmp_path) -> None:
    issued = served.ledger.issue_token(holder="alice", role="trainer", **WHO)
    assert open_run(served, bearer(issued.bearer)).position > 0
    other = Ledger.open(str(tmp_path / "ledger.db"), project=False)  # As `trainledger tokens revoke` does.
    try:
        other.revoke_token(token_id=issued.token.token_id, reason="left the team", **WHO)
    finally:
        other.close()
    revoked = time.monotonic()
    while True:
        try:
            open_run(served, bearer(issued.bearer))
        except grpc.RpcError as error:
            assert (error.code(), error_info(error).reason) == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_REVOKED")
            break
        assert time.monotonic() - revoked < 2.0, "a revoked token was still accepted after 2 s"
        time.sleep(0.05)


def test_health_and_reflection_stay_open(served: Served) -> None:
    served.ledger.issue_token(holder="root", role="admin", **WHO)
    time.sleep(1.1)
    health = health_pb2_grpc.HealthStub(served.stubs.channel)
    assert health.Check(health_pb2.HealthCheckRequest()).status == health_pb2.HealthCheckResponse.SERVING
    reflection = reflection_pb2_grpc.ServerReflectionStub(served.stubs.channel)
    answers = list(reflection.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")])))
    assert answers and answers[0].list_services_response.service


def test_serve_auth_refuses_everyone_before_any_token_exists(ledger: Ledger) -> None:
    server = Forced(ledger)
    try:
        code_reason = refusal(lambda: open_run(server, (("x-principal", "root"),)))
        assert code_reason == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_MISSING")
        health = health_pb2_grpc.HealthStub(server.stubs.channel)
        assert health.Check(health_pb2.HealthCheckRequest()).status == health_pb2.HealthCheckResponse.SERVING
    finally:
        server.close()


def test_authentication_turns_on_within_a_second_of_the_first_token(served: Served) -> None:
    assert open_run(served, ()).position > 0
    served.ledger.issue_token(holder="root", role="admin", **WHO)
    time.sleep(1.1)
    assert refusal(lambda: open_run(served, ())) == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_MISSING")


def test_revoking_every_token_does_not_turn_authentication_off(served: Served) -> None:
    issued = served.ledger.issue_token(holder="root", role="admin", **WHO)
    served.ledger.revoke_token(token_id=issued.token.token_id, **WHO)
    time.sleep(1.1)
    assert refusal(lambda: open_run(served, ())) == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_MISSING")


async def _start(address: str, ledger: Ledger, **options: Any) -> Any:
    server, _ = create_server(address, ledger=ledger, **options)
    await server.stop(None)
    return server


def test_a_non_loopback_address_needs_authentication_or_insecure(ledger: Ledger) -> None:
    import asyncio

    with pytest.raises(StartupError, match="without authentication: pass --auth or --insecure"):
        asyncio.run(_start("0.0.0.0:0", ledger, insecure=False))
    asyncio.run(_start("0.0.0.0:0", ledger, insecure=True))
    asyncio.run(_start("0.0.0.0:0", ledger, insecure=False, auth=True))
    asyncio.run(_start("127.0.0.1:0", ledger, insecure=False))
    ledger.issue_token(holder="root", role="admin", **WHO)
    asyncio.run(_start("0.0.0.0:0", ledger, insecure=False))


def test_issuing_and_revoking_are_events_naming_who_did_it_and_never_the_secret(served: Served) -> None:
    admin = served.ledger.issue_token(holder="root", role="admin", principal="local:ops", request_id="")
    served.ledger.revoke_token(token_id=admin.token.token_id, reason="rotated", principal="local:sec", request_id="")
    auditor = served.ledger.issue_token(holder="eve", role="auditor", principal="local:ops", request_id="").bearer
    request = events_pb2.ReadEventsRequest(limit=100, types=["TokenIssued", "TokenRevoked"])
    events = list(served.stubs.events.ReadEvents(request, metadata=bearer(auditor)))
    assert [(event.type.split(".")[-1], event.principal) for event in events] == [
        ("TokenIssued", "local:ops"),
        ("TokenRevoked", "local:sec"),
        ("TokenIssued", "local:ops"),
    ]
    issued, revoked = json.loads(events[0].data_json), json.loads(events[1].data_json)
    assert (issued["holder"], issued["role"], issued["token_id"]) == ("root", "admin", admin.token.token_id)
    assert (revoked["token_id"], revoked["reason"]) == (admin.token.token_id, "rotated")
    secret = admin.bearer.split("_", 2)[2]
    assert all(secret not in event.data_json.decode() for event in events)


def test_a_scoped_stream_is_refused_at_its_first_batch_outside_the_scope(served: Served) -> None:
    ledger = served.ledger
    for team in ("team-a", "team-b"):
        ledger.open_account(account=team, **WHO)
    runs = {}
    for team in ("team-a", "team-b"):
        runs[team] = ledger.open_run(run_key=key(), name=team, parent_account=team, **WHO).run_id
        ledger.start_attempt(run_id=runs[team], attempt_id=key(), **WHO)
    trainer = ledger.issue_token(holder="alice", role="trainer", account="team-a", **WHO).bearer

    def request(sequence: int, team: str, step: int) -> runs_pb2.RecordStepsRequest:
        batch = common_pb2.StepBatch(run_id=runs[team], attempt=1, steps=[step], tokens=[1])
        return runs_pb2.RecordStepsRequest(sequence=sequence, batch=batch)

    sent = [request(1, "team-a", 1), request(2, "team-a", 2), request(3, "team-b", 1), request(4, "team-a", 3)]
    acks = []
    with pytest.raises(grpc.RpcError) as raised:
        for ack in served.stubs.runs.RecordSteps(iter(sent), metadata=bearer(trainer), timeout=10):
            acks.append(ack.sequence)
    assert (raised.value.code(), error_info(raised.value).reason) == (
        grpc.StatusCode.PERMISSION_DENIED,
        "OUTSIDE_SCOPE",
    )
    assert acks == [1, 2]
