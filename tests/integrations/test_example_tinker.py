"""examples/tinker_lora.py as a user runs it: a process of its own, from another directory than the
repository (what it needs comes from the installed package, never from tests/), the real Tinker
SDK against the fake Tinker this test serves (TINKER_BASE_URL and TINKER_API_KEY, as for the real
service), reporting to a real ledger server. The cap
it is given binds from the first call: the example opens its run through resume() first, and
every open carries the cap."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess

pytest.importorskip("tinker")

from clients import LedgerClient  # noqa: E402
from tests.client.server_thread import ServerThread  # noqa: E402
from tests.fakes.tinker import FakeTinkerServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tinker_lora.py"


@pytest.fixture()
def tinker() -> Iterator[FakeTinkerServer]:
    with FakeTinkerServer() as fake:
        yield fake


def elsewhere(tinker: FakeTinkerServer) -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH pointing into the repository, Tinker's
    address and key."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    return {**env, "TINKER_BASE_URL": tinker.base_url, "TINKER_API_KEY": FakeTinkerServer.API_KEY}


def run_example(tinker: FakeTinkerServer, *args: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as directory:  # not the repository: tests/ is not importable
        return subprocess.run(
            [sys.executable, str(EXAMPLE), "--base-model", FakeTinkerServer.BASE_MODEL, *args],
            cwd=directory,
            env=elsewhere(tinker),
            capture_output=True,
            text=True,
            timeout=300,
        )


def test_a_trial_run_with_a_cap_never_commits_beyond_it(
    server: ServerThread, client: LedgerClient, tinker: FakeTinkerServer
) -> None:
    done = run_example(tinker, "--cap-usd", "0.0005", "--ledger", server.address)
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = client.list_runs().runs
    state = client.get_run_state(run_id=run.run_id)
    spend = state.spend
    assert spend.cap_usd_micro == 500
    assert spend.committed_usd_micro + spend.pending_usd_micro <= 500
    assert spend.overrun_usd_micro == 0
    assert state.run.status == "stopped"  # the cap refused a hold before the 20 steps were done
    assert state.last_step < 20
    refused = [
        r for r in client.list_reservations(account=run.run_id, page_size=1_000).reservations if r.state == "refused"
    ]
    assert len(refused) == 1
    # What the example says agrees with the ledger.
    committed = re.search(r"run stopped: \$(\d+)\.(\d{6}) committed", done.stdout)
    assert committed is not None, done.stdout
    assert int(committed.group(1)) * 1_000_000 + int(committed.group(2)) == spend.committed_usd_micro

    # Run again, the stopped run is not resumed unless asked to.
    again = run_example(tinker, "--cap-usd", "0.0005", "--ledger", server.address)
    assert again.returncode == 1
    assert "is stopped: use a new run key, or pass reopen=True to start a new attempt on it" in again.stdout
    assert len(client.get_run_state(run_id=run.run_id).attempts) == 1


def test_a_trial_run_on_a_local_ledger_stays_under_its_cap(tinker: FakeTinkerServer) -> None:
    done = run_example(tinker, "--local-ledger", "--cap-usd", "0.0005")
    assert done.returncode == 0, done.stderr[-3000:]
    committed = re.search(r"run (\w+): \$0\.(\d{6}) committed", done.stdout)
    assert committed is not None, done.stdout
    assert committed.group(1) == "stopped" and int(committed.group(2)) <= 500


def test_a_trial_run_records_its_plan_datasets_and_scored_checkpoints(
    server: ServerThread, client: LedgerClient, tinker: FakeTinkerServer
) -> None:
    done = run_example(tinker, "--steps", "6", "--save-every", "3", "--ledger", server.address)
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = client.list_runs().runs
    state = client.get_run_state(run_id=run.run_id)
    assert state.run.status == "done"
    assert (state.progress.step, state.progress.max_steps) == (6, 6)
    assert state.run.objective is not None and (state.run.objective.metric, state.run.objective.mode) == (
        "eval_loss",
        "min",
    )
    datasets = {dataset.role: dataset for dataset in state.datasets}
    assert (datasets["train"].rows, datasets["train"].format) == (4, "text")
    assert (datasets["eval"].rows, datasets["eval"].format) == (1, "text")
    checkpoints = client.list_checkpoints(run_id=run.run_id).checkpoints
    assert [checkpoint.step for checkpoint in checkpoints] == [3, 6]
    losses = {checkpoint.step: checkpoint.scores["eval_loss"] for checkpoint in checkpoints}
    assert all(loss > 0 for loss in losses.values()) and losses[3] != losses[6]
    best = min(losses, key=losses.__getitem__)
    assert client.best_checkpoint(run_id=run.run_id).checkpoint.step == best
    assert "progress: step 6 of 6" in done.stdout
    assert f"best checkpoint: step {best} (eval_loss {losses[best]:.4f})" in done.stdout
