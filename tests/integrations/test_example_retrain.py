"""examples/retrain.py --run-id takes what the CLI takes (a run id, a unique id prefix, a name or a
run key), against a ledger served here with a run recorded through the client."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from clients import LedgerClient, RunRecorder

pytestmark = pytest.mark.subprocess

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A ledger served in this process, with the run "sft-scored": (address, run id)."""
    from services.embedded import ServerThread

    folder = tmp_path_factory.mktemp("retrain")
    with ServerThread(str(folder / "ledger.db")) as server, LedgerClient(server.address, principal="t") as client:
        with RunRecorder.open(
            client, run_key="sft-scored", name="sft-scored", max_steps=20, objective=("eval_loss", "min")
        ) as run:
            for step, score in ((10, 0.75), (20, 0.5)):
                run.log(step, loss=score)
                uri = f"s3://bucket/sft-scored/{step}"
                digest = "sha256:" + hashlib.sha256(uri.encode()).hexdigest()
                run.checkpoint(step, uri, "s3", digest=digest, scores={"eval_loss": score})
        yield server.address, run.run_id


def retrain(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / "retrain.py"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_run_id_takes_a_run_name(ledger: tuple[str, str]) -> None:
    address, run_id = ledger
    done = retrain("--ledger", address, "--run-id", "sft-scored", "--family", "by-name")
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert re.search(rf"best checkpoint of run {run_id}: step 20 \(attempt 1\), eval_loss 0\.5", done.stdout)


def test_run_id_still_takes_an_id_and_refuses_a_name_of_no_run(ledger: tuple[str, str]) -> None:
    address, run_id = ledger
    done = retrain("--ledger", address, "--run-id", run_id, "--family", "by-id")
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert f"best checkpoint of run {run_id}: step 20" in done.stdout
    missing = retrain("--ledger", address, "--run-id", "no-such-run")
    assert missing.returncode == 1
    assert "no run no-such-run" in missing.stdout + missing.stderr
    assert "Traceback" not in missing.stderr
