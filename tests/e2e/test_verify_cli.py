"""The chain end to end, with real processes: `trainledger verify` beside a serving ledger and on
a file edited after its server stopped (exit 0 / 1, --expect-head, 2 for usage), and an export of
a served ledger checked by examples/check_export.py, which knows nothing of trainledger, with the
copies of that export that an editor could make each refused at the right position."""

from __future__ import annotations

import base64
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import grpc
import msgspec
import pytest

from tests.e2e.test_serve_guards import Servers, environment, trainledger
from trainledger.v1 import common_pb2, events_pb2, events_pb2_grpc, runs_pb2, runs_pb2_grpc, spend_pb2, spend_pb2_grpc

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

CHECKER = Path(__file__).resolve().parents[2] / "examples" / "check_export.py"
# What write_history records: a run opened (its run and its account), an attempt, five step
# batches, a reservation and its commit, and the finish.
EVENTS = 11


def run(directory: Path, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, cwd=directory, env=environment(), timeout=120)


def cli(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run(directory, *trainledger(), *args)


def write_history(address: str) -> int:
    """Events written over the wire; the position of the last."""
    channel = grpc.insecure_channel(address)
    runs, spend = runs_pb2_grpc.RunsStub(channel), spend_pb2_grpc.SpendStub(channel)
    opened = runs.OpenRun(runs_pb2.OpenRunRequest(run_key="chained", name="chained", cap_usd_micro=10**6), timeout=10)
    run_id = opened.state.run.run_id
    runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a1"), timeout=10)
    for first in range(0, 50, 10):
        batch = common_pb2.StepBatch(run_id=run_id, attempt=1, steps=list(range(first, first + 10)))
        batch.metrics.add(name="loss", values=[1.0 / (first + 1)] * 10)
        runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch), timeout=10)
    spend.Reserve(spend_pb2.ReserveRequest(account=run_id, reservation_id="c1", amount_usd_micro=500), timeout=10)
    spend.Commit(spend_pb2.CommitRequest(account=run_id, reservation_id="c1", actual_usd_micro=400), timeout=10)
    last = runs.FinishRun(
        runs_pb2.FinishRunRequest(run_id=run_id, attempt=1, status=common_pb2.RUN_STATUS_DONE), timeout=10
    )
    channel.close()
    return last.position


def head_of(address: str) -> tuple[int, str]:
    """GetHead over the wire."""
    with grpc.insecure_channel(address) as channel:
        head = events_pb2_grpc.EventsStub(channel).GetHead(events_pb2.GetHeadRequest(), timeout=10)
    return head.position, head.digest


def served_ledger(tmp_path: Path, servers: Servers) -> tuple[Path, str, tuple[int, str]]:
    database = tmp_path / "ledger.db"
    _, address = servers.start(database)
    last = write_history(address)
    assert last == EVENTS
    return database, address, head_of(address)


@pytest.mark.subprocess
def test_verify_beside_a_server_then_on_the_file_edited_after_it_stopped(tmp_path: Path, servers: Servers) -> None:
    database, _, (position, digest) = served_ledger(tmp_path, servers)
    assert position == EVENTS and len(digest) == 64
    verified = cli(tmp_path, "verify", "--db", str(database))
    assert (verified.returncode, verified.stdout) == (0, f"OK: {EVENTS} events verified, head {EVENTS}:{digest}\n")
    assert cli(tmp_path, "verify", "--db", str(database), "--expect-head", f"{EVENTS}:{digest}").returncode == 0
    assert cli(tmp_path, "verify", "--db", str(database), "--no-views").returncode == 0
    other = "0" * 63 + "1"
    differs = cli(tmp_path, "verify", "--db", str(database), "--expect-head", f"{EVENTS}:{other}")
    assert differs.returncode == 1 and "HEAD_DIFFERS" in differs.stdout, differs
    assert differs.stderr.startswith("trainledger: the log does not verify") and "Traceback" not in differs.stderr
    for usage in (f"{EVENTS}", f"0:{digest}", f"{EVENTS}:{'g' * 64}"):
        wrong = cli(tmp_path, "verify", "--db", str(database), "--expect-head", usage)
        assert wrong.returncode == 2 and "POSITION:DIGEST" in wrong.stderr, (usage, wrong)
    missing = cli(tmp_path, "verify", "--db", str(tmp_path / "none.db"))
    assert missing.returncode == 2 and not (tmp_path / "none.db").exists()
    as_json = json.loads(cli(tmp_path, "verify", "--db", str(database), "--json").stdout)
    assert as_json["ok"] is True and as_json["head"] == {"position": EVENTS, "digest": digest}

    servers.kill_all()  # kill -9: the log is what was acknowledged.
    with sqlite3.connect(database) as connection:
        state = connection.execute("SELECT state FROM stored_events WHERE rowid = 5").fetchone()[0]
        fields = msgspec.msgpack.decode(state)
        fields["request_id"] = "forged"
        connection.execute("UPDATE stored_events SET state = ? WHERE rowid = 5", (msgspec.msgpack.encode(fields),))
    broken = cli(tmp_path, "verify", "--db", str(database), "--no-views")
    assert broken.returncode == 1 and broken.stdout.startswith("BROKEN at position 5: EVENT_CHANGED"), broken
    as_json = json.loads(cli(tmp_path, "verify", "--db", str(database), "--no-views", "--json").stdout)
    assert (as_json["ok"], as_json["broken_at"], as_json["problem"]) == (False, 5, "EVENT_CHANGED")
    assert as_json["head"]["position"] == 4
    # The head written down before the edit is no longer reached.
    assert cli(tmp_path, "verify", "--db", str(database), "--expect-head", f"{EVENTS}:{digest}").returncode == 1


def check(directory: Path, export: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # -I: the checker runs isolated, with nothing of this repository importable.
    return run(directory, sys.executable, "-I", str(CHECKER), str(export), *args)


@pytest.mark.subprocess
def test_an_export_of_a_served_ledger_checks_out_without_trainledger(tmp_path: Path, servers: Servers) -> None:
    database, _, (position, digest) = served_ledger(tmp_path, servers)
    exported = cli(tmp_path, "events", "export", "--db", str(database))  # Beside the server: read-only.
    assert exported.returncode == 0, exported
    lines = exported.stdout.splitlines()
    events = [json.loads(line) for line in lines]
    assert [e["position"] for e in events] == list(range(1, EVENTS + 1))
    assert events[-1]["digest"] == digest and all(e["topic"].endswith(":" + e["type"]) for e in events)
    export = tmp_path / "log.jsonl"
    export.write_text(exported.stdout)

    checked = check(tmp_path, export)
    assert (checked.returncode, checked.stdout) == (0, f"OK: head {position}:{digest}\n"), checked
    assert check(tmp_path, export, "--expect-head", f"{position}:{digest}").returncode == 0
    assert check(tmp_path, export, "--expect-head", f"3:{events[2]['digest']}").returncode == 0
    elsewhere = check(tmp_path, export, "--expect-head", f"3:{events[3]['digest']}")
    assert (elsewhere.returncode, elsewhere.stdout.split(":")[0]) == (1, "BROKEN at position 3")
    # A later part of the export, given the digest before it.
    tail = tmp_path / "tail.jsonl"
    tail.write_text("\n".join(lines[6:]) + "\n")
    assert check(tmp_path, tail, "--previous", events[5]["digest"]).returncode == 0
    assert check(tmp_path, tail).returncode == 1

    def tampered(name: str, edited: list[str]) -> str:
        copy = tmp_path / f"{name}.jsonl"
        copy.write_text("\n".join(edited) + "\n")
        result = check(tmp_path, copy)
        assert result.returncode == 1, (name, result)
        return result.stdout.split(":")[0]

    def with_event(index: int, **changes: object) -> list[str]:
        return [*lines[:index], json.dumps({**events[index], **changes}), *lines[index + 1 :]]

    stored = bytearray(base64.b64decode(events[4]["stored"]))
    stored[-1] ^= 1
    assert tampered("byte", with_event(4, stored=base64.b64encode(bytes(stored)).decode())) == "BROKEN at position 5"
    assert tampered("version", with_event(6, originator_version=events[6]["originator_version"] + 1)) == (
        "BROKEN at position 7"
    )
    assert tampered("topic", with_event(2, topic=events[2]["topic"] + "x")) == "BROKEN at position 3"
    assert tampered("digest", with_event(8, digest="0" * 64)) == "BROKEN at position 9"
    assert tampered("deleted", lines[:5] + lines[6:]) == "BROKEN at position 7"
    assert tampered("swapped", [*lines[:5], lines[6], lines[5], *lines[7:]]) == "BROKEN at position 7"
    assert tampered("moved", with_event(5, position=events[5]["position"] + 100)) == "BROKEN at position 106"


@pytest.mark.subprocess
def test_verify_and_export_on_each_backend(database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ledger import Ledger
    from services.cli import main
    from tests.service.test_verify import recorded

    where = ["--database-url", database] if "://" in database else ["--db", database]
    recorded(database)
    ledger = Ledger.open(database, project=False)
    try:
        events = ledger.read_events(limit=100)
    finally:
        ledger.close()
    assert len(events) == 8
    head = f"8:{events[-1]['digest']}"
    assert main(["verify", *where]) == 0
    assert capsys.readouterr().out == f"OK: 8 events verified, head {head}\n"
    assert main(["verify", *where, "--expect-head", head, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["ok"], shown["checked"], f"{shown['head']['position']}:{shown['head']['digest']}") == (True, 8, head)
    assert main(["verify", *where, "--expect-head", f"8:{'ab' * 32}"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("BROKEN at position 8: HEAD_DIFFERS") and err.startswith("trainledger: the log does not")
    # Its export, checked without trainledger.
    assert main(["events", "export", *where]) == 0
    export = tmp_path / "log.jsonl"
    export.write_text(capsys.readouterr().out)
    checked = check(tmp_path, export, "--expect-head", head)
    assert (checked.returncode, checked.stdout) == (0, f"OK: head {head}\n"), checked


def test_verify_reads_the_schema_version_without_writing_it(database: str, capsys: pytest.CaptureFixture[str]) -> None:
    """verify opens read-only (on PostgreSQL a read-only transaction): it reads the stored schema
    version and never makes its table, even on a ledger from before the table."""
    from ledger import Ledger
    from services.cli import main
    from tests.service.test_verify import recorded

    where = ["--database-url", database] if "://" in database else ["--db", database]
    recorded(database)
    ledger = Ledger.open(database, project=False)
    ledger.close()
    assert main(["verify", *where]) == 0
    assert capsys.readouterr().out.startswith("OK: 8 events verified")
    if "://" in database:
        import psycopg

        url, schema = database.split("?schema=")
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(f'DROP TABLE "{schema}".ledger_schema')
            assert main(["verify", *where]) == 0
            assert capsys.readouterr().out.startswith("OK: 8 events verified")
            found = connection.execute("SELECT to_regclass(%s)", (f'"{schema}".ledger_schema',)).fetchone()
        assert found == (None,)
    else:
        with sqlite3.connect(database) as connection:
            connection.execute("DROP TABLE ledger_schema")
        assert main(["verify", *where]) == 0
        assert capsys.readouterr().out.startswith("OK: 8 events verified")
        with sqlite3.connect(database) as connection:
            tables = connection.execute("SELECT name FROM sqlite_master WHERE name = 'ledger_schema'").fetchall()
        assert tables == []
