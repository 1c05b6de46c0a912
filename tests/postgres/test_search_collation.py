"""A run search answers on PostgreSQL as on SQLite whatever the database's own collation: text
compares and orders in byte order, and `like` folds the case of ASCII letters only. The test
database of the suite is made with the C locale, where both hold by themselves; most PostgreSQL
servers are not (en_US.UTF-8 is the usual default), so here the runs are recorded in a database
made with an ICU collation."""

from __future__ import annotations

import os
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

POSTGRES_URL = os.environ.get("TRAINLEDGER_TEST_DATABASE_URL", "")
if not POSTGRES_URL:
    pytest.skip("TRAINLEDGER_TEST_DATABASE_URL is not set", allow_module_level=True)

import psycopg  # noqa: E402

from ledger import Ledger  # noqa: E402

pytestmark = pytest.mark.postgres

VALUES = ["b", "B", "a", "A", "\u00c9", "\u00e9", "z", "_x", "\u00e9t\u00e9"]
QUERIES = [
    ('spec.s != "q"', "spec.s"),
    ('spec.s != "q"', "name"),
    ('spec.s < "a"', ""),
    ('spec.s >= "Z"', ""),
    ('spec.s like "\u00e9"', ""),
    ('spec.s like "%T%"', ""),
    ('name like "N%"', ""),
]


@pytest.fixture
def icu_database() -> Iterator[str]:
    name = f"t_icu_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        try:
            connection.execute(
                f"CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8'"
                " LOCALE_PROVIDER icu ICU_LOCALE 'en' LOCALE 'C.utf8'"
            )
        except psycopg.Error as error:
            pytest.skip(f"no database with an ICU collation here: {error}")
    yield urllib.parse.urlsplit(POSTGRES_URL)._replace(path=f"/{name}", query="").geturl()
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        connection.execute(f"DROP DATABASE {name} WITH (FORCE)")


def _answers(database: str) -> list[list[str]]:
    ledger = Ledger.open(database)
    try:
        for i, value in enumerate(VALUES):
            ledger.open_run(run_key=f"k{i}", name=f"n{i}", spec={"s": value})
        ledger.wait(ledger.head(), 30)
        return [[run.name for run in ledger.search_runs(where=w, order_by=o).runs] for w, o in QUERIES]
    finally:
        ledger.close()


def test_a_search_answers_as_on_sqlite_in_a_database_of_another_collation(icu_database: str, tmp_path: Path) -> None:
    assert dict(zip(QUERIES, _answers(icu_database), strict=True)) == dict(
        zip(QUERIES, _answers(str(tmp_path / "ledger.db")), strict=True)
    )
