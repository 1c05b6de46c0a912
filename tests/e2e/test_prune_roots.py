"""`trainledger checkpoints prune` deletes only inside the roots its operator names, never a state
the ledger still needs, and never before the operator saw the plan: the installed CLI against a
`trainledger serve` process, with real directories. A checkpoint's uri is whatever its trainer
wrote, so each test saves one naming something that must survive and checks it is still there,
byte for byte, after a prune told `--yes`."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from clients import LedgerClient
from tests.e2e.test_checkpoints_cli import COMMAND, environment, results, start, stop

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240), pytest.mark.subprocess]


@dataclass
class Place:
    address: str
    directory: Path  # Per test: holds `root`, the only prune root, and things outside it.

    @property
    def root(self) -> Path:
        return self.directory / "root"


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    directory = tmp_path_factory.mktemp("prune-server")
    server, found = start(directory / "ledger.db", directory)
    try:
        yield found
    finally:
        stop(server)


@pytest.fixture
def place(address: str, tmp_path: Path) -> Place:
    (tmp_path / "root").mkdir()
    return Place(address, tmp_path)


def state(directory: Path, files: int = 2) -> Path:
    """A checkpoint-like directory of `files` files of 16 bytes each."""
    directory.mkdir(parents=True, exist_ok=True)
    for index in range(files):
        (directory / f"part-{index}.bin").write_bytes(b"x" * 16)
    return directory


def contents(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def run_with(place: Place, uris: dict[int, str]) -> str:
    """A run whose attempt saved a checkpoint at each step with the uri given: the highest step is
    the run's resume point; the others are offered for deletion."""
    with LedgerClient(place.address, principal="trainer") as client:
        run_id = client.open_run(run_key=f"key-{uuid.uuid4().hex}", name=f"run-{uuid.uuid4().hex[:8]}")
        run_id = run_id.state.run.run_id
        client.start_attempt(run_id=run_id, label="host")
        client.append_steps(run_id=run_id, attempt=1, steps=list(range(max(uris) + 1)), metrics={})
        for step, uri in sorted(uris.items()):
            saved = client.save_checkpoint(run_id=run_id, attempt=1, step=step, uri=uri, backend="hf")
        client.get_run_state(run_id=run_id, min_position=saved.position)  # The views have it: read your writes.
    return run_id


def prune(place: Place, run_id: str, *options: str, status: int, **env: str) -> str:
    done = subprocess.run(
        [COMMAND, "checkpoints", "prune", run_id, *options, "--address", place.address],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        cwd=place.directory,
        env=environment(**env),
        timeout=60,
    )
    assert done.returncode == status, (options, done.returncode, done.stdout, done.stderr)
    return done.stdout + done.stderr


def deleted_steps(place: Place, run_id: str) -> list[int]:
    with LedgerClient(place.address) as client:
        checkpoints = client.list_checkpoints(run_id=run_id).checkpoints
    return sorted(c.step for c in checkpoints if c.deleted_at is not None)


def test_a_path_outside_the_roots_is_never_deleted(place: Place) -> None:
    victim = state(place.directory / "victim-not-a-checkpoint")
    inside = state(place.root / "checkpoint-1")
    run_id = run_with(place, {1: str(inside), 2: f"file://{victim}", 3: str(state(place.root / "checkpoint-3"))})

    # No root at all: refused before anything is read; nothing is deleted.
    unrooted = prune(place, run_id, "--yes", status=2)
    assert "no prune root is set" in unrooted and inside.exists()

    # A path outside the roots is kept, a policy the operator chose: no failure.
    pruned = prune(place, run_id, "--root", str(place.root), "--yes", status=0)
    assert results(pruned) == {1: "deleted", 2: "kept", 3: "kept"}
    assert f"{victim} is outside the prune roots" in pruned
    assert contents(victim) == {"part-0.bin": b"x" * 16, "part-1.bin": b"x" * 16}
    assert not inside.exists()
    assert deleted_steps(place, run_id) == [1]


def test_a_path_another_run_resumes_from_is_never_deleted(place: Place) -> None:
    shared = state(place.root / "team" / "run-b-checkpoint")
    other = run_with(place, {5: str(shared)})
    # Run A names B's resume checkpoint as written, through `..`, and the folder that holds it.
    run_id = run_with(
        place,
        {
            1: f"file://{shared}",
            2: str(place.root / "team" / "x" / ".." / "run-b-checkpoint"),
            3: str(place.root / "team"),
            4: str(state(place.root / "a-4")),
        },
    )

    pruned = prune(place, run_id, "--root", str(place.root), "--yes", status=0)
    assert results(pruned) == {1: "kept", 2: "kept", 3: "kept", 4: "kept"}
    assert "which the ledger still needs" in pruned
    assert contents(shared) == {"part-0.bin": b"x" * 16, "part-1.bin": b"x" * 16}
    assert deleted_steps(place, run_id) == []
    with LedgerClient(place.address) as client:
        assert client.get_run_state(run_id=other).resume.handle.uri == str(shared)


def test_a_registry_artifact_is_never_deleted(place: Place) -> None:
    artifact = state(place.root / "models" / "sft-1")
    with LedgerClient(place.address, principal="operator") as client:
        client.register(family=f"fam-{uuid.uuid4().hex[:8]}", artifact_uri=str(artifact), digest="sha256:" + "ef" * 32)
    run_id = run_with(
        place, {1: str(artifact), 2: str(place.root / "models"), 3: str(state(place.root / "checkpoint-3"))}
    )

    pruned = prune(place, run_id, "--root", str(place.root), "--yes", status=0)
    assert results(pruned) == {1: "kept", 2: "kept", 3: "kept"}
    assert contents(artifact) == {"part-0.bin": b"x" * 16, "part-1.bin": b"x" * 16}
    assert deleted_steps(place, run_id) == []


def test_a_symbolic_link_out_of_the_roots_is_never_followed(place: Place) -> None:
    outside = place.directory / "outside"
    escaped = state(outside / "ckpt")
    (place.root / "link").symlink_to(outside, target_is_directory=True)
    (place.root / "ckpt-link").symlink_to(escaped, target_is_directory=True)
    run_id = run_with(
        place,
        {
            1: str(place.root / "link" / "ckpt"),  # A parent on the way is a link out of the root.
            2: str(place.root / "ckpt-link"),  # The path itself is a link out of the root.
            3: str(state(place.root / "checkpoint-3")),
        },
    )

    pruned = prune(place, run_id, "--root", str(place.root), "--yes", status=0)
    assert results(pruned) == {1: "kept", 2: "kept", 3: "kept"}
    assert f"(resolved: {escaped})" in pruned
    assert contents(escaped) == {"part-0.bin": b"x" * 16, "part-1.bin": b"x" * 16}
    assert (place.root / "link").is_symlink() and (place.root / "ckpt-link").is_symlink()
    assert deleted_steps(place, run_id) == []


def test_the_plan_lists_paths_and_bytes_and_nothing_goes_without_consent(place: Place) -> None:
    old = state(place.root / "checkpoint-1", files=3)
    run_id = run_with(place, {1: str(old), 2: str(state(place.root / "checkpoint-2"))})

    dry = prune(place, run_id, "--dry-run", "--root", str(place.root), status=0)
    assert results(dry) == {1: "would delete", 2: "kept"}
    assert f"{old}, 48 bytes" in dry

    # No --yes and no terminal to ask at: the plan is shown and nothing is recorded or deleted.
    unconfirmed = prune(place, run_id, "--root", str(place.root), status=1)
    assert f"{old}, 48 bytes" in unconfirmed and "pass --yes" in unconfirmed
    assert old.exists() and deleted_steps(place, run_id) == []

    # The roots may come from the environment instead of --root.
    pruned = prune(place, run_id, "--yes", "--json", status=0, TRAINLEDGER_PRUNE_ROOTS=str(place.root))
    assert {o["step"]: o["result"] for o in json.loads(pruned)} == {1: "deleted", 2: "kept"}
    assert json.loads(pruned)[0]["detail"] == f"deleted the directory {old} (48 bytes)"
    assert not old.exists() and deleted_steps(place, run_id) == [1]


def test_a_file_uri_is_protected_as_a_trainer_resumes_from_it(place: Place) -> None:
    # A trainer resumes from a `file://` uri as its literal path (clients.integrations.resume):
    # `%41` and `?` are characters of the name there, so both readings of the uri are kept.
    escaped = state(place.root / "b%41")
    queried = state(place.root / "c?v=1")
    for protected in (escaped, queried):
        other = run_with(place, {5: f"file://{protected}"})
        with LedgerClient(place.address) as client:
            assert client.get_run_state(run_id=other).resume.handle.uri == f"file://{protected}"
    run_id = run_with(place, {1: str(escaped), 2: str(queried), 3: str(state(place.root / "a-3"))})

    pruned = prune(place, run_id, "--root", str(place.root), "--yes", status=0)  # Refusals are kept.
    assert results(pruned) == {1: "kept", 2: "kept", 3: "kept"}
    assert contents(escaped) == {"part-0.bin": b"x" * 16, "part-1.bin": b"x" * 16}
    assert contents(queried) == {"part-0.bin": b"x" * 16, "part-1.bin": b"x" * 16}
    assert deleted_steps(place, run_id) == []


def test_a_uri_with_a_null_byte_or_no_uri_at_all_is_refused_not_a_crash(place: Place) -> None:
    # Another run's resume point and one of this run's checkpoints name a file uri with %00.
    # Others name no uri at all (an unclosed "[" where a host would be).
    run_with(place, {5: f"file://{place.root}/other%00x"})
    run_with(place, {5: "file://[x/y"})
    old = state(place.root / "a-2")
    uris = {1: f"file://{place.root}/a%00b", 2: str(old), 4: "file://[x/y", 5: str(state(place.root / "a-5"))}
    run_id = run_with(place, uris)

    pruned = prune(place, run_id, "--root", str(place.root), "--yes", status=0)  # Refusals are kept.
    assert results(pruned) == {1: "kept", 2: "deleted", 4: "kept", 5: "kept"}
    assert "null byte" in pruned
    assert "is not a uri a prune can read" in pruned
    assert "Traceback" not in pruned
    assert not old.exists()
    assert deleted_steps(place, run_id) == [2]


def command(place: Place, *args: str, status: int, **env: str) -> str:
    """The CLI with `args` as given (no --address added), its stdout and stderr together."""
    done = subprocess.run(
        [COMMAND, *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        cwd=place.directory,
        env=environment(**env),
        timeout=60,
    )
    assert done.returncode == status, (args, done.returncode, done.stdout, done.stderr)
    return done.stdout + done.stderr


def test_prune_refuses_a_database_file(place: Place) -> None:
    # A copy of a ledger cannot know what the live one protects now: prune runs through a server.
    old = state(place.root / "checkpoint-1")
    backup = place.directory / "backup.db"
    backup.write_bytes(b"")
    for where in (["--db", str(backup)], ["--database-url", "postgresql://nowhere/db"]):
        refused = command(place, "checkpoints", "prune", "r", *where, "--root", str(place.root), "--yes", status=2)
        assert "prune runs through a server" in refused and "--address" in refused
    assert old.exists()
    helped = command(place, "checkpoints", "prune", "--help", status=0)
    assert "--db" not in helped and "--database-url" not in helped


def test_a_policy_refusal_keeps_the_checkpoint_and_is_no_failure(place: Place) -> None:
    victim = state(place.directory / "elsewhere")
    old = state(place.root / "checkpoint-2")
    run_id = run_with(
        place, {1: str(victim), 2: str(old), 3: str(place.root), 4: str(state(place.root / "checkpoint-4"))}
    )
    pruned = prune(place, run_id, "--root", str(place.root), "--yes", status=0)
    assert results(pruned) == {1: "kept", 2: "deleted", 3: "kept", 4: "kept"}
    assert f"{victim} is outside the prune roots" in pruned
    assert f"{place.root} is a prune root itself" in pruned
    assert "could not be deleted" not in pruned
    assert victim.exists() and place.root.exists() and not old.exists()


def test_prune_options_that_cannot_work_are_usage_errors(place: Place) -> None:
    old = state(place.root / "checkpoint-1")
    run_id = run_with(place, {1: str(old), 2: str(state(place.root / "checkpoint-2"))})
    both = prune(place, run_id, "--dry-run", "--yes", "--root", str(place.root), status=2)
    assert "--dry-run and --yes" in both
    unrooted = prune(place, run_id, "--dry-run", status=2)
    assert unrooted.count("no prune root is set") == 1 and "checkpoints list" in unrooted
    # A root that does not exist here is reported and skipped; the others still apply.
    missing = place.directory / "gone"
    roots = f"{missing}{os.pathsep}{place.root}"
    pruned = prune(place, run_id, "--yes", status=0, TRAINLEDGER_PRUNE_ROOTS=roots)
    assert f"prune root {str(missing)!r} is not a directory here: skipped" in pruned
    assert results(pruned) == {1: "deleted", 2: "kept"} and not old.exists()
