"""How a recorded run ends, and what opening it again does.

Leaving a RunRecorder's block ends the run "done"; a spend-cap refusal, KeyboardInterrupt or (with
stop_on_sigterm=True) SIGTERM ends it "stopped"; any other exception "failed". An ended run is not
opened again by accident: a done run takes no new attempt (use a new run key), a failed or stopped
one takes one only with reopen=True."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from clients import (
    LedgerClient,
    RunEnded,
    RunFinished,
    RunRecorder,
    SpendCapExceeded,
    Unavailable,
    exit_status,
    run_key,
)
from tests.client.server_thread import ServerThread

ROOT = Path(__file__).resolve().parents[2]


def ended(client: LedgerClient, recorder: RunRecorder) -> tuple[str, str]:
    run = client.get_run_state(run_id=recorder.run_id).run
    return run.status, run.error


def test_the_status_of_an_exit() -> None:
    assert exit_status(None) == "done"
    assert exit_status(SpendCapExceeded("SPEND_CAP_EXCEEDED", "no room")) == "stopped"
    assert exit_status(KeyboardInterrupt()) == "stopped"
    assert exit_status(SystemExit(0)) == "stopped"
    assert exit_status(RuntimeError("out of memory")) == "failed"
    assert exit_status(Unavailable("UNAVAILABLE", "the ledger is away")) == "failed"


def test_a_cap_refusal_that_ends_the_block_ends_the_run_stopped(client: LedgerClient) -> None:
    with pytest.raises(SpendCapExceeded):
        with RunRecorder.open(client, run_key=run_key({"status": "cap"}), cap_usd_micro=1_000) as recorder:
            recorder.log(1, loss=1.0)
            with recorder.reserve(5_000):
                pytest.fail("no hold, no call")
    status, error = ended(client, recorder)
    assert status == "stopped" and error.startswith("SpendCapExceeded: SPEND_CAP_EXCEEDED")


def test_keyboard_interrupt_ends_the_run_stopped(client: LedgerClient) -> None:
    with pytest.raises(KeyboardInterrupt):
        with RunRecorder.open(client, run_key=run_key({"status": "interrupt"})) as recorder:
            recorder.log(1, loss=1.0)
            raise KeyboardInterrupt
    assert ended(client, recorder)[0] == "stopped"
    assert client.get_run_state(run_id=recorder.run_id).last_step == 1


def test_an_exception_ends_failed_and_a_normal_end_done(client: LedgerClient) -> None:
    with pytest.raises(ValueError):
        with RunRecorder.open(client, run_key=run_key({"status": "failed"})) as failed:
            raise ValueError("bad batch")
    assert ended(client, failed) == ("failed", "ValueError: bad batch")
    with RunRecorder.open(client, run_key=run_key({"status": "done"})) as done:
        done.log(1, loss=1.0)
    assert ended(client, done) == ("done", "")


TRAINER = """
import sys, time
from clients import LedgerClient, RunRecorder
client = LedgerClient(sys.argv[1], principal="sigterm")
with RunRecorder.open(client, run_key="sigterm-run", name="sigterm", stop_on_sigterm=True,
                      batch_interval_s=0.01) as run:
    step = 0
    while True:
        run.log(step, loss=1.0)
        if step == 3:
            run.flush(10)
            print("training", flush=True)
        step += 1
        time.sleep(0.01)
"""


@pytest.mark.subprocess
def test_sigterm_ends_the_run_stopped_with_stop_on_sigterm(server: ServerThread, client: LedgerClient) -> None:
    trainer = subprocess.Popen(
        [sys.executable, "-c", TRAINER, server.address],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert trainer.stdout is not None and trainer.stdout.readline().strip() == "training"
        trainer.send_signal(signal.SIGTERM)
        _, stderr = trainer.communicate(timeout=60)
    finally:
        if trainer.poll() is None:
            trainer.kill()
    assert trainer.returncode != 0 and "KeyboardInterrupt: SIGTERM" in stderr
    state = client.open_run(run_key="sigterm-run").state
    assert (state.run.status, state.run.error) == ("stopped", "KeyboardInterrupt: SIGTERM")
    assert state.last_step >= 3  # what was logged before the signal was flushed first


def test_stop_on_sigterm_restores_the_previous_handler(client: LedgerClient) -> None:
    before = signal.getsignal(signal.SIGTERM)
    with RunRecorder.open(client, run_key=run_key({"status": "handler"}), stop_on_sigterm=True):
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_finished_run_is_not_reopened_by_accident(client: LedgerClient) -> None:
    key = run_key({"status": "reopen"})
    with pytest.raises(RuntimeError):
        with RunRecorder.open(client, run_key=key, name="reopen-me") as first:
            raise RuntimeError("crash")
    with pytest.raises(RunEnded) as refused:
        RunRecorder.open(client, run_key=key, name="reopen-me")
    message = str(refused.value)
    assert "reopen-me" in message and first.run_id in message and " is failed" in message
    assert "use a new run key, or pass reopen=True to start a new attempt on it" in message
    assert (refused.value.run_id, refused.value.status) == (first.run_id, "failed")
    assert isinstance(refused.value, RunFinished) and refused.value.reason == "RUN_FINISHED"
    assert len(client.get_run_state(run_id=first.run_id).attempts) == 1  # no attempt started

    with RunRecorder.open(client, run_key=key, name="reopen-me", reopen=True) as second:
        assert second.attempt == 2 and second.state.run.status == "running"
    assert ended(client, second) == ("done", "")

    for reopen in (False, True):  # A done run takes no new attempt at all.
        with pytest.raises(RunEnded) as refused:
            RunRecorder.open(client, run_key=key, reopen=reopen)
        assert refused.value.status == "done"
        assert str(refused.value).endswith("is done: use a new run key (a done run takes no new attempt)")
    assert len(client.get_run_state(run_id=first.run_id).attempts) == 2


def test_a_stopped_run_reopens_only_when_asked(client: LedgerClient) -> None:
    key = run_key({"status": "stopped-reopen"})
    with pytest.raises(KeyboardInterrupt):
        with RunRecorder.open(client, run_key=key):
            raise KeyboardInterrupt
    with pytest.raises(RunEnded, match="is stopped: use a new run key, or pass reopen=True"):
        RunRecorder.open(client, run_key=key)
    reopened = RunRecorder.open(client, run_key=key, reopen=True, resume_from_step="latest")
    assert reopened.attempt == 2
    reopened.finish()


def test_a_deferred_open_of_an_ended_run_is_refused_at_once(client: LedgerClient) -> None:
    key = run_key({"status": "deferred"})
    RunRecorder.open(client, run_key=key).finish("stopped")
    with pytest.raises(RunEnded):  # a refusal: raised now, not left to a background opener
        RunRecorder.open(client, run_key=key, defer=True)
    assert len(client.get_run_state(run_id=run_id(client, key)).attempts) == 1


def run_id(client: LedgerClient, key: str) -> str:
    return client.open_run(run_key=key).state.run.run_id


def test_a_loop_that_catches_the_refusal_and_finishes_stopped_stays_stopped(client: LedgerClient) -> None:
    # The README's trainer: SpendCapExceeded caught, the run finished "stopped", the block left.
    with RunRecorder.open(client, run_key=run_key({"status": "caught"}), cap_usd_micro=1_500) as recorder:
        for step in range(5):
            try:
                with recorder.reserve(1_000) as hold:
                    hold.actual_usd_micro = 1_000
            except SpendCapExceeded:
                recorder.finish("stopped", summary={"stop_reason": "spend cap"})
                break
            recorder.log(step, loss=1.0)
    state = client.get_run_state(run_id=recorder.run_id)
    assert (state.run.status, state.run.summary) == ("stopped", {"stop_reason": "spend cap"})
    assert state.last_step == 0 and state.spend.committed_usd_micro == 1_000
