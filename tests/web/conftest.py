"""Fixtures for the dashboard's tests: a real server (gRPC and the dashboard over HTTP on loopback,
both on port 0) in-process on its own event loop and thread, one per test module, and a run
recorded through the real gRPC client with values the tests write out.

The recorded run ("web-chart"): attempt 1 records steps 0..9 with loss = step / 4 and eval_loss at
steps 4 and 9 (0.5, 0.25), saves a checkpoint at step 5, and is resumed by attempt 2 from step 5,
which records steps 6..11 with loss = 10 + step (so steps 6..9 of attempt 1 are superseded); its
spend account (cap $10) committed $1.50 of a $2 hold and holds $0.25 pending. Its parent account
is "team" (cap $100). A second run, "web-other" (uncapped), records steps 0 and 1 (loss 2.0, 1.0)
and is done. The registry family "web-model" has versions 1 (from web-chart's step 5) and 2;
version 1 was promoted (gate passed, "eval ok"), then 2 ("better"), then rolled back to 1
("regression").
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from clients import LedgerClient, run_key
from services.server import create_server

WHO = {"principal": "tests", "request_id": ""}


class WebServer:
    """An in-process server with the dashboard: `address` (gRPC) and `url` (HTTP)."""

    def __init__(self, database: str = "", *, auth: bool = False, ledger: Any = None) -> None:
        self.database, self.auth, self.ledger = database, auth, ledger
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="web-server", daemon=True)
        self.server: Any = None
        self.address = self.url = ""

    def start(self) -> WebServer:
        self.thread.start()
        self.server = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(30)
        self.address = self.server.address
        self.url = f"http://{self.server.http_address}"
        return self

    async def _start(self) -> Any:
        server, _ = create_server(
            "127.0.0.1:0", database=self.database, ledger=self.ledger, auth=self.auth, http="127.0.0.1:0"
        )
        await server.start()
        return server

    def run(self, coroutine: Any, timeout_s: float = 30) -> Any:
        """Run a coroutine on the server's loop (to look at its edge or streams)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout_s)

    def stop(self, grace_s: float | None = 0) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self.server.stop(grace_s), self.loop).result(30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(30)
            self.loop.close()


@dataclass
class Recorded:
    """The ids of what the module's server holds."""

    run_id: str
    other_run_id: str


def record(client: LedgerClient) -> Recorded:
    client.open_account(account="team", cap_usd_micro=100_000_000)
    opened = client.open_run(
        run_key=run_key({"web": "chart"}),
        name="web-chart",
        spec={"lr": 0.001, "model": "tiny"},
        cap_usd_micro=10_000_000,
        parent_account="team",
    )
    run_id = opened.state.run.run_id
    first = client.start_attempt(run_id=run_id, label="first").attempt
    client.append_steps(
        run_id=run_id,
        attempt=first,
        steps=list(range(10)),
        metrics={"loss": [s / 4 for s in range(10)], "eval_loss": {"values": [0.5, 0.25], "index": [4, 9]}},
    )
    client.save_checkpoint(run_id=run_id, attempt=first, step=5, uri="s3://ckpt/5", backend="s3")
    second = client.start_attempt(run_id=run_id, label="second", resume_from_step=5).attempt
    client.append_steps(
        run_id=run_id, attempt=second, steps=list(range(6, 12)), metrics={"loss": [10.0 + s for s in range(6, 12)]}
    )
    hold = client.reserve(account=run_id, amount_usd_micro=2_000_000, attempt=second)
    client.commit(account=run_id, reservation_id=hold.reservation_id, actual_usd_micro=1_500_000)
    client.reserve(account=run_id, amount_usd_micro=250_000, attempt=second)
    other = client.open_run(run_key=run_key({"web": "other"}), name="web-other", cap_usd_micro=None)
    other_id = other.state.run.run_id
    attempt = client.start_attempt(run_id=other_id).attempt
    client.append_steps(run_id=other_id, attempt=attempt, steps=[0, 1], metrics={"loss": [2.0, 1.0]})
    client.finish_run(run_id=other_id, attempt=attempt, status="done", summary={"best": 1.0})
    client.register(
        family="web-model", artifact_uri="s3://m/1", digest="sha256:" + "a" * 64, source_run_id=run_id, source_step=5
    )
    client.register(family="web-model", artifact_uri="s3://m/2", digest="sha256:" + "b" * 64)
    passed = {"passed": True, "reason": "eval ok", "stats": {"eval_loss": 0.5}}
    client.promote(family="web-model", version=1, expected_current=0, verdict=passed)
    client.promote(family="web-model", version=2, expected_current=1, verdict={**passed, "reason": "better"})
    client.rollback(family="web-model", version=1, expected_current=2, reason="regression")
    return Recorded(run_id=run_id, other_run_id=other_id)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    server = WebServer(str(tmp_path_factory.mktemp("web") / "ledger.db")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def grpc_client(served: WebServer) -> Iterator[LedgerClient]:
    with LedgerClient(served.address, principal="tests", timeout_s=10.0) as client:
        yield client


@pytest.fixture(scope="module")
def recorded(grpc_client: LedgerClient) -> Recorded:
    return record(grpc_client)


@pytest.fixture(scope="module")
def http(served: WebServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.url, timeout=10.0) as client:
        yield client


def fresh_key() -> str:
    return run_key({"web": str(uuid.uuid4())})
