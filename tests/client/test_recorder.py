"""RunRecorder: every step once, never blocking the loop, an outbox that survives an outage and a
restart, spend held around a call, and the run finished on the way out."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

import pytest

from clients import LedgerClient, LedgerClientError, RunRecorder, SpendCapExceeded, Unavailable, run_key
from clients.outbox import FILE_NAME
from tests.client.conftest import QUICK_RETRIES, new_run, series_steps
from tests.client.server_thread import ServerThread, free_port


def test_ten_thousand_steps_arrive_exactly_once(client: LedgerClient) -> None:
    with RunRecorder.open(client, run_key=run_key({"t": "10k"}), name="10k", batch_steps_max=500) as recorder:
        for step in range(10_000):
            recorder.log(step, tokens=128, loss=1.0 / (step + 1), **({"eval_loss": 0.5} if step % 100 == 0 else {}))
        assert recorder.flush(30)
        counters = recorder.counters
    assert counters == {"sent": 10_000, "acked": 10_000, "dropped": 0, "failed": 0, "non_finite": 0, "quarantined": 0}
    assert series_steps(client, recorder.run_id) == list(range(10_000))
    page = client.get_series(run_id=recorder.run_id, from_step=0, page_size=200, metrics=["eval_loss"])
    column = page.metrics[0]
    assert column.name == "eval_loss" and column.index == [0, 100]  # sparse: no NaN placeholders
    assert recorder.state.run.status == "done" and recorder.state.last_step == 9_999


def test_log_never_blocks_or_raises_with_no_server() -> None:
    client = LedgerClient(f"127.0.0.1:{free_port()}", timeout_s=1.0, retries=0)
    recorder = RunRecorder(client, run_id="nowhere", attempt=1, queue_steps_max=1_000, batch_interval_s=0.01)
    started = time.monotonic()
    for step in range(5_000):
        recorder.log(step, loss=float(step))
    recorder.log(5_000, loss=float("nan"), lr=float("inf"), note="text", ok=1.0)
    recorder.log("not a step", loss=1.0)  # type: ignore[arg-type]
    assert time.monotonic() - started < 2.0
    assert not recorder.flush(0.2)
    counters = recorder.counters
    assert counters["acked"] == 0 and counters["non_finite"] == 2
    assert counters["dropped"] >= 3_000  # the queue holds 1,000 steps plus a batch in the outbox
    recorder.close(flush_timeout_s=0)
    client.close()


def test_outbox_replays_after_the_server_comes_back(server: ServerThread, tmp_path) -> None:
    recorder = RunRecorder.open(
        LedgerClient(server.address, retries=QUICK_RETRIES),
        run_key="outage",
        outbox_dir=tmp_path / "outbox",
        batch_steps_max=50,
        batch_interval_s=0.01,
    )
    server.stop()
    for step in range(500):
        recorder.log(step, loss=float(step))
    assert not recorder.flush(0.5)
    assert recorder.counters["acked"] == 0
    server.start()
    assert recorder.flush(20)
    recorder.finish()
    assert recorder.counters["acked"] == 500 and recorder.counters["failed"] == 0
    assert series_steps(recorder.client, recorder.run_id) == list(range(500))


def test_a_restarted_trainer_replays_its_outbox_exactly_once(server: ServerThread, tmp_path) -> None:
    outbox = tmp_path / "outbox"
    client = LedgerClient(server.address, retries=QUICK_RETRIES)
    first = RunRecorder.open(client, run_key="restart", outbox_dir=outbox, batch_steps_max=100, batch_interval_s=0.01)
    first._sender.outbox.done = lambda sequence: None  # It will die before marking its acks done.
    for step in range(300):
        first.log(step, loss=1.0)
    assert first.flush(10) and first.counters["acked"] == 300
    server.stop()
    for step in range(300, 1_000):
        first.log(step, loss=2.0)
    assert not first.flush(0.5)
    first.close(flush_timeout_s=0)  # The trainer dies: 300 acked steps unmarked, 700 never sent.
    with sqlite3.connect(outbox / FILE_NAME) as db:
        assert db.execute("SELECT COUNT(*), SUM(steps) FROM batches WHERE state = 'pending'").fetchone() == (10, 1_000)
    server.start()
    client.wait_ready(10)  # The channel may sit in its reconnect backoff longer than QUICK_RETRIES wait.
    second = RunRecorder.open(client, run_key="restart", outbox_dir=outbox)  # A new process: attempt 2.
    assert (first.attempt, second.attempt) == (1, 2)
    assert second.counters["acked"] == 1_000 and second.counters["failed"] == 0
    second.finish()
    # Every step exactly once, all recorded by attempt 1 (and superseded by attempt 2's fresh start).
    assert series_steps(client, first.run_id, include_superseded=True) == list(range(1_000))
    batches = [e for e in client.read_events(from_position=1) if e.type.endswith("StepsRecorded")]
    assert sum(len(e.data_json["steps"]) for e in batches) == 1_000
    with sqlite3.connect(outbox / FILE_NAME) as db:
        assert db.execute("SELECT COUNT(*) FROM batches").fetchone() == (0,)


def test_a_refused_batch_is_counted_failed_and_never_retried(client: LedgerClient) -> None:
    run_id, first = new_run(client)
    client.start_attempt(run_id=run_id, label="newer")  # The recorder below is now a zombie.
    recorder = RunRecorder(client, run_id=run_id, attempt=first, batch_steps_max=10, batch_interval_s=0.01)
    for step in range(30):
        recorder.log(step, loss=1.0)
    assert recorder.flush(10)
    assert recorder.counters["failed"] == 30 and recorder.counters["acked"] == 0
    assert recorder.last_error is not None and recorder.last_error.reason == "ATTEMPT_SUPERSEDED"
    recorder.close()


def _reservations(client: LedgerClient, account: str, count: int, state: str = "") -> list[Any]:
    """The account's reservations once the views show `count` of them (and, with `state`, all in
    that state): a read without a position sees what the projector has applied so far, and the
    recorder's calls answer with no position to wait for."""
    deadline = time.monotonic() + 10
    while True:
        listed = list(client.list_reservations(account=account).reservations)
        if len(listed) >= count and all(r.state == state for r in listed if state):
            return listed
        assert time.monotonic() < deadline, listed
        time.sleep(0.01)


def test_reserve_commits_releases_and_refuses(client: LedgerClient) -> None:
    recorder = RunRecorder.open(client, run_key="spend", cap_usd_micro=10_000)

    def train(tokens: int) -> dict[str, object]:  # $4 per million tokens: 4 micro-dollars a token.
        return {
            "price_sheet": "test",
            "tokens": [{"token_class": "train", "tokens": tokens, "usd_micro_per_million_tokens": 4_000_000}],
        }

    with recorder.reserve(4_000, basis=train(1_000)) as hold:
        hold.use(train(750))  # The call used 750 tokens: $0.003.
    assert hold.actual_usd_micro == 3_000
    with recorder.reserve(2_000):  # actual defaults to the amount reserved
        pass
    with pytest.raises(ValueError), recorder.reserve(1_000):
        raise ValueError("the billable call failed")
    with pytest.raises(SpendCapExceeded) as caught:
        with recorder.reserve(6_000):
            pytest.fail("a refused hold must not run the block")
    assert caught.value.remaining_usd_micro == 5_000
    states = sorted(r.state for r in _reservations(client, recorder.account, 4))
    assert states == ["committed", "committed", "refused", "released"]
    account = client.get_account(account=recorder.account)  # The same view, as of the refusal at least.
    assert (account.committed_usd_micro, account.pending_usd_micro) == (5_000, 0)
    recorder.finish()


def test_a_call_failing_with_a_multi_line_error_still_releases_its_hold(client: LedgerClient) -> None:
    recorder = RunRecorder.open(client, run_key="multi-line-error", cap_usd_micro=10_000)
    with pytest.raises(RuntimeError), recorder.reserve(1_000):
        raise RuntimeError("the provider said:\n  429 Too Many Requests\r\n\x1b[31mretry later\x1b[0m")
    [released] = _reservations(client, recorder.account, 1, state="released")
    account = client.get_account(account=recorder.account)  # The same view, as of the release at least.
    assert account.pending_usd_micro == 0
    assert released.state == "released" and released.reason.startswith("RuntimeError: the provider said:")
    assert "\n" not in released.reason and "\x1b" not in released.reason
    recorder.finish()


def test_reserve_fails_closed_when_the_ledger_is_unreachable(client: LedgerClient, server: ServerThread) -> None:
    recorder = RunRecorder.open(client, run_key="closed", cap_usd_micro=10_000)
    server.stop()
    with pytest.raises(Unavailable), recorder.reserve(1_000):
        pytest.fail("no hold, no call")
    recorder.close(flush_timeout_s=0)


def test_context_manager_finishes_failed_on_an_exception(client: LedgerClient) -> None:
    with pytest.raises(RuntimeError):
        with RunRecorder.open(client, run_key="boom") as recorder:
            recorder.log(1, loss=1.0)
            raise RuntimeError("out of memory at step 1")
    state = client.get_run_state(run_id=recorder.run_id)
    assert state.run.status == "failed"
    assert state.run.error == "RuntimeError: out of memory at step 1"
    assert state.last_step == 1  # the steps were flushed before the finish


def test_checkpoint_flushes_steps_first(client: LedgerClient) -> None:
    with RunRecorder.open(client, run_key="ckpt", batch_interval_s=60) as recorder:
        for step in range(1, 11):
            recorder.log(step, loss=1.0)
        recorder.checkpoint(10, "s3://bucket/ckpt-10", "s3", "weights+optimizer", digest="sha256:" + "0" * 64)
        state = recorder.refresh_state()
    assert state.last_step == 10 and state.checkpoint.step == 10
    assert state.resume.handle is not None
    assert state.resume.handle.to_dict() == {
        "backend": "s3",
        "uri": "s3://bucket/ckpt-10",
        "fidelity": "weights+optimizer",
    }


def test_a_new_attempt_resumes_from_the_latest_checkpoint(client: LedgerClient) -> None:
    first = RunRecorder.open(client, run_key="resume", resume_from_step="latest")
    assert first.state.attempts[0].resumed_from_step is None
    for step in range(1, 11):
        first.log(step, loss=1.0)
        if step == 5:
            first.checkpoint(5, "local:///ckpt-5", "local", "weights+optimizer")
    first.close()  # The process dies after step 10; steps 6..10 will be superseded.
    with RunRecorder.open(client, run_key="resume", resume_from_step="latest") as second:
        assert second.attempt == 2 and second.state.resume.handle.uri == "local:///ckpt-5"
        for step in range(6, 9):
            second.log(step, loss=2.0)
    page = client.get_series(run_id=second.run_id)
    assert list(zip(page.steps, page.attempts, strict=True)) == [
        (1, 1),
        (2, 1),
        (3, 1),
        (4, 1),
        (5, 1),
        (6, 2),
        (7, 2),
        (8, 2),
    ]


def test_a_deferred_open_logs_while_the_ledger_is_down_and_delivers_once(tmp_path) -> None:
    server = ServerThread(str(tmp_path / "ledger.db"), port=free_port())  # Not started: the ledger is down.
    client = LedgerClient(server.address, timeout_s=2.0, retries=0)
    recorder = RunRecorder.open(
        client,
        run_key="deferred",
        defer=True,
        outbox_dir=tmp_path / "outbox",
        batch_steps_max=20,
        batch_interval_s=0.01,
    )
    try:
        assert not recorder.opened and recorder.attempt == 0 and not recorder.wait_open(0.1)
        for step in range(1, 101):
            recorder.log(step, tokens=8, loss=1.0 / step)
        with pytest.raises(Unavailable), recorder.reserve(1_000):
            pytest.fail("no hold for a run that is not open")
        assert not recorder.flush(0.3) and recorder.counters["acked"] == 0
        server.start()
        assert recorder.wait_open(20) and recorder.attempt == 1
        for step in range(101, 121):
            recorder.log(step, tokens=8, loss=1.0 / step)
        assert recorder.flush(20)
        recorder.finish()
        assert recorder.counters == {
            "sent": 120,
            "acked": 120,
            "dropped": 0,
            "failed": 0,
            "non_finite": 0,
            "quarantined": 0,
        }
        page = client.get_series(run_id=recorder.run_id, page_size=1_000)
        assert page.steps == list(range(1, 121)) and set(page.attempts) == {1}
        with sqlite3.connect(tmp_path / "outbox" / FILE_NAME) as db:
            assert db.execute("SELECT COUNT(*) FROM batches").fetchone() == (0,)
            assert db.execute("SELECT COUNT(*) FROM pending_opens").fetchone() == (0,)
    finally:
        recorder.close(flush_timeout_s=0)
        server.stop()
        client.close()


def test_steps_of_a_process_that_died_before_the_ledger_answered_are_delivered_by_the_next(tmp_path) -> None:
    server = ServerThread(str(tmp_path / "ledger.db"), port=free_port())
    client = LedgerClient(server.address, timeout_s=2.0, retries=0)
    outbox = tmp_path / "outbox"
    first = RunRecorder.open(
        client,
        run_key="orphan",
        defer=True,
        outbox_dir=outbox,
        batch_steps_max=10,
        batch_interval_s=0.01,
        flush_timeout_s=0.5,
    )
    for step in range(1, 31):
        first.log(step, loss=1.0)
    with pytest.raises(Unavailable):
        first.finish()  # It gives up: the steps stay in the outbox under the pending attempt.
    server.start()
    client.close()
    client = LedgerClient(server.address, retries=QUICK_RETRIES)  # The next process.
    client.wait_ready(10)  # gRPC shares the dead channel's subchannel, in its reconnect backoff.
    try:
        second = RunRecorder.open(client, run_key="orphan", outbox_dir=outbox)
        assert second.attempt == 2 and second.counters["acked"] == 30
        second.finish()
        state = client.get_run_state(run_id=second.run_id)
        assert [a.number for a in state.attempts] == [1, 2]
        assert series_steps(client, second.run_id, include_superseded=True) == list(range(1, 31))
        with sqlite3.connect(outbox / FILE_NAME) as db:
            assert db.execute("SELECT COUNT(*) FROM batches").fetchone() == (0,)
            assert db.execute("SELECT COUNT(*) FROM pending_opens").fetchone() == (0,)
    finally:
        server.stop()
        client.close()


def test_a_deferred_open_the_ledger_refuses_counts_its_steps_failed(tmp_path) -> None:
    server = ServerThread(str(tmp_path / "ledger.db"), port=free_port())
    client = LedgerClient(server.address, timeout_s=2.0, retries=0)
    recorder = RunRecorder.open(client, run_key="refused", defer=True, resume_from_step=7, batch_interval_s=0.01)
    for step in range(8, 13):
        recorder.log(step, loss=1.0)
    server.start()  # The run has no checkpoint at step 7: the attempt can never start.
    try:
        with pytest.raises(LedgerClientError) as caught:
            recorder.wait_open(20)
        assert caught.value.reason == "CHECKPOINT_NOT_FOUND" and not recorder.opened
        assert recorder.flush(5) and recorder.counters["failed"] == 5
    finally:
        recorder.close(flush_timeout_s=0)
        server.stop()
        client.close()
