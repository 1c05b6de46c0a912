"""The hash chain survives crashes: a served SQLite ledger killed with SIGKILL several times while a
trainer writes steps and spend still verifies (every event sealed, the chain whole, snapshots and
views agreeing with the log), and verifies again after `trainledger rebuild`."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

from clients import LedgerClient, RunRecorder
from clients.models import StepAck
from ledger import Ledger
from tests.client.server_thread import free_port
from tests.e2e.test_serve_guards import environment, trainledger
from tests.e2e.test_server_crash import PATIENT, serve

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300), pytest.mark.subprocess]

KILLS = 3
STEPS = 3_000


def verified(database: Path) -> tuple[int, int]:
    """Verify the file with the server down; (events checked, head position)."""
    ledger = Ledger.open(str(database), project=False)
    try:
        result = ledger.verify()
        assert result.ok, result
        assert result.head == ledger.chain_head()
        return result.checked, result.head.position
    finally:
        ledger.close()


def test_kill_9_under_writes_leaves_a_whole_chain_and_rebuild_keeps_it(tmp_path: Path) -> None:
    database, port, log = tmp_path / "ledger.db", free_port(), tmp_path / "server.log"
    server = serve(database, port, log)
    acks: list[StepAck] = []
    client = LedgerClient(f"127.0.0.1:{port}", principal="e2e", timeout_s=5.0, retries=PATIENT)
    recorder = RunRecorder.open(
        client,
        run_key="chain-crash",
        cap_usd_micro=10**12,
        batch_steps_max=20,
        batch_interval_s=0.01,
        on_ack=acks.append,
    )
    stop = threading.Event()

    def train() -> None:
        for step in range(STEPS):
            recorder.log(step, tokens=64, loss=1.0 / (step + 1))
            if step % 20 == 19:
                time.sleep(0.01)

    def spend() -> None:
        number = 0
        while not stop.is_set():
            number += 1
            with recorder.reserve(1_000, reservation_id=f"hold-{number}") as hold:
                hold.actual_usd_micro = 900
            time.sleep(0.01)

    trainer, spender = threading.Thread(target=train), threading.Thread(target=spend)
    trainer.start()
    spender.start()
    try:
        for _ in range(KILLS):
            seen = len(acks)
            while len(acks) < seen + 10:
                time.sleep(0.01)
            server.kill()  # SIGKILL, in the middle of writes.
            server.wait()
            server = serve(database, port, log)
        trainer.join(120)
        stop.set()
        spender.join(60)
        assert recorder.flush(60), recorder.counters
        server.kill()
        server.wait()
    finally:
        stop.set()
        if server.poll() is None:
            server.kill()
            server.wait()
        client.close()

    checked, head = verified(database)
    assert checked == head and head > STEPS // 20

    done = subprocess.run(
        [*trainledger(), "rebuild", "--db", str(database)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=environment(),
    )
    assert done.returncode == 0, done.stderr
    assert verified(database) == (checked, head)
