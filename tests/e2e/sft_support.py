"""What the TRL e2e tests share: the SFT script as a child process, and runs found by name."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clients import LedgerClient
from clients.models import RunState

SCRIPT = Path(__file__).resolve().parents[1] / "trainers" / "sft_script.py"


def sft_command(output_dir: Path, *options: str) -> list[str]:
    return [sys.executable, str(SCRIPT), "--output-dir", str(output_dir), *options]


def start_sft(command: list[str], log: Path) -> subprocess.Popen[str]:
    """The script as a child: stdout (its line protocol) piped, stderr into `log`."""
    with open(log, "ab") as errors:
        return subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=errors, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )


def run_sft(command: list[str], log: Path, timeout_s: float = 120) -> list[str]:
    """Run the script to its end: its stdout lines. Raises when it fails."""
    process = start_sft(command, log)
    out, _ = process.communicate(timeout=timeout_s)
    assert process.returncode == 0, f"the script failed ({process.returncode}): {log.read_text()[-3000:]}"
    return out.splitlines()


def field(lines: list[str], event: str, name: str) -> str:
    """The value of `name=` on the script's last `event` line."""
    line = [line for line in lines if line.startswith(event + " ")][-1]
    return dict(part.split("=", 1) for part in line.split()[1:])[name]


def run_named(client: LedgerClient, name: str) -> RunState | None:
    """The state of the run called `name` as of the head of the log (OpenRun by its key waits for
    it: read-your-writes across processes), or None while there is none."""
    for run in client.list_runs(page_size=1_000).runs:
        if run.name == name:
            key = client.get_run_state(run_id=run.run_id).run.run_key
            return client.open_run(run_key=key).state
    return None


def wait_until(condition: Callable[[], Any], timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return value


def all_series(
    client: LedgerClient, run_id: str, *, include_superseded: bool = False, min_position: int = 0
) -> dict[str, list[Any]]:
    """steps, attempts and superseded of the whole series."""
    columns: dict[str, list[Any]] = {"steps": [], "attempts": [], "superseded": []}
    from_step: int | None = 0
    while from_step is not None:
        page = client.get_series(
            run_id=run_id,
            from_step=from_step,
            page_size=10_000,
            include_superseded=include_superseded,
            min_position=min_position,
        )
        for name in columns:
            columns[name] += getattr(page, name)
        from_step = page.next_from_step
    return columns
