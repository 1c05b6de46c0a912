"""A revocation by the command line ends the streams a running `trainledger serve` holds open for
the token, as real processes: a RecordSteps stream that keeps sending, a WatchRun and the
dashboard's live feed of the run (opened with the login cookie) all end with TOKEN_REVOKED once
`trainledger tokens revoke` has run on the database."""

from __future__ import annotations

import queue
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest

from services.runtime.auth import CACHE_S, STREAM_RECHECK_S
from services.web.access import TOKEN_COOKIE
from tests.e2e.test_serve_guards import Servers, environment, first_line, trainledger
from tests.service.support import batch, error_info, key
from trainledger.v1 import runs_pb2, runs_pb2_grpc

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180), pytest.mark.subprocess]

# How long a stream may stay open after the revocation before the test calls it open for good.
WAIT_S = 4 * (STREAM_RECHECK_S + CACHE_S)


def cli(*args: str, cwd: Path) -> str:
    command = [*trainledger(), *args]
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=environment(), timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def serve(servers: Servers, database: Path) -> tuple[str, str]:
    """A served ledger with its dashboard: the gRPC HOST:PORT and the dashboard's base URL."""
    process = subprocess.Popen(
        [*trainledger(), "serve", "--db", str(database), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=servers.directory,
        env=environment(),
    )
    servers.processes.append(process)
    assert process.stdout is not None
    # The dashboard's line follows the first at once (and may already sit in the same buffer).
    grpc_line, http_line = first_line(process), process.stdout.readline()
    address = re.search(r"serving on (127\.0\.0\.1:\d+)", grpc_line)
    dashboard = re.search(r"dashboard on (https?://127\.0\.0\.1:\d+)", http_line)
    assert address and dashboard, (grpc_line, http_line)
    return address.group(1), dashboard.group(1)


def ended_with(responses: Iterator[Any]) -> tuple[grpc.StatusCode, str]:
    try:
        for _ in responses:
            pass
    except grpc.RpcError as error:
        reason = error_info(error).reason if error.code() != grpc.StatusCode.DEADLINE_EXCEEDED else ""
        return error.code(), reason
    return grpc.StatusCode.OK, ""


def last_sse_event(response: httpx.Response) -> tuple[str, str]:
    """The type and data line of the last event of a feed that ends."""
    kind, last = "message", ("", "")
    for line in response.iter_lines():
        if line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            last = (kind, line[5:].strip())
    return last


def test_a_revocation_by_the_command_line_ends_the_tokens_open_streams(tmp_path: Path, servers: Servers) -> None:
    database = tmp_path / "ledger.db"
    created = cli("tokens", "create", "--db", str(database), "--principal", "alice", "--role", "trainer", cwd=tmp_path)
    token = created.splitlines()[0]
    token_id = token.split("_")[1]
    address, dashboard = serve(servers, database)
    metadata = (("authorization", f"Bearer {token}"),)
    with grpc.insecure_channel(address) as channel, httpx.Client(base_url=dashboard, timeout=WAIT_S) as http:
        runs = runs_pb2_grpc.RunsStub(channel)
        run_id = runs.OpenRun(runs_pb2.OpenRunRequest(run_key=key()), metadata=metadata).state.run.run_id
        runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a1"), metadata=metadata)
        requests: queue.SimpleQueue[runs_pb2.RecordStepsRequest | None] = queue.SimpleQueue()
        acks = runs.RecordSteps(iter(requests.get, None), metadata=metadata, timeout=WAIT_S + 30)
        requests.put(runs_pb2.RecordStepsRequest(sequence=1, batch=batch(run_id, range(1, 2))))
        assert next(acks).sequence == 1
        watch = runs.WatchRun(runs_pb2.WatchRunRequest(run_id=run_id), metadata=metadata, timeout=WAIT_S + 30)
        assert next(watch).state.run.run_id == run_id
        with http.stream("GET", f"/api/runs/{run_id}/live", cookies={TOKEN_COOKIE: token}) as feed:
            assert feed.status_code == 200
            stop = threading.Event()

            def keep_sending() -> None:  # A batch every 0.1 s, as a training loop would.
                sequence = 2
                while not stop.wait(0.1) and sequence < (WAIT_S + 20) * 10:
                    requests.put(runs_pb2.RecordStepsRequest(sequence=sequence, batch=batch(run_id, [sequence])))
                    sequence += 1
                requests.put(None)

            sender = threading.Thread(target=keep_sending, daemon=True)
            sender.start()
            try:
                revoked = cli("tokens", "revoke", token_id, "--db", str(database), "--reason", "audit", cwd=tmp_path)
                assert revoked.strip() == f"token {token_id} revoked"
                assert ended_with(acks) == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_REVOKED")
                assert ended_with(watch) == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_REVOKED")
                kind, data = last_sse_event(feed)
            finally:
                stop.set()
                sender.join(10)
    assert kind == "error" and '"reason":"TOKEN_REVOKED"' in data.replace(" ", "")
