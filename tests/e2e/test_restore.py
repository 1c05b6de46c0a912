"""`trainledger restore FILE --db NEW`: a backup made into a new ledger that verifies, serves what the
original held and takes writes; a backup that does not verify, or a NEW that exists, is refused in
one line with nothing written under NEW's name."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from ledger import Ledger
from services.cli import main


@pytest.fixture
def backed_up(tmp_path: Path) -> tuple[Path, int]:
    """A ledger with runs, steps and spend, and its backup (trainledger backup); the log's head."""
    original = tmp_path / "ledger.db"
    ledger = Ledger.open(str(original))
    try:
        run_id = ledger.open_run(run_key="restore-run").run_id
        ledger.start_attempt(run_id=run_id, attempt_id="a1")
        for first in range(0, 50, 10):
            ledger.append_steps(
                run_id=run_id, attempt=1, steps=list(range(first, first + 10)), metrics={"loss": [0.5] * 10}
            )
        ledger.reserve(account=run_id, reservation_id="h1", amount_usd_micro=1_000)
        head = ledger.head()
    finally:
        ledger.close()
    backup = tmp_path / "backup.db"
    assert main(["backup", "--db", str(original), "--to", str(backup)]) == 0
    return backup, head


def test_a_backup_restores_to_a_ledger_that_verifies_and_takes_writes(
    tmp_path: Path, backed_up: tuple[Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    backup, head = backed_up
    restored = tmp_path / "restored.db"
    capsys.readouterr()
    assert main(["restore", str(backup), "--db", str(restored)]) == 0
    assert capsys.readouterr().out == (
        f"restored {backup} to {restored}: the log up to position {head}, {head} events verified\n"
    )
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".restoring")]
    ledger = Ledger.open(str(restored))
    try:
        assert ledger.head() == head and ledger.verify().ok
        (run,) = ledger.list_runs().runs
        assert ledger.run_state(run.run_id).last_step == 49
        ledger.open_account(account="after-restore")
        assert ledger.head() > head
    finally:
        ledger.close()
    assert main(["restore", str(backup), "--db", str(restored)]) == 2
    assert capsys.readouterr().err == f"trainledger: {restored} already exists: restore to a new file\n"


def test_a_backup_that_does_not_verify_is_not_restored(
    tmp_path: Path, backed_up: tuple[Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    backup, head = backed_up
    with sqlite3.connect(backup) as connection:  # One stored event changed after it was sealed.
        (state,) = connection.execute("SELECT state FROM stored_events WHERE rowid = 3").fetchone()
        connection.execute("UPDATE stored_events SET state = ? WHERE rowid = 3", (bytes(state) + b" ",))
    restored = tmp_path / "restored.db"
    capsys.readouterr()
    assert main(["restore", str(backup), "--db", str(restored)]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"trainledger: {backup} does not verify (") and "at position 3" in error, error
    assert error.endswith("nothing was restored\n") and error.count("\n") == 1
    assert not [name for name in os.listdir(tmp_path) if name.startswith((".restored", "restored"))]


def test_a_read_only_backup_restores_to_a_ledger_its_owner_can_write(
    tmp_path: Path, backed_up: tuple[Path, int]
) -> None:
    backup, _ = backed_up
    backup.chmod(0o440)  # An archived backup, kept read-only.
    target = tmp_path / "restored.db"
    assert main(["restore", str(backup), "--db", str(target)]) == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # Still no wider than the backup.


def stale_wal(path: Path) -> None:
    """Leave at `path`-wal the write-ahead log of an earlier SQLite file of that name (a file
    moved away without its -wal): pages SQLite would replay into whatever file takes the name."""
    scratch = path.parent / "earlier.db"
    connection = sqlite3.connect(scratch)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA wal_autocheckpoint=0")
    connection.execute("CREATE TABLE earlier (value BLOB)")
    connection.executemany("INSERT INTO earlier VALUES (?)", [(os.urandom(2000),) for _ in range(40)])
    connection.commit()
    (path.parent / f"{path.name}-wal").write_bytes((path.parent / "earlier.db-wal").read_bytes())
    connection.close()
    scratch.unlink()


@pytest.mark.parametrize("companion", ["-wal", "-shm", "-journal"])
def test_restore_and_backup_refuse_a_destination_whose_companion_files_remain(
    tmp_path: Path, backed_up: tuple[Path, int], capsys: pytest.CaptureFixture[str], companion: str
) -> None:
    backup, _ = backed_up
    restored = tmp_path / "restored.db"
    if companion == "-wal":
        stale_wal(restored)
    else:
        (tmp_path / f"restored.db{companion}").write_bytes(b"left behind")
    capsys.readouterr()
    assert main(["restore", str(backup), "--db", str(restored)]) == 2
    assert capsys.readouterr().err == (
        f"trainledger: {restored}{companion} exists (left by an earlier file of that name): "
        f"restore to a new name, or move {restored}{companion} away with its file\n"
    )
    assert not restored.exists()
    copy = tmp_path / "restored.db"
    assert main(["backup", "--db", str(backup), "--to", str(copy)]) == 2
    assert capsys.readouterr().err == (
        f"trainledger: {copy}{companion} exists (left by an earlier file of that name): "
        f"back up to a new name, or move {copy}{companion} away with its file\n"
    )
    assert not copy.exists()


def test_verify_reports_a_damaged_file_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A ledger whose file was damaged (here: a stale -wal replayed over it) fails verify in one line."""
    damaged = tmp_path / "damaged.db"
    ledger = Ledger.open(str(damaged))
    try:
        ledger.open_account(account="a")
    finally:
        ledger.close()
    with open(damaged, "r+b") as file:  # Pages past the header overwritten.
        file.seek(4096)
        file.write(b"\xff" * 8192)
    capsys.readouterr()
    assert main(["verify", "--db", str(damaged)]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"trainledger: cannot read database {damaged}: ") and error.count("\n") == 1, error
    assert "malformed" in error or "not a database" in error, error
