"""Read-only CLI commands run against the SQLite file of a serving ledger while it takes writes:
they never project, so the server's views stay exactly what a rebuild from the log gives."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import grpc
import pytest

from tests.e2e.test_serve_guards import Servers, environment, trainledger
from trainledger.v1 import runs_pb2, runs_pb2_grpc, spend_pb2, spend_pb2_grpc

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240), pytest.mark.subprocess]

PAIRS = 50
READS = 3


def cli(directory: Path, *args: str) -> str:
    done = subprocess.run(
        [*trainledger(), *args], capture_output=True, text=True, cwd=directory, env=environment(), timeout=60
    )
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def test_read_commands_beside_a_serving_ledger_leave_its_views_right(tmp_path: Path) -> None:
    database = tmp_path / "ledger.db"
    servers = Servers(tmp_path)
    try:
        server, address = servers.start(database)
        channel = grpc.insecure_channel(address)
        runs, spend = runs_pb2_grpc.RunsStub(channel), spend_pb2_grpc.SpendStub(channel)
        opened = runs.OpenRun(runs_pb2.OpenRunRequest(run_key="beside", cap_usd_micro=10**9), timeout=10)
        run_id = opened.state.run.run_id
        failures: list[BaseException] = []
        stop = threading.Event()
        written = [0]

        def writer() -> None:
            try:
                while not stop.is_set() or written[0] < PAIRS:
                    number = written[0]
                    spend.Reserve(
                        spend_pb2.ReserveRequest(account=run_id, reservation_id=f"r{number}", amount_usd_micro=140),
                        timeout=10,
                    )
                    spend.Commit(
                        spend_pb2.CommitRequest(account=run_id, reservation_id=f"r{number}", actual_usd_micro=100),
                        timeout=10,
                    )
                    written[0] += 1
            except BaseException as error:  # Reported in the test's thread.
                failures.append(error)

        thread = threading.Thread(target=writer)
        thread.start()
        try:
            for _ in range(READS):
                cli(tmp_path, "spend", "show", run_id, "--db", str(database), "--json")
                cli(tmp_path, "runs", "list", "--db", str(database), "--json")
        finally:
            stop.set()
            thread.join()
        assert not failures, failures
        pairs = written[0]

        head = spend.GetAccount(spend_pb2.GetAccountRequest(account=run_id), timeout=10)
        last = spend.Commit(
            spend_pb2.CommitRequest(account=run_id, reservation_id=f"r{pairs - 1}", actual_usd_micro=100), timeout=10
        )
        served = spend.GetAccount(
            spend_pb2.GetAccountRequest(account=run_id, min_position=last.position), timeout=10
        ).account
        assert (served.committed_usd_micro, served.pending_usd_micro) == (pairs * 100, 0), head
        shown = json.loads(cli(tmp_path, "spend", "show", run_id, "--db", str(database), "--json"))
        channel.close()
        server.terminate()
        server.wait(timeout=30)

        # With the server gone, a rebuild from the log gives the very totals the server showed.
        cli(tmp_path, "rebuild", "--db", str(database))
        rebuilt = json.loads(cli(tmp_path, "spend", "show", run_id, "--db", str(database), "--json"))
        assert rebuilt == shown
        assert (rebuilt["account"]["committed_usd_micro"], rebuilt["account"]["pending_usd_micro"]) == (pairs * 100, 0)
    finally:
        servers.kill_all()
