"""The views' writer and this process's appenders when another process holds SQLite's write lock
(a CLI or a second server on the same file): the views' transaction waits for that lock without
holding this process's writer slot, so an append made meanwhile waits on SQLite's lock for as
long as SQLite's lock timeout allows, as it would with no views' transaction under way, rather
than giving up on the slot after the connection pool's shorter wait."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ledger import Ledger

# Longer than eventsourcing's wait for a pooled connection (5 s), far shorter than SQLite's lock
# timeout on the ledger's connections (30 s): an append waiting this long must still succeed.
HELD_S = 8

HOLDER = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
connection.execute("ROLLBACK")
"""


@pytest.mark.subprocess
def test_an_append_outlasts_another_process_lock_while_the_views_wait_for_it(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    ledger = Ledger.open(str(path), project=False)
    try:
        run = ledger.open_run(run_key="held", cap_usd_micro=10**9)
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "locked"
        outcome: list[object] = []

        def views() -> None:
            with ledger.storage.transaction():
                outcome.append("views committed")

        def append() -> None:
            try:
                ledger.reserve(account=run.run_id, reservation_id="r1", amount_usd_micro=10)
                outcome.append("appended")
            except Exception as error:  # Reported below, in the test's thread.
                outcome.append(error)

        viewer = threading.Thread(target=views)
        viewer.start()
        time.sleep(0.5)  # The views' transaction is waiting for the other process's lock.
        appender = threading.Thread(target=append)
        appender.start()
        appender.join(HELD_S)  # The other process holds its lock this long, or until the append ends.
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(30)
        appender.join(60)
        viewer.join(60)
        assert sorted(map(str, outcome)) == ["appended", "views committed"], outcome
    finally:
        ledger.close()


def test_an_append_waits_out_a_long_views_transaction_of_its_own_process(tmp_path: Path) -> None:
    # A chunk of the projector's that takes long (many large batches, a loaded machine): the
    # appender waits for it up to SQLite's lock timeout, as it waited for SQLite's lock before.
    ledger = Ledger.open(str(tmp_path / "ledger.db"), project=False)
    try:
        run = ledger.open_run(run_key="long", cap_usd_micro=10**9)
        outcome: list[object] = []

        def append() -> None:
            try:
                ledger.reserve(account=run.run_id, reservation_id="r1", amount_usd_micro=10)
                outcome.append("appended")
            except Exception as error:  # Reported below, in the test's thread.
                outcome.append(error)

        appender = threading.Thread(target=append)
        with ledger.storage.transaction():
            appender.start()
            appender.join(HELD_S)  # The views' transaction lasts this long, or until the append ends.
        appender.join(60)
        assert outcome == ["appended"], outcome
    finally:
        ledger.close()
