"""A spend cap that runs out mid-training stops a real TRL run cleanly: LedgerCallback holds GPU
time per interval against a `trainledger serve` process; when the cap refuses the next hold the
trainer saves a checkpoint at that step and ends, the run is recorded "stopped" with the reason,
and committed + pending never exceeded the cap at any position of the log."""

from __future__ import annotations

from pathlib import Path

import pytest

from clients import LedgerClient, RetryPolicy
from tests.client.server_thread import free_port
from tests.e2e.sft_support import field, run_named, run_sft, sft_command
from tests.e2e.test_server_crash import serve
from tests.trainers import tiny

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180), pytest.mark.subprocess]

NAME = "tiny-sft-budget"
PRICE = 3_600_000_000  # micro-USD per GPU hour: 1,000 micro-USD per millisecond
CAP = 2_500_000  # 2.5 s of GPU time
STEPS = 60


def test_a_cap_that_runs_out_stops_training_cleanly_with_a_checkpoint(tmp_path: Path) -> None:
    database, port, log = tmp_path / "ledger.db", free_port(), tmp_path / "server.log"
    server = serve(database, port, log)
    address = f"127.0.0.1:{port}"
    out = tmp_path / "out"
    client = LedgerClient(address, principal="e2e", retries=RetryPolicy(attempts=5))
    try:
        lines = run_sft(
            sft_command(
                out,
                "--max-steps",
                str(STEPS),
                "--save-steps",
                "1000",
                "--sleep-per-step",
                "0.1",
                "--ledger",
                address,
                "--name",
                NAME,
                "--price",
                str(PRICE),
                "--cap",
                str(CAP),
                "--interval-s",
                "1.0",
                "--batch-interval-s",
                "0.05",
            ),
            tmp_path / "trainer.log",
        )
        stop_step = int(field(lines, "end", "step"))
        assert 1 < stop_step < STEPS, "the cap should have stopped training midway"
        assert [line for line in lines if line.startswith("save ")] == [
            f"save step={stop_step} path={tiny.checkpoint_dir(out, stop_step)}"
        ]

        state = run_named(client, NAME)
        assert state is not None
        run_id = state.run.run_id
        assert state.run.status == "stopped"
        assert state.run.summary["stop_reason"].startswith(f"spend cap reached at step {stop_step}")
        assert state.checkpoint.step == state.last_step == stop_step
        assert state.checkpoint.handle.uri == str(tiny.checkpoint_dir(out, stop_step).resolve())

        account = client.get_account(account=run_id, min_position=state.position)
        # Nothing left held, and the cap held. (A step slower than the meter's interval commits more
        # GPU time than its hold, recorded as overrun: how much depends on the machine's load.)
        assert account.pending_usd_micro == 0
        assert account.committed_usd_micro + account.presumed_usd_micro <= account.cap_usd_micro
        assert 0 < account.committed_usd_micro <= CAP
        entries = client.list_reservations(account=run_id, page_size=10_000, min_position=state.position).reservations
        assert sum(e.actual_usd_micro for e in entries if e.state == "committed") == account.committed_usd_micro
        assert entries[-1].state == "refused"

        # Replay the account's log: committed + pending within the cap at every position.
        committed = pending = 0
        held: dict[str, int] = {}
        for event in client.read_events(from_position=1):
            data, kind = event.data_json, event.type.rsplit(".", 1)[-1]
            if kind == "SpendReserved":
                held[data["reservation_id"]] = data["amount"]
                pending += data["amount"]
            elif kind == "SpendCommitted":
                pending -= held.pop(data["reservation_id"], 0)
                committed += data["actual"]
            elif kind in ("SpendReleased", "SpendExpired"):
                pending -= held.pop(data["reservation_id"], 0)
            assert committed + pending <= CAP, (event.position, committed, pending)
        assert (committed, pending) == (account.committed_usd_micro, 0)
    finally:
        client.close()
        server.kill()
        server.wait()
