"""On a SQLite file one connection writes at a time. The writers of one process (the group commit's
leader, the projector) hand the file's write lock to each other in the process, never through
SQLite's busy wait: a writer that meets SQLite's lock sleeps 1, 2, 5, 10 ms ... before it looks
again, however soon the lock is free, and those sleeps were the tail of every write's latency.

The test turns SQLite's busy wait off on every connection of the ledger: a writer of this process
that met another's lock would fail at once (a write refused as an outage, a projection pass
paused) instead of waiting."""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from ledger import Ledger

WRITERS = 8
PAIRS = 40


def _no_busy_wait(ledger: Ledger) -> None:
    """SQLite's busy timeout 0 on the views' connection and on every connection of the log's
    pool, those it holds and those it makes from now on."""
    ledger.storage._writer.execute("PRAGMA busy_timeout = 0")  # type: ignore[attr-defined]
    pool: Any = ledger.recorder.datastore.pool  # type: ignore[attr-defined]
    for connection in [*pool._pool, *pool._in_use.values()]:
        connection._sqlite_conn.execute("PRAGMA busy_timeout = 0")
    create = pool._create_connection

    def created() -> Any:
        connection = create()
        connection._sqlite_conn.execute("PRAGMA busy_timeout = 0")
        return connection

    pool._create_connection = created


def test_the_writers_of_one_process_never_meet_sqlites_lock(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ledger = Ledger.open(str(tmp_path / "ledger.db"))
    try:
        _no_busy_wait(ledger)
        accounts = [ledger.open_run(run_key=f"gate-{n}", cap_usd_micro=10**9).run_id for n in range(WRITERS)]
        failures: list[BaseException] = []

        def writer(account: str) -> None:
            try:
                for i in range(PAIRS):
                    ledger.reserve(account=account, reservation_id=f"r{i}", amount_usd_micro=500)
                    ledger.commit(account=account, reservation_id=f"r{i}", actual_usd_micro=400)
            except BaseException as error:
                failures.append(error)

        with caplog.at_level(logging.WARNING):
            threads = [threading.Thread(target=writer, args=(account,)) for account in accounts]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            ledger.wait(ledger.head(), 60)
        assert failures == []
        paused = [record.getMessage() for record in caplog.records if "projection paused" in record.getMessage()]
        assert paused == []
        for account in accounts:
            assert ledger.run_state(account).spend.committed_usd_micro == PAIRS * 400
    finally:
        ledger.close()


def test_a_writer_of_another_process_still_waits_for_the_lock(tmp_path: Path) -> None:
    """The hand-over is within a process; another process's writer holding the file still makes
    this one wait (SQLite's busy wait, as before) rather than fail."""
    path = tmp_path / "ledger.db"
    ledger = Ledger.open(str(path))
    try:
        account = ledger.open_run(run_key="held", cap_usd_micro=10**9).run_id
        other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")
        released = threading.Timer(0.3, lambda: other.execute("COMMIT"))
        released.start()
        try:
            receipt = ledger.reserve(account=account, reservation_id="r", amount_usd_micro=500)
        finally:
            released.join()
            other.close()
        assert receipt.position > 0
        ledger.wait(ledger.head(), 30)
    finally:
        ledger.close()
