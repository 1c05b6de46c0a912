"""Opening a SQLite ledger whose tables are all there loads no table builder: sqlite_utils imports
pandas when it is installed (about a second here), which every command that opens a file would
pay. A file missing a table or an index gets it when opened."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ledger import Ledger
from ledger.views.schema import TABLES

pytestmark = pytest.mark.subprocess

OPEN_AND_REPORT = """
import sys
from ledger import Ledger
ledger = Ledger.open(sys.argv[1])
ledger.open_run(run_key="after-open")
ledger.close()
print(sorted(name for name in ("sqlite_utils", "pandas") if name in sys.modules))
"""


def _open_in_a_process(path: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", OPEN_AND_REPORT, str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    return done.stdout.strip()


def test_opening_a_made_file_loads_no_table_builder(tmp_path: Path) -> None:
    path = tmp_path / "made.db"
    Ledger.open(str(path)).close()
    assert _open_in_a_process(path) == "[]"


def test_a_dropped_index_and_table_come_back_when_the_file_is_opened(tmp_path: Path) -> None:
    path = tmp_path / "older.db"
    Ledger.open(str(path)).close()
    connection = sqlite3.connect(path)
    index = connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'view_runs' AND sql IS NOT NULL"
    ).fetchone()[0]
    connection.execute(f"DROP INDEX {index}")
    connection.execute("DROP TABLE view_tracking")
    connection.commit()
    connection.close()

    assert "sqlite_utils" in _open_in_a_process(path)
    connection = sqlite3.connect(path)
    try:
        indexed = {
            tuple(row[2] for row in connection.execute(f"PRAGMA index_info({name})"))
            for (name,) in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'view_runs'"
            )
        }
        assert set(TABLES["view_runs"].indexes) <= indexed
        assert connection.execute("SELECT count(*) FROM view_tracking").fetchone()[0] >= 0
    finally:
        connection.close()
    assert _open_in_a_process(path) == "[]"  # Whole again.
