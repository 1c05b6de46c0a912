"""A request's bill lines checked once per batch (ledger.domain.bills.checked_lines) make the lines
and keys that checking them one by one (check_line, line_key) makes, and settle nothing they
would refuse: such a batch is handed back (None) to be checked line by line."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from ledger.domain.bills import check_line, checked_lines, line_key
from trainledger.bills import usd_micro_from_text

START = datetime(2026, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)


def good_lines() -> list[dict[str, Any]]:
    return [
        {
            "line_id": "sess-1|Qwen/Qwen3-8B|training",
            "interval_start": START,
            "interval_end": START + HOUR,
            "amount_usd_micro": 73_400,
            "amount_text": "0.0734",
            "quantities": {"train": 12_000, "storage_gb_hours": 0.25},
            "run_id": "run",
            "session_id": "sess-1",
            "tags": {"ledger_run_id": "run", "team": "ünïcødé ✓"},
            "description": "training Qwen/Qwen3-8B",
        },
        {"line_id": "checkpoints", "interval_start": START, "interval_end": START + HOUR},
        {
            "line_id": "credit",
            "interval_start": START.astimezone(timezone(timedelta(hours=2))),
            "interval_end": START + 2 * HOUR + timedelta(microseconds=1),
            "amount_usd_micro": -1_250_000,
            "amount_text": " $-1.25 ",
            "currency": "USD",
            "account": "team-a",
        },
        {
            "line_id": "rounded",
            "interval_start": START,
            "interval_end": START + HOUR,
            "amount_usd_micro": 2,
            "amount_text": "0.0000015",
        },
        {
            "line_id": "grouped",
            "interval_start": START,
            "interval_end": START + HOUR,
            "amount_usd_micro": 1_250_000_000,
            "amount_text": "1,250",
        },
    ]


def one_by_one(raws: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    lines = [check_line(raw, index) for index, raw in enumerate(raws)]
    return [(line_key(line["line_id"], line["start"], line["end"]), line) for line in lines]


def test_a_batch_makes_the_lines_and_keys_of_checking_each_line() -> None:
    raws = good_lines()
    assert checked_lines(raws) == one_by_one(raws)


def test_a_batch_makes_each_line_with_its_fields_in_the_order_they_are_stored() -> None:
    """An event stores a line's dict as it is, in its order: a batch's lines and one line's are
    the same stored bytes only with the same order."""
    fields = ["line_id", "start", "end", "amount", "amount_text", "quantities", "run_id", "account"]
    fields += ["session_id", "tags", "description", "digest"]
    raws = good_lines()
    checked = checked_lines(raws)
    assert checked is not None
    for (_, batch_line), (_, single) in zip(checked, one_by_one(raws), strict=True):
        assert list(batch_line) == list(single) == fields


def test_a_key_spells_each_instant_of_the_interval_in_epoch_seconds() -> None:
    new_york = ZoneInfo("America/New_York")
    # 01:30 comes twice in New York on 2026-11-01: equal as datetimes, an hour apart as instants.
    first = datetime(2026, 11, 1, 1, 30, tzinfo=new_york)
    second = datetime(2026, 11, 1, 1, 30, fold=1, tzinfo=new_york)
    assert first == second
    end = datetime(2026, 11, 1, 7, tzinfo=UTC)
    assert line_key("a", first, end) == "line:a|1793511000.000000|1793516400.000000"
    assert line_key("a", second, end) == "line:a|1793514600.000000|1793516400.000000"
    assert line_key("a", first, end) == "line:a|1793511000.000000|1793516400.000000"
    # One instant in two zones is one key; a microsecond is spelt.
    assert line_key("b", START.astimezone(timezone(timedelta(hours=2))), START + HOUR) == (
        "line:b|1767225600.000000|1767229200.000000"
    )
    assert line_key("b", START, START + timedelta(microseconds=1)) == "line:b|1767225600.000000|1767225600.000001"


@pytest.mark.parametrize(
    "change",
    [
        {"line_id": ""},
        {"line_id": "x" * 257},
        {"run_id": "bad\u202eid"},
        {"description": "two\nlines"},
        {"account": 7},
        {"interval_start": datetime(2026, 1, 1)},
        {"interval_end": START},
        {"interval_end": START + timedelta(days=367)},
        {"currency": "EUR"},
        {"amount_usd_micro": 1.5, "amount_text": ""},
        {"amount_usd_micro": 10**14, "amount_text": ""},
        {"amount_text": "0.07"},
        {"amount_text": "seven", "amount_usd_micro": None},
        {"quantities": {"train": -1.0}},
        {"quantities": {"train": float("nan")}},
        {"quantities": {"train": float("inf")}},
        {"quantities": {"train": 2**53 + 1}},
        {"quantities": {"train": "5"}},
        {"quantities": {"train": True}},
        {"quantities": {"bad unit\u0000": 1.0}},
        {"quantities": {f"u{n}": 1.0 for n in range(33)}},
        {"tags": {f"t{n}": "v" for n in range(65)}},
        {"tags": {"team": "a\u2028b"}},
        {"tags": {"x" * 257: "v"}},
    ],
)
def test_a_batch_with_a_line_to_refuse_is_checked_line_by_line(change: dict[str, Any]) -> None:
    raws = good_lines()
    raws[-1] = {**raws[0], **change}
    assert checked_lines(raws) is None


@pytest.mark.parametrize(
    "text",
    ["0", "-0", "1.", "-1.", "00001.5", "9999999.999999", "-9999999.999999", "0.000001", "12.5", "1234567.0"],
)
def test_plain_amount_text_reads_as_its_decimal(text: str) -> None:
    exact = (Decimal(text) * 1_000_000).quantize(Decimal(1), rounding=ROUND_HALF_EVEN)
    assert usd_micro_from_text(text) == int(exact)
