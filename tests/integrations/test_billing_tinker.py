"""Tinker's bill: buckets served by the loopback FakeTinkerServer through the real SDK's
AdminClient, turned into lines (tinker_lines), cut into requests (send.batches), and, end to end,
recorded in a real ledger server for two runs trained through the Tinker integration and
reconciled against what they committed: a run billed exactly, a run over-billed by 7%, a session
of no run, a bucket found through the session link, a restatement, and a pull repeated."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

tinker = pytest.importorskip("tinker")

from clients.billing import PullResult, batches, tinker_lines, tinker_windows  # noqa: E402
from clients.methods_spend import billed_line  # noqa: E402
from clients.models import BilledLine  # noqa: E402
from tests.fakes.tinker_server import FakeTinkerServer, usage_event  # noqa: E402

HOUR = datetime(2026, 11, 30, 10, tzinfo=UTC)
QWEN = "Qwen/Qwen3-8B"


@pytest.fixture
def fake() -> Any:
    server = FakeTinkerServer().start()
    try:
        yield server
    finally:
        server.stop()
    assert not server.errors, server.errors


def served(fake: FakeTinkerServer, start: datetime, end: datetime) -> Any:
    admin = tinker.AdminClient(base_url=fake.base_url, api_key=FakeTinkerServer.API_KEY)
    return admin.get_billing_usage(start, end).result(timeout=30)


def test_tinker_lines_of_a_served_response(fake: FakeTinkerServer) -> None:
    run = {"ledger_run_id": "run-9", "ledger_account": "team-a", "team": "nlp"}
    at = {"bucket_start": HOUR}
    fake.bill(
        [
            usage_event("training", 1200, **at, session_id="s-1", base_model=QWEN, estimated_cost_usd=0.0036),
            usage_event(
                "sampling_prefill",
                40,
                **at,
                session_id="s-1",
                base_model=QWEN,
                cached=True,
                estimated_cost_usd=1.25e-05,
            ),  # 12.5 micro-dollars: half to even, 12
            usage_event(
                "sampling_prefill", 60, **at, session_id="s-1", base_model=QWEN, estimated_cost_usd=3.5e-06
            ),  # 3.5: half to even, 4
            usage_event("checkpoint", 2, **at, session_id="s-1", base_model=QWEN),  # never priced
            usage_event(
                "sampling_sample",
                7,
                bucket_start=HOUR + timedelta(hours=1),
                session_id="s-2",
                base_model=None,
                estimated_cost_usd=None,
            ),  # a group not priced yet
            usage_event("storage", 72.0, **at, base_model=None, rate=0.5, project_id="p-1"),  # 0.05
            usage_event("storage", 3.5, **at, base_model=None, free=True, rate=0.0),
            usage_event("storage", 10.0, **at, base_model=None, rate=0.5, project_id="p-2"),
        ],  # fmt: skip
        cost_data_through=HOUR + timedelta(hours=1),
        sessions={"s-1": run},
    )
    response = served(fake, HOUR, HOUR + timedelta(hours=2))

    lines, through = tinker_lines(response)

    assert through == HOUR + timedelta(hours=1)
    hour_end = HOUR + timedelta(hours=1)
    run_line = {"run_id": "run-9", "account": "team-a", "session_id": "s-1", "tags": run}
    expected = [
        BilledLine(line_id="s-1|Qwen/Qwen3-8B|training", interval_start=HOUR, interval_end=hour_end,
                   amount_usd_micro=3600, amount_text="0.0036", quantities={"train": 1200.0},
                   description="training Qwen/Qwen3-8B", **run_line),
        BilledLine(line_id="-|-|storage|p-1|org-user-1", interval_start=HOUR, interval_end=hour_end,
                   amount_usd_micro=50_000, amount_text="0.05", quantities={"storage_gb_hours": 72.0},
                   description="storage"),
        BilledLine(line_id="s-1|Qwen/Qwen3-8B|sampling_prefill:uncached", interval_start=HOUR,
                   interval_end=hour_end, amount_usd_micro=4, amount_text="3.5e-06", quantities={"prefill": 60.0},
                   description="sampling_prefill uncached Qwen/Qwen3-8B", **run_line),
        BilledLine(line_id="s-1|Qwen/Qwen3-8B|sampling_prefill:cached", interval_start=HOUR,
                   interval_end=hour_end, amount_usd_micro=12, amount_text="1.25e-05", quantities={"prefill": 40.0},
                   description="sampling_prefill cached Qwen/Qwen3-8B", **run_line),
        BilledLine(line_id="-|-|storage|p-2|org-user-1", interval_start=HOUR, interval_end=hour_end,
                   amount_usd_micro=6944, amount_text="0.006944444444444444", quantities={"storage_gb_hours": 10.0},
                   description="storage"),
        BilledLine(line_id="-|-|storage:free|-|org-user-1", interval_start=HOUR, interval_end=hour_end,
                   amount_usd_micro=0, amount_text="0.0", quantities={"storage_gb_hours": 3.5},
                   description="storage free"),
        BilledLine(line_id="s-1|Qwen/Qwen3-8B|checkpoint", interval_start=HOUR, interval_end=hour_end,
                   amount_usd_micro=None, amount_text="", quantities={"checkpoints": 2.0},
                   description="checkpoint Qwen/Qwen3-8B", **run_line),
        BilledLine(line_id="s-2|-|sampling_sample", interval_start=hour_end, interval_end=HOUR + timedelta(hours=2),
                   amount_usd_micro=None, amount_text="", quantities={"sample": 7.0}, session_id="s-2",
                   description="sampling_sample"),
    ]  # fmt: skip
    assert lines == expected
    # The fake's own session ids are not Tinker's: "s-2" is a session nobody created, no metadata.
    assert response.sessions["s-2"].user_metadata is None


def test_tinker_lines_of_an_empty_answer(fake: FakeTinkerServer) -> None:
    assert tinker_lines(served(fake, HOUR, HOUR + timedelta(hours=1))) == ([], None)


def test_tinker_windows_are_whole_hours_of_at_most_14_days() -> None:
    now = datetime(2026, 12, 1, 3, 22, tzinfo=UTC)
    start = datetime(2026, 10, 1, 9, 30, tzinfo=UTC)
    assert tinker_windows(start, datetime(2026, 10, 1, 11, 1, tzinfo=UTC), now=now) == [
        (datetime(2026, 10, 1, 9, tzinfo=UTC), datetime(2026, 10, 1, 12, tzinfo=UTC))
    ]
    assert tinker_windows(start, datetime(2026, 11, 5, tzinfo=UTC), now=now) == [
        (datetime(2026, 10, 1, 9, tzinfo=UTC), datetime(2026, 10, 15, 9, tzinfo=UTC)),
        (datetime(2026, 10, 15, 9, tzinfo=UTC), datetime(2026, 10, 29, 9, tzinfo=UTC)),
        (datetime(2026, 10, 29, 9, tzinfo=UTC), datetime(2026, 11, 5, tzinfo=UTC)),
    ]
    # Never past the end of the current hour; a naive datetime is UTC.
    assert tinker_windows(datetime(2026, 12, 1, 1), datetime(2026, 12, 9), now=now) == [
        (datetime(2026, 12, 1, 1, tzinfo=UTC), datetime(2026, 12, 1, 4, tzinfo=UTC))
    ]
    assert tinker_windows(datetime(2026, 12, 2, tzinfo=UTC), datetime(2026, 12, 3, tzinfo=UTC), now=now) == []
    assert tinker_windows(start, start, now=now) == []


def test_batches_cut_by_lines_and_by_bytes() -> None:
    def line(i: int, description: str = "") -> BilledLine:
        return BilledLine(line_id=f"line-{i}", interval_start=HOUR, interval_end=HOUR + timedelta(hours=1),
                          amount_usd_micro=i, amount_text=f"0.{i:06d}", description=description)  # fmt: skip

    many = [line(i) for i in range(12_001)]
    cut = list(batches(many))
    assert [len(b) for b in cut] == [5_000, 5_000, 2_001]
    assert [x for b in cut for x in b] == many  # in order, every line once

    # Lines of about 100 KB: 2 MiB holds 20 of them with their framing, not 21.
    big = [line(i, "x" * 100_000) for i in range(45)]
    size = billed_line(big[0]).ByteSize()
    assert 100_000 < size < 100_100
    cut = list(batches(big))
    assert [len(b) for b in cut] == [20, 20, 5]
    assert all(sum(billed_line(x).ByteSize() + 4 for x in b) <= 2 * 1024 * 1024 for b in cut)
    assert list(batches([])) == []
    assert [len(b) for b in batches(many[:7], max_lines=3)] == [3, 3, 1]


def test_pull_results_add_up() -> None:
    a = PullResult(recorded=3, restated=1, unchanged=2, lines=6, requests=1, position=40)
    b = PullResult(recorded=0, restated=0, unchanged=5, lines=5, requests=2, position=31)
    assert a + b == PullResult(recorded=3, restated=1, unchanged=7, lines=11, requests=3, position=40)
