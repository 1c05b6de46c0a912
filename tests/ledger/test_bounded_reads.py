"""A bounded read (Query.bounded_rows) is stopped once it has taken its limit, on both backends,
and leaves the connection it ran on as it found it; a run search is bounded so, and a search
stopped there is refused as QUERY_TOO_LARGE (limit time_s), never left to hold a reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger import Invalid, Ledger
from ledger.domain.reasons import Reason
from ledger.views import queries
from ledger.views.store import ReadTooLong

# A statement that runs for minutes on either backend unless it is stopped.
SLOW = {
    "sqlite": "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n",
    "postgres": "SELECT pg_sleep(600)",
}


def _backend(database: str) -> str:
    return "postgres" if database.startswith("postgresql") else "sqlite"


def test_a_bounded_read_is_stopped_at_its_limit_and_the_next_read_is_unbounded(ledger: Ledger, database: str) -> None:
    query = ledger.views.query
    with pytest.raises(ReadTooLong) as stopped:
        query.bounded_rows(SLOW[_backend(database)], limit_s=0.2)
    assert stopped.value.limit_s == 0.2
    assert query.rows("SELECT 1 + 1") == [(2,)]
    if _backend(database) == "postgres":
        # Every pooled connection is back without a timeout (the pool hands out the one just used).
        for _ in range(4):
            assert query.rows("SHOW statement_timeout") == [("0",)]
    assert query.bounded_rows("SELECT 40 + 2", limit_s=5.0) == [(42,)]


def test_a_search_that_runs_past_its_bound_is_refused_as_too_large(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queries, "SEARCH_READ_S", 0.0)  # Any statement of some work runs past it.
    ledger = Ledger.open(str(tmp_path / "ledger.db"))
    try:
        for number in range(200):
            ledger.open_run(run_key=f"run-{number}", spec={"lr": number / 1000, "name": f"n{number}"})
        with pytest.raises(Invalid) as refused:
            ledger.search_runs(
                where="spec.name like '%1%' or spec.lr > 0.05",
                order_by="spec.lr",
                min_position=ledger.storage.head(),
            )
    finally:
        ledger.close()
    assert refused.value.reason == Reason.QUERY_TOO_LARGE
    assert refused.value.metadata["limit"] == "time_s"
    assert "took longer than 0 s" in str(refused.value)
