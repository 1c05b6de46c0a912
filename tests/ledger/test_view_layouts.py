"""A view whose stored layout changed is rebuilt from the log when a ledger that still holds the
older layout is opened: the run search's keys, once spelled without the backticks a query names
an odd key with, so that a key literally named "a.b" and a nested one ({"a": {"b": ...}}) shared
one row."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ledger import Ledger


def _found(ledger: Ledger, where: str) -> list[str]:
    return [run.run_id for run in ledger.search_runs(where=where, min_position=ledger.storage.head()).runs]


def test_a_search_view_of_the_older_key_spelling_is_rebuilt_at_open(tmp_path: Path) -> None:
    database = str(tmp_path / "ledger.db")
    ledger = Ledger.open(database)
    try:
        run_id = ledger.open_run(run_key="dotted", spec={"a.b": 2, "lr": 0.1}).run_id
        assert _found(ledger, "spec.`a.b` = 2") == [run_id]
    finally:
        ledger.close()
    # As the release before wrote it: the dotted key spelled bare, and no word of its layout.
    with sqlite3.connect(database) as connection:
        connection.execute("UPDATE view_run_fields SET key = 'spec.a.b' WHERE key = 'spec.`a.b`'")
        connection.execute("DELETE FROM ledger_schema WHERE name LIKE 'view:%'")
    ledger = Ledger.open(database)
    try:
        assert _found(ledger, "spec.`a.b` = 2") == [run_id]
        assert _found(ledger, "spec.a.b = 2") == []
        assert _found(ledger, "spec.lr = 0.1") == [run_id]
    finally:
        ledger.close()
