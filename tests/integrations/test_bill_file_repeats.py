"""A bill that states one line twice with two amounts is refused whole, however many requests it
takes: the ledger refuses it in one request (DUPLICATE_LINE), and a bill cut into several must not
be recorded with its first amount restated by its second."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from clients import LedgerClient
from clients.billing.send import LineRefused, send_lines
from clients.models import BilledLine

START = datetime(2026, 11, 30, tzinfo=UTC)
END = datetime(2026, 11, 30, 1, tzinfo=UTC)


def line(line_id: str, amount_text: str) -> BilledLine:
    amount_usd_micro = int(Decimal(amount_text) * 1_000_000)
    return BilledLine(
        line_id=line_id,
        interval_start=START,
        interval_end=END,
        amount_text=amount_text,
        amount_usd_micro=amount_usd_micro,
    )


def test_a_line_stated_twice_with_two_amounts_across_requests_records_nothing(client: LedgerClient) -> None:
    lines = [line("twice", "0.01"), line("a", "0.01"), line("b", "0.01"), line("twice", "99.00"), line("c", "0.01")]
    head = client.get_head()
    with pytest.raises(LineRefused) as refused:
        send_lines(client, "acme", lines, max_lines=2)
    assert refused.value.index == 3
    assert refused.value.error.reason == "DUPLICATE_LINE"
    assert "lines[" not in refused.value.reason
    assert client.get_head() == head


def test_a_line_stated_twice_alike_across_requests_is_recorded_once(client: LedgerClient) -> None:
    lines = [line("twice", "0.01"), line("a", "0.01"), line("b", "0.01"), line("twice", "0.01")]
    result = send_lines(client, "acme", lines, max_lines=2)
    assert (result.recorded, result.restated, result.unchanged, result.requests) == (3, 0, 1, 2)
