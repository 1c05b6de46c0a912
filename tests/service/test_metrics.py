"""Prometheus metrics over the wire: a known workload through real gRPC stubs and HTTP, then
/metrics scraped on the dashboard's port and on an address of its own, parsed with
prometheus-client's parser, and the counters checked by value."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from ledger import Ledger
from services.server import create_server
from tests.service.support import Stubs, batch, key
from trainledger.v1 import runs_pb2, spend_pb2

PRINCIPAL = "metrics-tester@example.org"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


class Server:
    """A started server with the dashboard and /metrics on an address of its own."""

    def __init__(self, ledger: Ledger, *, auth: bool = False) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server = self.run(self._start(ledger, auth))
        self.stubs = Stubs(grpc.insecure_channel(self.server.address))

    async def _start(self, ledger: Ledger, auth: bool) -> Any:
        server, _ = create_server("127.0.0.1:0", ledger=ledger, auth=auth, http="127.0.0.1:0", metrics="127.0.0.1:0")
        await server.start()
        return server

    def run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(30)

    def close(self) -> None:
        self.stubs.channel.close()
        self.run(self.server.stop(1.0))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, Any]]]:
    """Open a run, start an attempt, append 3 batches of 10 steps, ask for an unknown run once,
    open an account and hold $0.25 on it; one GET /api/runs."""
    ledger = Ledger.open(str(tmp_path_factory.mktemp("metrics") / "ledger.db"))
    served = Server(ledger)
    try:
        stubs, who = served.stubs, (("x-principal", PRINCIPAL),)
        opened = stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=key()), timeout=10, metadata=who)
        run_id = opened.state.run.run_id
        stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a1"), timeout=10, metadata=who)
        for first in (0, 10, 20):
            stubs.runs.AppendSteps(
                runs_pb2.AppendStepsRequest(batch=batch(run_id, range(first, first + 10))), timeout=10, metadata=who
            )
        with pytest.raises(grpc.RpcError) as refused:
            stubs.runs.GetRunState(runs_pb2.GetRunStateRequest(run_id="0" * 32), timeout=10, metadata=who)
        assert refused.value.code() == grpc.StatusCode.NOT_FOUND
        stubs.spend.OpenAccount(spend_pb2.OpenAccountRequest(account="lab", cap_usd_micro=10_000_000), timeout=10)
        stubs.spend.Reserve(
            spend_pb2.ReserveRequest(account="lab", reservation_id="hold-1", amount_usd_micro=250_000), timeout=10
        )
        with httpx.Client(base_url=f"http://{served.server.http_address}", timeout=10) as http:
            assert http.get("/api/runs").status_code == 200
        yield served, {"run_id": run_id}
    finally:
        served.close()
        ledger.close()


def scrape(url: str, headers: dict[str, str] | None = None) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = httpx.get(url, headers=headers or {}, timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def grpc_calls(samples: dict[Any, float], method: str, code: str = "OK") -> float:
    service, name = method.split("/")
    labels = {"service": f"trainledger.v1.{service}", "method": name, "code": code}
    return value(samples, "trainledger_grpc_requests_total", **labels)


def test_counters_hold_the_workload(workload: tuple[Server, dict[str, Any]]) -> None:
    served, _ = workload
    samples = scrape(f"http://{served.server.http_address}/metrics")
    assert grpc_calls(samples, "Runs/OpenRun") == 1
    assert grpc_calls(samples, "Runs/StartAttempt") == 1
    assert grpc_calls(samples, "Runs/AppendSteps") == 3
    assert grpc_calls(samples, "Runs/GetRunState", "NOT_FOUND") == 1
    assert grpc_calls(samples, "Spend/Reserve") == 1
    latency = "trainledger_grpc_request_duration_seconds_count"
    assert value(samples, latency, service="trainledger.v1.Runs", method="AppendSteps") == 3
    assert value(samples, "trainledger_steps_ingested_total") == 30
    # Every event of this fresh ledger was appended by this server.
    assert value(samples, "trainledger_events_appended_total") == value(samples, "trainledger_log_head_position")
    assert value(samples, "trainledger_holds_pending") == 1
    assert value(samples, "trainledger_holds_pending_usd_micro") == 250_000
    assert value(samples, "trainledger_http_requests_total", route="/api/runs", code="200") == 1
    assert value(samples, "trainledger_sealed_head_position") == value(samples, "trainledger_log_head_position")
    assert value(samples, "trainledger_database_size_bytes") > 0
    assert value(samples, "trainledger_streams_open") == 0
    lags = {labels: v for (name, labels), v in samples.items() if name == "trainledger_projector_lag_events"}
    assert lags, "a lag per view"
    assert value(samples, "trainledger_group_commit_commands_count") >= 1


def test_no_label_holds_an_id_or_a_principal(workload: tuple[Server, dict[str, Any]]) -> None:
    served, ids = workload
    samples = scrape(f"http://{served.server.http_address}/metrics")
    values = {v for (_, labels) in samples for _, v in labels}
    assert values, "labels were scraped"
    for label in values:
        assert not UUID.search(label), label
        assert ids["run_id"] not in label and "lab" != label and "hold-1" not in label
        assert "@" not in label and "metrics-tester" not in label and "anonymous" not in label


def test_metrics_on_an_address_of_their_own(workload: tuple[Server, dict[str, Any]]) -> None:
    served, _ = workload
    samples = scrape(f"http://{served.server.metrics_address}/metrics")
    assert grpc_calls(samples, "Runs/AppendSteps") == 3
    assert httpx.get(f"http://{served.server.metrics_address}/healthz", timeout=10).json() == {"alive": True}
    assert httpx.get(f"http://{served.server.metrics_address}/readyz", timeout=10).status_code == 200


def test_with_auth_metrics_are_a_wide_read(tmp_path: Any) -> None:
    ledger = Ledger.open(str(tmp_path / "ledger.db"))
    served = Server(ledger, auth=True)
    try:
        ledger.open_account(account="team")
        operator = ledger.issue_token(holder="ops-1", role="operator").bearer
        trainer = ledger.issue_token(holder="trainer-1", role="trainer").bearer
        scoped = ledger.issue_token(holder="ops-team", role="operator", account="team").bearer
        url = f"http://{served.server.http_address}/metrics"
        missing = httpx.get(url, timeout=10)
        assert missing.status_code == 401 and missing.json()["error"]["reason"] == "TOKEN_MISSING"
        assert httpx.get(url, headers={"authorization": f"Bearer {trainer}"}, timeout=10).status_code == 403
        assert httpx.get(url, headers={"authorization": f"Bearer {scoped}"}, timeout=10).status_code == 403
        samples = scrape(url, {"authorization": f"Bearer {operator}"})
        assert value(samples, "trainledger_auth_refusals_total", reason="TOKEN_MISSING") == 1
        assert value(samples, "trainledger_auth_refusals_total", reason="ROLE_NOT_ALLOWED") == 1
        assert value(samples, "trainledger_auth_refusals_total", reason="OUTSIDE_SCOPE") == 1
        # Its own address is for the scraper alone: no token asked.
        assert httpx.get(f"http://{served.server.metrics_address}/metrics", timeout=10).status_code == 200
    finally:
        served.close()
        ledger.close()


def test_the_sample_dashboard_asks_only_for_metrics_the_server_has(workload: tuple[Server, dict[str, Any]]) -> None:
    served, _ = workload
    response = httpx.get(f"http://{served.server.http_address}/metrics", timeout=10)
    families = {family.name for family in text_string_to_metric_families(response.text)}
    dashboard = json.loads((Path(__file__).resolve().parents[2] / "docs" / "grafana-dashboard.json").read_text())
    asked = {
        re.sub(r"_(bucket|sum|count|total)$", "", name)
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"trainledger_[a-z_]+", target["expr"])
    }
    pool = {name for name in asked if name.startswith("trainledger_database_pool")}  # PostgreSQL only.
    assert len(asked) > 15 and asked - pool <= families, sorted(asked - pool - families)


def test_storage_gauges_on_each_backend(database: str) -> None:
    """SQLite: the file's and the WAL's size; PostgreSQL: the views' pool."""
    from services.runtime.metrics import _storage_gauges

    ledger = Ledger.open(database)
    try:
        names = {family.name for family in _storage_gauges(ledger.storage)}
    finally:
        ledger.close()
    if database.startswith("postgresql"):
        assert names == {
            "trainledger_database_pool_connections",
            "trainledger_database_pool_max",
            "trainledger_database_pool_waiting",
        }
    else:
        assert names == {"trainledger_database_size_bytes", "trainledger_database_wal_size_bytes"}


def test_a_healthy_run_counts_its_record_steps_stream_ok(tmp_path: Path) -> None:
    """A recorder that logs, flushes and closes ends its RecordSteps stream by half-closing it:
    the server counts the call OK, never CANCELLED."""
    from clients import LedgerClient, RunRecorder

    ledger = Ledger.open(str(tmp_path / "ledger.db"))
    served = Server(ledger)
    try:
        with LedgerClient(served.server.address, principal=PRINCIPAL, timeout_s=10.0) as client:
            recorder = RunRecorder.open(client, run_key="healthy", batch_steps_max=10, batch_interval_s=0.01)
            for step in range(50):
                recorder.log(step, loss=0.5)
            assert recorder.flush(30)
            recorder.close()
        samples = scrape(f"http://{served.server.http_address}/metrics")
        calls = {
            dict(labels)["code"]: count
            for (name, labels), count in samples.items()
            if name == "trainledger_grpc_requests_total" and dict(labels).get("method") == "RecordSteps"
        }
        assert calls == {"OK": 1.0}, calls
    finally:
        served.close()
        ledger.close()


def test_a_fresh_server_exports_zeros_process_and_build_info(tmp_path: Path) -> None:
    """Before any refusal or Verify the bounded label sets read 0 (a dashboard shows 0, not "No
    data"); the process' own metrics and the build's version and schema are exported."""
    from importlib.metadata import version

    ledger = Ledger.open(str(tmp_path / "ledger.db"))
    served = Server(ledger)
    try:
        samples = scrape(f"http://{served.server.http_address}/metrics")
    finally:
        served.close()
        ledger.close()
    refusals = "TOKEN_MISSING TOKEN_INVALID TOKEN_EXPIRED TOKEN_REVOKED ROLE_NOT_ALLOWED OUTSIDE_SCOPE".split()
    for reason in refusals:
        assert value(samples, "trainledger_auth_refusals_total", reason=reason) == 0, reason
    assert value(samples, "trainledger_verify_runs_total", code="OK") == 0
    assert value(samples, "process_cpu_seconds_total") > 0
    assert value(samples, "process_resident_memory_bytes") > 0
    assert value(samples, "trainledger_build_info", version=version("trainledger"), schema="1") == 1


def test_metrics_on_every_interface_is_logged_as_unauthenticated(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    ledger = Ledger.open(str(tmp_path / "ledger.db"))

    async def start_and_stop() -> None:
        server, _ = create_server("127.0.0.1:0", ledger=ledger, http=None, metrics="0.0.0.0:0")
        await server.start()
        await server.stop(1.0)

    try:
        with caplog.at_level(logging.INFO, logger="trainledger.services"):
            asyncio.run(start_and_stop())
    finally:
        ledger.close()
    lines = [r.getMessage() for r in caplog.records if "unauthenticated" in r.getMessage()]
    assert len(lines) == 1 and "0.0.0.0:" in lines[0], lines
