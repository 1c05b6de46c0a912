"""The views' SQL on PostgreSQL: rows inserted into a view table in one statement over arrays
do exactly what the same rows one statement each do, and fall back to that where they could not;
an insert of events writes them, their keys and their seals in one transaction."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

POSTGRES_URL = os.environ.get("TRAINLEDGER_TEST_DATABASE_URL", "")
if not POSTGRES_URL:
    pytest.skip("TRAINLEDGER_TEST_DATABASE_URL is not set", allow_module_level=True)

import psycopg  # noqa: E402

from ledger import Ledger  # noqa: E402
from ledger.storage.chain import GENESIS, seal_rows  # noqa: E402
from ledger.storage.postgres.sql import PG_TYPES, Cursor, ReadConnection, many_rows  # noqa: E402
from ledger.views.schema import TABLES  # noqa: E402
from ledger.views.series.rollup import ROLLUP_UPSERT  # noqa: E402

pytestmark = pytest.mark.postgres

NAMES = "INSERT INTO view_names (id, name) VALUES (?, ?) ON CONFLICT (id) DO NOTHING"
TRACKING = "INSERT INTO view_tracking (view, position) VALUES (?, ?) ON CONFLICT (view) DO UPDATE SET position = ?"


@pytest.fixture
def schema() -> Iterator[str]:
    name = f"t_sql_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {name}")
    yield name
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        connection.execute(f"DROP SCHEMA {name} CASCADE")


def _rows(schema: str, statement: str, batches: list[list[tuple[Any, ...]]], *, many: bool) -> list[tuple[Any, ...]]:
    """The rollup table after `batches` went through Cursor.executemany, as one statement each
    (`many`) or one statement per row."""
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        connection.execute(f"SET search_path TO {schema}")
        connection.execute("DROP TABLE IF EXISTS view_series_rollup")
        columns = TABLES["view_series_rollup"].columns
        fields = ", ".join(f"{name} {PG_TYPES[kind]}" for name, kind in columns.items())
        connection.execute(
            f"CREATE TABLE view_series_rollup ({fields}, PRIMARY KEY (run_id, metric, level, bucket, attempt))"
        )
        with connection.pipeline(), connection.transaction():
            cursor = Cursor(connection.cursor())
            for batch in batches:
                if many:
                    cursor.executemany(statement, batch)
                else:
                    for row in batch:
                        cursor.execute(statement, row)
        return connection.execute("SELECT * FROM view_series_rollup ORDER BY run_id, metric, level, bucket").fetchall()


def _bucket(bucket: int, step: int, value: Any, *, run: str = "r", count: int = 1) -> tuple[Any, ...]:
    return (run, "loss", 0, bucket, 1, count, step, value, step, value, step, value, step, value, step)


def test_a_view_insert_of_many_rows_is_one_statement_and_does_what_the_rows_one_by_one_do(schema: str) -> None:
    assert many_rows(ROLLUP_UPSERT) is not None
    batches = [
        [_bucket(b, b * 10, 1.0 / (b + 1)) for b in range(50)],
        # Merged into the rows above; ints in a float column; a text holding NUL.
        [_bucket(b, b * 10 + 5, b) for b in range(0, 50, 3)] + [_bucket(7, 3, 0.5, run="with\x00nul")],
    ]
    assert _rows(schema, ROLLUP_UPSERT, batches, many=True) == _rows(schema, ROLLUP_UPSERT, batches, many=False)


def test_rows_that_share_a_conflict_key_or_do_not_fit_an_array_go_one_by_one(schema: str) -> None:
    # The same bucket twice in one call: one statement could not update a row twice.
    repeated = [[_bucket(1, 10, 1.0), _bucket(1, 20, 2.0, count=2), _bucket(2, 30, 3.0)]]
    assert _rows(schema, ROLLUP_UPSERT, repeated, many=True) == _rows(schema, ROLLUP_UPSERT, repeated, many=False)
    # A bool where the column is an integer: sent as written, one statement per row.
    odd = [[_bucket(1, 10, 1.0), (*_bucket(2, 20, 2.0)[:5], True, *_bucket(2, 20, 2.0)[6:])]]
    with pytest.raises(psycopg.errors.DatatypeMismatch):
        _rows(schema, ROLLUP_UPSERT, odd, many=True)


def test_only_inserts_of_a_row_of_placeholders_into_a_view_table_are_sent_as_arrays() -> None:
    assert many_rows(NAMES) is not None
    assert many_rows(TRACKING) is None  # Not a view table of ledger.views.schema.
    assert many_rows("INSERT INTO view_names (id, name) VALUES (?, lower(?))") is None
    assert many_rows("UPDATE view_names SET name = ? WHERE id = ?") is None
    assert many_rows("INSERT INTO view_names (id, name) VALUES (?, ?) ON CONFLICT DO UPDATE SET name = ?") is None


def test_inserts_seal_every_event_and_index_their_keys(database: str) -> None:
    if not database.startswith("postgresql"):
        pytest.skip("PostgreSQL only")
    ledger = Ledger.open(database)
    try:
        run_id = ledger.open_run(run_key="k1").run_id
        ledger.start_attempt(run_id=run_id, attempt_id="a1")
        ledger.append_steps(run_id=run_id, attempt=1, steps=list(range(1000)), metrics={"loss": [0.5] * 1000})
        account = ledger.open_run(run_key="k2", cap_usd_micro=10_000).run_id
        for n in range(3):
            ledger.reserve(account=account, reservation_id=f"r{n}", amount_usd_micro=10)
        verification = ledger.verify()
        assert verification.ok and verification.checked == ledger.head() == ledger.chain_head().position
        storage = ledger.storage
        rows, seals = storage.chain_page(0, ledger.head(), ledger.head())
        assert seal_rows(GENESIS, rows) == seals
        with psycopg.connect(POSTGRES_URL) as connection:
            keys = connection.execute(
                f"SELECT key FROM {storage.schema}.{ledger.recorder.events_table_name}_keys ORDER BY key"
            ).fetchall()
        assert [key for (key,) in keys if key.startswith("spend:")] == ["spend:r0", "spend:r1", "spend:r2"]
    finally:
        ledger.close()


class _Source:
    """The reads' source on one plain connection to `schema` (ReadSource)."""

    def __init__(self, schema: str) -> None:
        self.schema = schema
        self.runs = 0

    def run(self, work: Any) -> Any:
        self.runs += 1
        with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
            connection.execute(f"SET search_path TO {self.schema}")
            return work(connection)


def test_queries_read_together_answer_each_what_it_answers_alone(schema: str) -> None:
    texts = ["it's 100% \\ a ? mark", "", "plain", "ünïcødé", "nul\x00byte"]
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        connection.execute(f"SET search_path TO {schema}")
        connection.execute("CREATE TABLE t (name TEXT, at DOUBLE PRECISION, n BIGINT, seen DOUBLE PRECISION)")
        for index, text in enumerate(texts):
            connection.execute(
                "INSERT INTO t VALUES (%s, %s, %s, %s)",
                (text.replace("\x00", "\ufffd"), 1767225600.123456 + index, 2**40 + index, None if index % 2 else 0.1),
            )
    queries: list[tuple[str, tuple[Any, ...]]] = [
        *(("SELECT name, at, n, seen FROM t WHERE name = ?", (text,)) for text in texts),
        ("SELECT name FROM t WHERE at > ? AND n >= ? ORDER BY at LIMIT ?", (1767225601.123456, 2**40 + 1, 2)),
        ("SELECT name FROM t WHERE name LIKE '%100!%%' ESCAPE '!' AND seen IS NOT DISTINCT FROM ?", (None,)),
        ("SELECT COUNT(*) FROM t WHERE name = ?", ("absent",)),
        ("SELECT name FROM t WHERE name = ?", ("absent",)),
    ]
    alone = ReadConnection(_Source(schema))
    expected = [alone.cursor().execute(sql, params).fetchall() for sql, params in queries]
    assert expected[0] == [("it's 100% \\ a ? mark", 1767225600.123456, 2**40, 0.1)]
    assert expected[-4] == [("plain",), ("ünïcødé",)] and expected[-1] == []

    source = _Source(schema)
    together = ReadConnection(source)
    with together.prefetch(queries):
        answered = [together.cursor().execute(sql, params).fetchall() for sql, params in queries]
    assert source.runs == 1
    assert answered == expected
