"""The stored schema's version: a small metadata table, `ledger_schema` (name, value), beside the
events and the views, on SQLite and on PostgreSQL.

SCHEMA_VERSION is the layout this code writes and reads: the events' tables, the seals, the keys
index, the views and the topics events are stored under (older topics keep resolving through
ledger.domain.topics' legacy table). A ledger opened for the first time by a version that keeps
this table gets it (a ledger from before the table is version 1, the first layout it describes);
a ledger whose stored version is older is moved up to SCHEMA_VERSION once whatever upgrade that
takes has run; a ledger written by a newer schema is refused before anything is written to it,
with a message that names both versions and the release that wrote it: an older release could
misread what a newer one stored, or write what the newer one cannot read.

Every release that changes the layout raises SCHEMA_VERSION and checks in a ledger it wrote
(tests/data/<release>/, made by scripts/make_upgrade_corpus.py) that the tests open.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["SCHEMA_VERSION", "SchemaTooNew", "package_version", "check_schema", "schema_rows", "write_schema_row"]

T = TypeVar("T")

SCHEMA_VERSION = 1
TABLE = "ledger_schema"
CREATE = f"CREATE TABLE IF NOT EXISTS {TABLE} (name TEXT PRIMARY KEY, value TEXT NOT NULL)"
READ = f"SELECT name, value FROM {TABLE}"
WRITE = f"INSERT INTO {TABLE} (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value"


class SchemaTooNew(Exception):
    """The ledger was written by a newer schema than this code reads."""


def package_version() -> str:
    """The installed trainledger's version ("unknown" when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trainledger")
    except PackageNotFoundError:
        return "unknown"


def schema_rows(storage: Any) -> dict[str, str]:
    """The table's rows (name: value), creating the table when it is missing."""
    return _on(storage, _rows)


def write_schema_row(storage: Any, name: str, value: str) -> None:
    """Set one row of the table (what a release records about the layout it wrote)."""

    def write(execute: Execute) -> None:
        _rows(execute)  # The table, made when missing.
        execute(WRITE, (name, value))

    _on(storage, write)


def check_schema(storage: Any) -> int:
    """Refuse a ledger written by a newer schema (SchemaTooNew); record SCHEMA_VERSION on an older
    one or one without the table. Returns the version the ledger had. A ledger opened read-only
    (verify) is only read: no table made, no version recorded."""
    if getattr(storage, "read_only", False):
        return _stored_version(_read_only_rows(storage))
    try:
        return _on(storage, _decide)
    except SchemaTooNew:
        raise
    except Exception:
        # Two processes creating the table at once on PostgreSQL: the second one's CREATE fails
        # on the catalogue's unique index; the table is there now.
        return _on(storage, _decide)


Execute = Callable[..., Any]


def _on(storage: Any, work: Callable[[Execute], T]) -> T:
    """`work` in one transaction: on SQLite the storage's writer, on PostgreSQL a pooled
    connection of its own (outside the views' pipeline mode)."""
    run = getattr(storage, "run", None)
    if run is None:
        with storage.transaction() as cursor:
            return work(lambda sql, params=(): cursor.execute(sql, params))

    def on_postgres(connection: Any) -> T:
        with connection.transaction():
            return work(lambda sql, params=(): connection.execute(sql.replace("?", "%s"), params))

    result: T = run(on_postgres)
    return result


def _rows(execute: Execute) -> dict[str, str]:
    execute(CREATE)
    return {str(name): str(value) for name, value in execute(READ).fetchall()}


def _read_only_rows(storage: Any) -> dict[str, str]:
    """The table's rows, read without writing: none when the ledger is from before the table."""

    def read(execute: Execute) -> dict[str, str]:
        return {str(name): str(value) for name, value in execute(READ).fetchall()}

    try:
        return _on(storage, read)
    except Exception as error:
        if "ledger_schema" in str(error):  # "no such table" / "relation ... does not exist"
            return {}
        raise


def _stored_version(rows: dict[str, str]) -> int:
    """The version `rows` record (1 without one); SchemaTooNew when newer than SCHEMA_VERSION."""
    stored = int(rows.get("version", "1"))
    if stored > SCHEMA_VERSION:
        writer = rows.get("written_by", "a newer release")
        raise SchemaTooNew(
            f"this ledger has schema version {stored} (written by trainledger {writer}); trainledger "
            f"{package_version()} reads schema versions up to {SCHEMA_VERSION}: upgrade trainledger to open it"
        )
    return stored


def _decide(execute: Execute) -> int:
    rows = _rows(execute)
    stored = _stored_version(rows)
    if "version" not in rows or stored < SCHEMA_VERSION:
        execute(WRITE, ("version", str(SCHEMA_VERSION)))
        execute(WRITE, ("written_by", package_version()))
    return stored
