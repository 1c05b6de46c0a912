"""The hash chain over the log, on SQLite and PostgreSQL: an untouched ledger verifies; a stored
event changed, deleted, inserted or moved, a seal deleted, a snapshot or a view row edited, each
breaks verification at the position written out here.

The scenario (positions by construction): 1 Account.Opened, 2 Run.Opened (run version 1),
3 Run.AttemptStarted (version 2), 4..203 one step batch each (versions 3..202; the run's snapshot
is at version 200, position 201), 204 a reservation, 205 its commit (the account's last event).
"""

from __future__ import annotations

import hashlib
import sqlite3
import struct
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import msgspec
import pytest

from ledger import Ledger
from ledger.views.models import ChainHead
from tests.ledger.conftest import FakeClock

HEAD = 205
SNAPSHOT_POSITION = 201


def write_scenario(database: str) -> None:
    ledger = Ledger.open(database, clock=FakeClock())
    try:
        run = ledger.open_run(run_key="chain", cap_usd_micro=10**9)
        ledger.start_attempt(run_id=run.run_id, attempt_id="a")
        for step in range(1, 201):
            ledger.append_steps(run_id=run.run_id, attempt=1, steps=[step], metrics={"loss": [1.0 / step]})
        ledger.reserve(account=run.run_id, reservation_id="r1", amount_usd_micro=10)
        last = ledger.commit(account=run.run_id, reservation_id="r1", actual_usd_micro=7)
        assert last.position == HEAD
        ledger.wait(HEAD)
    finally:
        ledger.close()


class Store:
    """Raw SQL on the ledger's tables, behind the ledger's back, on either backend."""

    def __init__(self, database: str) -> None:
        self.postgres = database.startswith("postgresql://")
        if self.postgres:
            import psycopg

            parts = urlsplit(database)
            query = dict(parse_qsl(parts.query))
            schema = query.pop("schema")
            url = urlunsplit(parts._replace(query="&".join(f"{k}={v}" for k, v in query.items())))
            self.connection: Any = psycopg.connect(url, autocommit=True)
            self.connection.execute(f'SET search_path TO "{schema}"')
            self.events, self.position = "trainledger_events", "notification_id"
            self.seals, self.snapshots = "trainledger_events_seals", "trainledger_snapshots"
        else:
            self.connection = sqlite3.connect(database, isolation_level=None)
            self.events, self.position = "stored_events", "rowid"
            self.seals, self.snapshots = "stored_seals", "stored_snapshots"

    def sql(self, statement: str, params: tuple[Any, ...] = ()) -> list[Any]:
        statement = statement.format(
            events=self.events, position=self.position, seals=self.seals, snapshots=self.snapshots
        )
        if self.postgres:
            statement = statement.replace("?", "%s")
        cursor = self.connection.execute(statement, params)
        return list(cursor.fetchall()) if cursor.description else []

    def close(self) -> None:
        self.connection.close()


@pytest.fixture
def written(database: str) -> Iterator[tuple[str, Store]]:
    write_scenario(database)
    store = Store(database)
    try:
        yield database, store
    finally:
        store.close()


def verify(database: str, **kwargs: Any) -> Any:
    """A verification as `trainledger verify` runs it: on a ledger opened read-only."""
    ledger = Ledger.open(database, read_only=True)
    try:
        return ledger.verify(**kwargs)
    finally:
        ledger.close()


def test_an_untouched_ledger_verifies_with_its_head(written: tuple[str, Store]) -> None:
    database, store = written
    result = verify(database)
    assert result.ok and result.checked == HEAD and result.broken_at == 0 and result.problem == ""
    ledger = Ledger.open(database, project=False)
    try:
        head = ledger.chain_head()
        exported = ledger.read_events(from_position=HEAD, limit=1)[0]
    finally:
        ledger.close()
    assert head.position == HEAD and result.head == head
    assert exported["digest"] == head.digest


def test_the_digests_are_the_documented_encoding(written: tuple[str, Store]) -> None:
    """Recompute the chain from the raw tables with hashlib alone, as an outside checker would."""
    database, store = written
    rows = store.sql("SELECT {position}, originator_id, originator_version, topic, state FROM {events} ORDER BY 1")
    seals = dict(store.sql("SELECT position, digest FROM {seals}"))
    previous = bytes(32)
    for position, originator_id, version, topic, state in rows:
        aggregate = originator_id.bytes if store.postgres else bytes.fromhex(originator_id)
        topic_bytes, state_bytes = topic.encode(), bytes(state)
        encoded = (
            previous
            + struct.pack(">Q", position)
            + aggregate
            + struct.pack(">Q", version)
            + struct.pack(">Q", len(topic_bytes))
            + topic_bytes
            + struct.pack(">Q", len(state_bytes))
            + state_bytes
        )
        previous = hashlib.sha256(encoded).digest()
        assert bytes(seals[position]) == previous, position
    assert len(rows) == HEAD


def test_one_byte_of_an_event_changed(written: tuple[str, Store]) -> None:
    database, store = written
    (state,) = store.sql("SELECT state FROM {events} WHERE {position} = 57")[0]
    changed = bytearray(state)
    changed[-1] ^= 0x01
    store.sql("UPDATE {events} SET state = ? WHERE {position} = 57", (bytes(changed),))
    result = verify(database)
    assert (result.ok, result.broken_at, result.problem) == (False, 57, "EVENT_CHANGED")
    assert result.head.position == 56 and result.checked == 56


def test_an_event_topic_changed(written: tuple[str, Store]) -> None:
    database, store = written
    store.sql("UPDATE {events} SET topic = topic || 'x' WHERE {position} = 3")
    result = verify(database, views=False)
    assert (result.ok, result.broken_at, result.problem) == (False, 3, "EVENT_CHANGED")


def test_an_event_deleted(written: tuple[str, Store]) -> None:
    database, store = written
    store.sql("DELETE FROM {events} WHERE {position} = 120")
    result = verify(database)
    assert (result.ok, result.broken_at, result.problem) == (False, 120, "EVENT_MISSING")


def test_the_last_event_deleted(written: tuple[str, Store]) -> None:
    database, store = written
    store.sql("DELETE FROM {events} WHERE {position} = 205")
    result = verify(database)
    assert (result.ok, result.broken_at, result.problem) == (False, 205, "EVENT_MISSING")


def test_a_forged_event_inserted(written: tuple[str, Store]) -> None:
    database, store = written
    (row,) = store.sql("SELECT originator_id, topic, state FROM {events} WHERE {position} = 205")
    store.sql(
        "INSERT INTO {events} ({position}, originator_id, originator_version, topic, state) VALUES (206, ?, 99, ?, ?)",
        tuple(row),
    )
    result = verify(database)
    assert (result.ok, result.broken_at, result.problem) == (False, 206, "EVENT_UNSEALED")
    assert result.checked == HEAD


def test_an_event_inserted_in_place_of_another_with_its_seal_kept(written: tuple[str, Store]) -> None:
    """The event at 150 removed and a forged one put there: its seal no longer matches."""
    database, store = written
    (row,) = store.sql("SELECT originator_id, topic, state FROM {events} WHERE {position} = 150")
    store.sql("DELETE FROM {events} WHERE {position} = 150")
    store.sql(
        "INSERT INTO {events} ({position}, originator_id, originator_version, topic, state) VALUES (150, ?, 500, ?, ?)",
        tuple(row),
    )
    result = verify(database)
    assert (result.ok, result.broken_at, result.problem) == (False, 150, "EVENT_CHANGED")


def test_two_events_swapped(written: tuple[str, Store]) -> None:
    database, store = written
    store.sql("UPDATE {events} SET {position} = -1 WHERE {position} = 90")
    store.sql("UPDATE {events} SET {position} = 90 WHERE {position} = 91")
    store.sql("UPDATE {events} SET {position} = 91 WHERE {position} = -1")
    result = verify(database)
    assert (result.ok, result.broken_at, result.problem) == (False, 90, "EVENT_CHANGED")


def test_a_seal_deleted(written: tuple[str, Store]) -> None:
    database, store = written
    store.sql("DELETE FROM {seals} WHERE position = 33")
    result = verify(database)
    assert (result.ok, result.broken_at, result.problem) == (False, 33, "SEAL_MISSING")


def test_a_snapshot_edited(written: tuple[str, Store]) -> None:
    database, store = written
    (version, state) = store.sql("SELECT originator_version, state FROM {snapshots}")[0]
    assert version == 200
    document = msgspec.msgpack.decode(bytes(state))
    document["state"]["last_step"] = 7
    store.sql("UPDATE {snapshots} SET state = ?", (msgspec.msgpack.encode(document),))
    result = verify(database)
    assert (result.ok, result.broken_at, result.problem) == (False, SNAPSHOT_POSITION, "SNAPSHOT_DISAGREES")
    assert result.checked == HEAD


def test_a_view_row_edited(written: tuple[str, Store]) -> None:
    database, store = written
    store.sql("UPDATE view_accounts SET committed = committed + 1")
    result = verify(database)
    assert (result.ok, result.broken_at, result.problem) == (False, 205, "VIEW_DISAGREES")
    assert "view_accounts" in result.detail and "committed" in result.detail
    assert verify(database, views=False).ok


def test_a_view_row_deleted(written: tuple[str, Store]) -> None:
    database, store = written
    store.sql("DELETE FROM view_series WHERE first_step = 77")
    result = verify(database)
    assert (result.ok, result.broken_at, result.problem) == (False, 80, "VIEW_DISAGREES")
    assert "view_series lacks" in result.detail


def test_a_view_cell_of_megabytes_is_quoted_in_a_few_hundred_bytes(written: tuple[str, Store]) -> None:
    database, store = written
    store.sql("UPDATE view_runs SET spec = ?, summary = ?", ("m" * 2_000_000, "s" * 2_000_000))
    result = verify(database)
    # The run's row names the run's last event, at 203.
    assert (result.ok, result.broken_at, result.problem) == (False, 203, "VIEW_DISAGREES")
    assert "view_runs" in result.detail and "spec" in result.detail and "summary" in result.detail
    assert len(result.detail.encode()) < 1_000


def test_the_head_written_down(written: tuple[str, Store]) -> None:
    database, store = written
    ledger = Ledger.open(database, project=False)
    try:
        (digest,) = store.sql("SELECT digest FROM {seals} WHERE position = 100")[0]
        assert ledger.verify(ChainHead(position=100, digest=bytes(digest).hex())).ok
        wrong = ledger.verify(ChainHead(position=100, digest="0" * 64))
        assert (wrong.ok, wrong.broken_at, wrong.problem) == (False, 100, "HEAD_DIFFERS")
        beyond = ledger.verify(ChainHead(position=300, digest="0" * 64))
        assert (beyond.ok, beyond.broken_at, beyond.problem) == (False, 300, "HEAD_DIFFERS")
    finally:
        ledger.close()


def test_writes_after_a_reopen_extend_the_chain(written: tuple[str, Store]) -> None:
    database, store = written
    ledger = Ledger.open(database, clock=FakeClock())
    try:
        run_id = ledger.read_events(from_position=2, limit=1)[0]["originator_id"]
        receipt = ledger.append_steps(run_id=run_id, attempt=1, steps=[201], metrics={"loss": [0.1]})
        assert receipt.position == HEAD + 1
        ledger.wait(receipt.position)
        result = ledger.verify()
        assert result.ok and result.checked == HEAD + 1 and ledger.chain_head().position == HEAD + 1
    finally:
        ledger.close()


def test_an_empty_ledger(database: str) -> None:
    ledger = Ledger.open(database)
    try:
        assert ledger.chain_head() == ChainHead(position=0, digest="0" * 64)
        result = ledger.verify()
        assert result.ok and result.checked == 0 and result.head == ChainHead(position=0, digest="0" * 64)
    finally:
        ledger.close()
