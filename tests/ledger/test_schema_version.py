"""The stored schema's version: recorded on a new ledger, a ledger from a newer schema refused with a
message naming both versions, and `trainledger --version` printing both."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from ledger import Ledger
from ledger.storage.version import SCHEMA_VERSION, SchemaTooNew, schema_rows, write_schema_row


def _rows(ledger: Ledger) -> dict[str, str]:
    return schema_rows(ledger.storage)


def test_a_new_ledger_records_its_schema_version(database: str) -> None:
    ledger = Ledger.open(database)
    try:
        rows = _rows(ledger)
    finally:
        ledger.close()
    assert rows["version"] == str(SCHEMA_VERSION) == "1"
    assert rows["written_by"]


def test_a_ledger_from_a_newer_schema_is_refused_untouched(database: str) -> None:
    ledger = Ledger.open(database)
    try:
        ledger.open_account(account="team")
        write_schema_row(ledger.storage, "version", str(SCHEMA_VERSION + 1))
        write_schema_row(ledger.storage, "written_by", "9.9.9")
    finally:
        ledger.close()
    with pytest.raises(SchemaTooNew) as refused:
        Ledger.open(database)
    message = str(refused.value)
    assert f"schema version {SCHEMA_VERSION + 1} (written by trainledger 9.9.9)" in message
    assert f"reads schema versions up to {SCHEMA_VERSION}: upgrade trainledger" in message
    if not database.startswith("postgresql"):
        with sqlite3.connect(database) as connection:
            stored = dict(connection.execute("SELECT name, value FROM ledger_schema").fetchall())
        assert stored == {"version": str(SCHEMA_VERSION + 1), "written_by": "9.9.9"}


def test_a_ledger_from_before_the_table_gets_it(sqlite_database: str) -> None:
    ledger = Ledger.open(sqlite_database)
    ledger.open_account(account="team")
    ledger.close()
    with sqlite3.connect(sqlite_database) as connection:
        connection.execute("DROP TABLE ledger_schema")
    ledger = Ledger.open(sqlite_database)
    try:
        assert _rows(ledger)["version"] == "1"
        assert ledger.account("team").account == "team"
    finally:
        ledger.close()


def test_serve_refuses_a_newer_ledger_in_one_line(sqlite_database: str) -> None:
    ledger = Ledger.open(sqlite_database)
    write_schema_row(ledger.storage, "version", str(SCHEMA_VERSION + 1))
    ledger.close()
    done = subprocess.run(
        [sys.executable, "-m", "services.cli", "serve", "--db", sqlite_database, "--listen", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "upgrade trainledger to open it" in done.stderr, done.stderr
