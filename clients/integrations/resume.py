"""The one resume decision of the trainer integrations: given a run's state and what a trainer can
load, the checkpoint it may resume from, or one refusal with one reason.

Every integration asks the same questions of a checkpoint before its trainer loads anything:
has the run ended (clients.errors.RunEnded), is there a checkpoint at all, has it expired, is it
held by the backend this trainer loads from, in a form it loads (its uri scheme, its fidelity),
and, for files on this machine, is it under the directory the trainer owns (real paths resolved:
clients.integrations.paths), there, unchanged since it was recorded (its digest) and of the run's
LoRA shape. The answers are ResumeRefused with a ResumeReason; each integration describes what
its trainer loads with a Loader and keeps only what is its own (Tinker's spec checks, Modal's
volume uris, the Transformers callback's deferred output directory).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from clients.integrations.paths import outside
from clients.models import RunState
from clients.recorder import refuse_ended

__all__ = [
    "ResumeReason",
    "ResumeRefused",
    "ResumePoint",
    "Loader",
    "latest",
    "resumed",
    "decide",
    "hold_to_root",
    "SHA256_PREFIX",
]

SHA256_PREFIX = "sha256:"


class ResumeReason(StrEnum):
    """Why a run cannot be resumed (or started) as asked. The value is the member's name."""

    NO_CHECKPOINT = "NO_CHECKPOINT"
    """A resume was asked for and the run has no checkpoint: start it fresh instead."""
    CHECKPOINT_EXPIRED = "CHECKPOINT_EXPIRED"
    """The checkpoint, or every checkpoint of the run, has expired: starting again from step 0
    is done only on purpose (allow_restart=True, restart=True)."""
    CHECKPOINT_UNKNOWN = "CHECKPOINT_UNKNOWN"
    """The step the trainer (or the current attempt) resumed from has no live checkpoint that the
    run state names: resume from the point the ledger gives, or refresh the state."""
    RUN_ALREADY_STARTED = "RUN_ALREADY_STARTED"
    """A fresh start was asked of a run that has recorded steps or checkpoints: resume it, or
    start it again from step 0 on purpose."""
    BACKEND_MISMATCH = "BACKEND_MISMATCH"
    """The checkpoint is held by another backend than the one this trainer loads from."""
    URI_SCHEME_MISMATCH = "URI_SCHEME_MISMATCH"
    """The checkpoint's uri is not of the kind this trainer loads (Tinker: a tinker:// path its
    service holds); nothing else is handed to the trainer."""
    FIDELITY_MISMATCH = "FIDELITY_MISMATCH"
    """The checkpoint holds less than the trainer needs to resume (weights, no optimizer state)."""
    SPEC_MISMATCH = "SPEC_MISMATCH"
    """The run's spec names another base model than the one given."""
    LORA_MISMATCH = "LORA_MISMATCH"
    """The checkpoint, or the run's spec, has another LoRA shape (or rank) than the trainer's."""
    ROOT_UNKNOWN = "ROOT_UNKNOWN"
    """No directory to hold the checkpoint's path to (the output directory, the volume's mount,
    the adapter root): pass it."""
    OUTSIDE_ROOT = "OUTSIDE_ROOT"
    """The checkpoint's path, or a file under it, resolves outside that directory (a `..`
    climbing out, a symlink out): never loaded, whatever else is asked."""
    OTHER_VOLUME = "OTHER_VOLUME"
    """The checkpoint is on another Modal volume than the one mounted."""
    CHECKPOINT_MISSING = "CHECKPOINT_MISSING"
    """The checkpoint's files are not on this machine."""
    DIGEST_MISSING = "DIGEST_MISSING"
    """The checkpoint was recorded without a digest, so its files cannot be checked:
    verify_digest=False resumes from it anyway."""
    DIGEST_UNVERIFIABLE = "DIGEST_UNVERIFIABLE"
    """The checkpoint was recorded with a digest that is not a sha256 one this can check:
    verify_digest=False resumes from it anyway."""
    DIGEST_MISMATCH = "DIGEST_MISMATCH"
    """The checkpoint's files changed since it was recorded: verify_digest=False resumes from
    them anyway."""


class ResumeRefused(ValueError):
    """The run cannot be resumed (or started) as asked; nothing was loaded and, where the refusal
    comes before the attempt, no attempt was started. `reason` is a ResumeReason (a str: compare
    it with its name), `message` says what was found, `state` is the RunState it was judged on
    when there was one. A run that has ended is refused with clients.errors.RunEnded instead."""

    def __init__(self, reason: ResumeReason, message: str, *, state: RunState | None = None) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason, self.message, self.state = reason, message, state


@dataclass(frozen=True)
class ResumePoint:
    """A checkpoint a run state names as a resume point: its step, where its state is (backend,
    uri, fidelity), the digest recorded with it ("" when none) and when it expires."""

    step: int
    backend: str
    uri: str
    fidelity: str
    digest: str = ""
    sampler_uri: str = ""
    expires_at: datetime | None = None


@dataclass(frozen=True)
class Loader:
    """What a trainer can load. `backend`: the backend its checkpoints are held by ("" for any);
    `uri_prefix`: the uri scheme it loads from ("" for local paths, plain or file://);
    `fidelity`: what it needs ("" for any); `files`: whether the checkpoint is files on this
    machine (held to a root, checked for presence and digest), of `kind` "dir", "file" or "any",
    digested by `digest`; `lora`: reads the LoRA shape a checkpoint directory holds (None when
    the trainer checks no shape); `root_name` names the root in messages."""

    backend: str = ""
    uri_prefix: str = ""
    fidelity: str = ""
    files: bool = True
    kind: Literal["dir", "file", "any"] = "any"
    digest: Callable[[Path], str] | None = None
    lora: Callable[[Path], Any] | None = None
    root_name: str = "root"


def _point(state: RunState, step: int) -> ResumePoint | None:
    """The checkpoint at `step` as the state names it: the live checkpoint (with its digest),
    else the resume handle (with none); None when it names neither."""
    checkpoint, resume = state.checkpoint, state.resume
    if checkpoint is not None and checkpoint.step == step and checkpoint.handle is not None:
        handle = checkpoint.handle
        return ResumePoint(
            step,
            handle.backend,
            handle.uri,
            handle.fidelity,
            checkpoint.digest,
            checkpoint.sampler_uri,
            checkpoint.expires_at,
        )
    if resume.available and resume.from_step == step and resume.handle is not None:
        handle = resume.handle
        return ResumePoint(step, handle.backend, handle.uri, handle.fidelity, sampler_uri=resume.sampler_uri)
    return None


def latest(
    state: RunState, *, reopen: bool = False, allow_restart: bool = False, required: bool = False
) -> ResumePoint | None:
    """Where a new attempt of the run resumes: the ledger's resume point, or None for a fresh
    start. Raises RunEnded for a run that has ended (done; failed or stopped without `reopen`);
    ResumeRefused CHECKPOINT_EXPIRED when every checkpoint has expired (unless `allow_restart`),
    NO_CHECKPOINT when there is none and one is `required`."""
    refuse_ended(state, reopen=reopen)
    if state.resume.available:
        point = _point(state, state.resume.from_step)
        if point is not None:
            return point
    expired = sorted(state.expired_checkpoints, key=lambda checkpoint: checkpoint.step)
    if expired and (required or not allow_restart):
        last = expired[-1]
        uri = last.handle.uri if last.handle is not None else ""
        raise ResumeRefused(
            ResumeReason.CHECKPOINT_EXPIRED,
            f"every checkpoint of run {state.run.run_id} has "
            f"expired (steps {[checkpoint.step for checkpoint in expired]}; the last, at {uri}, on "
            f"{last.expires_at}): start it again from step 0 only on purpose",
            state=state,
        )
    if required:
        raise ResumeRefused(ResumeReason.NO_CHECKPOINT, f"run {state.run.run_id} has no checkpoint", state=state)
    return None


def resumed(state: RunState | None) -> ResumePoint | None:
    """The checkpoint the state's current attempt resumed from, or None when it started fresh.
    Raises ResumeRefused CHECKPOINT_UNKNOWN when the state does not name that checkpoint."""
    if state is None:
        return None
    attempt = next((a for a in state.attempts if a.number == state.current_attempt), None)
    if attempt is None or attempt.resumed_from_step is None:
        return None
    point = _point(state, attempt.resumed_from_step)
    if point is None:
        raise ResumeRefused(
            ResumeReason.CHECKPOINT_UNKNOWN,
            f"the run state does not name the checkpoint at step {attempt.resumed_from_step}; refresh it",
            state=state,
        )
    return point


def local_path(uri: str) -> Path:
    """The path a local checkpoint's uri names (plain, or file://)."""
    return Path(uri.removeprefix("file://"))


def decide(
    point: ResumePoint,
    loader: Loader,
    *,
    root: str | os.PathLike[str] | None = None,
    defer_root: bool = False,
    locate: Callable[[ResumePoint], Path] | None = None,
    verify: bool = True,
    verify_digest: bool = True,
    lora: Any = None,
    state: RunState | None = None,
) -> Path | None:
    """Whether the trainer `loader` describes may resume from `point`: the checkpoint's backend,
    uri scheme, expiry and fidelity; for files, the real path under `root` (always checked; with
    `defer_root` a missing root is left to the caller, who holds the path to one later with
    hold_to_root), there (with `verify`), with the digest recorded with it (with `verify_digest`
    too) and, when `lora` (a shape) is given, of that LoRA shape. `locate` maps the uri to a
    path (default: the uri as a local path). Returns the real path of a local checkpoint, None
    for one held elsewhere (the uri is the handle). Raises ResumeRefused."""
    _check_handle(point, loader, state)
    if not loader.files:
        return None
    step = point.step
    if root is None and not defer_root:
        raise ResumeRefused(
            ResumeReason.ROOT_UNKNOWN,
            f"the checkpoint at step {step} ({point.uri}) cannot be held to the {loader.root_name}: pass it",
            state=state,
        )
    path = locate(point) if locate is not None else local_path(point.uri)
    if root is not None:
        hold_to_root(path, root, step=step, root_name=loader.root_name, state=state)
    if verify:
        present = path.is_dir() if loader.kind == "dir" else path.is_file() if loader.kind == "file" else path.exists()
        if not present:
            raise ResumeRefused(
                ResumeReason.CHECKPOINT_MISSING,
                f"the checkpoint at step {step} is not on this machine: {path}",
                state=state,
            )
        if verify_digest:
            _check_digest(path, point, loader, state)
    if lora is not None and loader.lora is not None:
        found = loader.lora(path)
        if found != lora:
            raise ResumeRefused(
                ResumeReason.LORA_MISMATCH, f"{path} holds LoRA shape {found}, the run's is {lora}", state=state
            )
    return Path(os.path.realpath(path))


def hold_to_root(
    path: str | os.PathLike[str],
    root: str | os.PathLike[str],
    *,
    step: int | None = None,
    root_name: str = "root",
    state: RunState | None = None,
) -> None:
    """Raise ResumeRefused OUTSIDE_ROOT unless `path`, and every file under it, is under `root`
    once real paths are resolved."""
    if problem := outside(path, root):
        what = f"the checkpoint at step {step}" if step is not None else "the checkpoint to resume from"
        raise ResumeRefused(ResumeReason.OUTSIDE_ROOT, f"{what} is not under the {root_name}: {problem}", state=state)


def _check_handle(point: ResumePoint, loader: Loader, state: RunState | None) -> None:
    step, uri = point.step, point.uri
    if loader.backend and point.backend != loader.backend:
        raise ResumeRefused(
            ResumeReason.BACKEND_MISMATCH,
            f"the checkpoint at step {step} is held by {point.backend!r}, not {loader.backend!r}: {uri}",
            state=state,
        )
    if loader.uri_prefix and not uri.startswith(loader.uri_prefix):
        raise ResumeRefused(
            ResumeReason.URI_SCHEME_MISMATCH,
            f"the checkpoint at step {step} is recorded at {uri!r}, not a {loader.uri_prefix} path",
            state=state,
        )
    if point.expires_at is not None and point.expires_at <= datetime.now(UTC):
        raise ResumeRefused(
            ResumeReason.CHECKPOINT_EXPIRED, f"the checkpoint at step {step} expired on {point.expires_at}", state=state
        )
    if loader.fidelity and point.fidelity != loader.fidelity:
        raise ResumeRefused(
            ResumeReason.FIDELITY_MISMATCH,
            f"the checkpoint at step {step} holds {point.fidelity!r}, not {loader.fidelity!r}: {uri}",
            state=state,
        )


def _check_digest(path: Path, point: ResumePoint, loader: Loader, state: RunState | None) -> None:
    step, digest = point.step, point.digest
    if not digest:
        raise ResumeRefused(
            ResumeReason.DIGEST_MISSING,
            f"the checkpoint at step {step} ({path}) was recorded "
            "without a digest, so its files cannot be checked: pass verify_digest=False to resume "
            "from it anyway",
            state=state,
        )
    if not digest.startswith(SHA256_PREFIX) or loader.digest is None:
        raise ResumeRefused(
            ResumeReason.DIGEST_UNVERIFIABLE,
            f"the checkpoint at step {step} ({path}) was recorded "
            f"with digest {digest!r}, not a sha256 one this can check: pass verify_digest=False to "
            "resume from it anyway",
            state=state,
        )
    actual = loader.digest(path)
    if actual != digest:
        raise ResumeRefused(
            ResumeReason.DIGEST_MISMATCH,
            f"{path} changed since it was recorded as the checkpoint "
            f"at step {step}: digest {actual}, recorded {digest}",
            state=state,
        )
