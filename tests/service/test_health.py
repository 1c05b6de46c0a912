"""Health follows storage: NOT_SERVING while the ledger's storage answers Unavailable (or does
not answer at all), SERVING again by itself once it answers. A real outage of PostgreSQL is in
tests/postgres/test_replicas.py; here the storage read is made to fail."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ledger import Ledger
from ledger.domain.errors import Unavailable
from services import lifecycle as server_module
from services.server import SERVICE_NAMES
from tests.service.support import Served

SERVING, NOT_SERVING = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING


@pytest.fixture
def served(database: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    monkeypatch.setattr(server_module, "PROBE_INTERVAL_S", 0.05)
    monkeypatch.setattr(server_module, "PROBE_TIMEOUT_S", 0.5)
    ledger = Ledger.open(database)
    served = Served(ledger)
    try:
        yield served
    finally:
        served.close()
        ledger.close()


def _statuses(channel: grpc.Channel) -> set[int]:
    stub = health_pb2_grpc.HealthStub(channel)
    return {stub.Check(health_pb2.HealthCheckRequest(service=name), timeout=5).status for name in ("", *SERVICE_NAMES)}


def _until(predicate: Callable[[], bool], timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.02)


def test_health_turns_not_serving_while_storage_is_unavailable_and_back(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    channel = served.stubs.channel
    assert _statuses(channel) == {SERVING}
    head = served.ledger.reader.head

    def unavailable() -> int:
        raise Unavailable("storage is unavailable: the test says so")

    monkeypatch.setattr(served.ledger.reader, "head", unavailable)
    _until(lambda: _statuses(channel) == {NOT_SERVING})
    monkeypatch.setattr(served.ledger.reader, "head", head)
    _until(lambda: _statuses(channel) == {SERVING})


def test_a_probe_that_hangs_counts_as_unavailable(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    channel = served.stubs.channel
    release = threading.Event()
    head = served.ledger.reader.head

    def hanging() -> int:
        release.wait(10)
        return head()

    monkeypatch.setattr(served.ledger.reader, "head", hanging)
    try:
        _until(lambda: _statuses(channel) == {NOT_SERVING})
    finally:
        monkeypatch.setattr(served.ledger.reader, "head", head)
        release.set()
    _until(lambda: _statuses(channel) == {SERVING})
