"""A ledger restart of a few seconds does not kill a trainer loop: every unary call the recorder
makes (open, start attempt, reserve, commit, release, checkpoint, finish) resends the same request
until the ledger is back, within the client's outage budget (30 s by default), and nothing is
recorded twice. Past the budget a reserve fails closed: Unavailable, and no billable call runs.

The ledger here is `trainledger serve` as its own process, killed and started again on the same
SQLite file and port, as a restart looks to a trainer."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from clients import AsyncLedgerClient, LedgerClient, LedgerClientError, RunRecorder, Unavailable
from tests.client.server_thread import ServerThread, free_port

pytestmark = pytest.mark.subprocess

DOWN_S = 2.0  # Then `trainledger serve` starts again (about a second more): a restart of about 3 s.


class LedgerProcess:
    """`trainledger serve` on one SQLite file and one port, killed and started again at will."""

    def __init__(self, directory: Path) -> None:
        self.database, self.log = directory / "ledger.db", directory / "server.log"
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> LedgerProcess:
        script = Path(sys.executable).with_name("trainledger")
        command = [str(script)] if script.exists() else [sys.executable, "-m", "services.cli"]
        with open(self.log, "ab") as output:
            self.process = subprocess.Popen(
                [*command, "serve", "--db", str(self.database), "--listen", self.address],
                stdout=output,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        deadline = time.monotonic() + 60
        with LedgerClient(self.address, timeout_s=2.0, retries=0) as probe:
            while True:
                try:
                    probe.list_runs(page_size=1)
                    return self
                except LedgerClientError:
                    if self.process.poll() is not None or time.monotonic() > deadline:
                        self.kill()
                        raise RuntimeError(f"the ledger did not start: {self.log.read_text()[-2000:]}") from None
                    time.sleep(0.05)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()  # SIGKILL: no goodbye to the clients.
            self.process.wait()
            self.process = None

    @contextmanager
    def restart(self) -> Iterator[None]:
        """Kill the ledger now and start it again DOWN_S later, in the background; the block runs
        while it is down (its first call meets a dead ledger) and ends once it is back."""
        self.kill()

        def later() -> None:
            time.sleep(DOWN_S)
            self.start()
            self.restarts += 1

        thread = threading.Thread(target=later, daemon=True)
        thread.start()
        try:
            yield
        finally:
            thread.join(90)


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[LedgerProcess]:
    process = LedgerProcess(tmp_path).start()
    yield process
    process.kill()


def test_a_restart_of_a_few_seconds_is_ridden_out_by_every_call_and_nothing_lands_twice(ledger: LedgerProcess) -> None:
    # The README's trainer: a client with nothing but a per-call deadline; the outage budget is
    # the default.
    client = LedgerClient(ledger.address, principal="trainer", timeout_s=5.0)
    # It has reached this ledger once, so the outage budget applies from the first restart on (a
    # client that never reached one gives up after first_contact_s: tests/client/test_first_contact.py),
    # however long the restarted process takes to start on a busy machine.
    client.list_runs(page_size=1)
    holds, released = [], []
    with ledger.restart():  # OpenRun and StartAttempt meet a dead ledger.
        recorder = RunRecorder.open(
            client, run_key="restart-ridden-out", name="restart", cap_usd_micro=10**9, batch_interval_s=0.01
        )
    with recorder:
        for step in range(10):
            if step == 3:
                with ledger.restart():  # Reserve meets a dead ledger.
                    with recorder.reserve(1_000, reservation_id=f"hold-{step}") as hold:
                        hold.actual_usd_micro = 900
            elif step == 5:
                with recorder.reserve(1_000, reservation_id=f"hold-{step}") as hold:
                    hold.actual_usd_micro = 900
                    ledger.kill()  # The billable call ran; its commit meets a dead ledger.
                    later = threading.Timer(DOWN_S, ledger.start)
                    later.start()
                later.join()
            elif step == 7:
                with pytest.raises(RuntimeError, match="the billable call failed"):
                    with recorder.reserve(1_000, reservation_id=f"hold-{step}") as hold:
                        ledger.kill()  # Its release meets a dead ledger.
                        later = threading.Timer(DOWN_S, ledger.start)
                        later.start()
                        raise RuntimeError("the billable call failed")
                later.join()
                released.append(hold.reservation_id)
                recorder.log(step, tokens=10, loss=1.0 / (step + 1))
                continue
            else:
                with recorder.reserve(1_000, reservation_id=f"hold-{step}") as hold:
                    hold.actual_usd_micro = 900
            holds.append(hold.reservation_id)
            recorder.log(step, tokens=10, loss=1.0 / (step + 1))
        with ledger.restart():  # SaveCheckpoint meets a dead ledger.
            recorder.checkpoint(9, "s3://bucket/ckpt-9", "s3", "weights+optimizer")
        ledger.kill()  # FinishRun meets a dead ledger as the block ends.
        later = threading.Timer(DOWN_S, ledger.start)
        later.start()
    later.join()
    assert ledger.process is not None and ledger.restarts == 3

    state = client.get_run_state(run_id=recorder.run_id)  # reads what this client wrote
    assert state.run.status == "done"
    assert [attempt.number for attempt in state.attempts] == [1]
    assert state.checkpoint.step == 9 and state.last_step == 9
    # Every hold once: nine committed at 900, one released; nothing pending, nothing doubled.
    spend = state.spend
    assert (spend.committed_usd_micro, spend.pending_usd_micro) == (9 * 900, 0)
    entries = client.list_reservations(account=recorder.account, page_size=100).reservations
    assert {e.reservation_id: e.state for e in entries} == {
        **dict.fromkeys(holds, "committed"),
        **dict.fromkeys(released, "released"),
    }
    log = list(client.read_events(from_position=1))
    kinds = Counter(e.type.split(".")[-1] for e in log)
    reserved = [e.data_json["reservation_id"] for e in log if e.type.endswith("SpendReserved")]
    assert sorted(reserved) == sorted(holds + released)  # each reserved once
    assert kinds["SpendCommitted"] == 9 and kinds["SpendReleased"] == 1
    assert kinds["AttemptStarted"] == 1 and kinds["CheckpointSaved"] == 1 and kinds["Finished"] == 1
    series = client.get_series(run_id=recorder.run_id)
    assert series.steps == list(range(10))
    client.close()


def test_past_the_outage_budget_reserve_fails_closed(ledger: LedgerProcess) -> None:
    client = LedgerClient(ledger.address, principal="trainer", timeout_s=5.0, outage_budget_s=1.0)
    assert client.outage_budget_s == 1.0
    recorder = RunRecorder.open(client, run_key="budget-spent", cap_usd_micro=10_000)
    ledger.kill()  # And not back within the budget.
    ran = False
    with pytest.raises(Unavailable):
        with recorder.reserve(1_000):
            ran = True
    assert not ran  # no hold, no billable call
    recorder.close(flush_timeout_s=0)
    ledger.start()
    account = client.get_account(account=recorder.account)
    assert (account.pending_usd_micro, account.committed_usd_micro) == (0, 0)
    assert not client.list_reservations(account=recorder.account).reservations
    client.close()


def test_the_async_client_rides_out_a_restart_with_the_default_budget(tmp_path: Path) -> None:
    server = ServerThread(str(tmp_path / "ledger.db")).start()

    async def scenario() -> dict[str, Any]:
        async with AsyncLedgerClient(server.address, principal="trainer", timeout_s=5.0) as client:
            assert client.outage_budget_s == 30.0
            opened = await client.open_run(run_key="async-restart", cap_usd_micro=10_000)
            run_id = opened.state.run.run_id
            server.stop()
            threading.Timer(DOWN_S + 1.0, server.start).start()
            held = await client.reserve(account=run_id, amount_usd_micro=1_000, reservation_id="async-hold")
            await client.commit(account=run_id, reservation_id=held.reservation_id, actual_usd_micro=700)
            return await client.get_account(account=run_id)

    try:
        account = asyncio.run(scenario())
    finally:
        server.stop()
    assert (account.committed_usd_micro, account.pending_usd_micro) == (700, 0)
