"""A ledger server killed with SIGKILL mid-stream loses nothing it acknowledged and records nothing
twice: `trainledger serve` runs as its own process; a trainer streams steps and reserves spend; the
server is killed and restarted on the same file; the client's retries carry on."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from clients import LedgerClient, LedgerClientError, RetryPolicy, RunRecorder
from clients.models import StepAck
from tests.client.server_thread import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180), pytest.mark.subprocess]

STEPS = 6_000
PATIENT = RetryPolicy(attempts=1_000, initial_backoff_s=0.05, max_backoff_s=0.5, total_s=60.0)


def serve(database: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    script = Path(sys.executable).with_name("trainledger")
    command = [str(script)] if script.exists() else [sys.executable, "-c", "from services.cli import main; main()"]
    with open(log, "ab") as output:
        process = subprocess.Popen(
            [*command, "serve", "--db", str(database), "--listen", f"127.0.0.1:{port}"],
            stdout=output,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    deadline = time.monotonic() + 60
    with LedgerClient(f"127.0.0.1:{port}", timeout_s=2.0, retries=0) as probe:
        while True:
            try:
                probe.list_runs(page_size=1)
                return process
            except LedgerClientError:
                if process.poll() is not None or time.monotonic() > deadline:
                    process.kill()
                    raise RuntimeError(f"the server did not start: {log.read_text()[-2000:]}") from None
                time.sleep(0.1)


def test_kill_9_mid_stream_loses_no_ack_and_duplicates_nothing(tmp_path: Path) -> None:
    database, port, log = tmp_path / "ledger.db", free_port(), tmp_path / "server.log"
    server = serve(database, port, log)
    acks: list[StepAck] = []
    client = LedgerClient(f"127.0.0.1:{port}", principal="e2e", timeout_s=5.0, retries=PATIENT)
    recorder = RunRecorder.open(
        client,
        run_key="e2e-crash",
        name="crash",
        cap_usd_micro=10**12,
        batch_steps_max=100,
        batch_interval_s=0.02,
        on_ack=acks.append,
    )
    committed: list[str] = []
    stop_spending = threading.Event()

    def train() -> None:
        for step in range(STEPS):
            recorder.log(step, tokens=64, loss=1.0 / (step + 1))
            if step % 100 == 99:
                time.sleep(0.05)

    def spend() -> None:
        number = 0
        while not stop_spending.is_set():
            number += 1
            with recorder.reserve(1_000, reservation_id=f"hold-{number}") as hold:
                hold.actual_usd_micro = 900
            committed.append(hold.reservation_id)
            time.sleep(0.02)

    trainer, spender = threading.Thread(target=train), threading.Thread(target=spend)
    trainer.start()
    spender.start()
    try:
        while len(acks) < 10 or len(committed) < 3:
            time.sleep(0.01)
        server.kill()  # SIGKILL: no graceful anything.
        server.wait()
        acked_before_kill, committed_before_kill = len(acks), len(committed)
        time.sleep(0.5)
        server = serve(database, port, log)  # Same file, same port.
        trainer.join(60)
        while len(committed) < committed_before_kill + 3:
            time.sleep(0.01)
        stop_spending.set()
        spender.join(60)
        assert recorder.flush(60), recorder.counters
        assert acked_before_kill < STEPS // 100, "the kill came after everything was acked"

        # Every acked batch is there once: ack positions are exactly the run's step-batch events.
        events = list(client.read_events(from_position=1))
        batches = [e for e in events if e.type.endswith("StepsRecorded") and e.originator_id == recorder.run_id]
        assert sorted({ack.position for ack in acks}) == [e.position for e in batches]
        assert sum(len(e.data_json["steps"]) for e in batches) == STEPS
        counters = recorder.counters
        assert counters["acked"] == STEPS and counters["failed"] == counters["dropped"] == 0
        steps: list[int] = []
        from_step: int | None = 0
        while from_step is not None:
            page = client.get_series(run_id=recorder.run_id, from_step=from_step, page_size=10_000)
            steps += page.steps
            from_step = page.next_from_step
        assert steps == list(range(STEPS))

        # Every committed hold is there once, committed; nothing reserved twice.
        reserved = [e for e in events if e.type.endswith("SpendReserved")]
        assert Counter(e.data_json["reservation_id"] for e in reserved) == Counter(committed)
        entries = client.list_reservations(account=recorder.account, page_size=10_000).reservations
        assert {e.reservation_id: e.state for e in entries} == dict.fromkeys(committed, "committed")

        # The run's state agrees with what the acks said.
        state = client.get_run_state(run_id=recorder.run_id, min_position=max(a.position for a in acks))
        assert state.last_step == max(ack.last_step for ack in acks) == STEPS - 1
        assert state.spend.committed_usd_micro == 900 * len(committed)
        assert state.spend.pending_usd_micro == 0
        assert state.current_attempt == recorder.attempt == 1
        recorder.finish()
    finally:
        stop_spending.set()
        recorder.close(flush_timeout_s=0)
        server.kill()
        server.wait()
        client.close()
