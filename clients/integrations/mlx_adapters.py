"""mlx-lm's adapter files as a ledger run sees them: the iteration in a numbered adapter file's
name, the step an attempt resumed from, and the adapter file to resume from, checked by the one
resume decision (clients.integrations.resume). Needs no mlx: clients.integrations.mlx exports it."""

from __future__ import annotations

import os
import re
from pathlib import Path

from clients.integrations.resume import Loader, decide, resumed
from clients.models import Attempt, RunState
from clients.runkey import file_digest

__all__ = [
    "ADAPTER_FILE_NAME",
    "NUMBERED_ADAPTER",
    "adapter_iteration",
    "current_attempt",
    "resume_step",
    "resume_adapter_file",
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


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
