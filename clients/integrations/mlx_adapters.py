"""mlx-lm's adapter files as a ledger run sees them: the iteration in a numbered adapter file's
name, the step an attempt resumed from, the adapter file to resume from and the one of another
run's checkpoint the run started from (its source), checked by the one resume decision
(clients.integrations.resume). Needs no mlx: clients.integrations.mlx exports it."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from clients.integrations.resume import Loader, ResumePoint, ResumeReason, ResumeRefused, decide, resumed
from clients.models import Attempt, Checkpoint, RunState
from clients.runkey import file_digest

__all__ = [
    "ADAPTER_FILE_NAME",
    "NUMBERED_ADAPTER",
    "adapter_iteration",
    "current_attempt",
    "resume_step",
    "resume_adapter_file",
    "source_adapter_file",
]

ADAPTER_FILE_NAME = "adapters.safetensors"
NUMBERED_ADAPTER = re.compile(r"^(\d{7,})_adapters\.safetensors$")


def adapter_iteration(path: str | os.PathLike[str]) -> int | None:
    """The iteration in an mlx-lm numbered adapter file name (``0000300_adapters.safetensors``
    -> 300), or None for any other name."""
    match = NUMBERED_ADAPTER.match(Path(path).name)
    return int(match.group(1)) if match else None


def resume_step(state: RunState | None) -> int:
    """The step the current attempt resumed from (its checkpoint's step), 0 for a fresh attempt:
    the offset from mlx-lm iterations to ledger steps."""
    attempt = current_attempt(state)
    resumed_from = attempt.resumed_from_step if attempt is not None else None
    return int(resumed_from) if resumed_from is not None else 0


def current_attempt(state: RunState | None) -> Attempt | None:
    if state is None:
        return None
    return next((attempt for attempt in state.attempts if attempt.number == state.current_attempt), None)


# An adapter file on this machine, under the adapter root, of any backend.
_LOADER = Loader(kind="file", digest=file_digest, root_name="adapter root")


def resume_adapter_file(
    state: RunState | None,
    *,
    adapter_root: str | os.PathLike[str] | None = None,
    verify: bool = True,
    verify_digest: bool = True,
) -> Path | None:
    """The adapter file (its real path) to pass as mlx-lm's ``resume_adapter_file`` (or to
    ``model.load_weights(..., strict=False)``) for the current attempt: the checkpoint it resumed
    from, or None when the attempt started from scratch. `state` is a RunState
    (RunRecorder.state after ``RunRecorder.open(..., resume_from_step="latest" | step)``). The
    file must resolve under `adapter_root`, the directory the run's adapter directories are in
    (a `..` or a symlink out of it is refused, always). With `verify`, the file must exist and,
    with `verify_digest` too, match the digest recorded with the checkpoint; `verify_digest=False`
    resumes from a checkpoint recorded without a digest (or changed since). Raises ResumeRefused
    (clients.integrations.resume, a ValueError) with its reason: CHECKPOINT_UNKNOWN (the state
    does not name the checkpoint), ROOT_UNKNOWN (no adapter_root), OUTSIDE_ROOT,
    CHECKPOINT_MISSING, DIGEST_MISSING, DIGEST_UNVERIFIABLE, DIGEST_MISMATCH."""
    point = resumed(state)
    if point is None:
        return None
    return decide(point, _LOADER, root=adapter_root, verify=verify, verify_digest=verify_digest, state=state)


def source_adapter_file(
    client: Any,
    state: RunState | None,
    *,
    adapter_root: str | os.PathLike[str] | None = None,
    verify: bool = True,
    verify_digest: bool = True,
) -> Path | None:
    """The adapter file (its real path) of the checkpoint the run started from, to load into the
    model before training (``model.load_weights(str(path), strict=False)``): the run's source, given
    as ``RunRecorder.open(..., source_checkpoint=...)``; None when the run has none. `client` (a
    LedgerClient) reads the source run's checkpoint at that step; its file is checked as
    resume_adapter_file checks one (under `adapter_root`, present, its digest the one recorded
    with it). Raises ResumeRefused: CHECKPOINT_UNKNOWN (the source run holds no checkpoint at that
    step any more), and resume_adapter_file's reasons."""
    source = state.source if state is not None else None
    if source is None:
        return None
    checkpoint = _checkpoint_at(client, source.run_id, source.step)
    if checkpoint is None or checkpoint.handle is None:
        raise ResumeRefused(
            ResumeReason.CHECKPOINT_UNKNOWN,
            f"run {source.run_id} holds no checkpoint at step {source.step} to start from",
            state=state,
        )
    handle = checkpoint.handle
    point = ResumePoint(source.step, handle.backend, handle.uri, handle.fidelity, checkpoint.digest)
    return decide(point, _LOADER, root=adapter_root, verify=verify, verify_digest=verify_digest, state=state)


def _checkpoint_at(client: Any, run_id: str, step: int) -> Checkpoint | None:
    """The run's latest checkpoint at `step` (of the last attempt that saved one) not deleted."""
    found: Checkpoint | None = None
    token = ""
    while True:
        page = client.list_checkpoints(run_id=run_id, page_token=token)
        for checkpoint in page.checkpoints:
            if checkpoint.step == step and checkpoint.deleted_at is None:
                found = checkpoint
        token = page.next_page_token
        if not token or any(checkpoint.step > step for checkpoint in page.checkpoints):
            return found


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
