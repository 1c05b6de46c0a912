"""A recorder whose token is revoked while its RecordSteps stream is open, over real gRPC on
loopback against a server that authenticates: the server ends the stream (UNAUTHENTICATED,
TOKEN_REVOKED), the recorder keeps every unacked batch in its on-disk outbox, and a recorder
of the same run given a new token delivers them, each step exactly once. The replay of an
earlier attempt's batches keeps them too when its token is refused on the way."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from clients import LedgerClient, RunRecorder, codec, run_key
from clients.attempts import replay_attempts
from clients.errors import Unauthenticated
from clients.outbox import SqliteOutbox
from ledger import Ledger
from services.runtime.auth import CACHE_S, STREAM_RECHECK_S
from tests.service.support import Served

WHO = {"principal": "setup", "request_id": ""}
# How long the test logs after the revocation before calling the stream open for good.
WAIT_S = 4 * (STREAM_RECHECK_S + CACHE_S)


@pytest.fixture
def ledger(tmp_path) -> Iterator[Ledger]:
    opened = Ledger.open(str(tmp_path / "ledger.db"))
    yield opened
    opened.close()


@pytest.fixture
def served(ledger: Ledger) -> Iterator[Served]:
    server = Served(ledger)
    yield server
    server.close()


def test_a_revoked_tokens_batches_stay_in_the_outbox_and_go_with_a_new_token(
    served: Served, ledger: Ledger, tmp_path
) -> None:
    outbox_dir, spec_key = tmp_path / "outbox", run_key({"test": "revoked mid-stream"})
    first = ledger.issue_token(holder="trainer-1", role="trainer", **WHO)
    options = dict(run_key=spec_key, outbox_dir=outbox_dir, batch_steps_max=4, batch_interval_s=0.05)
    with LedgerClient(served.address, token=first.bearer, timeout_s=10.0) as client:
        recorder = RunRecorder.open(client, name="revoked", **options)
        run_id = recorder.run_id
        for step in range(1, 9):
            recorder.log(step, loss=1.0 / step)
        assert recorder.flush(10.0)
        ledger.revoke_token(token_id=first.token.token_id, reason="rotated", **WHO)
        step, deadline = 9, time.monotonic() + WAIT_S
        while recorder.last_error is None and time.monotonic() < deadline:
            recorder.log(step, loss=1.0 / step)
            step += 1
            time.sleep(0.02)
        error = recorder.last_error
        for later in range(step, step + 20):  # Logged after the stream ended: into the outbox too.
            recorder.log(later, loss=1.0 / later)
        last_step = step + 19
        recorder.close(flush_timeout_s=0.5)
        counters = recorder.counters
    assert isinstance(error, Unauthenticated) and error.reason == "TOKEN_REVOKED"
    assert counters["failed"] == counters["dropped"] == 0

    second = ledger.issue_token(holder="trainer-1", role="trainer", **WHO)
    with LedgerClient(served.address, token=second.bearer, timeout_s=10.0) as client:
        recorder = RunRecorder.open(client, name="revoked", **options)
        assert recorder.run_id == run_id
        recorder.close()
        # The new attempt starts from scratch, which supersedes the first one's steps: they are
        # kept, and read with the superseded ones.
        series = client.get_series(run_id=run_id, page_size=1_000, include_superseded=True, min_position=ledger.head())
    assert list(zip(series.steps, series.attempts, strict=True)) == [(step, 1) for step in range(1, last_step + 1)]


def test_a_replay_refused_for_its_token_keeps_the_batches(served: Served, ledger: Ledger, tmp_path) -> None:
    first = ledger.issue_token(holder="trainer-1", role="trainer", **WHO)
    with LedgerClient(served.address, token=first.bearer, timeout_s=10.0) as client:
        run_id = client.open_run(run_key=run_key({"test": "replay refused"})).state.run.run_id
        assert client.start_attempt(run_id=run_id).attempt == 1
    earlier = SqliteOutbox(tmp_path / "outbox", run_id, 1)
    for step in (1, 2, 3):
        earlier.add(codec.step_batch(run_id=run_id, attempt=1, steps=[step], tokens=[1]))
    earlier.close()
    ledger.revoke_token(token_id=first.token.token_id, **WHO)
    time.sleep(CACHE_S + 0.1)  # The server reads its token book at most once per CACHE_S.
    outbox = SqliteOutbox(tmp_path / "outbox", run_id, 2)
    try:
        with LedgerClient(served.address, token=first.bearer, timeout_s=10.0) as client:
            with pytest.raises(Unauthenticated):
                replay_attempts(client, outbox)
        assert [sequence for sequence, *_ in outbox.pending(attempt=1)] == [1, 2, 3]
        second = ledger.issue_token(holder="trainer-1", role="trainer", **WHO)
        with LedgerClient(served.address, token=second.bearer, timeout_s=10.0) as client:
            assert replay_attempts(client, outbox) == {"sent": 3, "acked": 3, "failed": 0}
    finally:
        outbox.close()


@pytest.mark.timeout(120)
def test_leaving_a_run_whose_token_is_refused_ends_at_once_in_one_line(
    served: Served, ledger: Ledger, tmp_path, caplog: pytest.LogCaptureFixture
) -> None:
    outbox_dir = tmp_path / "outbox"
    first = ledger.issue_token(holder="trainer-1", role="trainer", **WHO)
    # A flush budget far past the test's timeout: credentials refused are no outage to wait out.
    options = dict(outbox_dir=outbox_dir, batch_steps_max=4, batch_interval_s=0.05, flush_timeout_s=3_600.0)
    with LedgerClient(served.address, token=first.bearer, timeout_s=10.0, outage_budget_s=3_600.0) as client:
        with RunRecorder.open(client, run_key=run_key({"test": "left revoked"}), name="left", **options) as recorder:
            recorder.log(1, loss=1.0)
            assert recorder.flush(10.0)
            ledger.revoke_token(token_id=first.token.token_id, reason="rotated", **WHO)
            step = 2
            while recorder.last_error is None:
                recorder.log(step, loss=1.0 / step)
                step += 1
                time.sleep(0.02)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("a new token" in text and "outbox" in text for text in warnings), warnings
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1, errors
    assert "TOKEN_REVOKED" in errors[0] and "a new token" in errors[0] and str(outbox_dir) in errors[0]
    assert recorder.counters["failed"] == 0
