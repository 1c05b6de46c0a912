"""The stored schema's version: recorded on a new ledger, a ledger from a newer schema refused with a
message naming both versions, and `trainledger --version` printing both."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys

import pytest

from ledger import Ledger
from ledger.storage.version import SCHEMA_VERSION, SchemaTooNew, SchemaUnreadable, schema_rows, write_schema_row


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
        # As it was before the refused open: the view layout row is the first open's.
        assert stored == {"version": str(SCHEMA_VERSION + 1), "written_by": "9.9.9", "view:search": "2"}


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


@pytest.mark.subprocess
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


def _stored(path: str) -> dict[str, str]:
    with contextlib.closing(sqlite3.connect(path)) as connection:
        return dict(connection.execute("SELECT name, value FROM ledger_schema").fetchall())


def _dump(path: str) -> list[str]:
    """Every table's schema and rows, as SQL."""
    with contextlib.closing(sqlite3.connect(path)) as connection:
        return list(connection.iterdump())


@pytest.mark.parametrize("stored", ["abc", "1.0", "-5", "0", "", " 1 "])
def test_a_version_this_code_never_writes_is_refused_untouched(database: str, stored: str) -> None:
    ledger = Ledger.open(database)
    try:
        ledger.open_account(account="team")
        write_schema_row(ledger.storage, "version", stored)
    finally:
        ledger.close()
    with pytest.raises(SchemaUnreadable) as refused:
        Ledger.open(database)
    assert f"schema version {stored!r} is not a version" in str(refused.value)
    with pytest.raises(SchemaUnreadable):
        Ledger.open(database, read_only=True)
    if not database.startswith("postgresql"):
        assert _stored(database)["version"] == stored


def test_a_ledger_from_before_the_table_opens_read_only_untouched(sqlite_database: str) -> None:
    ledger = Ledger.open(sqlite_database)
    ledger.open_account(account="team")
    ledger.close()
    with sqlite3.connect(sqlite_database) as connection:
        connection.execute("DROP TABLE ledger_schema")
    checked = Ledger.open(sqlite_database, read_only=True)
    try:
        assert checked.verify().ok
    finally:
        checked.close()
    with sqlite3.connect(sqlite_database) as connection:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "ledger_schema" not in tables


@pytest.mark.subprocess
def test_verify_of_a_ledger_from_before_the_table_reads_only(sqlite_database: str) -> None:
    ledger = Ledger.open(sqlite_database)
    ledger.open_account(account="team")
    ledger.close()
    with contextlib.closing(sqlite3.connect(sqlite_database)) as connection:
        connection.execute("DROP TABLE ledger_schema")
        connection.commit()
    before = _dump(sqlite_database)
    done = subprocess.run(
        [sys.executable, "-m", "services.cli", "verify", "--db", sqlite_database],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("OK:"), done.stdout
    assert _dump(sqlite_database) == before


@pytest.mark.subprocess
@pytest.mark.parametrize("command", ["verify", "rebuild", "serve"])
def test_the_cli_refuses_a_corrupt_version_in_one_line_untouched(sqlite_database: str, command: str) -> None:
    ledger = Ledger.open(sqlite_database)
    ledger.open_account(account="team")
    write_schema_row(ledger.storage, "version", "-5")
    ledger.close()
    before = _dump(sqlite_database)
    extra = ["--listen", "127.0.0.1:0"] if command == "serve" else []
    done = subprocess.run(
        [sys.executable, "-m", "services.cli", command, "--db", sqlite_database, *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "schema version '-5' is not a version" in done.stderr, done.stderr
    assert _dump(sqlite_database) == before
    assert _stored(sqlite_database)["version"] == "-5"


@pytest.mark.parametrize("stored", [str(SCHEMA_VERSION + 1), "-5"])
def test_a_newer_layout_is_refused_before_any_table_is_made(sqlite_database: str, stored: str) -> None:
    """A newer release may have dropped or renamed a table this one makes: opening its ledger
    must not make the table back before refusing it."""
    ledger = Ledger.open(sqlite_database)
    ledger.open_account(account="team")
    write_schema_row(ledger.storage, "version", stored)
    ledger.close()
    with contextlib.closing(sqlite3.connect(sqlite_database)) as connection:
        connection.execute("DROP TABLE view_series")
        connection.execute("DROP TABLE stored_keys")
        connection.commit()
    before = _dump(sqlite_database)
    with pytest.raises((SchemaTooNew, SchemaUnreadable)):
        Ledger.open(sqlite_database)
    assert _dump(sqlite_database) == before
