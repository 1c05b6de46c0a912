"""The client's bearer token over real gRPC on loopback: a server that records each call's
metadata sees `authorization: Bearer <token>` on unary calls, server streams and the RecordSteps
stream, from `token=` or TRAINLEDGER_TOKEN; the token never shows in a repr, a log line or an
error; a recorder whose token is refused keeps its batches instead of dropping them; and a
server that requires tokens takes the client's, from TRAINLEDGER_TOKEN, on unary calls and streams."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from clients import LedgerClient, codec, run_key
from clients.aio import AsyncLedgerClient
from clients.errors import LedgerClientError, Unauthenticated
from clients.link import Link
from clients.outbox import MemoryOutbox
from ledger import Ledger
from services.server import create_server
from tests.client.server_thread import ServerThread

TOKEN = "tl_secret_8f3a0c1d9e7b"
RUN_ID = "00000000-0000-0000-0000-000000000001"


class Recording(grpc.ServerInterceptor):
    """Records every call's method and metadata; answers UNIMPLEMENTED, or refuses every call as an
    authenticating server refuses a bad token (refuse=True)."""

    def __init__(self, *, refuse: bool = False) -> None:
        self.calls: list[tuple[str, dict[str, str]]] = []
        self.refuse = refuse

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        self.calls.append((details.method.rsplit("/", 1)[-1], dict(details.invocation_metadata)))
        if not self.refuse:
            return None  # No such method here: UNIMPLEMENTED.

        def refused(request: Any, context: grpc.ServicerContext) -> Any:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "the bearer token is not valid")

        if details.method.endswith("/RecordSteps"):
            return grpc.stream_stream_rpc_method_handler(refused)
        return grpc.unary_unary_rpc_method_handler(refused)


def _serve(recording: Recording) -> Iterator[tuple[str, Recording]]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), interceptors=[recording])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", recording
    finally:
        server.stop(0)


@pytest.fixture
def recorded() -> Iterator[tuple[str, Recording]]:
    yield from _serve(Recording())


@pytest.fixture
def refusing() -> Iterator[tuple[str, Recording]]:
    yield from _serve(Recording(refuse=True))


def _client(address: str, **options: Any) -> LedgerClient:
    return LedgerClient(address, retries=0, outage_budget_s=0, timeout_s=5.0, **options)


def _each_kind_of_call(client: LedgerClient) -> list[LedgerClientError]:
    """A unary call, a server stream and a RecordSteps stream; the errors they raised."""
    errors: list[LedgerClientError] = []
    calls: list[Callable[[], Any]] = [
        lambda: client.get_run_state(run_id=RUN_ID),
        lambda: list(client.read_events(from_position=1)),
        lambda: list(client.record_steps([dict(run_id=RUN_ID, attempt=1, steps=[1], tokens=[1])])),
    ]
    for call in calls:
        with pytest.raises(LedgerClientError) as raised:
            call()
        errors.append(raised.value)
    return errors


def test_the_token_goes_with_unary_and_streaming_calls(recorded: tuple[str, Recording]) -> None:
    address, recording = recorded
    with _client(address, token=TOKEN, principal="alice") as client:
        _each_kind_of_call(client)
    assert [method for method, _ in recording.calls] == ["GetRunState", "ReadEvents", "RecordSteps"]
    for _, metadata in recording.calls:
        assert metadata["authorization"] == "Bearer tl_secret_8f3a0c1d9e7b"
        assert "x-principal" not in metadata  # The token names the principal.
        assert metadata["x-request-id"]


def test_the_async_client_sends_the_token(recorded: tuple[str, Recording]) -> None:
    address, recording = recorded

    async def scenario() -> None:
        async with AsyncLedgerClient(address, token=TOKEN, retries=0, outage_budget_s=0) as client:
            with pytest.raises(LedgerClientError):
                await client.get_run_state(run_id=RUN_ID)
            with pytest.raises(LedgerClientError):
                async for _ in client.read_events(from_position=1):
                    pass
            with pytest.raises(LedgerClientError):
                async for _ in client.record_steps([dict(run_id=RUN_ID, attempt=1, steps=[1], tokens=[1])]):
                    pass

    asyncio.run(scenario())
    assert [method for method, _ in recording.calls] == ["GetRunState", "ReadEvents", "RecordSteps"]
    assert {metadata["authorization"] for _, metadata in recording.calls} == {"Bearer tl_secret_8f3a0c1d9e7b"}


def test_the_token_defaults_to_the_environment(recorded: tuple[str, Recording], monkeypatch) -> None:
    address, recording = recorded
    monkeypatch.setenv("TRAINLEDGER_TOKEN", "tl_from_the_environment")
    with _client(address) as client:
        assert client.has_token
        with pytest.raises(LedgerClientError):
            client.get_run_state(run_id=RUN_ID)
    with _client(address, token="", principal="bob") as client:  # "" = no token, whatever the environment.
        assert not client.has_token
        with pytest.raises(LedgerClientError):
            client.get_run_state(run_id=RUN_ID)
    first, second = (metadata for _, metadata in recording.calls)
    assert first["authorization"] == "Bearer tl_from_the_environment"
    assert "authorization" not in second and second["x-principal"] == "bob"


def test_without_a_token_the_principal_goes_as_before(recorded: tuple[str, Recording], monkeypatch) -> None:
    address, recording = recorded
    monkeypatch.delenv("TRAINLEDGER_TOKEN", raising=False)
    with _client(address, principal="carol") as client:
        with pytest.raises(LedgerClientError):
            client.get_run_state(run_id=RUN_ID)
    (_, metadata), *_ = recording.calls
    assert metadata["x-principal"] == "carol" and "authorization" not in metadata


def test_a_token_is_one_printable_word() -> None:
    with pytest.raises(ValueError, match="one word"):
        LedgerClient("127.0.0.1:9", token="two words")


def test_the_token_is_never_shown(refusing: tuple[str, Recording], caplog) -> None:
    address, _ = refusing
    caplog.set_level(logging.DEBUG)
    with _client(address, token=TOKEN) as client:
        shown = [repr(client), str(client)]
        errors = _each_kind_of_call(client)
    assert all(isinstance(error, Unauthenticated) for error in errors)
    shown += [text for error in errors for text in (str(error), repr(error), error.message, str(error.metadata))]
    shown += [record.getMessage() for record in caplog.records]
    assert "token=<hidden>" in shown[0]
    assert not [text for text in shown if "8f3a0c1d9e7b" in text]


def test_a_refused_token_keeps_the_batches(refusing: tuple[str, Recording], caplog) -> None:
    """A stream refused for its token is no refusal of its batches: they stay to be sent again
    (a corrected token, a revocation undone), and no batch is dropped."""
    address, recording = refusing
    outbox = MemoryOutbox(RUN_ID, 1)
    for step in (1, 2):
        outbox.add(codec.step_batch(run_id=RUN_ID, attempt=1, steps=[step], tokens=[1]))
    with _client(address, token=TOKEN) as client:
        link = Link(client, outbox, threading.Event(), window=8, ack_timeout_s=5.0)
        settled: list[Any] = []
        deadline = time.monotonic() + 10
        while link.last_error is None and time.monotonic() < deadline:
            link.send(time.monotonic())
            settled += link.collect()
            time.sleep(0.01)
        link.close()
    assert link.last_error is not None and link.last_error.code == grpc.StatusCode.UNAUTHENTICATED
    assert settled == []
    assert [sequence for sequence, *_ in outbox.pending()] == [1, 2]
    assert "the outbox keeps the steps" in caplog.text
    assert TOKEN not in caplog.text
    assert recording.calls and recording.calls[0][0] == "RecordSteps"


class AuthServerThread(ServerThread):
    """The in-process server of tests.client.server_thread, with authentication required."""

    async def _start(self) -> tuple[Any, int]:
        server, port = create_server(f"127.0.0.1:{self.port}", database=self.database, auth=True)
        await server.start()
        return server, port


def test_a_server_that_requires_tokens_takes_the_clients(tmp_path, monkeypatch) -> None:
    database = str(tmp_path / "ledger.db")
    ledger = Ledger.open(database)
    try:
        bearer = ledger.issue_token(holder="trainer-1", role="trainer").bearer
    finally:
        ledger.close()
    with AuthServerThread(database) as server:
        monkeypatch.delenv("TRAINLEDGER_TOKEN", raising=False)
        with _client(server.address, principal="mallory") as client:
            with pytest.raises(Unauthenticated) as raised:
                client.open_run(run_key=run_key({"auth": "none"}), name="auth")
        assert raised.value.reason == "TOKEN_MISSING"
        monkeypatch.setenv("TRAINLEDGER_TOKEN", bearer)
        with _client(server.address) as client:
            run_id = client.open_run(run_key=run_key({"auth": "env"}), name="auth").state.run.run_id
            assert client.start_attempt(run_id=run_id, label="auth").attempt == 1
            acks = list(client.record_steps([dict(run_id=run_id, attempt=1, steps=[1], tokens=[1])]))
        assert [ack.sequence for ack in acks] == [1]
