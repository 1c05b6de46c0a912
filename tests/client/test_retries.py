"""A retry resends the very same request (same x-request-id, same bytes, same client-made ids), so
a write that landed before its answer was lost is answered as a duplicate, never done twice."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import grpc

from clients import AsyncLedgerClient, LedgerClient, RetryPolicy
from tests.client.conftest import new_run
from tests.client.server_thread import ServerThread

RESERVE = "/trainledger.v1.Spend/Reserve"
PATIENT = RetryPolicy(attempts=100, initial_backoff_s=0.05, max_backoff_s=0.2, total_s=20.0)


class LostAnswer(grpc.RpcError, grpc.Call):
    """What the client sees when the connection drops after the server acted, before it answered."""

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE

    def details(self) -> str:
        return "connection lost"

    def trailing_metadata(self) -> tuple:
        return ()

    def initial_metadata(self) -> tuple:
        return ()


class Recorder(grpc.UnaryUnaryClientInterceptor):
    """Notes (method, x-request-id, request bytes) of every try; for `lose` methods, the first
    try goes through to the server, then `on_lose` runs and the answer is replaced by LostAnswer."""

    def __init__(self, lose: str = "", on_lose: Any = None) -> None:
        self.tries: list[tuple[str, str, bytes]] = []
        self.lose, self.on_lose = lose, on_lose

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        metadata = dict(details.metadata or ())
        self.tries.append((details.method, metadata["x-request-id"], request.SerializeToString()))
        outcome = continuation(details, request)
        if details.method == self.lose and sum(t[0] == self.lose for t in self.tries) == 1:
            outcome.result()  # The write landed ...
            if self.on_lose is not None:
                self.on_lose()
            raise LostAnswer()  # ... and its answer is lost.
        return outcome

    def of(self, method: str) -> list[tuple[str, str, bytes]]:
        return [t for t in self.tries if t[0] == method]


def intercepted(server: ServerThread, interceptor: Recorder) -> LedgerClient:
    channel = grpc.intercept_channel(grpc.insecure_channel(server.address), interceptor)
    return LedgerClient(server.address, principal="tests", retries=PATIENT, channel=channel)


def reserved_events(client: LedgerClient) -> list[dict[str, Any]]:
    return [e for e in client.read_events(from_position=1) if e.type.endswith("SpendReserved")]


def test_a_lost_answer_is_retried_as_the_same_request_and_answered_as_a_duplicate(server: ServerThread) -> None:
    interceptor = Recorder(lose=RESERVE)
    with intercepted(server, interceptor) as client:
        run_id, attempt = new_run(client, cap_usd_micro=10_000)
        answer = client.reserve(account=run_id, amount_usd_micro=1_000, attempt=attempt)
        tries = interceptor.of(RESERVE)
        assert len(tries) == 2 and tries[0] == tries[1]  # same request id, same bytes
        assert answer.duplicate is True
        events = reserved_events(client)
        assert [e.request_id for e in events] == [tries[0][1]]
        assert events[0].principal == "tests"
        assert client.get_account(account=run_id).pending_usd_micro == 1_000


def test_server_killed_between_a_send_and_its_retry(server: ServerThread) -> None:
    restarted = threading.Event()

    def crash_and_restart() -> None:
        server.stop()  # The write is in the database; the server goes away before answering.

        def restart() -> None:
            time.sleep(0.5)
            server.start()  # Same port, same database.
            restarted.set()

        threading.Thread(target=restart, daemon=True).start()

    interceptor = Recorder(lose=RESERVE, on_lose=crash_and_restart)
    with intercepted(server, interceptor) as client:
        run_id, attempt = new_run(client, cap_usd_micro=10_000)
        answer = client.reserve(account=run_id, amount_usd_micro=2_500, attempt=attempt)
        assert restarted.is_set()
        tries = interceptor.of(RESERVE)
        assert len(tries) >= 3  # the landed send, refused tries while down, the answered retry
        assert len(set(tries)) == 1
        assert answer.duplicate is True
        assert [e.request_id for e in reserved_events(client)] == [tries[0][1]]
        account = client.get_account(account=run_id)
        assert (account.pending_usd_micro, account.remaining_usd_micro) == (2_500, 7_500)


def test_append_retried_across_a_restart_lands_once(server: ServerThread) -> None:
    interceptor = Recorder()
    with intercepted(server, interceptor) as client:
        run_id, attempt = new_run(client)
        server.stop()
        threading.Timer(0.5, server.start).start()
        answer = client.append_steps(run_id=run_id, attempt=attempt, steps=[0, 1], metrics={"loss": [2.0, 1.0]})
        tries = interceptor.of("/trainledger.v1.Runs/AppendSteps")
        assert len(tries) >= 2 and len(set(tries)) == 1
        assert (answer.duplicate, answer.last_step) == (False, 1)
        assert client.get_series(run_id=run_id, min_position=answer.position).steps == [0, 1]


def test_async_client_retries_across_a_restart(server: ServerThread) -> None:
    async def scenario() -> None:
        async with AsyncLedgerClient(server.address, retries=PATIENT) as client:
            opened = await client.open_run(run_key="async-retry", name="a")
            server.stop()
            threading.Timer(0.5, server.start).start()
            state = await client.get_run_state(run_id=opened.state.run.run_id)
            assert state.run.name == "a"

    asyncio.run(scenario())
