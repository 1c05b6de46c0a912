"""The CLI's retention, retraction, progress and registration commands as a user runs them: the
installed `trainledger` against a `trainledger serve` process, and with --db on the database file
once no server holds it. The checkpoints are real directories; a prune must delete exactly the
ones the plan offers, after recording each deletion, and a second prune must change nothing.
Every expected value is written out here."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from clients import LedgerClient

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240), pytest.mark.subprocess]

COMMAND = str(Path(sys.executable).parent / "trainledger")
# step -> eval_loss (None: no score). The objective is eval_loss, lower is better: step 20 is best.
SCORES: dict[int, float | None] = {3: None, 5: None, 10: 0.5, 15: 0.45, 20: 0.3, 30: 0.4}
DIGEST = "sha256:" + "ab" * 32


@dataclass
class World:
    address: str
    database: Path
    root: Path
    run_id: str
    server: subprocess.Popen[str] | None


def environment(**extra: str) -> dict[str, str]:
    drop = ("TRAINLEDGER_DATABASE_URL", "TRAINLEDGER_ADDRESS", "TRAINLEDGER_TOKEN", "TRAINLEDGER_TLS", "COLUMNS")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def checkpoint_dir(root: Path, step: int) -> Path:
    directory = root / f"checkpoint-{step}"
    (directory / "optimizer").mkdir(parents=True)
    (directory / "adapter_model.safetensors").write_bytes(b"w" * 16)
    (directory / "optimizer" / "state.pt").write_bytes(b"s" * 16)
    return directory


def record(client: LedgerClient, root: Path) -> str:
    """A run with a plan of 100 steps, an objective, a dataset and checkpoints on disk; step 3's
    state lies on another host (no deleter here); step 25 is a Tinker handle that has expired."""
    run_id = client.open_run(
        run_key="key-pruned", name="sft-pruned", max_steps=100, objective=("eval_loss", "min")
    ).state.run.run_id
    client.record_dataset(
        run_id=run_id,
        role="train",
        digest=DIGEST,
        format="sft",
        rows=1200,
        tokens=480_000,
        source_uri="s3://d/t",
        report={"rows_dropped": {"too_long": 3}, "gate": {"passed": True}},
    )
    client.start_attempt(run_id=run_id, label="host-1")
    client.append_steps(run_id=run_id, attempt=1, steps=list(range(40)), metrics={"loss": [1.0] * 40})
    for step, score in SCORES.items():
        uri = "file://other-host/ckpt/3" if step == 3 else str(checkpoint_dir(root, step))
        client.save_checkpoint(
            run_id=run_id,
            attempt=1,
            step=step,
            uri=uri,
            backend="hf",
            digest=f"sha256:{step:064x}",
            scores={} if score is None else {"eval_loss": score},
        )
    expires_at = datetime.now(UTC) + timedelta(seconds=1.5)
    client.save_checkpoint(
        run_id=run_id,
        attempt=1,
        step=25,
        uri="tinker://sess/weights/25",
        backend="tinker",
        expires_at=expires_at,
        scores={"eval_loss": 0.1},
    )
    # A handle is saved before it expires; the test reads the run once it has.
    time.sleep(max(0.0, (expires_at - datetime.now(UTC)).total_seconds()) + 0.1)
    return run_id


def start(database: Path, directory: Path) -> tuple[subprocess.Popen[str], str]:
    log = open(directory / "server.log", "a")  # noqa: SIM115 - the process holds it
    server = subprocess.Popen(
        [COMMAND, "serve", "--db", str(database), "--listen", "127.0.0.1:0", "--no-http"],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        cwd=directory,
        env=environment(PYTHONUNBUFFERED="1"),
    )
    log.close()
    assert server.stdout is not None
    line = server.stdout.readline()
    match = re.search(r"serving on (127\.0\.0\.1:\d+)", line)
    assert match, (line, (directory / "server.log").read_text())
    return server, match.group(1)


def stop(server: subprocess.Popen[str]) -> None:
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    if server.stdout is not None:
        server.stdout.close()


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    database, root = tmp_path / "ledger.db", tmp_path / "ckpt"
    root.mkdir()
    server, address = start(database, tmp_path)
    state = World(address, database, root, "", server)
    try:
        with LedgerClient(address, principal="alice") as client:
            state.run_id = record(client, root)
        yield state
    finally:
        if state.server is not None:
            stop(state.server)


def cli(world: World, *args: str, status: int = 0, offline: bool = False) -> str:
    where = ["--db", str(world.database)] if offline else ["--address", world.address]
    done = subprocess.run(
        [COMMAND, *args, *where],
        capture_output=True,
        text=True,
        cwd=world.root,
        env=environment(USER="bob", LOGNAME="bob"),
        timeout=60,
    )
    assert done.returncode == status, (args, done.returncode, done.stdout, done.stderr)
    return done.stdout + done.stderr


def plan(text: str) -> dict[int, str]:
    """step -> the plan's last column, from `checkpoints list`."""
    rows = [line for line in text.splitlines()[2:] if line.strip()]
    return {int(row.split()[0]): re.split(r"\s{2,}", row.strip())[-1] for row in rows}


def results(text: str) -> dict[int, str]:
    """step -> RESULT, from the table `checkpoints prune` prints."""
    found = {}
    for line in text.splitlines()[2:]:
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) >= 5 and cells[1].isdigit():
            found[int(cells[1])] = cells[4]
    return found


def alive(world: World) -> list[int]:
    return sorted(int(path.name.removeprefix("checkpoint-")) for path in world.root.iterdir())


def head(world: World) -> int:
    with LedgerClient(world.address) as client:
        return client.get_head().position


def prune_story(world: World, *, offline: bool) -> None:
    """The plan, a dry run, a prune and a second prune, through the server or on the file."""
    registered = cli(
        world,
        "registry",
        "register",
        "sft",
        "s3://models/sft/1",
        "--digest",
        "sha256:" + "cd" * 32,
        "--from-checkpoint",
        "sft-pruned@10",
    )
    assert "sft: version 1 from run sft-pruned's checkpoint at step 10" in registered

    assert plan(cli(world, "checkpoints", "list", "sft-pruned", offline=offline)) == {
        3: "delete",
        5: "delete",
        10: "keep: registered",
        15: "delete",
        20: "keep: best",
        25: "keep: expired",
        30: "keep: resume",
    }
    assert plan(cli(world, "checkpoints", "list", "sft-pruned", "--keep-last", "3", offline=offline))[15] == (
        "keep: recent"
    )

    rooted = ("--root", str(world.root))
    dry = cli(world, "checkpoints", "prune", "sft-pruned", "--dry-run", *rooted, offline=offline)
    assert results(dry) == {
        3: "would delete",
        5: "would delete",
        10: "kept",
        15: "would delete",
        20: "kept",
        25: "expired",
        30: "kept",
    }
    assert alive(world) == [5, 10, 15, 20, 30]

    # Step 3's state lies on another host: recorded deleted, its state not deleted, exit status 1.
    pruned = cli(world, "checkpoints", "prune", "sft-pruned", "--yes", *rooted, status=1, offline=offline)
    assert results(pruned) == {
        3: "not deleted",
        5: "deleted",
        10: "kept",
        15: "deleted",
        20: "kept",
        25: "expired",
        30: "kept",
    }
    assert "another host" in pruned and "1 checkpoint could not be deleted" in pruned
    assert alive(world) == [10, 20, 30]

    listed = plan(cli(world, "checkpoints", "list", "sft-pruned", offline=offline))
    assert (listed[3], listed[5], listed[15], listed[10]) == ("deleted", "deleted", "deleted", "keep: registered")

    shown = cli(world, "runs", "show", "sft-pruned", "--json", offline=offline)
    checkpoints = {c["step"]: c for c in json.loads(shown)["checkpoints"]}
    assert sorted(step for step, c in checkpoints.items() if c["deleted_at"]) == [3, 5, 15]

    positions = cli(world, "events", "export", "--types", "CheckpointDeleted", offline=offline)
    assert len(positions.splitlines()) == 3

    again = cli(world, "checkpoints", "prune", "sft-pruned", *rooted, offline=offline)
    assert set(results(again).values()) == {"deleted", "kept", "expired"}
    assert results(again)[5] == "deleted" and "recorded deleted before" in again
    assert alive(world) == [10, 20, 30]
    assert len(cli(world, "events", "export", "--types", "CheckpointDeleted", offline=offline).splitlines()) == 3


def test_prune_through_the_server(world: World) -> None:
    before = head(world)
    prune_story(world, offline=False)
    recorded = [json.loads(line) for line in cli(world, "events", "export", "--from", str(before + 1)).splitlines()]
    # The registration, then one deletion per pruned checkpoint (the second prune records none),
    # each by the operating-system user the CLI runs as.
    assert [(event["type"], event["data_json"].get("step")) for event in recorded] == [
        ("Run.CheckpointRegistered", 10),
        ("Family.Created", None),
        ("Family.VersionRegistered", None),
        ("Run.CheckpointDeleted", 3),
        ("Run.CheckpointDeleted", 5),
        ("Run.CheckpointDeleted", 15),
    ]
    assert {event["principal"] for event in recorded} == {"bob"}
    assert recorded[2]["data_json"]["source_checkpoint"] == {
        "run_id": world.run_id,
        "step": 10,
        "attempt": 1,
        "checkpoint_digest": f"sha256:{10:064x}",
    }


def test_prune_on_the_database_file_is_refused(world: World) -> None:
    """The plan is read from the file once the server is gone; a prune is refused there: a file
    may be an older copy than the live ledger, whose protections prune must read."""
    assert world.server is not None
    stop(world.server)
    world.server = None
    offline_plan = plan(cli(world, "checkpoints", "list", "sft-pruned", offline=True))
    assert offline_plan[5] == "delete" and offline_plan[30] == "keep: resume"
    rooted = ("--yes", "--root", str(world.root))
    refused = cli(world, "checkpoints", "prune", "sft-pruned", *rooted, status=2, offline=True)
    assert "prune runs through a server" in refused
    assert alive(world) == [5, 10, 15, 20, 30]
    assert cli(world, "events", "export", "--types", "CheckpointDeleted", offline=True) == ""


def test_runs_show_progress_objective_best_scores_datasets(world: World) -> None:
    for offline in (False, True):
        if offline:
            assert world.server is not None
            stop(world.server)
            world.server = None
        shown = cli(world, "runs", "show", "sft-pruned", offline=offline)
        assert "objective: eval_loss (lower is better)" in shown
        assert "progress:  step 39 of 100 (39.0%)" in shown
        assert "best:      step 20, attempt 1 (eval_loss=0.3)" in shown
        assert "eval_loss=0.45" in shown
        assert re.search(r"tinker://sess/weights/25 .* expired", shown)
        assert re.search(r"train\s+sft\s+1,?200\s+480,?000\s+sha256:abababababab\s+s3://d/t\s+passed", shown), shown


def test_retract_hides_the_run_and_flags_its_versions(world: World) -> None:
    cli(world, "registry", "register", "sft", "s3://m/1", "--digest", "sha256:" + "cd" * 32, "--source-run", "sft-p")
    first = cli(world, "runs", "retract", "sft-pruned", "--reason", "leaked eval data")
    assert re.fullmatch(rf"{world.run_id} \(sft-pruned\): retracted at position \d+\n", first)
    again = cli(world, "runs", "retract", "sft-pruned", "--reason", "leaked eval data")
    assert "already retracted" in again
    cli(world, "runs", "retract", "sft-pruned", "--reason", "another reason", status=1)
    assert "(no run)" in cli(world, "runs", "list")
    listed = cli(world, "runs", "list", "--include-retracted")
    assert "sft-pruned" in listed and "(retracted)" in listed
    shown = cli(world, "runs", "show", world.run_id)
    assert "retracted: " in shown and "leaked eval data" in shown
    assert f"{world.run_id} (retracted)" in cli(world, "registry", "show", "sft", "--wide")
    assert world.server is not None
    stop(world.server)
    world.server = None
    assert "(no run)" in cli(world, "runs", "list", offline=True)
    assert "(retracted)" in cli(world, "runs", "list", "--include-retracted", offline=True)
