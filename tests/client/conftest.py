"""Fixtures for the client tests: a real server in-process on 127.0.0.1, restartable on the same
port and database, and clients pointed at it with quick retries and a short outage budget."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from clients import LedgerClient, RetryPolicy, run_key
from tests.client.server_thread import ServerThread

# A short outage budget: the tests that stop the ledger expect Unavailable soon.
QUICK_RETRIES = RetryPolicy(attempts=5, initial_backoff_s=0.02, max_backoff_s=0.1, total_s=2.0)


@pytest.fixture
def server(tmp_path) -> Iterator[ServerThread]:
    server = ServerThread(str(tmp_path / "ledger.db")).start()
    yield server
    server.stop()


@pytest.fixture
def client(server: ServerThread) -> Iterator[LedgerClient]:
    with LedgerClient(server.address, principal="tests", timeout_s=10.0, retries=QUICK_RETRIES) as client:
        yield client


def new_run(client: LedgerClient, *, cap_usd_micro: int | None = None, label: str = "test") -> tuple[str, int]:
    """A fresh run with its first attempt started: (run_id, attempt)."""
    opened = client.open_run(run_key=run_key({"test": str(uuid.uuid4())}), name="test", cap_usd_micro=cap_usd_micro)
    run_id = opened.state.run.run_id
    return run_id, client.start_attempt(run_id=run_id, label=label).attempt


def series_steps(client: LedgerClient, run_id: str, *, include_superseded: bool = False) -> list[int]:
    """Every step of the run's series, all pages."""
    steps: list[int] = []
    from_step: int | None = 0
    while from_step is not None:
        page = client.get_series(
            run_id=run_id, from_step=from_step, page_size=10_000, include_superseded=include_superseded
        )
        steps += page.steps
        from_step = page.next_from_step
    return steps
