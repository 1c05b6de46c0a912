"""`trainledger serve --log-format json --metrics HOST:PORT` as a real process: every log line is a
JSON object, refusals are logged with their method, principal and reason, and no token (nor an
Authorization value) ever reaches the log, even from failed authentication."""

from __future__ import annotations

import json
import re
import signal
import subprocess
from pathlib import Path

import grpc
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from ledger import Ledger
from tests.e2e.test_serve_guards import WAIT_S, environment, first_line, trainledger
from trainledger.v1 import runs_pb2, runs_pb2_grpc

pytestmark = pytest.mark.subprocess


def _serve(tmp_path: Path, database: Path, log: Path) -> tuple[subprocess.Popen[str], dict[str, str]]:
    with open(log, "w") as errors:
        process = subprocess.Popen(
            [
                *trainledger(),
                "serve",
                "--db",
                str(database),
                "--listen",
                "127.0.0.1:0",
                "--http",
                "127.0.0.1:0",
                "--metrics",
                "127.0.0.1:0",
                "--log-format",
                "json",
            ],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            cwd=tmp_path,
            env=environment(),
        )
    assert process.stdout is not None
    lines = [first_line(process)]  # The next two are printed at once after it.
    lines += [process.stdout.readline(), process.stdout.readline()]
    addresses = {}
    for line in lines:
        found = re.search(r"(serving|dashboard|metrics) on (?:https?://)?(127\.0\.0\.1:\d+)", line)
        assert found, (lines, log.read_text()[-2000:])
        addresses[found.group(1)] = found.group(2)
    return process, addresses


def test_json_logs_hold_refusals_and_never_a_token(tmp_path: Path) -> None:
    database = tmp_path / "ledger.db"
    ledger = Ledger.open(str(database))
    try:
        admin = ledger.issue_token(holder="root", role="admin").bearer
        trainer = ledger.issue_token(holder="trainer-1", role="trainer").bearer
    finally:
        ledger.close()
    token_id = admin.split("_")[1]
    forged = f"tl_{token_id}_{'x' * 43}"  # The admin's id with a wrong secret.
    log = tmp_path / "server.log"
    process, addresses = _serve(tmp_path, database, log)
    try:
        with grpc.insecure_channel(addresses["serving"]) as channel:
            runs = runs_pb2_grpc.RunsStub(channel)
            runs.ListRuns(runs_pb2.ListRunsRequest(), timeout=10, metadata=(("authorization", f"Bearer {admin}"),))
            for metadata in (
                (("authorization", f"Bearer {forged}"),),
                (("authorization", f"Bearer {trainer}"),),
                (),
                # A token pasted where a principal goes is ignored, and logged without its secret.
                (("authorization", f"Bearer {admin}"), ("x-principal", f"Bearer {trainer}")),
            ):
                try:
                    runs.GetRunState(runs_pb2.GetRunStateRequest(run_id="0" * 32), timeout=10, metadata=metadata)
                except grpc.RpcError:
                    pass
                try:
                    runs.ListRuns(runs_pb2.ListRunsRequest(), timeout=10, metadata=metadata)
                except grpc.RpcError:
                    pass
        dashboard = f"http://{addresses['dashboard']}"
        assert httpx.get(f"{dashboard}/api/runs", headers={"authorization": f"Bearer {forged}"}).status_code == 401
        assert httpx.get(f"{dashboard}/api/runs", cookies={"trainledger_token": forged}).status_code == 401
        scraped = httpx.get(f"http://{addresses['metrics']}/metrics", timeout=10)
        refusals = {
            sample.labels["reason"]: sample.value
            for family in text_string_to_metric_families(scraped.text)
            for sample in family.samples
            if sample.name == "trainledger_auth_refusals_total"
        }
        # gRPC: forged twice, trainer's ListRuns once, missing twice; HTTP: forged twice.
        assert refusals == {
            "TOKEN_INVALID": 4,
            "ROLE_NOT_ALLOWED": 1,
            "TOKEN_MISSING": 2,
            "TOKEN_EXPIRED": 0,
            "TOKEN_REVOKED": 0,
            "OUTSIDE_SCOPE": 0,
        }
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=WAIT_S) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=WAIT_S)
        assert process.stdout is not None
        process.stdout.close()
    text = log.read_text()
    for secret in (admin, trainer, forged, admin.split("_", 2)[2], trainer.split("_", 2)[2], "x" * 43):
        assert secret not in text
    assert not re.search(r"(?i)bearer\s+(?!<redacted>)\S", text), text
    entries = [json.loads(line) for line in text.splitlines()]
    assert all({"time", "level", "event"} <= entry.keys() for entry in entries)
    assert any(entry["event"].startswith("ready") for entry in entries)
    # The startup lines on stdout are events of the log too.
    assert any(entry["event"].startswith(f"serving on {addresses['serving']}") for entry in entries)
    assert any(entry["event"].startswith("metrics on http://") for entry in entries)
    role_refused = [entry for entry in entries if entry.get("reason") == "ROLE_NOT_ALLOWED"]
    assert [(entry["principal"], entry["token_id"]) for entry in role_refused] == [("trainer-1", trainer.split("_")[1])]
    refused = [entry for entry in entries if entry.get("reason") == "TOKEN_INVALID" and entry["method"][0] == "/"]
    # The dashboard's refusals are logged as the calls' are.
    http_refused = [entry for entry in entries if entry.get("reason") == "TOKEN_INVALID" and entry not in refused]
    assert [(entry["method"], entry["code"], entry["level"]) for entry in http_refused] == [
        ("GET /api/runs", 401, "warning")
    ] * 2
    assert len(refused) == 2 and {entry["method"] for entry in refused} == {
        "/trainledger.v1.Runs/GetRunState",
        "/trainledger.v1.Runs/ListRuns",
    }
    assert all(entry["level"] == "warning" and entry["latency_ms"] >= 0 for entry in refused)
    missing = [entry for entry in entries if entry.get("reason") == "RUN_NOT_FOUND"]
    assert sorted(entry["principal"] for entry in missing) == ["root", "trainer-1"]
    assert {entry["run_id"] for entry in missing} == {"0" * 32}


def test_a_token_glued_to_other_text_never_reaches_the_log(tmp_path: Path) -> None:
    database = tmp_path / "ledger.db"
    ledger = Ledger.open(str(database))
    try:
        admin = ledger.issue_token(holder="root", role="admin").bearer
    finally:
        ledger.close()
    log = tmp_path / "server.log"
    process, addresses = _serve(tmp_path, database, log)
    glued = [f"run{admin}", f"0{admin}", f"run_{admin}"]  # A token pasted onto a run id's prefix.
    try:
        with grpc.insecure_channel(addresses["serving"]) as channel:
            runs = runs_pb2_grpc.RunsStub(channel)
            for run_id in glued:
                try:
                    runs.GetRunState(
                        runs_pb2.GetRunStateRequest(run_id=run_id),
                        timeout=10,
                        metadata=(("authorization", f"Bearer {admin}"),),
                    )
                except grpc.RpcError as error:
                    assert error.code() == grpc.StatusCode.NOT_FOUND
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=WAIT_S) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=WAIT_S)
        assert process.stdout is not None
        process.stdout.close()
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    logged = [entry["run_id"] for entry in entries if entry.get("reason") == "RUN_NOT_FOUND"]
    assert len(logged) == len(glued)
    assert admin.split("_", 2)[2] not in log.read_text()
    assert all(run_id.endswith("_<redacted>") for run_id in logged), logged
