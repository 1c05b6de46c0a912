"""Readiness over the wire: a server whose views were dropped (as `trainledger rebuild` does first)
is alive but not ready (gRPC health NOT_SERVING, /readyz 503) until its views catch up with the
log, then ready (SERVING, /readyz 200), saying so in one log line."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ledger import Ledger
from ledger.views.schema import VIEWS
from services.runtime.readiness import Readiness, unapplied_age_s
from services.server import create_server

WAIT_S = 30.0
SERVING, NOT_SERVING = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING


def _health(address: str) -> int:
    with grpc.insecure_channel(address) as channel:
        return health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10).status


def _until(check: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"not {what} within {WAIT_S:.0f} s")
        time.sleep(0.1)


def test_readiness_flips_once_the_views_catch_up_after_a_rebuild(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = str(tmp_path / "ledger.db")
    writer = Ledger.open(path)
    for number in range(20):
        writer.open_account(account=f"team-{number}")
    writer.close()
    # Nobody projects this ledger until the test says so: its views start over from nothing.
    ledger = Ledger.open(path, project=False)
    ledger.storage.drop(VIEWS)
    ledger.projector.positions = ledger.storage.tracking_positions()
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def run(coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result(30)

    async def start() -> Any:
        server, _ = create_server("127.0.0.1:0", ledger=ledger, http="127.0.0.1:0")
        server.readiness.lag_events_max = 5
        await server.start()
        return server

    caplog.set_level(logging.INFO, logger="trainledger.services")
    server = run(start())
    try:
        readyz = f"http://{server.http_address}/readyz"
        assert _health(server.address) == NOT_SERVING
        answer = httpx.get(readyz, timeout=10)
        assert answer.status_code == 503 and "behind" in answer.json()["reason"], answer.text
        assert httpx.get(f"http://{server.http_address}/healthz", timeout=10).status_code == 200
        assert not [r for r in caplog.records if r.getMessage().startswith("ready:")]

        ledger.projector.catch_up()
        _until(lambda: _health(server.address) == SERVING, "SERVING")
        _until(lambda: httpx.get(readyz, timeout=10).status_code == 200, "ready")
        assert len([r for r in caplog.records if r.getMessage().startswith("ready:")]) == 1
    finally:
        run(server.stop(1.0))
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
        ledger.close()


def test_a_broken_tail_is_not_ready(tmp_path: Path) -> None:
    """A seal changed among the newest events: the views are caught up, the tail is not intact."""
    path = str(tmp_path / "ledger.db")
    ledger = Ledger.open(path)
    try:
        for number in range(120):  # Longer than the tail checked: it starts from a seal.
            ledger.open_account(account=f"team-{number}")
        head = ledger.head()
        ledger.projector.wait(head, 10)
        assert Readiness(ledger).update() is True
        with sqlite3.connect(path) as connection:
            connection.execute("UPDATE stored_seals SET digest = ? WHERE position = ?", (bytes(32), head - 1))
        readiness = Readiness(ledger)  # As a server starting on the file checks it.
        assert readiness.update() is False
        assert "tail is broken" in readiness.why
    finally:
        ledger.close()


def test_readyz_follows_health_when_the_readiness_check_fails(tmp_path: Path) -> None:
    """The views' tracking table gone under a ready server: gRPC health turns NOT_SERVING, and
    /readyz says not ready with it rather than the last answer it had."""
    path = str(tmp_path / "ledger.db")
    ledger = Ledger.open(path)
    ledger.open_account(account="team")
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def run(coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result(30)

    async def start() -> Any:
        server, _ = create_server("127.0.0.1:0", ledger=ledger, http="127.0.0.1:0")
        await server.start()
        return server

    server = run(start())
    try:
        readyz = f"http://{server.http_address}/readyz"
        _until(lambda: httpx.get(readyz, timeout=10).status_code == 200, "ready")
        with sqlite3.connect(path) as connection:
            connection.execute("ALTER TABLE view_tracking RENAME TO view_tracking_moved")
        _until(lambda: _health(server.address) == NOT_SERVING, "NOT_SERVING")
        answer = httpx.get(readyz, timeout=10)
        assert answer.status_code == 503, answer.text
        assert "view_tracking" in answer.json()["reason"], answer.text
        with sqlite3.connect(path) as connection:
            connection.execute("ALTER TABLE view_tracking_moved RENAME TO view_tracking")
        _until(lambda: _health(server.address) == SERVING, "SERVING again")
        _until(lambda: httpx.get(readyz, timeout=10).status_code == 200, "ready again")
    finally:
        run(server.stop(1.0))
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def test_views_that_stopped_following_are_not_ready_once_the_lag_is_old(tmp_path: Path) -> None:
    """No projection worker (`serve --no-project` alone): a few events the views never apply are
    far below the events' bound, but once the oldest of them is older than the bound in seconds
    the server is not ready, naming the age and that no projection worker may be running."""
    now = [datetime(2026, 12, 2, 8, 0, tzinfo=UTC)]
    path = str(tmp_path / "ledger.db")
    writer = Ledger.open(path, clock=lambda: now[0])
    try:
        writer.open_account(account="before")
        writer.projector.wait(writer.head(), 10)
    finally:
        writer.close()
    ledger = Ledger.open(path, project=False, clock=lambda: now[0])
    try:
        readiness = Readiness(ledger, lag_s_max=30.0)
        assert readiness.update() is True
        ledger.open_account(account="after")  # Logged; no view applies it.
        assert ledger.head() > min(ledger.storage.tracking_positions().values())
        now[0] += timedelta(seconds=10)
        assert readiness.update() is True  # Behind, but not for long.
        now[0] += timedelta(seconds=60)
        assert readiness.update() is False
        assert "70 s" in readiness.why and "projection worker" in readiness.why, readiness.why
    finally:
        ledger.close()


def test_the_age_of_an_unapplied_bill_is_the_age_of_its_event(tmp_path: Path) -> None:
    """The oldest event the views have not applied may be a bill of thousands of lines: its age
    is read from its time all the same."""
    now = [datetime(2026, 12, 2, 8, 0, tzinfo=UTC)]
    ledger = Ledger.open(str(tmp_path / "ledger.db"), project=False, clock=lambda: now[0])
    try:
        start = datetime(2026, 12, 1, tzinfo=UTC)
        lines = [
            {"line_id": f"line-{n}", "interval_start": start, "interval_end": start + timedelta(hours=1)}
            for n in range(5_000)
        ]
        ledger.record_billed_usage(provider="tinker", lines=lines[:1])
        position = ledger.head()
        assert unapplied_age_s(ledger, position) == 0.0  # Nothing after it.
        now[0] += timedelta(seconds=5)
        ledger.record_billed_usage(provider="tinker", lines=lines[1:])
        now[0] += timedelta(seconds=42)
        assert unapplied_age_s(ledger, position) == 42.0
        assert unapplied_age_s(ledger, 0) == 47.0  # The bill's first event.
    finally:
        ledger.close()
