"""examples/registry.py as a user runs it: a process of its own, from a folder outside the
checkout (the installed package, not tests/), on a ledger it serves itself and against a
`trainledger serve` process (--ledger), where `trainledger registry show` then reads what it did.
The expected lines are written out here."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_serve_guards import Servers, environment, trainledger

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180), pytest.mark.subprocess]

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
        "  promote   v1 (was none): no current version to beat (asserted)",
        "  refused   v2 (was v1): eval_loss 0.55 >= current 0.42 (asserted)",
        "  promote   v3 (was v1): eval_loss 0.35 < current 0.42 (asserted)",
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


def cli(address: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*trainledger(), "registry", *args, "--address", address],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=60,
    )


def test_gate_rules_refusals_aliases_and_retirement_through_the_cli(servers: Servers, tmp_path: Path) -> None:
    """A version made from a scored checkpoint, promoted through a rule the ledger evaluates; an
    asserted failure refused and recorded; an alias moved; the family retired: each as
    `trainledger registry ...` shows it."""
    from clients import LedgerClient, SourceCheckpoint, run_key

    _, address = servers.start(tmp_path / "ledger.db")
    checkpoint_digest = "sha256:" + "9a" * 32
    with LedgerClient(address, principal="e2e") as client:
        run_id = client.open_run(run_key=run_key({"e2e": "gates"}), name="gated").state.run.run_id
        attempt = client.start_attempt(run_id=run_id).attempt
        client.append_steps(run_id=run_id, attempt=attempt, steps=[3], metrics={"loss": [1.0]})
        client.save_checkpoint(
            run_id=run_id,
            attempt=attempt,
            step=3,
            uri="file:///ckpt/3",
            backend="local",
            digest=checkpoint_digest,
            scores={"eval_loss": 0.4, "accuracy": 0.85},
        )
        for label in ("v1", "v2"):
            client.register(
                family="chat",
                artifact_uri=f"s3://models/chat/{label}",
                digest="sha256:" + hashlib.sha256(label.encode()).hexdigest(),
                source_checkpoint=SourceCheckpoint(run_id=run_id, step=3, checkpoint_digest=checkpoint_digest),
            )
    refused = cli(address, "promote", "chat", "2", "--failed", "--reason", "looked worse")
    assert refused.returncode == 1 and "GATE_NOT_PASSED" in refused.stderr
    failing = cli(address, "promote", "chat", "1", "--gate-rule", "eval_loss <= 0.3")
    assert failing.returncode == 1 and "GATE_NOT_PASSED" in failing.stderr
    malformed = cli(address, "promote", "chat", "1", "--gate-rule", "eval_loss <=> 0.3")
    assert malformed.returncode == 1 and "INVALID_GATE_RULE" in malformed.stderr
    promoted = cli(address, "promote", "chat", "1", "--gate-rule", "eval_loss <= 0.5 and accuracy >= 0.8")
    assert promoted.returncode == 0, promoted.stderr
    assert "promoted to version 1" in promoted.stdout
    assert "gate: evaluated, passed: eval_loss <= 0.5 and accuracy >= 0.8" in promoted.stdout
    aliased = cli(address, "alias", "chat", "production", "1")
    assert aliased.returncode == 0 and "alias production names version 1 (was none)" in aliased.stdout
    lost = cli(address, "alias", "chat", "production", "2", "--expect", "0")
    assert lost.returncode == 1 and "ALIAS_MOVED" in lost.stderr
    retired = cli(address, "retire", "chat", "--reason", "replaced by chat-v2")
    assert retired.returncode == 0 and "chat: retired at position" in retired.stdout
    after = cli(address, "promote", "chat", "2", "--passed", "--reason", "checked")
    assert after.returncode == 1 and "FAMILY_RETIRED" in after.stderr
    shown = cli(address, "show", "chat", "--wide")
    assert shown.returncode == 0, shown.stderr
    as_json = json.loads(cli(address, "show", "chat", "--json").stdout)
    assert [(p["kind"], p["version"], p["refusal"]) for p in as_json["history"]] == [
        ("refused", 2, "GATE_NOT_PASSED"),
        ("refused", 1, "GATE_NOT_PASSED"),
        ("promote", 1, ""),
    ]
    assert [p["verdict"]["mode"] for p in as_json["history"]] == ["asserted", "evaluated", "evaluated"]
    assert as_json["retired"]["reason"] == "replaced by chat-v2"
    assert "asserted, failed: looked worse" in shown.stdout and "GATE_NOT_PASSED" in shown.stdout
    assert "evaluated, failed: eval_loss <= 0.3 (it is 0.4)" in shown.stdout
    assert "evaluated, passed" in shown.stdout and "production=1" in shown.stdout
    assert "replaced by chat-v2" in shown.stdout
