"""Tinker's bill: buckets served by the loopback FakeTinkerServer through the real SDK's
AdminClient, turned into lines (tinker_lines), cut into requests (send.batches), and, end to end,
recorded in a real ledger server for two runs trained through the Tinker integration and
reconciled against what they committed: a run billed exactly, a run over-billed by 7%, a session
of no run, a bucket found through the session link, a restatement, and a pull repeated. Also a
bill too large for one request sent in several (send_lines), and a session link the ledger
refuses, logged while training goes on."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import pytest

tinker = pytest.importorskip("tinker")
from tinker import types  # noqa: E402

from clients import LedgerClient, LedgerClientError, RetryPolicy  # noqa: E402
from clients.billing import PullResult, batches, pull_tinker, send_lines, tinker_lines, tinker_windows  # noqa: E402
from clients.integrations.pricing import TokenPrices  # noqa: E402
from clients.integrations.tinker import METADATA_RUN_ID, LedgeredServiceClient, LedgeredTrainingClient  # noqa: E402
from clients.methods_spend import billed_line  # noqa: E402
from clients.models import BilledLine  # noqa: E402
from tests.client.server_thread import ServerThread  # noqa: E402
from tests.fakes.tinker import FakeTinkerServer, usage_event  # noqa: E402

HOUR = datetime(2026, 11, 30, 10, tzinfo=UTC)
QWEN = "Qwen/Qwen3-8B"
MODEL = FakeTinkerServer.BASE_MODEL


@pytest.fixture
def fake() -> Iterator[FakeTinkerServer]:
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


# ---------------------------------------------------------------- end to end: train, bill, pull, reconcile
SHEET = TokenPrices(
    {"train": 50_000_000, "prefill": 20_000_000}, sheet="tinker-e2e", source="tests", as_of="2026-11"
)  # a batch of 6 tokens: 300 micro-dollars to train on, 120 to run forward
BATCH_TOKENS = 6
KIND = {"train": "training", "prefill": "sampling_prefill"}
QUICK = RetryPolicy(attempts=3, initial_backoff_s=0.02, max_backoff_s=0.05, total_s=1.0)


class Bucket(NamedTuple):
    """One hourly bucket the test bills: the hour, the session, the Tinker kind, tokens and amount."""

    hour: datetime
    session_id: str
    kind: str
    tokens: int
    usd_micro: int


@pytest.fixture
def ledger(tmp_path: Any) -> Iterator[LedgerClient]:
    server = ServerThread(str(tmp_path / "ledger.db")).start()
    try:
        with LedgerClient(server.address, principal="tests", timeout_s=10.0, retries=QUICK) as client:
            yield client
    finally:
        server.stop()


def batch() -> list[types.Datum]:
    tokens = [[1, 2, 3, 4, 5], [6, 7, 8]]  # 4 + 2 input tokens
    return [
        types.Datum(
            model_input=types.ModelInput.from_ints(t[:-1]),
            loss_fn_inputs={"target_tokens": t[1:], "weights": [1.0] * (len(t) - 1)},
        )
        for t in tokens
    ]


def train(tc: LedgeredTrainingClient, steps: int) -> None:
    for _ in range(steps):
        tc.forward_backward(batch(), "cross_entropy")
        tc.optim_step(types.AdamParams(learning_rate=1e-4)).result(timeout=30)


def committed_buckets(ledger: LedgerClient, run_id: str, sessions: dict[int, str]) -> list[Bucket]:
    """The run's committed spend as Tinker would bill it: by the hour each commit was recorded in,
    the session of its attempt and its token class."""
    head = ledger.get_head().position
    sums: dict[tuple[datetime, str, str], list[int]] = {}
    for entry in ledger.list_reservations(account=run_id, min_position=head).reservations:
        if entry.state != "committed" or not entry.actual_usd_micro:
            continue
        assert entry.settled_at is not None and entry.actual_basis is not None
        (line,) = entry.actual_basis.tokens
        key = (entry.settled_at.replace(minute=0, second=0, microsecond=0), sessions[entry.attempt], line.token_class)
        tokens_and_amount = sums.setdefault(key, [0, 0])
        tokens_and_amount[0] += line.tokens
        tokens_and_amount[1] += entry.actual_usd_micro
    return [
        Bucket(hour, session, KIND[token_class], tokens, amount)
        for (hour, session, token_class), (tokens, amount) in sorted(sums.items())
    ]


def tokens_by_kind(buckets: list[Bucket]) -> dict[str, int]:
    out: dict[str, int] = {}
    for bucket in buckets:
        out[bucket.kind] = out.get(bucket.kind, 0) + bucket.tokens
    return out


def event(bucket: Bucket) -> dict[str, Any]:
    return usage_event(
        bucket.kind,
        bucket.tokens,
        bucket_start=bucket.hour,
        session_id=bucket.session_id,
        estimated_cost_usd=bucket.usd_micro / 1_000_000,
    )


def is_bucket(bucket: Bucket) -> Callable[[dict[str, Any]], bool]:
    def match(e: dict[str, Any]) -> bool:
        return (e["session_id"], e["event_info"]["type"], e["bucket_start"]) == (
            bucket.session_id,
            bucket.kind,
            usage_event(bucket.kind, 0, bucket_start=bucket.hour)["bucket_start"],
        )

    return match


def test_a_pulled_bill_reconciles_two_trained_runs(ledger: LedgerClient, fake: FakeTinkerServer) -> None:
    service = LedgeredServiceClient(
        ledger,
        prices={MODEL: SHEET},
        base_url=fake.base_url,
        api_key=FakeTinkerServer.API_KEY,
        recorder_options={"batch_interval_s": 0.01, "flush_timeout_s": 5.0},
    )
    started = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)

    # Run A: three steps and a forward pass (train 18 tokens, 900; prefill 6 tokens, 120), a checkpoint.
    with service.create_lora_training_client(MODEL, rank=8, hyperparameters={"run": "A"}) as a:
        train(a, 3)
        a.forward(batch(), "cross_entropy").result(timeout=30)
        a.save_state("a-3").result(timeout=30)
        run_a, session_a = a.run_id, a.session_id
        assert a.link is not None and not a.link.duplicate
    # Run B: two steps, a checkpoint, the process stops; resumed in a new session, two more steps.
    first = service.create_lora_training_client(MODEL, rank=8, hyperparameters={"run": "B"})
    train(first, 2)
    first.save_state("b-2").result(timeout=30)
    run_b, session_b1 = first.run_id, first.session_id
    first.close()
    with service.resume(base_model=MODEL, rank=8, hyperparameters={"run": "B"}) as second:
        train(second, 2)
        session_b2 = second.session_id
        assert second.attempt == 2 and second.link is not None  # the resumed run's new session is linked too
    assert len({session_a, session_b1, session_b2}) == 3
    assert [s.user_metadata[METADATA_RUN_ID] for s in fake.sessions] == [run_a, run_b, run_b]

    # The bill. A: exactly what it committed, by hour and kind, and its checkpoint (never priced).
    now_hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    bucket_a = committed_buckets(ledger, run_a, {1: session_a})
    bucket_b = committed_buckets(ledger, run_b, {1: session_b1, 2: session_b2})
    assert sum(b.usd_micro for b in bucket_a) == 3 * 300 + 120
    assert tokens_by_kind(bucket_a) == {"training": 18, "sampling_prefill": 6}
    assert sum(b.usd_micro for b in bucket_b) == 4 * 300
    assert tokens_by_kind(bucket_b) == {"training": 24}
    orphan = Bucket(now_hour, "sess-of-no-run", "sampling_sample", 1_000, 2_000)
    cost_data_through = now_hour + timedelta(hours=1)  # every commit so far is in an hour before it
    fake.bill(
        [event(b) for b in [*bucket_a, *bucket_b, orphan]]
        + [usage_event("checkpoint", 1, bucket_start=now_hour, session_id=session_a)],
        cost_data_through=cost_data_through,
        sessions={session_b2: None},  # B's resumed session: Tinker gives no user_metadata for it
    )
    n_lines = len(bucket_a) + 1 + len(bucket_b) + 1
    # What the ledger will get: B's resumed session's lines name no run, only their session.
    lines, through = tinker_lines(served(fake, started - timedelta(hours=1), now_hour + timedelta(hours=1)))
    assert (len(lines), through) == (n_lines, cost_data_through)
    assert {(line.run_id, line.session_id) for line in lines if line.session_id != session_a} == {
        (run_b, session_b1),
        ("", session_b2),
        ("", "sess-of-no-run"),
    }
    window = (started - timedelta(hours=1), datetime.now(UTC))

    first_pull = pull_tinker(ledger, *window, base_url=fake.base_url, api_key=FakeTinkerServer.API_KEY)
    assert first_pull == PullResult(
        recorded=n_lines, restated=0, unchanged=0, lines=n_lines, requests=1, position=first_pull.position
    )
    assert first_pull.position > 0
    report = ledger.reconcile(min_position=first_pull.position)
    rows = {row.run_id: row for row in report.runs}
    assert rows[run_b].bill is not None
    assert (rows[run_b].bill.estimated_usd_micro, rows[run_b].bill.billed_usd_micro) == (1200, 1200)
    assert not rows[run_b].bill.flagged

    # Tinker re-prices one of B's resumed buckets: B is now billed 7% over what it committed.
    restated = next(b for b in bucket_b if b.session_id == session_b2)
    assert fake.restate(is_bucket(restated), estimated_cost_usd=(restated.usd_micro + 84) / 1_000_000) == 1
    second_pull = pull_tinker(ledger, *window, base_url=fake.base_url, api_key=FakeTinkerServer.API_KEY)
    assert (second_pull.recorded, second_pull.restated, second_pull.unchanged) == (0, 1, n_lines - 1)

    report = ledger.reconcile(min_position=second_pull.position)
    assert report.threshold_percent == 5.0
    assert [row.run_id for row in report.runs] == [run_b, run_a]  # the largest drift first
    rows = {row.run_id: row for row in report.runs}
    billed_a, billed_b = 1020, 1200 + 84
    a_bill, b_bill = rows[run_a].bill, rows[run_b].bill
    assert a_bill is not None and b_bill is not None
    assert (a_bill.estimated_usd_micro, a_bill.billed_usd_micro, a_bill.drift_usd_micro) == (1020, billed_a, 0)
    assert (a_bill.drift_percent, a_bill.flagged, a_bill.unadjusted_usd_micro) == (0.0, False, 0)
    assert (a_bill.lines, a_bill.unpriced_lines) == (len(bucket_a) + 1, 1)
    assert (a_bill.pending_bill_usd_micro, a_bill.provisional_usd_micro) == (0, 0)
    assert (b_bill.estimated_usd_micro, b_bill.billed_usd_micro, b_bill.drift_usd_micro) == (1200, billed_b, 84)
    assert b_bill.drift_percent == pytest.approx(7.0)
    assert (b_bill.flagged, b_bill.unadjusted_usd_micro) == (True, 84)
    assert (b_bill.lines, b_bill.unpriced_lines) == (len(bucket_b), 0)  # the resumed session's through the link
    assert rows[run_a].providers == rows[run_b].providers == ["tinker"]
    tokens_a = {t.token_class: (t.ledger_tokens, t.billed_tokens, t.drift_tokens) for t in rows[run_a].token_classes}
    tokens_b = {t.token_class: (t.ledger_tokens, t.billed_tokens, t.drift_tokens) for t in rows[run_b].token_classes}
    assert tokens_a == {"train": (18, 18, 0), "prefill": (6, 6, 0)}
    assert tokens_b == {"train": (24, 24, 0)}
    (provider,) = report.providers
    assert (provider.provider, provider.billed_usd_micro, provider.unattributed_usd_micro) == (
        "tinker",
        billed_a + billed_b + 2_000,
        2_000,
    )
    assert (provider.lines, provider.unattributed_lines, provider.restatements) == (n_lines, 1, 1)
    assert provider.cost_data_through == cost_data_through
    hours = [b.hour for b in [*bucket_a, *bucket_b, orphan]]
    assert (provider.first_interval_start, provider.last_interval_end) == (
        min(hours),
        max(hours) + timedelta(hours=1),
    )
    assert [(g.provider, g.source, g.billed_usd_micro, g.lines) for g in report.unattributed] == [
        ("tinker", "session sess-of-no-run", 2_000, 1)  # grouped by the session it names
    ]

    # The same window again: nothing changes, not even the log.
    head = ledger.get_head()
    third_pull = pull_tinker(ledger, *window, base_url=fake.base_url, api_key=FakeTinkerServer.API_KEY)
    assert (third_pull.recorded, third_pull.restated, third_pull.unchanged, third_pull.lines) == (
        0,
        0,
        n_lines,
        n_lines,
    )
    assert ledger.get_head() == head
    again = ledger.reconcile(min_position=third_pull.position)
    assert {row.run_id: row.bill for row in again.runs} == {run_a: a_bill, run_b: b_bill}
    assert len(fake.billing_windows) == 4


def test_send_lines_cuts_a_large_bill_into_requests_the_server_takes(ledger: LedgerClient) -> None:
    def line(i: int, **extra: Any) -> BilledLine:
        start = HOUR + timedelta(hours=i % 24)
        return BilledLine(
            line_id=f"gpu-{i}",
            interval_start=start,
            interval_end=start + timedelta(hours=1),
            amount_usd_micro=i,
            amount_text=f"0.{i:06d}",
            account="acme-research",
            **extra,
        )

    many = [line(i) for i in range(12_001)]
    sent = send_lines(ledger, "acme", many)
    assert sent == PullResult(recorded=12_001, lines=12_001, requests=3, position=sent.position)
    head = ledger.get_head()
    again = send_lines(ledger, "acme", many)
    assert again == PullResult(unchanged=12_001, lines=12_001, requests=3, position=again.position)
    assert ledger.get_head() == head

    # Lines of about 66 KB (64 tags of 1,000 characters): 150 of them are more than one request
    # may hold, so they go in requests of about 2 MiB each.
    tags = {f"tag-{k}": "v" * 1_000 for k in range(64)}
    heavy = [line(20_000 + i, tags=tags) for i in range(150)]
    with pytest.raises(LedgerClientError) as refused:
        ledger.record_billed_usage(provider="acme", lines=heavy)
    assert refused.value.reason == "REQUEST_TOO_LARGE"
    sent = send_lines(ledger, "acme", heavy)
    assert (sent.recorded, sent.lines, sent.requests) == (150, 150, 5)

    report = ledger.reconcile(min_position=sent.position)
    (acme,) = [p for p in report.providers if p.provider == "acme"]
    billed = sum(range(12_001)) + sum(range(20_000, 20_150))
    assert (acme.lines, acme.billed_usd_micro, acme.unattributed_lines) == (12_151, billed, 12_151)


class LongSessionIds(FakeTinkerServer):
    """Tinker handing out session ids longer than the ledger takes (256 characters)."""

    def new_id(self, prefix: str) -> str:
        made = super().new_id(prefix)
        return made + "-" + "x" * 300 if prefix == "fake-session" else made


def test_a_refused_link_is_logged_and_training_goes_on(ledger: LedgerClient, caplog: pytest.LogCaptureFixture) -> None:
    with LongSessionIds() as fake:
        service = LedgeredServiceClient(
            ledger,
            prices={MODEL: SHEET},
            base_url=fake.base_url,
            api_key=FakeTinkerServer.API_KEY,
            recorder_options={"batch_interval_s": 0.01, "flush_timeout_s": 5.0},
        )
        with caplog.at_level("WARNING", logger="trainledger.clients.tinker"):
            with service.create_lora_training_client(MODEL, rank=8, hyperparameters={"run": "long"}) as tc:
                train(tc, 2)
                assert tc.link is None
                run_id, session_id = tc.run_id, tc.session_id
        assert len(session_id) > 256
        warned = [r.getMessage() for r in caplog.records if r.getMessage().startswith("could not link")]
        assert len(warned) == 1 and warned[0].startswith(f"could not link run {run_id} to Tinker session fake-session-")
        state = ledger.get_run_state(run_id=run_id, min_position=ledger.get_head().position)
        assert (state.run.status, state.last_step, state.spend.committed_usd_micro) == ("done", 2, 600)
