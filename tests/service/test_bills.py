"""The bill RPCs over real gRPC: Spend.RecordBilledUsage, Reconcile and AdjustToBill, and
Runs.LinkSession, through the raw stubs and through clients.LedgerClient.

Each test that reads figures builds its own ledger (a fake clock, so the commits fall in known
hours) behind an in-process server on a loopback port, because Reconcile answers ledger-wide.
The scenario: a team account with two runs under it. Run A commits $1.00 in the 10:00 hour and
$0.50 in the 11:00 hour; Tinker bills it $1.07 and $0.535 by its run id, 7% over the estimate
(flagged at the default 5%). Run B commits $2.00 in the 10:00 hour and is billed exactly that by
its linked session "sess-b" (the line names no run). A session of no run is billed $0.30:
unattributed. The bill is final through 12:00. Every expected figure is written out below.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import timestamp_pb2

from clients import LedgerClient
from clients.errors import InvalidArgument, NotFound
from clients.models import (
    Adjustment,
    BilledLine,
    BillTotals,
    ProviderBill,
    Reconciliation,
    TokenClassDrift,
    UnattributedGroup,
)
from ledger import Ledger
from tests.service.support import Served, Stubs, error_info, key
from trainledger.v1 import common_pb2, events_pb2, runs_pb2, spend_pb2, spend_pb2_grpc

T10 = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
T11, T12 = T10 + timedelta(hours=1), T10 + timedelta(hours=2)
INVALID = grpc.StatusCode.INVALID_ARGUMENT


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def ts(moment: datetime) -> timestamp_pb2.Timestamp:
    message = timestamp_pb2.Timestamp()
    message.FromDatetime(moment)
    return message


def line(line_id: str, start: datetime, **fields: Any) -> spend_pb2.BilledLine:
    """A one-hour line starting at `start`."""
    return spend_pb2.BilledLine(
        line_id=line_id, interval_start=ts(start), interval_end=ts(start + timedelta(hours=1)), **fields
    )


def refusal(call: Any) -> tuple[grpc.StatusCode, str, dict[str, str]]:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    info = error_info(caught.value)
    return caught.value.code(), info.reason, dict(info.metadata)


@pytest.fixture
def clock() -> Clock:
    return Clock(T10)


@pytest.fixture
def served(tmp_path: Path, clock: Clock) -> Iterator[Served]:
    ledger = Ledger.open(str(tmp_path / "ledger.db"), clock=clock)
    server = Served(ledger)
    try:
        yield server
    finally:
        server.close()
        ledger.close()


@pytest.fixture
def stubs(served: Served) -> Stubs:
    return served.stubs


@pytest.fixture
def client(served: Served) -> Iterator[LedgerClient]:
    with LedgerClient(served.address, principal="tests", timeout_s=30.0) as opened:
        yield opened


def new_run(stubs: Stubs, parent: str = "") -> str:
    opened = stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=key(), name="n", parent_account=parent), timeout=30)
    run_id = opened.state.run.run_id
    stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a1"), timeout=30)
    return str(run_id)


def spend(stubs: Stubs, run_id: str, amount: int, train_tokens: int) -> int:
    """Reserve and commit `amount` on the run with a cost basis of `train_tokens` train tokens."""
    basis = common_pb2.CostBasis(price_sheet="test")
    basis.tokens.add(token_class="train", tokens=train_tokens, usd_micro_per_million_tokens=10_000_000)
    reservation = uuid.uuid4().hex
    stubs.spend.Reserve(
        spend_pb2.ReserveRequest(account=run_id, reservation_id=reservation, amount_usd_micro=amount, basis=basis),
        timeout=30,
    )
    committed = stubs.spend.Commit(
        spend_pb2.CommitRequest(account=run_id, reservation_id=reservation, actual_usd_micro=amount, basis=basis),
        timeout=30,
    )
    return int(committed.position)


@dataclass
class Scenario:
    a: str
    b: str
    position: int


def scenario(stubs: Stubs, clock: Clock) -> Scenario:
    """The module docstring's scenario, recorded over the wire."""
    stubs.spend.OpenAccount(spend_pb2.OpenAccountRequest(account="team"), timeout=30)
    a, b = new_run(stubs, "team"), new_run(stubs, "team")
    clock.now = T10 + timedelta(minutes=10)
    spend(stubs, a, 1_000_000, 100_000)
    clock.now = T10 + timedelta(minutes=30)
    spend(stubs, b, 2_000_000, 200_000)
    clock.now = T11 + timedelta(minutes=20)
    spend(stubs, a, 500_000, 50_000)
    clock.now = T12 + timedelta(hours=1)
    stubs.runs.LinkSession(runs_pb2.LinkSessionRequest(run_id=b, provider="tinker", session_id="sess-b"), timeout=30)
    request = spend_pb2.RecordBilledUsageRequest(
        provider="tinker",
        lines=[
            line("a|10", T10, amount_usd_micro=1_070_000, amount_text="1.07", run_id=a, quantities={"train": 100_000}),
            line("a|11", T11, amount_usd_micro=535_000, amount_text="0.535", run_id=a, quantities={"train": 50_000}),
            line(
                "b|10",
                T10,
                amount_usd_micro=2_000_000,
                amount_text="2",
                session_id="sess-b",
                quantities={"train": 200_000},
            ),  # fmt: skip
            line("orphan|10", T10, amount_usd_micro=300_000, amount_text="0.3", session_id="sess-orphan"),
        ],
        cost_data_through=ts(T12),
    )
    receipt = stubs.spend.RecordBilledUsage(request, timeout=30)
    assert (receipt.recorded, receipt.restated, receipt.unchanged, receipt.duplicate) == (4, 0, 0, False)
    return Scenario(a, b, receipt.position)


A_BILL = BillTotals(
    estimated_usd_micro=1_500_000,
    billed_usd_micro=1_605_000,
    drift_usd_micro=105_000,
    drift_percent=7.0,
    lines=2,
    flagged=True,
    unadjusted_usd_micro=105_000,
)
B_BILL = BillTotals(
    estimated_usd_micro=2_000_000, billed_usd_micro=2_000_000, drift_usd_micro=0, drift_percent=0.0, lines=1
)
TEAM_BILL = BillTotals(
    estimated_usd_micro=3_500_000,
    billed_usd_micro=3_605_000,
    drift_usd_micro=105_000,
    drift_percent=3.0,
    lines=3,
    flagged=False,
    unadjusted_usd_micro=105_000,
)
TINKER = ProviderBill(
    provider="tinker",
    billed_usd_micro=3_905_000,
    unattributed_usd_micro=300_000,
    lines=4,
    unattributed_lines=1,
    restatements=0,
    cost_data_through=T12,
    first_interval_start=T10,
    last_interval_end=T12,
)
ORPHAN = UnattributedGroup(provider="tinker", source="session sess-orphan", billed_usd_micro=300_000, lines=1)


def train(ledger_tokens: int, billed_tokens: int) -> list[TokenClassDrift]:
    return [
        TokenClassDrift(
            token_class="train",
            ledger_tokens=ledger_tokens,
            billed_tokens=billed_tokens,
            drift_tokens=billed_tokens - ledger_tokens,
        )
    ]


def run_rows(s: Scenario) -> list[Reconciliation]:
    """Run A (largest drift) first, then B."""
    return [
        Reconciliation(run_id=s.a, name="n", account=s.a, parent="team", bill=A_BILL, providers=["tinker"],
                       token_classes=train(150_000, 150_000)),
        Reconciliation(run_id=s.b, name="n", account=s.b, parent="team", bill=B_BILL, providers=["tinker"],
                       token_classes=train(200_000, 200_000)),
    ]  # fmt: skip


TEAM_ROW = Reconciliation(account="team", bill=TEAM_BILL, providers=["tinker"], token_classes=train(350_000, 350_000))


# RecordBilledUsage


def head(stubs: Stubs) -> int:
    return int(stubs.events.GetHead(events_pb2.GetHeadRequest(), timeout=30).position)


def test_recorded_restated_and_unchanged_lines_and_a_repeat_that_moves_nothing(stubs: Stubs) -> None:
    run_id = new_run(stubs)
    lines = [line(f"l{n}", T10, amount_usd_micro=n * 10, amount_text=f"0.0000{n}", run_id=run_id) for n in (1, 2, 3)]
    request = spend_pb2.RecordBilledUsageRequest(provider="tinker", lines=lines)
    first = stubs.spend.RecordBilledUsage(request, timeout=30)
    assert (first.recorded, first.restated, first.unchanged, first.duplicate) == (3, 0, 0, False)
    assert first.position > 0
    before = head(stubs)
    again = stubs.spend.RecordBilledUsage(request, timeout=30)
    assert (again.recorded, again.restated, again.unchanged, again.duplicate) == (0, 0, 3, True)
    assert again.position == first.position
    assert head(stubs) == before  # Nothing was written.
    # l2 re-priced, l3 unchanged, l4 new: one restatement and one new line in one request.
    changed = spend_pb2.RecordBilledUsageRequest(
        provider="tinker",
        lines=[
            line("l2", T10, amount_usd_micro=25, amount_text="0.000025", run_id=run_id),
            lines[2],
            line("l4", T10, amount_usd_micro=40, amount_text="0.00004", run_id=run_id),
        ],
    )
    third = stubs.spend.RecordBilledUsage(changed, timeout=30)
    assert (third.recorded, third.restated, third.unchanged, third.duplicate) == (1, 1, 1, False)
    assert third.position > first.position
    # The restated amount replaces the first: 10 + 25 + 30 + 40.
    found = stubs.spend.Reconcile(spend_pb2.ReconcileRequest(run_id=run_id, min_position=third.position), timeout=30)
    assert [(r.run_id, r.bill.billed_usd_micro, r.bill.lines) for r in found.runs] == [(run_id, 105, 4)]
    assert [(p.provider, p.lines, p.restatements) for p in found.providers] == [("tinker", 4, 1)]


def test_the_client_records_lines_and_a_second_send_is_a_duplicate(client: LedgerClient) -> None:
    lines = [
        BilledLine(line_id="x", interval_start=T10, interval_end=T11, amount_usd_micro=1_234_568,
                   amount_text="1.2345675", quantities={"train": 10.0}, account="nobody"),
        BilledLine(line_id="y", interval_start=T10, interval_end=T11),  # Not priced yet.
    ]  # fmt: skip
    first = client.record_billed_usage(provider="modal", lines=lines, cost_data_through=T11)
    assert (first.recorded, first.restated, first.unchanged, first.duplicate) == (2, 0, 0, False)
    again = client.record_billed_usage(provider="modal", lines=lines, cost_data_through=T11)
    assert (again.position, again.recorded, again.unchanged, again.duplicate) == (first.position, 0, 2, True)
    report = client.reconcile(min_position=first.position)
    assert report.providers == [
        ProviderBill(provider="modal", billed_usd_micro=1_234_568, unattributed_usd_micro=1_234_568, lines=2,
                     unattributed_lines=2, cost_data_through=T11, first_interval_start=T10, last_interval_end=T11)
    ]  # fmt: skip
    assert report.runs == [] and report.accounts == []
    # An account the ledger does not know leaves its line unattributed, named by that account; a
    # line naming nothing is named by its line id.
    assert report.unattributed == [
        UnattributedGroup(provider="modal", source="account nobody", billed_usd_micro=1_234_568, lines=1),
        UnattributedGroup(provider="modal", source="y", billed_usd_micro=0, lines=1),
    ]


BAD_LINES = [
    # (the bad line, the reason)
    (spend_pb2.BilledLine(interval_start=ts(T10), interval_end=ts(T11)), "MISSING_FIELD"),
    (spend_pb2.BilledLine(line_id="x", interval_start=ts(T11), interval_end=ts(T10)), "INVALID_INTERVAL"),
    (spend_pb2.BilledLine(line_id="x", interval_start=ts(T10), interval_end=ts(T10)), "INVALID_INTERVAL"),
    (spend_pb2.BilledLine(line_id="x", interval_end=ts(T11)), "INVALID_INTERVAL"),
    (spend_pb2.BilledLine(line_id="x", interval_start=ts(T10), interval_end=ts(T10 + timedelta(days=400))),
     "INVALID_INTERVAL"),
    (line("x", T10, amount_usd_micro=1, amount_text="0.000001", currency="EUR"), "CURRENCY_NOT_SUPPORTED"),
    (line("x", T10, amount_usd_micro=1_000, amount_text="0.0734"), "AMOUNT_TEXT_MISMATCH"),
    (line("x", T10, amount_text="0.0734"), "AMOUNT_TEXT_MISMATCH"),  # A figure with no amount.
    (line("x", T10, amount_usd_micro=3, amount_text="0.0000025"), "AMOUNT_TEXT_MISMATCH"),  # Half-even is 2.
    (line("x", T10, amount_usd_micro=1, amount_text="one cent"), "INVALID_AMOUNT"),
    # Hostile figures: an exponent beyond any context, one beyond the arithmetic's precision, and
    # digits that are not ASCII (Arabic-Indic, fullwidth) or that Python's literals allow ("1_0").
    (line("x", T10, amount_text="1e999999"), "INVALID_AMOUNT"),
    (line("x", T10, amount_text="-1E-999999999"), "INVALID_AMOUNT"),
    (line("x", T10, amount_usd_micro=10**13, amount_text="1e30"), "INVALID_AMOUNT"),
    (line("x", T10, amount_usd_micro=12_000_000, amount_text="\u0661\u0662"), "INVALID_AMOUNT"),
    (line("x", T10, amount_usd_micro=12_000_000, amount_text="\uff11\uff12"), "INVALID_AMOUNT"),
    (line("x", T10, amount_usd_micro=10_000_000, amount_text="1_0"), "INVALID_AMOUNT"),
    (line("x", T10, amount_text="NaN"), "INVALID_AMOUNT"),
    (line("x", T10, amount_usd_micro=10**13 + 1), "AMOUNT_TOO_LARGE"),  # Ten million dollars is the most.
    (line("x", T10, quantities={"train": float("nan")}), "NON_FINITE_VALUE"),
    (line("x", T10, quantities={"train": -1.0}), "OUT_OF_RANGE"),
    (line("x", T10, tags={f"k{n}": "v" for n in range(65)}), "MAP_TOO_LARGE"),
    (line("x" * 257, T10), "STRING_TOO_LONG"),
    (line("x", T10, description="bill\u202eed"), "INVALID_TEXT"),
]  # fmt: skip


def test_a_figure_that_is_not_its_amount_is_refused_in_dollars(stubs: Stubs) -> None:
    bad = line("x", T10, amount_usd_micro=1_000, amount_text="0.0734")
    with pytest.raises(grpc.RpcError) as caught:
        stubs.spend.RecordBilledUsage(spend_pb2.RecordBilledUsageRequest(provider="tinker", lines=[bad]), timeout=30)
    assert "amount_text '0.0734' is $0.0734 (to the micro-dollar, half-even), not $0.001" in caught.value.details()


@pytest.mark.parametrize("bad,reason", BAD_LINES)
def test_a_bad_line_is_refused_by_its_index_and_nothing_is_recorded(stubs: Stubs, bad: Any, reason: str) -> None:
    good = [line(f"g{n}", T10, amount_usd_micro=1, amount_text="0.000001") for n in range(3)]
    request = spend_pb2.RecordBilledUsageRequest(provider="tinker", lines=[*good[:2], bad, good[2]])
    before = head(stubs)
    code, got, metadata = refusal(lambda: stubs.spend.RecordBilledUsage(request, timeout=30))
    assert (code, got, metadata.get("line")) == (INVALID, reason, "2")
    assert head(stubs) == before
    # The good lines alone are recorded: the refusal left nothing behind that would make them unchanged.
    receipt = stubs.spend.RecordBilledUsage(spend_pb2.RecordBilledUsageRequest(provider="tinker", lines=good))
    assert (receipt.recorded, receipt.unchanged) == (3, 0)


def test_validate_only_checks_every_line_as_a_recording_would_and_records_nothing(stubs: Stubs) -> None:
    good = [line(f"v{n}", T10, amount_usd_micro=1, amount_text="0.000001") for n in range(3)]
    long = spend_pb2.BilledLine(line_id="long", interval_start=ts(T10), interval_end=ts(T10 + timedelta(days=400)))
    before = head(stubs)
    bad = spend_pb2.RecordBilledUsageRequest(provider="tinker", lines=[*good, long], validate_only=True)
    assert refusal(lambda: stubs.spend.RecordBilledUsage(bad, timeout=30)) == (
        INVALID,
        "INVALID_INTERVAL",
        {"field": "lines[3].interval_end", "line": "3"},
    )
    checked = stubs.spend.RecordBilledUsage(
        spend_pb2.RecordBilledUsageRequest(provider="tinker", lines=good, validate_only=True), timeout=30
    )
    assert (checked.position, checked.recorded, checked.restated, checked.unchanged) == (0, 0, 0, 0)
    assert head(stubs) == before
    # Nothing of the checks is held: the same lines are then recorded as new.
    receipt = stubs.spend.RecordBilledUsage(spend_pb2.RecordBilledUsageRequest(provider="tinker", lines=good))
    assert (receipt.recorded, receipt.unchanged) == (3, 0)


def test_the_same_line_twice_with_two_payloads_is_a_duplicate_line(stubs: Stubs) -> None:
    lines = [
        line("a", T10, amount_usd_micro=1, amount_text="0.000001"),
        line("b", T10),
        line("a", T10, amount_usd_micro=2, amount_text="0.000002"),
    ]
    request = spend_pb2.RecordBilledUsageRequest(provider="tinker", lines=lines)
    before = head(stubs)
    assert refusal(lambda: stubs.spend.RecordBilledUsage(request, timeout=30)) == (
        INVALID,
        "DUPLICATE_LINE",
        {"line": "2"},
    )
    assert head(stubs) == before
    # The same line twice with the same payload is one line; the same id in another hour is another.
    same = [lines[0], lines[1], lines[0], line("a", T11)]
    receipt = stubs.spend.RecordBilledUsage(spend_pb2.RecordBilledUsageRequest(provider="tinker", lines=same))
    assert (receipt.recorded, receipt.restated, receipt.unchanged) == (3, 0, 0)


@pytest.mark.parametrize("seconds,nanos", [(253_402_300_800, 0), (-62_135_596_801, 0), (1_900_000_000, 10**9)])
def test_a_timestamp_out_of_range_is_refused_by_the_line_index(stubs: Stubs, seconds: int, nanos: int) -> None:
    bad = spend_pb2.BilledLine(
        line_id="x", interval_start=ts(T10), interval_end=timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos)
    )
    request = spend_pb2.RecordBilledUsageRequest(
        provider="tinker", lines=[line("a", T10), line("b", T10), line("c", T10), bad]
    )
    code, reason, metadata = refusal(lambda: stubs.spend.RecordBilledUsage(request, timeout=30))
    assert (code, reason) == (INVALID, "INVALID_TIMESTAMP")
    assert metadata.get("line") == "3"


@pytest.mark.parametrize("seconds,nanos", [(253_402_300_800, 0), (-62_135_596_801, 0), (1_900_000_000, 10**9)])
def test_a_timestamp_out_of_range_is_invalid_and_records_nothing(stubs: Stubs, seconds: int, nanos: int) -> None:
    out_of_range = timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos)
    bad = spend_pb2.BilledLine(line_id="x", interval_start=ts(T10), interval_end=out_of_range)
    request = spend_pb2.RecordBilledUsageRequest(provider="tinker", lines=[line("a", T10), bad])
    before = head(stubs)
    assert refusal(lambda: stubs.spend.RecordBilledUsage(request, timeout=30))[:2] == (INVALID, "INVALID_TIMESTAMP")
    through = spend_pb2.RecordBilledUsageRequest(
        provider="tinker", lines=[line("a", T10)], cost_data_through=out_of_range
    )
    assert refusal(lambda: stubs.spend.RecordBilledUsage(through, timeout=30))[:2] == (INVALID, "INVALID_TIMESTAMP")
    assert head(stubs) == before


def test_more_than_10000_lines_is_batch_too_large_and_10000_are_taken(stubs: Stubs) -> None:
    lines = [line(f"l{n}", T10) for n in range(10_001)]
    before = head(stubs)
    request = spend_pb2.RecordBilledUsageRequest(provider="tinker", lines=lines)
    code, reason, metadata = refusal(lambda: stubs.spend.RecordBilledUsage(request, timeout=60))
    assert (code, reason, metadata.get("limit")) == (INVALID, "BATCH_TOO_LARGE", "10000")
    assert head(stubs) == before
    taken = stubs.spend.RecordBilledUsage(spend_pb2.RecordBilledUsageRequest(provider="tinker", lines=lines[:10_000]))
    assert (taken.recorded, taken.unchanged) == (10_000, 0)


def test_a_request_over_the_byte_limit_is_refused_and_the_server_goes_on(served: Served, stubs: Stubs) -> None:
    # 9,000 lines of 1,000-character descriptions: about 9 MiB, under 10,000 lines.
    lines = [line(f"l{n}", T10, description="d" * 1_000) for n in range(9_000)]
    request = spend_pb2.RecordBilledUsageRequest(provider="tinker", lines=lines)
    assert request.ByteSize() > 8 * 1024 * 1024
    before = head(stubs)
    channel = grpc.insecure_channel(served.address, options=[("grpc.max_send_message_length", 32 * 1024 * 1024)])
    stub = spend_pb2_grpc.SpendStub(channel)  # type: ignore[no-untyped-call]
    try:
        refused = refusal(lambda: stub.RecordBilledUsage(request, timeout=60))
    finally:
        channel.close()
    # Refused as every other RPC refuses a request past the byte limit (8 MiB), before decoding it.
    assert (refused[0], refused[1], refused[2].get("limit")) == (INVALID, "REQUEST_TOO_LARGE", "8388608")
    assert head(stubs) == before
    # The server still answers, and the same lines cut in two requests are taken.
    half = len(lines) // 2
    for part in (lines[:half], lines[half:]):
        receipt = stubs.spend.RecordBilledUsage(spend_pb2.RecordBilledUsageRequest(provider="tinker", lines=part))
        assert receipt.recorded == len(part)


def test_a_request_with_only_cost_data_through_moves_what_the_bill_covers(stubs: Stubs) -> None:
    first = stubs.spend.RecordBilledUsage(
        spend_pb2.RecordBilledUsageRequest(provider="tinker", lines=[line("a", T10)], cost_data_through=ts(T11))
    )
    moved = stubs.spend.RecordBilledUsage(
        spend_pb2.RecordBilledUsageRequest(provider="tinker", cost_data_through=ts(T12))
    )
    assert (moved.recorded, moved.restated, moved.unchanged, moved.duplicate) == (0, 0, 0, False)
    assert moved.position > first.position
    before = head(stubs)
    again = stubs.spend.RecordBilledUsage(
        spend_pb2.RecordBilledUsageRequest(provider="tinker", cost_data_through=ts(T12))
    )
    assert again.position == moved.position and head(stubs) == before
    report = stubs.spend.Reconcile(spend_pb2.ReconcileRequest(min_position=moved.position), timeout=30)
    assert [(p.provider, p.cost_data_through.ToDatetime(tzinfo=UTC)) for p in report.providers] == [("tinker", T12)]


def test_an_empty_request_and_a_bad_provider_are_invalid(stubs: Stubs) -> None:
    empty = spend_pb2.RecordBilledUsageRequest(provider="tinker")
    assert refusal(lambda: stubs.spend.RecordBilledUsage(empty, timeout=30))[:2] == (INVALID, "EMPTY_BATCH")
    nameless = spend_pb2.RecordBilledUsageRequest(lines=[line("a", T10)])
    assert refusal(lambda: stubs.spend.RecordBilledUsage(nameless, timeout=30))[0] == INVALID


# Reconcile


def test_reconcile_figures_of_the_scenario(stubs: Stubs, client: LedgerClient, clock: Clock) -> None:
    s = scenario(stubs, clock)
    report = client.reconcile(min_position=s.position)
    assert report.runs == run_rows(s)
    assert report.accounts == [TEAM_ROW]
    assert report.providers == [TINKER]
    assert report.unattributed == [ORPHAN]
    assert (report.next_page_token, report.threshold_percent) == ("", 5.0)
    assert report.position >= s.position
    # The raw answer carries the same figures.
    raw = stubs.spend.Reconcile(spend_pb2.ReconcileRequest(min_position=s.position), timeout=30)
    first = raw.runs[0]
    assert (first.run_id, first.bill.drift_usd_micro, first.bill.drift_percent, first.bill.flagged) == (
        s.a, 105_000, 7.0, True,
    )  # fmt: skip
    assert raw.runs[1].bill.HasField("drift_percent") and raw.runs[1].bill.drift_percent == 0.0
    # A higher threshold flags nothing; a lower one flags the team too.
    relaxed = client.reconcile(threshold_percent=10)
    assert relaxed.threshold_percent == 10.0
    assert [r.bill.flagged if r.bill else None for r in relaxed.runs] == [False, False]
    strict = client.reconcile(threshold_percent=2.5)
    assert [r.bill.flagged if r.bill else None for r in strict.runs] == [True, False]
    assert [r.bill.flagged if r.bill else None for r in strict.accounts] == [True]


def test_the_run_and_its_account_carry_the_bill(stubs: Stubs, clock: Clock) -> None:
    s = scenario(stubs, clock)
    state = stubs.runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=s.a, min_position=s.position), timeout=30).state
    bill = state.spend.bill
    assert (bill.estimated_usd_micro, bill.billed_usd_micro, bill.drift_usd_micro, bill.lines, bill.flagged) == (
        1_500_000, 1_605_000, 105_000, 2, True,
    )  # fmt: skip
    team = stubs.spend.GetAccount(spend_pb2.GetAccountRequest(account="team"), timeout=30).account.bill
    assert (team.estimated_usd_micro, team.billed_usd_micro, team.drift_usd_micro, team.flagged) == (
        3_500_000, 3_605_000, 105_000, False,
    )  # fmt: skip


def test_reconcile_pages_of_one_run_add_up_to_the_whole(stubs: Stubs, client: LedgerClient, clock: Clock) -> None:
    s = scenario(stubs, clock)
    whole = client.reconcile(min_position=s.position)
    first = client.reconcile(page_size=1)
    assert first.runs == run_rows(s)[:1] and first.next_page_token
    second = client.reconcile(page_size=1, page_token=first.next_page_token)
    assert second.runs == run_rows(s)[1:] and second.next_page_token == ""
    assert first.runs + second.runs == whole.runs
    assert first.accounts == second.accounts == whole.accounts
    assert first.providers == second.providers == whole.providers
    raw = stubs.spend.Reconcile(spend_pb2.ReconcileRequest(page_size=1, page_token=first.next_page_token), timeout=30)
    assert [r.run_id for r in raw.runs] == [s.b] and raw.next_page_token == ""


def test_reconcile_by_run_and_by_account(stubs: Stubs, client: LedgerClient, clock: Clock) -> None:
    s = scenario(stubs, clock)
    rows = run_rows(s)
    one = client.reconcile(run_id=s.b, min_position=s.position)
    assert one.runs == rows[1:] and one.accounts == []
    assert one.providers == [TINKER] and one.unattributed == [ORPHAN]  # Every provider, whatever the filter.
    team = client.reconcile(account="team")
    assert team.runs == rows and team.accounts == [TEAM_ROW]
    # A run's own account names that run alone.
    assert client.reconcile(account=s.a).runs == rows[:1]
    # An account with nothing billed or spent under it has nothing to reconcile.
    client.open_account(account="other")
    other = client.reconcile(account="other")
    assert other.runs == [] and other.accounts == []


def test_reconcile_refusals(stubs: Stubs, client: LedgerClient, clock: Clock) -> None:
    s = scenario(stubs, clock)
    not_found = grpc.StatusCode.NOT_FOUND
    for request, expected in [
        (spend_pb2.ReconcileRequest(run_id="no-such-run"), (not_found, "RUN_NOT_FOUND")),
        (spend_pb2.ReconcileRequest(account="no-such-account"), (not_found, "ACCOUNT_NOT_FOUND")),
        (spend_pb2.ReconcileRequest(run_id=s.a, account="team"), (INVALID, "INVALID_FIELD")),
        (spend_pb2.ReconcileRequest(threshold_percent=-1), (INVALID, "OUT_OF_RANGE")),
        (spend_pb2.ReconcileRequest(threshold_percent=1_000.5), (INVALID, "OUT_OF_RANGE")),
        (spend_pb2.ReconcileRequest(threshold_percent=float("nan")), (INVALID, "OUT_OF_RANGE")),
        (spend_pb2.ReconcileRequest(page_size=-1), (INVALID, None)),
    ]:
        code, reason, _ = refusal(lambda request=request: stubs.spend.Reconcile(request, timeout=30))
        assert (code, reason if expected[1] else None) == expected, request
    with pytest.raises(NotFound) as missing:
        client.reconcile(run_id="no-such-run")
    assert missing.value.reason == "RUN_NOT_FOUND"
    with pytest.raises(InvalidArgument) as both:
        client.reconcile(run_id=s.a, account="team")
    assert both.value.reason == "INVALID_FIELD"
    assert client.reconcile(threshold_percent=1_000).threshold_percent == 1_000.0  # The upper bound is taken.


def test_reconcile_reads_its_own_writes_with_min_position(stubs: Stubs, client: LedgerClient, clock: Clock) -> None:
    s = scenario(stubs, clock)
    for n in range(20):
        receipt = client.record_billed_usage(
            provider="tinker",
            lines=[BilledLine(line_id=f"late-{n}", interval_start=T10, interval_end=T11, amount_usd_micro=1_000,
                              amount_text="0.001", run_id=s.b)],
        )  # fmt: skip
        report = client.reconcile(run_id=s.b, min_position=receipt.position)
        assert report.position >= receipt.position
        assert report.runs[0].bill is not None
        assert (report.runs[0].bill.lines, report.runs[0].bill.billed_usd_micro) == (2 + n, 2_001_000 + 1_000 * n)


def test_spend_and_lines_past_the_bill_are_pending_and_provisional(
    stubs: Stubs, client: LedgerClient, clock: Clock
) -> None:
    s = scenario(stubs, clock)
    # Run A commits $0.30 in the 12:00 hour, past cost_data_through (12:00): its bill is to come.
    # Tinker's rate-card line for that hour, $0.20, is provisional. The drift over 10:00-12:00
    # stays $0.105; an unpriced line counts as a line without an amount.
    clock.now = T12 + timedelta(minutes=10)
    spend(stubs, s.a, 300_000, 30_000)
    request = spend_pb2.RecordBilledUsageRequest(
        provider="tinker",
        lines=[
            line("a|12", T12, amount_usd_micro=200_000, amount_text="0.2", run_id=s.a),
            line("a|12|checkpoint", T12, run_id=s.a),
        ],
    )
    receipt = stubs.spend.RecordBilledUsage(request, timeout=30)
    (row,) = client.reconcile(run_id=s.a, min_position=receipt.position).runs
    assert row.bill == BillTotals(
        estimated_usd_micro=1_800_000,
        billed_usd_micro=1_805_000,
        drift_usd_micro=105_000,
        drift_percent=7.0,
        pending_bill_usd_micro=300_000,
        provisional_usd_micro=200_000,
        lines=4,
        unpriced_lines=1,
        flagged=True,
        unadjusted_usd_micro=105_000,
    )


def test_a_line_restated_back_to_its_first_payload_is_a_restatement(stubs: Stubs) -> None:
    first = line("l", T10, amount_usd_micro=10, amount_text="0.00001")
    second = line("l", T10, amount_usd_micro=12, amount_text="0.000012")
    counts = []
    for sent in (first, second, first, first):
        receipt = stubs.spend.RecordBilledUsage(spend_pb2.RecordBilledUsageRequest(provider="p", lines=[sent]))
        counts.append((receipt.recorded, receipt.restated, receipt.unchanged))
    assert counts == [(1, 0, 0), (0, 1, 0), (0, 1, 0), (0, 0, 1)]
    report = stubs.spend.Reconcile(spend_pb2.ReconcileRequest(min_position=receipt.position), timeout=30)
    assert [(p.provider, p.billed_usd_micro, p.lines, p.restatements) for p in report.providers] == [("p", 10, 1, 2)]


def test_the_same_bill_sent_by_four_clients_at_once_is_recorded_once(served: Served) -> None:
    lines = [line(f"l{n}", T10 + timedelta(hours=n % 24), amount_usd_micro=n, amount_text=f"{n / 1e6:.6f}")
             for n in range(2_000)]  # fmt: skip
    request = spend_pb2.RecordBilledUsageRequest(provider="tinker", lines=lines)
    channels = [served.connect() for _ in range(4)]
    try:
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda c: c.spend.RecordBilledUsage(request, timeout=60), channels))
    finally:
        for channel in channels:
            channel.channel.close()
    assert sorted((a.recorded, a.restated, a.unchanged) for a in answers) == [
        (0, 0, 2_000),
        (0, 0, 2_000),
        (0, 0, 2_000),
        (2_000, 0, 0),
    ]
    assert len({a.position for a in answers}) == 1
    last = max(a.position for a in answers)
    report = served.stubs.spend.Reconcile(spend_pb2.ReconcileRequest(min_position=last), timeout=30)
    assert [(p.lines, p.billed_usd_micro, p.restatements) for p in report.providers] == [(2_000, 1_999_000, 0)]


# AdjustToBill


def test_adjust_to_bill_records_the_drift_once(stubs: Stubs, client: LedgerClient, clock: Clock) -> None:
    s = scenario(stubs, clock)
    adjusted = client.adjust_to_bill()
    assert adjusted.position > s.position
    assert adjusted.adjustments == [
        Adjustment(
            account=s.a,
            run_id=s.a,
            adjustment_id=adjusted.adjustments[0].adjustment_id,
            amount_usd_micro=105_000,
            overrun_usd_micro=0,
            position=adjusted.position,
            duplicate=False,
        )
    ]
    assert adjusted.adjustments[0].adjustment_id.startswith("bill:")
    again = client.adjust_to_bill()
    assert (again.adjustments, again.position) == ([], 0)
    assert client.adjust_to_bill(run_id=s.a).adjustments == []
    state = client.get_run_state(run_id=s.a, min_position=adjusted.position)
    assert state.spend.bill == BillTotals(
        estimated_usd_micro=1_500_000,
        billed_usd_micro=1_605_000,
        drift_usd_micro=105_000,
        drift_percent=7.0,
        adjusted_usd_micro=105_000,
        lines=2,
        flagged=True,
        unadjusted_usd_micro=0,
    )
    assert state.spend.committed_usd_micro == 1_605_000
    entries = client.list_reservations(account=s.a, min_position=adjusted.position).reservations
    adjustment = [entry for entry in entries if entry.kind == "adjustment"]
    assert [(e.reservation_id, e.state, e.amount_usd_micro) for e in adjustment] == [
        (adjusted.adjustments[0].adjustment_id, "adjusted", 105_000)
    ]
    report = client.reconcile(min_position=adjusted.position)
    assert report.accounts[0].bill is not None and report.accounts[0].bill.unadjusted_usd_micro == 0


def test_adjust_one_run_over_the_raw_stub_and_a_later_bill_adds_the_difference(stubs: Stubs, clock: Clock) -> None:
    s = scenario(stubs, clock)
    first = stubs.spend.AdjustToBill(spend_pb2.AdjustToBillRequest(run_id=s.a), timeout=30)
    assert [(a.account, a.run_id, a.amount_usd_micro, a.duplicate) for a in first.adjustments] == [
        (s.a, s.a, 105_000, False)
    ]
    # The provider restates the 11:00 hour at $0.545: $10,000 more to adjust, and only that.
    request = spend_pb2.RecordBilledUsageRequest(
        provider="tinker",
        lines=[
            line("a|11", T11, amount_usd_micro=545_000, amount_text="0.545", run_id=s.a, quantities={"train": 50_000})
        ],
    )
    assert stubs.spend.RecordBilledUsage(request, timeout=30).restated == 1
    second = stubs.spend.AdjustToBill(spend_pb2.AdjustToBillRequest(run_id=s.a), timeout=30)
    assert [a.amount_usd_micro for a in second.adjustments] == [10_000]
    assert second.position > first.position
    assert stubs.spend.AdjustToBill(spend_pb2.AdjustToBillRequest(run_id=s.a), timeout=30).position == 0


def test_adjust_to_bill_refusals(stubs: Stubs, clock: Clock) -> None:
    s = scenario(stubs, clock)
    for request, expected in [
        (spend_pb2.AdjustToBillRequest(run_id="no-such-run"), (grpc.StatusCode.NOT_FOUND, "RUN_NOT_FOUND")),
        (spend_pb2.AdjustToBillRequest(account="no-such"), (grpc.StatusCode.NOT_FOUND, "ACCOUNT_NOT_FOUND")),
        (spend_pb2.AdjustToBillRequest(run_id=s.a, account="team"), (INVALID, "INVALID_FIELD")),
    ]:
        assert refusal(lambda request=request: stubs.spend.AdjustToBill(request, timeout=30))[:2] == expected


# LinkSession


def test_link_session_over_the_wire(stubs: Stubs, client: LedgerClient) -> None:
    run_id = new_run(stubs)
    request = runs_pb2.LinkSessionRequest(run_id=run_id, provider="tinker", session_id="sess-1", attempt=1)
    first = stubs.runs.LinkSession(request, timeout=30)
    assert first.position > 0 and not first.duplicate
    again = stubs.runs.LinkSession(request, timeout=30)
    assert (again.position, again.duplicate) == (first.position, True)
    receipt = client.link_session(run_id=run_id, provider="tinker", session_id="sess-1")
    assert (receipt.position, receipt.duplicate) == (first.position, True)
    other = client.link_session(run_id=run_id, provider="modal", session_id="sess-1")
    assert other.position > first.position and not other.duplicate
    missing = runs_pb2.LinkSessionRequest(run_id="no-such-run", provider="tinker", session_id="s")
    assert refusal(lambda: stubs.runs.LinkSession(missing, timeout=30))[:2] == (
        grpc.StatusCode.NOT_FOUND,
        "RUN_NOT_FOUND",
    )
    no_attempt = runs_pb2.LinkSessionRequest(run_id=run_id, provider="tinker", session_id="s-9", attempt=9)
    assert refusal(lambda: stubs.runs.LinkSession(no_attempt, timeout=30))[:2] == (
        grpc.StatusCode.NOT_FOUND,
        "ATTEMPT_NOT_FOUND",
    )
    with pytest.raises(NotFound) as caught:
        client.link_session(run_id="no-such-run", provider="tinker", session_id="s")
    assert caught.value.reason == "RUN_NOT_FOUND"


def test_a_session_linked_after_the_bill_brings_its_lines_to_the_run(stubs: Stubs, client: LedgerClient) -> None:
    run_id = new_run(stubs)
    recorded = client.record_billed_usage(
        provider="tinker",
        lines=[BilledLine(line_id="s", interval_start=T10, interval_end=T11, amount_usd_micro=7, amount_text="0.000007",
                          session_id="late")],
    )  # fmt: skip
    before = client.reconcile(min_position=recorded.position)
    assert before.runs == [] and before.unattributed[0].source == "session late"
    linked = client.link_session(run_id=run_id, provider="tinker", session_id="late")
    after = client.reconcile(min_position=linked.position)
    assert [(r.run_id, r.bill.billed_usd_micro if r.bill else None) for r in after.runs] == [(run_id, 7)]
    assert after.unattributed == []


# Authentication


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def test_scoped_tokens_and_auditors_on_the_bill_rpcs(served: Served, stubs: Stubs) -> None:
    ledger = served.ledger
    ledger.open_account(account="team-a", principal="setup")
    scoped = ledger.issue_token(holder="op-a", role="operator", account="team-a", principal="setup").bearer
    auditor = ledger.issue_token(holder="eve", role="auditor", principal="setup").bearer
    operator = ledger.issue_token(holder="op", role="operator", principal="setup").bearer
    time.sleep(1.1)  # The server reads the token book at most once a second.
    record = spend_pb2.RecordBilledUsageRequest(provider="tinker", lines=[line("a", T10, account="team-a")])
    denied = grpc.StatusCode.PERMISSION_DENIED
    for call in (
        lambda: stubs.spend.RecordBilledUsage(record, metadata=bearer(scoped), timeout=30),
        lambda: stubs.spend.Reconcile(spend_pb2.ReconcileRequest(account="team-a"), metadata=bearer(scoped)),
        lambda: stubs.spend.AdjustToBill(spend_pb2.AdjustToBillRequest(account="team-a"), metadata=bearer(scoped)),
    ):
        assert refusal(call)[:2] == (denied, "OUTSIDE_SCOPE")
    recorded = stubs.spend.RecordBilledUsage(record, metadata=bearer(operator), timeout=30)
    assert recorded.recorded == 1
    asked = spend_pb2.ReconcileRequest(min_position=recorded.position)
    report = stubs.spend.Reconcile(asked, metadata=bearer(auditor), timeout=30)
    assert [(p.provider, p.lines) for p in report.providers] == [("tinker", 1)]
    adjust = spend_pb2.AdjustToBillRequest()
    assert refusal(lambda: stubs.spend.AdjustToBill(adjust, metadata=bearer(auditor), timeout=30))[:2] == (
        denied,
        "ROLE_NOT_ALLOWED",
    )
    assert refusal(lambda: stubs.spend.RecordBilledUsage(record, metadata=bearer(auditor), timeout=30))[:2] == (
        denied,
        "ROLE_NOT_ALLOWED",
    )
