"""Connecting to PostgreSQL: connection settings, reachability, the schema lock, and the one retry
rule for calls whose pooled connection died.

After a database restart a pool holds dead connections; a call on one fails at once. Every call
into PostgreSQL (the recorders' and the views') goes through `retrying`: it drops the dead
connections from the pool and tries again a couple of times, but gives up at once when the pool
already waited its whole timeout for a connection, so an outage is reported within about one
connect timeout instead of after the library's ten attempts.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
import psycopg_pool
from eventsourcing.persistence import OperationalError
from eventsourcing.postgres import PostgresDatastore
from psycopg.pq import TransactionStatus
from psycopg.sql import SQL, Identifier

__all__ = [
    "ATTEMPTS",
    "CONNECT_TIMEOUT_S",
    "RECONNECT_TIMEOUT_S",
    "check_reachable",
    "connect_kwargs",
    "gave_up",
    "lock_key",
    "pipelined_transaction",
    "retrying",
    "schema_lock",
    "sorts_by_bytes",
    "where",
]

T = TypeVar("T")

# How long a caller waits for a pooled connection before the database counts as unavailable.
CONNECT_TIMEOUT_S = 5
# A pool gives up reconnecting one slot after this long and starts afresh on the next request,
# so its back-off (1, 2, 4 ... s) never grows past a few seconds after a long outage.
RECONNECT_TIMEOUT_S = 5.0
# Attempts of one call when pooled connections turn out dead (after a restart).
ATTEMPTS = 3
POOL_GAVE_UP = (psycopg_pool.PoolTimeout, psycopg_pool.PoolClosed)


def gave_up(error: BaseException) -> bool:
    """True when the pool already waited its whole timeout for a connection (or was closed):
    the error itself says so, or the driver's error the library wrapped."""
    return isinstance(error, POOL_GAVE_UP) or isinstance(error.__cause__, POOL_GAVE_UP)


def retrying(
    work: Callable[[], T],
    *,
    errors: tuple[type[BaseException], ...],
    drop_dead: Callable[[], None],
    pause_s: float = 0.0,
    refusal: Callable[[BaseException], BaseException] | None = None,
) -> T:
    """`work()`, tried again after `drop_dead()` (which checks the pool's connections) when it
    raises one of `errors`, up to ATTEMPTS times, pausing `pause_s` times the attempt number in
    between. A pool that gave up ends the tries at once. The last error is raised as it is, or
    as `refusal(error)` when that is given."""
    attempt = 1
    while True:
        try:
            return work()
        except errors as error:
            if attempt >= ATTEMPTS or gave_up(error):
                if refusal is None:
                    raise
                raise refusal(error) from error
            drop_dead()
            if pause_s:
                time.sleep(pause_s * attempt)
            attempt += 1


def connect_kwargs(datastore: PostgresDatastore) -> dict[str, Any]:
    """The keyword arguments of psycopg.connect for the database of `datastore`."""
    pool_kwargs = datastore.pool.kwargs
    kwargs: dict[str, Any] = dict(pool_kwargs() if callable(pool_kwargs) else pool_kwargs or {})
    kwargs.pop("row_factory", None)
    if datastore.pool.get_password_func is not None:
        kwargs["password"] = datastore.pool.get_password_func()
    return kwargs


def where(kwargs: dict[str, Any]) -> str:
    """The database of connect kwargs, for messages (never the password)."""
    return f"PostgreSQL at {kwargs.get('host')}:{kwargs.get('port')}/{kwargs.get('dbname')} as {kwargs.get('user')}"


def check_reachable(kwargs: dict[str, Any], timeout_s: float) -> None:
    """Connect once; a database that does not answer is one clear OperationalError."""
    try:
        psycopg.connect(**{**kwargs, "connect_timeout": max(1, int(timeout_s))}).close()
    except psycopg.Error as error:
        reason = " ".join(line.strip() for line in str(error).splitlines() if line.strip()) or type(error).__name__
        raise OperationalError(f"cannot connect to {where(kwargs)}: {reason}") from None


def lock_key(schema: str) -> int:
    """The advisory lock that serialises creating the schema and its tables."""
    return int.from_bytes(hashlib.blake2b(f"trainledger:{schema}".encode(), digest_size=8).digest(), "big", signed=True)


@contextmanager
def schema_lock(datastore: PostgresDatastore) -> Iterator[None]:
    """Hold the schema's advisory lock, creating the schema if missing: processes that start
    together must not race each other's CREATE statements."""
    schema = datastore.schema
    # A connection of its own, not the pool's: the CREATE statements under the lock take pooled
    # connections, and a pool of one must not wait for itself.
    with psycopg.connect(**connect_kwargs(datastore), autocommit=True) as connection:
        connection.execute("SELECT pg_advisory_lock(%s)", (lock_key(schema),))
        try:
            found = connection.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
            if found is None:
                connection.execute(SQL("CREATE SCHEMA IF NOT EXISTS {}").format(Identifier(schema)))
            yield
        finally:
            connection.execute("SELECT pg_advisory_unlock(%s)", (lock_key(schema),))


# Whether the database's own collation already compares and orders text in byte order (libc's C or
# POSIX locale): a search then needs no COLLATE clause, which would keep its text comparisons off
# the views' indexes (made with the database's collation).
_BYTE_ORDER_DATABASE = (
    "SELECT datlocprovider = 'c' AND datcollate IN ('C', 'POSIX') AND datctype IN ('C', 'POSIX')"
    " FROM pg_database WHERE datname = current_database()"
)


def sorts_by_bytes(connection: psycopg.Connection[Any]) -> bool:
    try:
        row = connection.execute(_BYTE_ORDER_DATABASE).fetchone()
    except psycopg.errors.UndefinedColumn:  # Before PostgreSQL 15: no ICU default, libc only.
        row = connection.execute(_BYTE_ORDER_DATABASE.replace("datlocprovider = 'c' AND ", "")).fetchone()
    return bool(row and row[0])


# A transaction left open or aborted (not a connection that was lost: its status is UNKNOWN).
OPEN_TRANSACTION = (TransactionStatus.INTRANS, TransactionStatus.INERROR)


@contextmanager
def pipelined_transaction(connection: psycopg.Connection[Any], *opening: bytes) -> Iterator[psycopg.Cursor[Any]]:
    """A transaction on `connection` (in autocommit mode) in pipeline mode, whose BEGIN and COMMIT
    go out with its statements: psycopg's transaction block waits for an answer to BEGIN, to
    COMMIT and to the pipeline's closing sync, a round trip each. BEGIN and the `opening`
    statements go with the block's first statements; COMMIT with the pipeline's closing sync,
    whose answers (COMMIT's too) are read before the block returns. What the block raises, or a
    COMMIT that fails, rolls the transaction back and is raised.

    A DROP, ALTER or ROLLBACK among the statements needs a connection without prepared statements
    (prepare_threshold None): psycopg forgets its prepared statements when it reads such an answer
    and sends DEALLOCATE ALL after the statement under way; in pipeline mode the answer can arrive
    during an executemany, which prepares its statement again before that DEALLOCATE ALL goes out,
    and the connection's next use names a statement the server no longer has."""
    try:
        with connection.pipeline():
            cursor = connection.cursor()
            cursor.execute(b"BEGIN", prepare=False)
            for statement in opening:
                cursor.execute(statement, prepare=False)
            yield cursor
            cursor.execute(b"COMMIT", prepare=False)
    except BaseException:
        if connection.info.transaction_status in OPEN_TRANSACTION:
            connection.rollback()
        raise
