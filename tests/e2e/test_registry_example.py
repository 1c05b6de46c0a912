"""examples/registry.py as a user runs it: a process of its own, from a folder outside the
checkout (the installed package, not tests/), on a ledger it serves itself and against a
`trainledger serve` process (--ledger), where `trainledger registry show` then reads what it did.
The expected lines are written out here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_serve_guards import Servers, environment, trainledger

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "registry.py"


def story(family: str) -> list[str]:
    return [
        f"registered {family} v1: s3://models/{family}/v1 (eval_loss 0.42)",
        "gate for v1: passed (no current version to beat)",
        f"promoted {family} v1 (was none)",
        f"registered {family} v2: s3://models/{family}/v2 (eval_loss 0.55)",
        "gate for v2: failed (eval_loss 0.55 >= current 0.42)",
        "promotion of v2 refused: GATE_NOT_PASSED",
        f"registered {family} v3: s3://models/{family}/v3 (eval_loss 0.35)",
        "gate for v3: passed (eval_loss 0.35 < current 0.42)",
        f"promoted {family} v3 (was v1)",
        f"rolled back {family} to v1 (was v3)",
        "history:",
        "  promote   v1 (was none): no current version to beat",
        "  promote   v3 (was v1): eval_loss 0.35 < current 0.42",
        "  rollback  v1 (was v3): v3 regressed in production",
    ]


def example(cwd: Path, *args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environment(),
        timeout=120,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    return done.stdout.splitlines()


def test_the_registry_example_on_a_ledger_of_its_own(tmp_path: Path) -> None:
    lines = example(tmp_path)
    assert lines[0].startswith("serving a ledger at 127.0.0.1:")
    assert lines[1:] == story("registry-demo")
    assert list(tmp_path.iterdir()) == []  # its ledger lived in a temporary folder, now gone


def test_the_registry_example_against_a_served_ledger(servers: Servers, tmp_path: Path) -> None:
    _, address = servers.start(tmp_path / "ledger.db")
    assert example(tmp_path, "--ledger", address, "--family", "chat") == story("chat")
    # Again on the same ledger: the family has versions, so the story takes the next free name.
    assert example(tmp_path, "--ledger", address, "--family", "chat") == story("chat-2")
    shown = subprocess.run(
        [*trainledger(), "registry", "show", "chat", "--address", address, "--wide"],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert "s3://models/chat/v3" in shown.stdout and "v3 regressed in production" in shown.stdout
