"""A RecordBilledUsage request as the client makes it, and as the server reads it back: each line
field for field, whatever it leaves out (no amount, no quantities, no tags)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from google.protobuf import timestamp_pb2

from clients.methods_spend import _add_lines, billed_line
from clients.models import BilledLine
from services.grpc import codec
from trainledger.v1 import spend_pb2

START = datetime(2026, 1, 1, tzinfo=UTC)
END = START + timedelta(hours=1)


def stamp(seconds: int) -> timestamp_pb2.Timestamp:
    return timestamp_pb2.Timestamp(seconds=seconds)


LINES = [
    BilledLine(
        line_id="sess-1|train",
        interval_start=START,
        interval_end=END,
        amount_usd_micro=73_400,
        amount_text="0.0734",
        quantities={"train": 12_000.0, "sample": 5.0},
        run_id="run-1",
        account="team-a",
        session_id="sess-1",
        tags={"team": "a", "kind": "train"},
        description="training",
    ),
    BilledLine(line_id="unpriced", interval_start=START, interval_end=END, currency=""),
    BilledLine(line_id="tagged", interval_start=END, interval_end=END + timedelta(hours=1), tags={"k": "v"}),
]

MESSAGES = [
    spend_pb2.BilledLine(
        line_id="sess-1|train",
        interval_start=stamp(1767225600),
        interval_end=stamp(1767229200),
        amount_usd_micro=73_400,
        amount_text="0.0734",
        currency="USD",
        quantities={"train": 12_000.0, "sample": 5.0},
        run_id="run-1",
        account="team-a",
        session_id="sess-1",
        tags={"team": "a", "kind": "train"},
        description="training",
    ),
    spend_pb2.BilledLine(line_id="unpriced", interval_start=stamp(1767225600), interval_end=stamp(1767229200)),
    spend_pb2.BilledLine(
        line_id="tagged",
        interval_start=stamp(1767229200),
        interval_end=stamp(1767232800),
        currency="USD",
        tags={"k": "v"},
    ),
]


def test_a_request_holds_each_line_field_for_field() -> None:
    request = spend_pb2.RecordBilledUsageRequest(provider="tinker")
    _add_lines(request, LINES)
    assert list(request.lines) == MESSAGES
    assert not request.lines[1].HasField("amount_usd_micro")
    assert [billed_line(line) for line in LINES] == MESSAGES


def test_the_server_reads_each_line_of_a_request_back() -> None:
    request = spend_pb2.RecordBilledUsageRequest(provider="tinker", lines=MESSAGES)
    read = codec.billed_lines(spend_pb2.RecordBilledUsageRequest.FromString(request.SerializeToString()))
    assert read == [
        {
            "line_id": "sess-1|train",
            "interval_start": START,
            "interval_end": END,
            "amount_usd_micro": 73_400,
            "amount_text": "0.0734",
            "currency": "USD",
            "quantities": {"train": 12_000.0, "sample": 5.0},
            "run_id": "run-1",
            "account": "team-a",
            "session_id": "sess-1",
            "tags": {"team": "a", "kind": "train"},
            "description": "training",
        },
        {
            "line_id": "unpriced",
            "interval_start": START,
            "interval_end": END,
            "amount_usd_micro": None,
            "amount_text": "",
            "currency": "",
            "quantities": {},
            "run_id": "",
            "account": "",
            "session_id": "",
            "tags": {},
            "description": "",
        },
        {
            "line_id": "tagged",
            "interval_start": END,
            "interval_end": END + timedelta(hours=1),
            "amount_usd_micro": None,
            "amount_text": "",
            "currency": "USD",
            "quantities": {},
            "run_id": "",
            "account": "",
            "session_id": "",
            "tags": {"k": "v"},
            "description": "",
        },
    ]
