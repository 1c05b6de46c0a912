"""/readyz and /metrics while PostgreSQL is down, with a real `trainledger serve` and a PostgreSQL
server of the test's own that it stops: /readyz answers 503 naming the storage, /metrics answers
200 with `trainledger_storage_up 0` (and no storage gauges), and the server logs the outage in
lines, never a traceback per scrape. Once PostgreSQL is back both answer as before.

Needs TRAINLEDGER_TEST_DATABASE_URL (and PostgreSQL's server binaries).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from tests.conftest import POSTGRES_URL

pytestmark = [
    pytest.mark.skipif(not POSTGRES_URL, reason="needs TRAINLEDGER_TEST_DATABASE_URL"),
    pytest.mark.timeout(240),
    pytest.mark.subprocess,
]

from tests.postgres.test_replicas import (  # noqa: E402
    NOT_SERVING,
    SERVING,
    _free_port,
    _health,
    _pg,
    _until,
    _with_schema,
    launch,
    own_server,
    serve,
)

__all__ = ["launch", "own_server"]


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_readyz_and_metrics_while_postgresql_is_down(own_server, launch) -> None:
    directory, server_url = own_server
    url = _with_schema(server_url, "opsoutage", connect_timeout=2)
    port = _free_port()
    (replica,) = launch(serve(url, "--no-http", "--metrics", f"127.0.0.1:{port}"))
    base = f"http://127.0.0.1:{port}"
    _until(lambda: _get(f"{base}/readyz")[0] == 200, 30, "ready")
    status, body = _get(f"{base}/metrics")
    assert status == 200 and "trainledger_storage_up 1.0" in body and "trainledger_log_head_position" in body
    _pg("pause", directory)
    try:
        _until(lambda: _health(replica.address) == NOT_SERVING, 15, "health NOT_SERVING")
        status, body = _get(f"{base}/readyz")
        assert status == 503, body
        answer = json.loads(body)
        assert answer["ready"] is False and answer["reason"].startswith("storage unavailable"), answer
        for _ in range(3):
            status, body = _get(f"{base}/metrics")
            assert status == 200, body
            assert "trainledger_storage_up 0.0" in body and "trainledger_log_head_position" not in body
    finally:
        _pg("resume", directory)
    _until(lambda: _health(replica.address) == SERVING, 30, "health SERVING again")
    _until(lambda: _get(f"{base}/readyz")[0] == 200, 30, "ready again")
    assert "trainledger_storage_up 1.0" in _get(f"{base}/metrics")[1]
    replica.stop()
    log = replica.log.read_text()
    assert "Traceback" not in log, log[-3000:]
    assert log.count("metrics: storage is unavailable") == 1, log[-3000:]
