"""eventsourcing's own test cases, run on trainledger's recorders and transcoder.

The library ships its contract tests in eventsourcing.tests.persistence, and its own suite
subclasses them once per backend (tests/persistence_tests/test_sqlite.py, test_postgres.py and
test_transcoder.py in the eventsourcing repository). The classes here do the same for
ledger.storage.sqlite.SQLiteRecorder, ledger.storage.postgres.AggregateRecorder and ApplicationRecorder, and
ledger.storage.transcoder.MsgspecTranscoder, changing only what the library's per-backend modules change:
how the datastore is made and cleaned up, and the pool sizes its concurrency cases need.

- SQLite: a SQLiteDatastore on a file in a temporary directory (the ledger always uses a file).
- PostgreSQL, when TRAINLEDGER_TEST_DATABASE_URL is set: a PostgresDatastore on a schema of
  the test class's own, emptied after each test (the library drops its tables) and dropped
  after the class; the tables have the ledger's names (`trainledger_events`,
  `trainledger_snapshots`).
- The transcoder: the cases that assert JSON output, or behaviour the MessagePack transcoder
  leaves out on purpose (event values are plain data, see ledger/storage/transcoder.py), are overridden
  below with what the transcoder does instead, each with the reason.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Sequence
from typing import Any
from uuid import UUID, uuid4

import msgspec
import pytest
from eventsourcing.persistence import AggregateRecorder as LibraryAggregateRecorder
from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteAggregateRecorder, SQLiteDatastore
from eventsourcing.tests import persistence as cases
from eventsourcing.utils import Environment

from ledger.backend import persistence_env
from ledger.storage.sqlite import SQLiteRecorder
from ledger.storage.transcoder import MsgspecTranscoder

POSTGRES_URL = os.environ.get("TRAINLEDGER_TEST_DATABASE_URL", "")

# The ledger's table names (Ledger.name is "trainledger"; eventsourcing's postgres factory
# names the tables after the application).
EVENTS_TABLE = "trainledger_events"
SNAPSHOTS_TABLE = "trainledger_snapshots"


class _AsAggregateRecorder:
    """An application recorder seen as an aggregate recorder. AggregateRecorderTestCase asserts
    that insert_events() returns None, which holds for aggregate recorders only: application
    recorders return the notification ids of the inserted events (ApplicationRecorderTestCase
    asserts that, and eventsourcing's own SQLiteApplicationRecorder does the same). This checks
    the ids are there, one per event, and answers None as an aggregate recorder would; every
    other call goes to the recorder unchanged."""

    def __init__(self, recorder: Any) -> None:
        self._recorder = recorder

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> None:
        ids = self._recorder.insert_events(stored_events, **kwargs)
        if stored_events:  # For none, eventsourcing's SQLite recorder answers [] and PostgreSQL's None.
            assert ids is not None and len(ids) == len(stored_events), ids
            assert all(type(i) is int for i in ids), ids

    def __getattr__(self, name: str) -> Any:
        return getattr(self._recorder, name)


def _join_library_readers(timeout_s: float = 10.0) -> None:
    """ApplicationRecorderTestCase.test_concurrent_no_conflicts starts two reader threads and
    tells them to stop at its end, without waiting for them. Wait here, before closing the
    datastore they read: closing a SQLite connection that another thread is using crashes the
    interpreter."""
    for thread in threading.enumerate():
        if thread.name.endswith("(read_continuously)"):
            thread.join(timeout_s)


# SQLite.


class _SQLiteFile:
    """A SQLiteDatastore on a fresh file per test. The library's sqlite module uses ":memory:"
    for some cases and a temporary file for the concurrent ones; the ledger always uses a file."""

    pool_size = 100  # As the library's TestSQLiteApplicationRecorder.

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        directory = tempfile.TemporaryDirectory(prefix="trainledger-contract-")
        self.addCleanup(directory.cleanup)  # type: ignore[attr-defined]
        self.db_uri = os.path.join(directory.name, "ledger.db")

    def datastore(self) -> SQLiteDatastore:
        datastore = SQLiteDatastore(db_name=self.db_uri, pool_size=self.pool_size)
        # Cleanups run last first: the readers end, then the datastore closes, then the
        # directory goes.
        self.addCleanup(datastore.close)  # type: ignore[attr-defined]
        self.addCleanup(_join_library_readers)  # type: ignore[attr-defined]
        return datastore


class TestSQLiteRecorder(_SQLiteFile, cases.ApplicationRecorderTestCase):
    """ledger.storage.sqlite.SQLiteRecorder, the events' recorder of a SQLite ledger."""

    def create_recorder(self) -> SQLiteRecorder:
        recorder = SQLiteRecorder(self.datastore())
        recorder.create_table()
        return recorder


class TestSQLiteRecorderAsAggregateRecorder(_SQLiteFile, cases.AggregateRecorderTestCase):
    """The aggregate case (select_events, atomic inserts, conflicts) on SQLiteRecorder."""

    def create_recorder(self) -> Any:
        recorder = SQLiteRecorder(self.datastore())
        recorder.create_table()
        return _AsAggregateRecorder(recorder)


class TestSQLiteSnapshotRecorder(_SQLiteFile, cases.AggregateRecorderTestCase):
    """The snapshots' recorder that the ledger's SQLite settings (ledger.backend.persistence_env)
    give: eventsourcing's SQLiteAggregateRecorder, made by its factory from those settings."""

    def create_recorder(self) -> LibraryAggregateRecorder:
        from eventsourcing.persistence import InfrastructureFactory

        factory = InfrastructureFactory.construct(Environment("trainledger", persistence_env(self.db_uri)))
        self.addCleanup(factory.close)
        application_recorder = factory.application_recorder()
        self.assertIs(type(application_recorder), SQLiteRecorder)
        recorder = factory.aggregate_recorder("snapshots")
        self.assertIs(type(recorder), SQLiteAggregateRecorder)
        return recorder


# PostgreSQL.

needs_postgres = pytest.mark.skipif(not POSTGRES_URL, reason="TRAINLEDGER_TEST_DATABASE_URL is not set")


def _drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=5) as connection:
        connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


class _PostgresSchema:
    """A PostgresDatastore on a schema of the class's own (named as tests/conftest.py names
    them), emptied after each test and dropped after the class. Pool sizes as the library's
    SetupPostgresDatastore (one connection); the concurrency cases resize the pool as the
    library's TestPostgresApplicationRecorder does."""

    schema = ""
    pool_size = 1
    max_overflow = 0
    max_waiting = 0
    # The ledger's and the library's default.
    connect_timeout = 5.0

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()  # type: ignore[misc]
        cls.schema = f"t_{uuid4().hex[:12]}"
        cls.addClassCleanup(_drop_schema, cls.schema)  # type: ignore[attr-defined]

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        from eventsourcing.postgres import PostgresDatastore

        from ledger.storage.postgres import postgres_env

        env = postgres_env(POSTGRES_URL)
        self.datastore = PostgresDatastore(
            env["POSTGRES_DBNAME"],
            env["POSTGRES_HOST"],
            env["POSTGRES_PORT"],
            env["POSTGRES_USER"],
            env["POSTGRES_PASSWORD"],
            connect_timeout=self.connect_timeout,
            pool_size=self.pool_size,
            max_overflow=self.max_overflow,
            max_waiting=self.max_waiting,
            schema=self.schema,
        )

    def tearDown(self) -> None:
        _join_library_readers()
        self.datastore.close()
        # The next test starts on an empty schema (the library drops its tables).
        _drop_schema(self.schema)
        super().tearDown()  # type: ignore[misc]


class _PostgresApplicationRecorderCase(_PostgresSchema):
    """ledger.storage.postgres.ApplicationRecorder, the events' recorder of a PostgreSQL ledger."""

    def create_recorder(self) -> Any:
        from ledger.storage.postgres import ApplicationRecorder

        recorder = ApplicationRecorder(self.datastore, events_table_name=EVENTS_TABLE)
        recorder.create_table()
        return recorder

    # As the library's TestPostgresApplicationRecorder: the subscription case is optional in the
    # base class (not every backend can subscribe); PostgreSQL's can, by LISTEN/NOTIFY.
    def test_insert_subscribe(self) -> None:
        self.datastore.pool.open()
        self.datastore.pool.resize(2, 2)
        self.optional_test_insert_subscribe()  # type: ignore[attr-defined]

    def test_concurrent_no_conflicts(self, initial_position: int = 0) -> None:
        self.datastore.pool.open()
        self.datastore.pool.resize(12, 12)
        super().test_concurrent_no_conflicts(initial_position)  # type: ignore[misc]

    def test_concurrent_throughput(self) -> None:
        self.datastore.pool.open()
        self.datastore.pool.resize(10, 10)
        super().test_concurrent_throughput()  # type: ignore[misc]


class _PostgresApplicationRecorderAsAggregateCase(_PostgresSchema):
    """The aggregate case on ledger.storage.postgres.ApplicationRecorder (see _AsAggregateRecorder)."""

    def create_recorder(self) -> Any:
        from ledger.storage.postgres import ApplicationRecorder

        recorder = ApplicationRecorder(self.datastore, events_table_name=EVENTS_TABLE)
        recorder.create_table()
        return _AsAggregateRecorder(recorder)


class _PostgresAggregateRecorderCase(_PostgresSchema):
    """ledger.storage.postgres.AggregateRecorder, the snapshots' recorder of a PostgreSQL ledger."""

    def create_recorder(self) -> Any:
        from ledger.storage.postgres import AggregateRecorder

        recorder = AggregateRecorder(self.datastore, events_table_name=SNAPSHOTS_TABLE)
        recorder.create_table()
        return recorder


@needs_postgres
@pytest.mark.postgres
class TestPostgresApplicationRecorder(_PostgresApplicationRecorderCase, cases.ApplicationRecorderTestCase):
    """On the library's pool of one connection: the recorders' tables are created under the
    schema's lock, held on a connection outside the pool, so a pool of one never waits for itself."""


@needs_postgres
@pytest.mark.postgres
class TestPostgresApplicationRecorderTwoConnections(
    _PostgresApplicationRecorderCase, cases.ApplicationRecorderTestCase
):
    pool_size = 2


@needs_postgres
@pytest.mark.postgres
class TestPostgresApplicationRecorderAsAggregateRecorder(
    _PostgresApplicationRecorderAsAggregateCase, cases.AggregateRecorderTestCase
):
    """On the library's pool of one connection: the recorders' tables are created under the
    schema's lock, held on a connection outside the pool, so a pool of one never waits for itself."""


@needs_postgres
@pytest.mark.postgres
class TestPostgresApplicationRecorderAsAggregateRecorderTwoConnections(
    _PostgresApplicationRecorderAsAggregateCase, cases.AggregateRecorderTestCase
):
    pool_size = 2


@needs_postgres
@pytest.mark.postgres
class TestPostgresAggregateRecorder(_PostgresAggregateRecorderCase, cases.AggregateRecorderTestCase):
    """On the library's pool of one connection: the recorders' tables are created under the
    schema's lock, held on a connection outside the pool, so a pool of one never waits for itself."""


@needs_postgres
@pytest.mark.postgres
class TestPostgresAggregateRecorderTwoConnections(_PostgresAggregateRecorderCase, cases.AggregateRecorderTestCase):
    pool_size = 2


# The transcoder.


class TestMsgspecTranscoder(cases.TranscoderTestCase):
    """ledger.storage.transcoder.MsgspecTranscoder (TRANSCODER_TOPIC). The library's case was written for
    its JSONTranscoder: the overrides below keep each case's round trips and replace what is
    JSON's (the exact bytes, `_type_` documents, registered transcodings) with the MessagePack
    equivalent or with what the transcoder deliberately does instead."""

    def construct_transcoder(self) -> MsgspecTranscoder:
        return MsgspecTranscoder()

    def assert_round_trip(self, obj: Any, expected: Any = None) -> bytes:
        data = self.transcoder.encode(obj)
        self.assertIsInstance(data, bytes)
        decoded = self.transcoder.decode(data)
        self.assertEqual(obj if expected is None else expected, decoded)
        return data

    def test_str(self) -> None:
        # The base case asserts JSON text (b'"a"') and decodes legacy JSON escapes
        # (ensure_ascii=True); this transcoder writes MessagePack str (fixstr: 0xa0 | length,
        # then UTF-8) and never stored JSON, so there is no legacy encoding to read.
        self.assertEqual(self.assert_round_trip("a"), b"\xa1a")
        self.assertEqual(self.assert_round_trip("abc"), b"\xa3abc")
        self.assertEqual(self.assert_round_trip("a'b"), b"\xa3a'b")
        self.assertEqual(self.assert_round_trip('a"b'), b'\xa3a"b')
        cat = "🐈 哈哈"
        self.assertEqual(self.assert_round_trip(cat), b"\xab" + cat.encode())

    def test_dict(self) -> None:
        # The base case asserts JSON text (b'{"a":1}'); the same dicts as MessagePack maps.
        self.assertEqual(self.assert_round_trip({}), b"\x80")
        self.assertEqual(self.assert_round_trip({"a": 1}), b"\x81\xa1a\x01")
        self.assertEqual(self.assert_round_trip({"a": 1, "b": 2}), b"\x82\xa1a\x01\xa1b\x02")
        self.assertEqual(self.assert_round_trip({"a": {}}), b"\x81\xa1a\x80")
        self.assertEqual(self.assert_round_trip({"a": {}, "b": {}}), b"\x82\xa1a\x80\xa1b\x80")
        self.assertEqual(self.assert_round_trip({"a": {"b": {}}}), b"\x81\xa1a\x81\xa1b\x80")
        self.assertEqual(self.assert_round_trip({"a": {"b": {"c": 1}}}), b"\x81\xa1a\x81\xa1b\x81\xa1c\x01")

    def test_tuple(self) -> None:
        # The base case expects tuples back as tuples, through JSONTranscoder's `_type_`
        # document. MessagePack has arrays only and event values are plain data (lists): a
        # tuple comes back as a list, as the library's own JSON transcoder without that
        # transcoding does (the library skips this case for it).
        self.assertEqual(self.assert_round_trip((), []), b"\x90")
        self.assert_round_trip(((),), [[]])
        self.assert_round_trip(((1, 2),), [[1, 2]])
        self.assert_round_trip((("a", "b"),), [["a", "b"]])
        self.assert_round_trip(((1, "a"),), [[1, "a"]])

    def test_mixed(self) -> None:
        # Tuples come back as lists (see test_tuple).
        self.assert_round_trip([(1, "a"), {"b": 2}], [[1, "a"], {"b": 2}])
        self.assert_round_trip(([1, "a"], {"b": 2}), [[1, "a"], {"b": 2}])
        self.assert_round_trip({"a": (1, 2), "b": [3, 4]}, {"a": [1, 2], "b": [3, 4]})

    def test_dict_subclass(self) -> None:
        # The base case expects the subclass back, through a `_type_` document. Event values
        # are plain data: a dict subclass is written as a map and comes back a plain dict (the
        # library skips this case for its JSON transcoder for the same reason).
        my_dict = cases.Mydict({"a": 1})
        data = self.transcoder.encode(my_dict)
        self.assertEqual(data, b"\x81\xa1a\x01")
        copy = self.transcoder.decode(data)
        self.assertIs(type(copy), dict)
        self.assertEqual(copy, {"a": 1})

    def test_list_subclass(self) -> None:
        # As test_dict_subclass: a list subclass comes back a plain list (its tuples as lists).
        copy = self.transcoder.decode(self.transcoder.encode(cases.MyList((("a", 1),))))
        self.assertIs(type(copy), list)
        self.assertEqual(copy, [["a", 1]])

    def test_str_subclass(self) -> None:
        # The base case expects the subclass back. msgspec encodes str itself and Enum members
        # only; any other str subclass is refused when the event is saved (TypeError), never
        # written in a form that would read back differently. Event values are plain str.
        with self.assertRaises(TypeError):
            self.transcoder.encode(cases.MyStr("a"))
        with self.assertRaises(TypeError):
            self.transcoder.encode({"a": cases.MyStr("a")})

    def test_int_subclass(self) -> None:
        # As test_str_subclass, for int subclasses (bool and IntEnum members are encoded).
        with self.assertRaises(TypeError):
            self.transcoder.encode(cases.MyInt(3))
        with self.assertRaises(TypeError):
            self.transcoder.encode({"a": cases.MyInt(3)})

    def test_custom_type_in_dict(self) -> None:
        # The base case registers custom transcodings (CustomType1AsDict...) with the
        # JSONTranscoder; this transcoder has no registry: event values are plain data, so a
        # custom type is refused when the event is saved.
        obj = {"a": cases.CustomType2(cases.CustomType1(UUID("b2723fe2c01a40d2875ea3aac6a09ff5")))}
        with self.assertRaises(TypeError):
            self.transcoder.encode(obj)

    def test_nested_custom_type(self) -> None:
        # As test_custom_type_in_dict (the base case asserts the JSON of nested `_type_`
        # documents).
        obj = cases.CustomType2(cases.CustomType1(UUID("b2723fe2c01a40d2875ea3aac6a09ff5")))
        with self.assertRaises(TypeError):
            self.transcoder.encode(obj)

    def test_custom_type_error(self) -> None:
        # The base case asserts JSONTranscoder's messages and decodes a JSON `_type_` document
        # naming an unregistered transcoding. Here: an unsupported type is a TypeError (at the
        # top level and nested), and data this transcoder cannot read back (an unknown
        # MessagePack extension type, or bytes that are not MessagePack) is an error, never a
        # wrong value.
        with self.assertRaises(TypeError) as cm:
            self.transcoder.encode(cases.MyClass())
        self.assertIn("MyClass", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            self.transcoder.encode({"a": cases.MyClass()})
        self.assertIn("MyClass", str(cm.exception))

        with self.assertRaises(msgspec.DecodeError) as cm2:
            self.transcoder.decode(msgspec.msgpack.encode(msgspec.msgpack.Ext(5, b"")))
        self.assertIn("extension type 5", str(cm2.exception))
        with self.assertRaises(msgspec.DecodeError):
            self.transcoder.decode(b'{"_type_":"custom_type3_as_dict","_data_":""}')
