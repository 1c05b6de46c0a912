"""The kill loop of the GPU kill tests, on any backend: start the GPU-metered trainer
(tests/e2e/gpu_trainer.py) again and again, kill -9 it inside a hold each time, and measure the GPU
time each hold actually had (from the grant, as the trainer saw it, to the kill)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from clients import LedgerClient
from clients.models import RunState

ROOT = Path(__file__).resolve().parents[2]
START_S = 60.0


def grants(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def trainer(address: str, run_key: str, grants_path: Path, lease_s: int, log: Path) -> subprocess.Popen[bytes]:
    environment = {key: value for key, value in os.environ.items() if key != "TRAINLEDGER_DATABASE_URL"}
    with open(log, "ab") as output:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.e2e.gpu_trainer",
                "--address",
                address,
                "--run-key",
                run_key,
                "--grants",
                str(grants_path),
                "--lease-s",
                str(lease_s),
            ],
            stdout=output,
            stderr=output,
            cwd=ROOT,
            env={**environment, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"},
        )


def kill_inside_holds(
    addresses: list[str], run_key: str, directory: Path, *, kills: int, lease_s: int, seed: int
) -> list[float]:
    """Start the trainer `kills` times (on the addresses in turn), each time kill -9 it between
    2.5 and 5.5 s into its first hold (of 8 s); answers the GPU time in seconds each hold had."""
    rng = random.Random(seed)
    path = directory / "grants.jsonl"
    elapsed: list[float] = []
    for number in range(kills):
        process = trainer(addresses[number % len(addresses)], run_key, path, lease_s, directory / "trainer.log")
        try:
            deadline = time.monotonic() + START_S
            while len(grants(path)) <= number:
                assert process.poll() is None, (directory / "trainer.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "the trainer was granted no hold"
                time.sleep(0.02)
            time.sleep(rng.uniform(2.5, 5.5))
            killed_at = time.time()
            process.send_signal(signal.SIGKILL)
        finally:
            process.kill()
            process.wait(30)
        granted_at = float(grants(path)[number]["granted_at"])  # type: ignore[arg-type]
        elapsed.append(killed_at - granted_at)
    return elapsed


def until_lost(client: LedgerClient, run_id: str, within_s: float) -> RunState:
    """Poll the run's state until it reads lost; fails after `within_s`."""
    deadline = time.monotonic() + within_s
    while True:
        state = client.get_run_state(run_id=run_id)
        if state.run.status == "lost":
            return state
        assert time.monotonic() < deadline, f"the run did not read lost within {within_s} s: {state.run.status}"
        time.sleep(0.1)
