"""`trainledger verify` only reads, and a log without seals is sealed only on an admin's word, with
real processes on a real file: after an event is edited and every seal deleted, verify (with and
without the views) reports it and leaves the seals table empty; `rebuild` seals nothing; `serve`
refuses the log, naming what to do, unless --allow-unsealed; `trainledger seal --reason` seals it
and records who and why. A snapshot with one damaged byte is named by verify, never a traceback.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
from pathlib import Path

import grpc
import msgspec
import pytest

from tests.e2e.test_serve_guards import Servers, environment, first_line, trainledger
from tests.e2e.test_verify_cli import EVENTS, cli, head_of, served_ledger, write_history
from tests.service.support import error_info
from trainledger.v1 import events_pb2, events_pb2_grpc, runs_pb2, runs_pb2_grpc

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240), pytest.mark.subprocess]


def seals(database: Path) -> int:
    with sqlite3.connect(database) as connection:
        return int(connection.execute("SELECT COUNT(*) FROM stored_seals").fetchone()[0])


def start_unsealed(servers: Servers, database: Path) -> str:
    """`serve --allow-unsealed` that must start: its HOST:PORT."""
    process = subprocess.Popen(
        [*trainledger(), "serve", "--db", str(database), "--listen", "127.0.0.1:0", "--no-http", "--allow-unsealed"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=servers.directory,
        env=environment(),
    )
    servers.processes.append(process)
    match = re.search(r"serving on (127\.0\.0\.1:\d+)", first_line(process))
    assert match
    return match.group(1)


def test_verify_rebuild_and_serve_never_seal_and_seal_is_recorded(tmp_path: Path, servers: Servers) -> None:
    database, _, _ = served_ledger(tmp_path, servers)
    servers.kill_all()
    with sqlite3.connect(database) as connection:
        state = connection.execute("SELECT state FROM stored_events WHERE rowid = 5").fetchone()[0]
        fields = msgspec.msgpack.decode(state)
        fields["request_id"] = "forged"
        connection.execute("UPDATE stored_events SET state = ? WHERE rowid = 5", (msgspec.msgpack.encode(fields),))
        connection.execute("DELETE FROM stored_seals")
    for args in (["--no-views"], [], ["--json"]):
        checked = cli(tmp_path, "verify", "--db", str(database), *args)
        assert checked.returncode == 1 and "SEAL_MISSING" in checked.stdout, checked
        assert "Traceback" not in checked.stderr and seals(database) == 0
    rebuilt = cli(tmp_path, "rebuild", "--db", str(database))
    assert rebuilt.returncode == 0 and seals(database) == 0, rebuilt
    refusal = servers.refused("serve", "--db", str(database), "--listen", "127.0.0.1:0", "--no-http")
    assert "SEAL_MISSING" in refusal and f"trainledger seal --db {database} --reason TEXT" in refusal
    assert "--allow-unsealed" in refusal and "read" in refusal
    assert seals(database) == 0

    no_reason = cli(tmp_path, "seal", "--db", str(database))
    assert no_reason.returncode == 2 and seals(database) == 0
    sealed = cli(tmp_path, "seal", "--db", str(database), "--reason", "restored from the March copy")
    assert sealed.returncode == 0 and sealed.stdout.startswith("sealed: recorded at"), sealed
    assert seals(database) == EVENTS + 2  # The log as it stood, then the seal book's two events.
    again = cli(tmp_path, "seal", "--db", str(database), "--reason", "again")
    assert again.returncode == 1 and "holds seals already" in again.stderr, again
    exported = cli(tmp_path, "events", "export", "--db", str(database), "--types", "LogSealed")
    assert '"reason": "restored from the March copy"' in exported.stdout.replace('":"', '": "'), exported
    assert '"principal": "local:' in exported.stdout.replace('":"', '": "')
    _, address = servers.start(database)
    with grpc.insecure_channel(address) as channel:
        answer = events_pb2_grpc.EventsStub(channel).Verify(events_pb2.VerifyRequest(skip_views=True), timeout=30)
    assert answer.ok and answer.checked == EVENTS + 2


def test_serve_refuses_a_broken_tail_unless_allowed(tmp_path: Path, servers: Servers) -> None:
    database, _, _ = served_ledger(tmp_path, servers)
    servers.kill_all()
    with sqlite3.connect(database) as connection:
        connection.execute("UPDATE stored_seals SET digest = zeroblob(32) WHERE position = ?", (EVENTS - 1,))
    refusal = servers.refused("serve", "--db", str(database), "--listen", "127.0.0.1:0", "--no-http")
    assert f"breaks at position {EVENTS - 1}" in refusal
    assert "trainledger seal" not in refusal and "backup" in refusal  # A log with seals is never sealed over.
    address = start_unsealed(servers, database)
    assert write_history(address) == EVENTS and head_of(address)[0] == EVENTS  # Served as it is, when told to.


def test_a_damaged_snapshot_is_named_without_a_traceback(tmp_path: Path, servers: Servers) -> None:
    database = tmp_path / "ledger.db"
    _, address = servers.start(database)
    write_history(address)
    servers.kill_all()
    with sqlite3.connect(database) as connection:
        # A snapshot of the run at its first version, its first byte one MessagePack never uses.
        row = connection.execute(
            "SELECT originator_id, originator_version, topic, state FROM stored_events WHERE rowid = 2"
        ).fetchone()
        connection.execute(
            "INSERT INTO stored_snapshots (originator_id, originator_version, topic, state) VALUES (?, ?, ?, ?)",
            (*row[:3], b"\xc1" + bytes(row[3])[1:]),
        )
    checked = cli(tmp_path, "verify", "--db", str(database))
    assert checked.returncode == 1 and "SNAPSHOT_DISAGREES" in checked.stdout, checked
    assert "cannot be decoded" in checked.stdout and "Traceback" not in checked.stderr


def test_verify_leaves_a_crash_image_byte_for_byte(tmp_path: Path, servers: Servers) -> None:
    """A server killed with its write-ahead log not yet merged into the file: verify reads the log
    as SQLite recovers it and changes no byte of either file (nor merges or removes the log)."""
    database, _, _ = served_ledger(tmp_path, servers)
    servers.kill_all()

    def image() -> dict[str, bytes]:
        # The shared-memory index (-shm) is SQLite's to rebuild for any reader: not the ledger.
        names = ("ledger.db", "ledger.db-wal", "ledger.db-journal")
        return {p.name: p.read_bytes() for p in sorted(tmp_path.iterdir()) if p.name in names}

    def verified_twice() -> None:
        for args in (["--no-views"], []):
            checked = cli(tmp_path, "verify", "--db", str(database), *args)
            assert checked.returncode == 0 and checked.stdout.startswith(f"OK: {EVENTS} events verified"), checked
            assert image() == before

    before = image()
    assert len(before.get("ledger.db-wal", b"")) > 0
    verified_twice()
    # A copy kept with a rollback journal (as a backup tool may write one) stays one.
    with sqlite3.connect(database) as connection:
        assert connection.execute("PRAGMA journal_mode=DELETE").fetchone() == ("delete",)
    before = image()
    verified_twice()
    with sqlite3.connect(database) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("delete",)


def test_seal_refuses_a_database_a_server_holds(tmp_path: Path, servers: Servers) -> None:
    database, _, _ = served_ledger(tmp_path, servers)
    servers.kill_all()
    with sqlite3.connect(database) as connection:
        connection.execute("DELETE FROM stored_seals")
    start_unsealed(servers, database)
    held = cli(tmp_path, "seal", "--db", str(database), "--reason", "while served")
    assert held.returncode == 2 and "is held by another process" in held.stderr, held
    assert "serving on 127.0.0.1:" in held.stderr and seals(database) == 0


def test_a_log_with_missing_seals_takes_no_write_until_sealed(tmp_path: Path, servers: Servers) -> None:
    database, _, _ = served_ledger(tmp_path, servers)
    servers.kill_all()
    with sqlite3.connect(database) as connection:
        connection.execute("DELETE FROM stored_seals")
    made = cli(tmp_path, "tokens", "create", "--db", str(database), "--principal", "root", "--role", "admin")
    assert made.returncode == 1 and "trainledger seal --db" in made.stderr and made.stdout == "", made
    assert seals(database) == 0
    address = start_unsealed(servers, database)  # Served to be read: a write is answered, never stored.
    with grpc.insecure_channel(address) as channel, pytest.raises(grpc.RpcError) as refused:
        runs_pb2_grpc.RunsStub(channel).OpenRun(runs_pb2.OpenRunRequest(run_key="k", name="n"), timeout=10)
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert error_info(refused.value).reason == "LOG_UNSEALED"
    with sqlite3.connect(database) as connection:
        assert connection.execute("SELECT COUNT(*) FROM stored_events").fetchone()[0] == EVENTS
    assert seals(database) == 0
    servers.kill_all()
    sealed = cli(tmp_path, "seal", "--db", str(database), "--reason", "seals deleted")
    assert sealed.returncode == 0, sealed
    again = cli(tmp_path, "tokens", "create", "--db", str(database), "--principal", "root", "--role", "admin")
    assert again.returncode == 0, again
    assert cli(tmp_path, "verify", "--db", str(database)).returncode == 0
