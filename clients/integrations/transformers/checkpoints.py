"""Transformers checkpoints in the ledger: their digest, and where a trainer resumes from, decided by
the one resume decision (clients.integrations.resume) for what a Trainer loads: an "hf" checkpoint
directory under its output directory, unchanged since it was recorded, of the run's LoRA shape."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from clients.client import LedgerClient
from clients.errors import LedgerClientError
from clients.integrations.resume import Loader, ResumePoint, decide, latest
from clients.integrations.transformers.spec import lora_shape, training_run_key
from clients.models import RunState
from clients.retry import RetryPolicy

__all__ = [
    "BACKEND",
    "FIDELITY_FULL",
    "FIDELITY_WEIGHTS",
    "CLIENT_RETRIES",
    "checkpoint_digest",
    "checkpoint_from_state",
    "resume_checkpoint",
    "verified",
    "open_state",
]

log = logging.getLogger("trainledger.clients.transformers")

BACKEND = "hf"
FIDELITY_FULL, FIDELITY_WEIGHTS = "weights+optimizer", "weights"
_CHUNK_BYTES = 1 << 20
# The client made from an address: quick first retries, and the default outage budget (30 s) for
# UNAVAILABLE, so a ledger restart does not stop training for want of a spend hold.
CLIENT_RETRIES = RetryPolicy(attempts=4, initial_backoff_s=0.05, max_backoff_s=0.5)


def checkpoint_digest(path: str | os.PathLike[str]) -> str:
    """ "sha256:<hex>" over a checkpoint directory: each file's path relative to it (sorted) and
    the sha256 of its content."""
    root = Path(path)
    files = sorted((item.relative_to(root).as_posix(), item) for item in root.rglob("*") if item.is_file())
    outer = hashlib.sha256()
    for relative, item in files:
        inner = hashlib.sha256()
        with open(item, "rb") as handle:
            while chunk := handle.read(_CHUNK_BYTES):
                inner.update(chunk)
        outer.update(relative.encode("utf-8") + b"\0" + inner.digest())
    return "sha256:" + outer.hexdigest()


def _adapter_lora(path: Path) -> dict[str, Any] | None:
    """The LoRA shape a checkpoint directory's adapter_config.json holds (None without one)."""
    config = path / "adapter_config.json"
    return lora_shape(json.loads(config.read_text())) if config.is_file() else None


# What a Trainer resumes from: a checkpoint directory of the "hf" backend, under its output directory.
_LOADER = Loader(
    backend=BACKEND, kind="dir", digest=checkpoint_digest, lora=_adapter_lora, root_name="output directory"
)


def verified(
    point: ResumePoint,
    state: RunState,
    *,
    output_dir: str | os.PathLike[str] | None,
    lora: Any,
    verify_digest: bool,
    backend: str = BACKEND,
    defer_root: bool = False,
) -> str:
    """The checkpoint directory's real path once the resume decision accepts it for a Trainer:
    under `output_dir` (with `defer_root`, not checked when None: the caller holds it to one
    later), there, with the digest recorded with it, of the LoRA shape of `lora`. Raises
    ResumeRefused."""
    loader = _LOADER if backend == BACKEND else replace(_LOADER, backend=backend)
    path = decide(
        point,
        loader,
        root=output_dir,
        defer_root=defer_root,
        verify_digest=verify_digest,
        lora=lora_shape(lora),
        state=state,
    )
    return str(path)


def checkpoint_from_state(
    state: RunState,
    *,
    output_dir: str | os.PathLike[str] | None = None,
    backend: str = BACKEND,
    lora: Any = None,
    allow_restart: bool = False,
    verify_digest: bool = True,
    reopen: bool = False,
) -> str | None:
    """The checkpoint directory to resume from, by a RunState, under `output_dir` (see
    resume_checkpoint); None for a fresh start. ResumeRefused ROOT_UNKNOWN when there is a
    checkpoint and no output_dir to hold it to."""
    point = latest(state, reopen=reopen, allow_restart=allow_restart)
    if point is None:
        return None
    return verified(point, state, output_dir=output_dir, lora=lora, verify_digest=verify_digest, backend=backend)


def open_state(
    client_or_address: LedgerClient | str,
    *,
    key: str,
    spec: Mapping[str, Any] | None,
    name: str,
    cap_usd_micro: int | None,
    parent_account: str,
    objective: tuple[str, str] | None = None,
    max_steps: int | None = None,
) -> RunState:
    """The run's state as its open answers it (a client is made for an address, and closed),
    with the `objective` and `max_steps` given. An objective the run does not hold (OBJECTIVE_DIFFERS)
    is left out with a warning: it never stops a resume."""
    owned = isinstance(client_or_address, str)
    client = (
        LedgerClient(client_or_address, timeout_s=10.0, retries=CLIENT_RETRIES)
        if isinstance(client_or_address, str)
        else client_or_address
    )
    options: dict[str, Any] = dict(
        run_key=key,
        name=name or str((spec or {}).get("name", "")),
        spec=spec,
        cap_usd_micro=cap_usd_micro,
        parent_account=parent_account,
        max_steps=max_steps,
    )
    try:
        try:
            return client.open_run(objective=objective, **options).state
        except LedgerClientError as error:
            if objective is None or error.reason != "OBJECTIVE_DIFFERS":
                raise
            log.warning("run %s keeps its objective, not %s: %s", key, objective, error.message)
            return client.open_run(**options).state
    finally:
        if owned:
            client.close()


def resume_checkpoint(
    client_or_address: LedgerClient | str,
    *,
    run_key: str | None = None,
    spec: Mapping[str, Any] | None = None,
    output_dir: str | os.PathLike[str] | None = None,
    backend: str = BACKEND,
    lora: Any = None,
    allow_restart: bool = False,
    verify_digest: bool = True,
    name: str = "",
    cap_usd_micro: int | None = None,
    parent_account: str = "",
    reopen: bool = False,
) -> str | None:
    """The path to pass as trainer.train(resume_from_checkpoint=...), from the ledger's RunState:
    the run's most progressed live checkpoint, or None when the run has none (a fresh start).
    Never True. The run is opened by its key with `name`, `cap_usd_micro` and `parent_account`:
    pass the callback's (or use LedgerCallback.resume_checkpoint), since this may be the open
    that creates the run, and a cap given changes an existing run's cap.
    The checkpoint must be under `output_dir`, the trainer's args.output_dir (real paths: a `..`
    or a symlink out of it is refused). Its digest must be the one recorded with it:
    `verify_digest=False` resumes from a checkpoint recorded without a digest (from before
    digests were recorded) or changed since. The LoRA shape checked is `lora`, else the spec's.
    Raises RunEnded when the run is done, or failed or stopped without reopen=True. Raises
    ResumeRefused (clients.integrations.resume) with its reason: CHECKPOINT_EXPIRED (every
    checkpoint expired: restart from 0 only with allow_restart=True), BACKEND_MISMATCH,
    ROOT_UNKNOWN (no output_dir), OUTSIDE_ROOT (a checkpoint outside it), CHECKPOINT_MISSING,
    DIGEST_MISSING, DIGEST_UNVERIFIABLE, DIGEST_MISMATCH, LORA_MISMATCH (its adapter_config.json).
    Raises LedgerClientError when the ledger cannot answer."""
    if run_key is None and spec is None:
        raise TypeError("resume_checkpoint needs run_key or spec")
    state = open_state(
        client_or_address,
        key=run_key or training_run_key(spec),
        spec=spec,
        name=name,
        cap_usd_micro=cap_usd_micro,
        parent_account=parent_account,
    )
    return checkpoint_from_state(
        state,
        output_dir=output_dir,
        backend=backend,
        lora=lora if lora is not None else (spec or {}).get("lora"),
        allow_restart=allow_restart,
        verify_digest=verify_digest,
        reopen=reopen,
    )
