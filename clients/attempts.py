"""Starting a recorded attempt: replay what an earlier process left in the outbox, then start.

A new process is a new attempt, and a new attempt fences the old one; so the old attempt's
unacked batches are sent first, in order, while that attempt is still the run's current one.
An identical batch the ledger already holds answers as a duplicate, so each lands exactly once.
The attempt id is made, and written to the outbox, before StartAttempt is sent.

Attempts a process noted as pending (a deferred open: the ledger never answered before it died)
are started in their turn, with their own attempt id, label and resume point, and their batches
adopted and sent, before the new attempt starts.
"""

from __future__ import annotations

import os
import socket
import uuid
from typing import Any

from clients.errors import LedgerClientError
from clients.models import StartAttemptReceipt
from clients.outbox import SqliteOutbox
from clients.retry import CREDENTIAL_CODES, REFUSAL_CODES

__all__ = ["replay_attempts", "start_attempt", "start_pending_opens"]

_PAGE = 256


def _refused_for_good(error: LedgerClientError) -> bool:
    """Whether a refusal is of what was sent: a refusal of the credentials (a token revoked on the
    way) is not, and keeps the batches for a later try with a good token."""
    return error.code in REFUSAL_CODES and error.code not in CREDENTIAL_CODES


def replay_attempts(client: object, outbox: SqliteOutbox) -> dict[str, int]:
    """Send every pending batch of the run's earlier attempts with AppendSteps; returns steps
    "sent", "acked" and "failed". Raises LedgerClientError (Unavailable, Unauthenticated, ...)
    when the ledger cannot take them now: they stay pending for the next try."""
    counters = {"sent": 0, "acked": 0, "failed": 0}
    for attempt in outbox.pending_attempts():
        after = 0
        while entries := outbox.pending(after, _PAGE, attempt=attempt):
            for sequence, batch, steps in entries:
                after = sequence
                counters["sent"] += steps
                try:
                    client.append_batch(batch=batch)  # type: ignore[attr-defined]
                except LedgerClientError as error:
                    if not _refused_for_good(error):
                        raise
                    outbox.failed(sequence, error.reason)
                    counters["failed"] += steps
                    continue
                outbox.done(sequence)
                counters["acked"] += steps
    return counters


def start_pending_opens(
    client: Any, outbox: SqliteOutbox, *, run_id: str, run_key: str, exclude: str = ""
) -> dict[str, int]:
    """Start, adopt and replay the attempts of `run_key` that earlier processes noted as pending
    (all but `exclude`), oldest first; returns the replay's counters. An attempt whose start is
    refused for good has its batches marked failed. Raises LedgerClientError (Unavailable ...)."""
    counters = {"sent": 0, "acked": 0, "failed": 0}
    for attempt_id, label, resume_from_step in outbox.pending_opens(run_key, exclude=exclude):
        try:
            started = client.start_attempt(
                run_id=run_id, attempt_id=attempt_id, label=label, resume_from_step=resume_from_step
            )
        except LedgerClientError as error:
            if not _refused_for_good(error):
                raise
            outbox.adopt_pending(attempt_id, run_id, None, error.reason)
            continue
        outbox.adopt_pending(attempt_id, run_id, started.attempt)
        for name, value in replay_attempts(client, outbox).items():
            counters[name] += value
    return counters


def start_attempt(
    client: Any,
    *,
    run_id: str,
    label: str | None,
    resume_from_step: int | None,
    outbox_dir: str | os.PathLike[str] | None,
    run_key: str = "",
    attempt_id: str | None = None,
    max_steps: int | None = None,
    lease_s: int | None = None,
) -> tuple[StartAttemptReceipt, dict[str, int]]:
    """Replay the run's earlier attempts from the outbox (if any; with `run_key`, also those noted
    as pending by processes that died before the ledger answered) and start a new attempt,
    labelled "host:pid" unless `label` is given, with `attempt_id` when given (a deferred open
    made it earlier), with the run's plan `max_steps` and the attempt's lease `lease_s` when given:
    its StartAttempt answer, and the replay's counters. Raises LedgerClientError."""
    label = label if label is not None else f"{socket.gethostname()}:{os.getpid()}"
    plan: dict[str, int] = {} if max_steps is None else {"max_steps": max_steps}
    if lease_s is not None:
        plan["lease_s"] = lease_s
    if not outbox_dir:
        started = client.start_attempt(
            run_id=run_id,
            attempt_id=attempt_id or str(uuid.uuid4()),
            label=label,
            resume_from_step=resume_from_step,
            **plan,
        )
        return started, {}
    outbox = SqliteOutbox(outbox_dir, run_id)
    try:
        counters = replay_attempts(client, outbox)
        if run_key:
            for name, value in start_pending_opens(
                client, outbox, run_id=run_id, run_key=run_key, exclude=attempt_id or ""
            ).items():
                counters[name] += value
        if attempt_id is None:
            attempt_id = outbox.attempt_id(label, resume_from_step, str(uuid.uuid4()))
            started = client.start_attempt(
                run_id=run_id, attempt_id=attempt_id, label=label, resume_from_step=resume_from_step, **plan
            )
            outbox.attempt_started(attempt_id, started.attempt)
        else:  # A deferred open's attempt: its sender adopts its batches and records it.
            started = client.start_attempt(
                run_id=run_id, attempt_id=attempt_id, label=label, resume_from_step=resume_from_step, **plan
            )
        return started, counters
    finally:
        outbox.close()
