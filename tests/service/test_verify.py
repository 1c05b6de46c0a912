"""The hash chain over the wire: GetHead names the newest sealed event and its digest, Verify
recomputes the chain from position 1 and answers OK with the head, or the first position where a
ledger edited while nobody served it breaks. A real SQLite file, a real server on port 0."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator

import grpc
import msgspec
import pytest

from ledger import Ledger
from tests.service.support import Served, error_info
from trainledger.v1 import events_pb2

GENESIS = "0" * 64
HEX = set("0123456789abcdef")


def write_history(ledger: Ledger) -> int:
    """A run with an attempt, three step batches, a reservation and a finish; the head."""
    run_id = ledger.open_run(run_key="chain-run", name="chain", cap_usd_micro=1_000_000).run_id
    ledger.start_attempt(run_id=run_id, attempt_id="a1")
    for first in (0, 10, 20):
        ledger.append_steps(
            run_id=run_id, attempt=1, steps=list(range(first, first + 10)), metrics={"loss": [0.5] * 10}
        )
    ledger.reserve(account=run_id, reservation_id="call-1", amount_usd_micro=1_000)
    ledger.finish_run(run_id=run_id, attempt=1, status="done")
    return ledger.head()


def recorded(database: str) -> str:
    """`database` with the history written and the ledger closed: nothing holds it."""
    ledger = Ledger.open(database)
    try:
        write_history(ledger)
    finally:
        ledger.close()
    return database


@pytest.fixture
def ledger_file(sqlite_database: str) -> str:
    """A SQLite file with the history, for edits on disk."""
    return recorded(sqlite_database)


@pytest.fixture
def serve() -> Iterator[Callable[[str], Served]]:
    """Serves a database (opened once the test has done with it what it wanted)."""
    opened: list[tuple[Ledger, Served]] = []

    def start(database: str) -> Served:
        ledger = Ledger.open(database)
        opened.append((ledger, Served(ledger)))
        return opened[-1][1]

    yield start
    for ledger, served in opened:
        served.close()
        ledger.close()


Serve = Callable[[str], Served]


def sealed_head(served: Served) -> events_pb2.GetHeadResponse:
    """GetHead, which names the newest event at once: an event is sealed as it is written."""
    return served.stubs.events.GetHead(events_pb2.GetHeadRequest(), timeout=10)


def stored_rows(database: str) -> list[tuple[int, bytes]]:
    with sqlite3.connect(database) as connection:
        return connection.execute("SELECT rowid, state FROM stored_events ORDER BY rowid").fetchall()


def edit_stored_event(database: str, position: int) -> None:
    """Change one value of the event stored at `position`, keeping it a valid event: the views
    still project it, only the chain can tell."""
    state = dict(stored_rows(database))[position]
    fields = msgspec.msgpack.decode(state)
    text = next(name for name, value in fields.items() if isinstance(value, str) and name != "originator_topic")
    fields[text] = fields[text] + "!"
    with sqlite3.connect(database) as connection:
        connection.execute(
            "UPDATE stored_events SET state = ? WHERE rowid = ?", (msgspec.msgpack.encode(fields), position)
        )


def test_get_head_is_the_newest_event_and_its_digest(database: str, serve: Serve) -> None:
    served = serve(recorded(database))
    head = sealed_head(served)
    events = list(served.stubs.events.ReadEvents(events_pb2.ReadEventsRequest(), timeout=30))
    assert head.position == served.ledger.head() == events[-1].position == len(events) == 8
    assert head.digest == events[-1].digest
    digests = [event.digest for event in events]
    assert all(len(d) == 64 and set(d) <= HEX for d in digests) and len(set(digests)) == len(digests)
    assert GENESIS not in digests


def test_an_intact_ledger_verifies_with_its_head(database: str, serve: Serve) -> None:
    served = serve(recorded(database))
    head = sealed_head(served)
    answer = served.stubs.events.Verify(events_pb2.VerifyRequest(), timeout=30)
    assert answer.ok and answer.problem == "" and not answer.HasField("broken_at")
    assert (answer.head.position, answer.head.digest) == (head.position, head.digest)
    assert answer.checked == 8
    chain_only = served.stubs.events.Verify(events_pb2.VerifyRequest(skip_views=True), timeout=30)
    assert chain_only.ok and chain_only.head == answer.head


def test_the_head_written_down_verifies_and_another_digest_does_not(database: str, serve: Serve) -> None:
    served = serve(recorded(database))
    head = sealed_head(served)
    written = events_pb2.ChainHead(position=head.position, digest=head.digest)
    assert served.stubs.events.Verify(events_pb2.VerifyRequest(expect_head=written), timeout=30).ok
    earlier = served.stubs.events.ReadEvents(events_pb2.ReadEventsRequest(from_position=3, limit=1), timeout=10)
    third = next(iter(earlier))
    at_three = events_pb2.ChainHead(position=3, digest=third.digest)
    assert served.stubs.events.Verify(events_pb2.VerifyRequest(expect_head=at_three), timeout=30).ok
    wrong = events_pb2.ChainHead(position=head.position, digest="ab" * 32)
    answer = served.stubs.events.Verify(events_pb2.VerifyRequest(expect_head=wrong), timeout=30)
    assert not answer.ok and answer.problem == "HEAD_DIFFERS"
    assert (answer.head.position, answer.head.digest) == (head.position, head.digest)


@pytest.mark.parametrize(
    ("position", "digest", "reason"),
    [
        (8, "not hex", "INVALID_FIELD"),
        (8, "AB" * 32, "INVALID_FIELD"),
        (8, "ab" * 31, "INVALID_FIELD"),
        (0, "ab" * 32, "OUT_OF_RANGE"),
        (-1, "ab" * 32, "OUT_OF_RANGE"),
    ],
)
def test_a_malformed_expected_head_is_refused(
    ledger_file: str, serve: Serve, position: int, digest: str, reason: str
) -> None:
    served = serve(ledger_file)
    request = events_pb2.VerifyRequest(expect_head=events_pb2.ChainHead(position=position, digest=digest))
    with pytest.raises(grpc.RpcError) as refused:
        served.stubs.events.Verify(request, timeout=30)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_info(refused.value).reason == reason


def test_an_event_edited_on_disk_breaks_the_chain_at_its_position(ledger_file: str, serve: Serve) -> None:
    edit_stored_event(ledger_file, 4)
    served = serve(ledger_file)
    answer = served.stubs.events.Verify(events_pb2.VerifyRequest(), timeout=30)
    assert not answer.ok and (answer.broken_at, answer.problem) == (4, "EVENT_CHANGED")
    assert answer.detail
    chain_only = served.stubs.events.Verify(events_pb2.VerifyRequest(skip_views=True), timeout=30)
    assert not chain_only.ok and (chain_only.broken_at, chain_only.problem) == (4, "EVENT_CHANGED")
    # The head is still answered: what the log holds now, for the auditor to compare.
    assert served.stubs.events.GetHead(events_pb2.GetHeadRequest(), timeout=10).position == 8


def test_an_event_deleted_on_disk_breaks_the_chain_where_it_was(ledger_file: str, serve: Serve) -> None:
    with sqlite3.connect(ledger_file) as connection:
        connection.execute("DELETE FROM stored_events WHERE rowid = 6")
    served = serve(ledger_file)
    answer = served.stubs.events.Verify(events_pb2.VerifyRequest(skip_views=True), timeout=30)
    assert not answer.ok and (answer.broken_at, answer.problem) == (6, "EVENT_MISSING")
