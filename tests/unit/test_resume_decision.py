"""The one resume decision (clients.integrations.resume), told as cases: given a run state and what a
trainer loads, the checkpoint it may resume from or the refusal and its reason. No ledger: the
states are made here, the files in a temporary directory."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from clients.errors import RunEnded
from clients.integrations.resume import Loader, ResumePoint, ResumeRefused, decide, hold_to_root, latest, resumed
from clients.models import Attempt, Checkpoint, Resume, RunInfo, RunState, StateHandle


def digest_of(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


FILES = Loader(backend="hf", kind="file", digest=digest_of, root_name="output directory")
TINKER = Loader(backend="tinker", uri_prefix="tinker://", fidelity="weights+optimizer", files=False)


def state_with(
    uri: str = "/nowhere",
    *,
    backend: str = "hf",
    fidelity: str = "weights+optimizer",
    digest: str = "",
    step: int = 5,
    status: str = "running",
    expires_at: datetime | None = None,
    resumed_from: int | None = None,
    expired: int = 0,
) -> RunState:
    """A run whose live checkpoint (if `uri`) is at `step`, whose current attempt 2 resumed from
    `resumed_from`, with `expired` expired checkpoints before it."""
    handle = StateHandle(backend=backend, uri=uri, fidelity=fidelity)
    checkpoint = Checkpoint(attempt=1, step=step, handle=handle, digest=digest, expires_at=expires_at) if uri else None
    gone = [
        Checkpoint(
            attempt=1,
            step=n,
            handle=StateHandle(backend=backend, uri=f"{uri}-{n}"),
            expires_at=datetime(2025, 1, 1, tzinfo=UTC),
        )
        for n in range(1, expired + 1)
    ]
    return RunState(
        run=RunInfo(run_id="r1", status=status),
        checkpoint=checkpoint,
        expired_checkpoints=gone,
        resume=Resume(available=bool(uri), from_step=step if uri else 0, handle=handle if uri else None),
        attempts=[Attempt(number=1), Attempt(number=2, resumed_from_step=resumed_from)],
        current_attempt=2,
    )


def reason(call: object, *args: object, **options: object) -> str:
    with pytest.raises(ResumeRefused) as refused:
        call(*args, **options)  # type: ignore[operator]
    assert isinstance(refused.value, ValueError)
    return refused.value.reason


def test_where_a_new_attempt_resumes() -> None:
    assert latest(state_with("")) is None  # a fresh run starts from step 0
    assert reason(latest, state_with(""), required=True) == "NO_CHECKPOINT"
    assert reason(latest, state_with("", expired=2)) == "CHECKPOINT_EXPIRED"
    assert latest(state_with("", expired=2), allow_restart=True) is None
    assert reason(latest, state_with("", expired=2), allow_restart=True, required=True) == "CHECKPOINT_EXPIRED"
    point = latest(state_with("/out/checkpoint-5", digest="sha256:ab"))
    assert point == ResumePoint(5, "hf", "/out/checkpoint-5", "weights+optimizer", "sha256:ab")
    with pytest.raises(RunEnded):
        latest(state_with("/out/checkpoint-5", status="done"), reopen=True)
    with pytest.raises(RunEnded):
        latest(state_with("/out/checkpoint-5", status="failed"))
    assert latest(state_with("/out/checkpoint-5", status="failed"), reopen=True) is not None


def test_where_the_current_attempt_resumed_from() -> None:
    assert resumed(None) is None and resumed(state_with("/a/b")) is None  # attempt 2 started fresh
    assert resumed(state_with("/a/b", step=5, resumed_from=5)) == ResumePoint(5, "hf", "/a/b", "weights+optimizer")
    # The attempt resumed from step 3, and the state names only the checkpoint at 5.
    assert reason(resumed, state_with("/a/b", step=5, resumed_from=3)) == "CHECKPOINT_UNKNOWN"


def test_a_handle_the_trainer_cannot_load_is_refused() -> None:
    def point(uri: str = "tinker://m/weights/s", **fields: object) -> ResumePoint:
        return ResumePoint(**{"step": 5, "backend": "tinker", "uri": uri, "fidelity": "weights+optimizer", **fields})  # type: ignore[arg-type]

    assert decide(point(), TINKER) is None  # held by Tinker: nothing local to return
    assert reason(decide, point(backend="hf"), TINKER) == "BACKEND_MISMATCH"
    assert reason(decide, point("file:///etc/weights/s"), TINKER) == "URI_SCHEME_MISMATCH"
    assert reason(decide, point(fidelity="weights"), TINKER) == "FIDELITY_MISMATCH"
    past = datetime.now(UTC) - timedelta(seconds=1)
    assert reason(decide, point(expires_at=past), TINKER) == "CHECKPOINT_EXPIRED"
    assert decide(point(expires_at=datetime.now(UTC) + timedelta(hours=1)), TINKER) is None


def test_files_are_held_to_the_root_checked_and_digested(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    good = root / "weights.bin"
    good.write_bytes(b"w" * 16)
    (elsewhere / "weights.bin").write_bytes(b"w" * 16)
    (root / "link.bin").symlink_to(elsewhere / "weights.bin")

    def point(path: Path | str, digest: str = "") -> ResumePoint:
        return ResumePoint(5, "hf", str(path), "weights+optimizer", digest)

    right = point(good, digest_of(good))
    assert decide(right, FILES, root=root) == good.resolve()
    assert decide(point(f"file://{good}", digest_of(good)), FILES, root=root) == good.resolve()
    assert reason(decide, right, FILES) == "ROOT_UNKNOWN"
    assert decide(right, FILES, defer_root=True) == good.resolve()  # the caller holds it to a root later
    assert reason(hold_to_root, good, elsewhere) == "OUTSIDE_ROOT"
    assert reason(decide, point(elsewhere / "weights.bin", digest_of(good)), FILES, root=root) == "OUTSIDE_ROOT"
    assert reason(decide, point(f"{root}/../elsewhere/weights.bin"), FILES, root=root, verify=False) == "OUTSIDE_ROOT"
    assert reason(decide, point(root / "link.bin", digest_of(good)), FILES, root=root) == "OUTSIDE_ROOT"
    assert reason(decide, point(root / "gone.bin", digest_of(good)), FILES, root=root) == "CHECKPOINT_MISSING"
    assert decide(point(root / "gone.bin"), FILES, root=root, verify=False) == (root / "gone.bin").resolve()
    assert reason(decide, point(good), FILES, root=root) == "DIGEST_MISSING"
    assert decide(point(good), FILES, root=root, verify_digest=False) == good.resolve()
    assert reason(decide, point(good, "md5:0123"), FILES, root=root) == "DIGEST_UNVERIFIABLE"
    assert reason(decide, point(good, "sha256:" + "0" * 64), FILES, root=root) == "DIGEST_MISMATCH"


def test_the_lora_shape_of_a_checkpoint_is_the_runs(tmp_path: Path) -> None:
    (tmp_path / "checkpoint-5").mkdir()
    loader = Loader(backend="hf", kind="dir", lora=lambda path: {"r": 8}, root_name="output directory")
    point = ResumePoint(5, "hf", str(tmp_path / "checkpoint-5"), "weights+optimizer")
    found = decide(point, loader, root=tmp_path, verify_digest=False, lora={"r": 8})
    assert found == (tmp_path / "checkpoint-5").resolve()
    assert reason(decide, point, loader, root=tmp_path, verify_digest=False, lora={"r": 4}) == "LORA_MISMATCH"
    assert reason(decide, point, FILES, root=tmp_path, verify_digest=False) == "CHECKPOINT_MISSING"  # not a file
