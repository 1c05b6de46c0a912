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
