"""A real TRL SFTTrainer + PEFT LoRA run, recorded by LedgerCallback against a `trainledger serve`
process, is killed with SIGKILL after a checkpoint and some later steps, and rerun with the same
command: the rerun asks the ledger where to resume, its attempt resumes from the ledger's
checkpoint, the dead attempt's later steps are superseded (kept, marked), the series holds exactly
one record per step, the final adapter is bit-identical to an uninterrupted run's, and the spend
committed is what both attempts committed."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from clients import LedgerClient, RetryPolicy
from tests.client.server_thread import free_port
from tests.e2e.sft_support import all_series, field, run_named, run_sft, sft_command, start_sft, wait_until
from tests.e2e.test_server_crash import serve
from tests.trainers import tiny

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180), pytest.mark.subprocess]

NAME = "tiny-sft-resume"
STEPS, SAVE_STEPS = 20, 5


def test_sigkill_after_a_checkpoint_then_rerun_resumes_from_the_ledger(tmp_path: Path) -> None:
    database, port, log = tmp_path / "ledger.db", free_port(), tmp_path / "server.log"
    server = serve(database, port, log)
    address = f"127.0.0.1:{port}"
    out, reference = tmp_path / "out", tmp_path / "reference"
    command = sft_command(
        out,
        "--max-steps",
        str(STEPS),
        "--save-steps",
        str(SAVE_STEPS),
        "--sleep-per-step",
        "0.25",
        "--ledger",
        address,
        "--name",
        NAME,
        "--outbox",
        str(tmp_path / "outbox"),
        "--price",
        "3600000000",
        "--interval-s",
        "0.5",
        "--batch-interval-s",
        "0.05",
    )
    client = LedgerClient(address, principal="e2e", retries=RetryPolicy(attempts=5))
    # The uninterrupted run to compare with (no ledger), alongside the first attempt.
    uninterrupted = start_sft(
        sft_command(reference, "--max-steps", str(STEPS), "--save-steps", str(SAVE_STEPS)), tmp_path / "reference.log"
    )
    first = start_sft(command, tmp_path / "first.log")
    try:
        # Kill the first attempt once the ledger holds a checkpoint from step 10 on and steps after
        # it (10 or 15: a slow poll may see the trainer past step 14, never past its last save).
        state = wait_until(
            lambda: (
                (s := run_named(client, NAME))
                and getattr(s.checkpoint, "step", 0) in (2 * SAVE_STEPS, 3 * SAVE_STEPS)
                and (s.last_step or 0) >= s.checkpoint.step + 2
                and s
            ),
            90,
            "a checkpoint from step 10 on and two steps after it in the ledger",
        )
        first.send_signal(signal.SIGKILL)
        first.wait(30)
        assert first.returncode == -signal.SIGKILL
        run_id = state.run.run_id
        before = run_named(client, NAME)
        resume_step, dead_last = before.checkpoint.step, before.last_step
        assert before.run.status == "running" and dead_last > resume_step

        lines = run_sft(command, tmp_path / "second.log")  # The same command again.
        assert field(lines, "start", "resume_from") == str(tiny.checkpoint_dir(out, resume_step).resolve())
        assert field(lines, "end", "step") == str(STEPS)

        state = run_named(client, NAME)
        assert state.run.status == "done" and state.current_attempt == 2
        assert state.attempts[1].resumed_from_step == resume_step
        assert state.checkpoint.step == STEPS and state.last_step == STEPS
        assert state.run.summary["steps"] == STEPS

        # One record per step; the dead attempt's steps after the checkpoint are kept, marked superseded.
        series = all_series(client, run_id, min_position=state.position)
        assert series["steps"] == list(range(1, STEPS + 1))
        assert series["attempts"] == [1 if step <= resume_step else 2 for step in series["steps"]]
        everything = all_series(client, run_id, include_superseded=True)
        superseded = sorted(step for step, attempt, gone in zip(*everything.values(), strict=True) if gone)
        assert superseded == list(range(resume_step + 1, dead_last + 1))
        assert all(
            attempt == 1 for attempt, gone in zip(everything["attempts"], everything["superseded"], strict=True) if gone
        )

        # The resumed adapter is bit-identical to the uninterrupted run's.
        assert uninterrupted.wait(90) == 0
        assert tiny.adapter_bytes(tiny.checkpoint_dir(out, STEPS)) == tiny.adapter_bytes(
            tiny.checkpoint_dir(reference, STEPS)
        )

        # Spend: what both attempts committed, and nothing else.
        account = client.get_account(account=run_id, min_position=state.position)
        entries = client.list_reservations(account=run_id, page_size=10_000, min_position=state.position).reservations
        committed = [entry for entry in entries if entry.state == "committed"]
        assert sum(entry.actual_usd_micro for entry in committed) == account.committed_usd_micro > 0
        assert {entry.attempt for entry in committed} == {1, 2}
        assert all(entry.basis.gpu.gpu_milliseconds > 0 for entry in entries)
    finally:
        for process in (first, uninterrupted):
            if process.poll() is None:
                process.kill()
                process.wait()
        client.close()
        server.kill()
        server.wait()
