"""Starting a recorded attempt: replay what an earlier process left in the outbox, then start.

A new process is a new attempt, and a new attempt fences the old one; so the old attempt's
unacked batches are sent first, in order, while that attempt is still the run's current one.
An identical batch the ledger already holds answers as a duplicate, so each lands exactly once.
The attempt id is made, and written to the outbox, before StartAttempt is sent.
"""

from __future__ import annotations

import os
import socket
import uuid
from typing import Any

from clients.errors import LedgerClientError
from clients.outbox import SqliteOutbox
from clients.retry import REFUSAL_CODES

__all__ = ["replay_attempts", "start_attempt"]

_PAGE = 256


def replay_attempts(client: object, outbox: SqliteOutbox) -> dict[str, int]:
    """Send every pending batch of the run's earlier attempts with AppendSteps; returns steps
    "sent", "acked" and "failed". Raises LedgerClientError (Unavailable, ...) when the ledger
    cannot take them now: they stay pending for the next try."""
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
                    if error.code not in REFUSAL_CODES:
                        raise
                    outbox.failed(sequence, error.reason)
                    counters["failed"] += steps
                    continue
                outbox.done(sequence)
                counters["acked"] += steps
    return counters


def start_attempt(client: Any, *, run_id: str, label: str | None, resume_from_step: int | None,
                  outbox_dir: str | os.PathLike[str] | None) -> tuple[dict[str, Any], dict[str, int]]:
    """Replay the run's earlier attempts from the outbox (if any) and start a new attempt, labelled
    "host:pid" unless `label` is given: its StartAttempt answer, and the replay's counters.
    Raises LedgerClientError."""
    label = label if label is not None else f"{socket.gethostname()}:{os.getpid()}"
    if not outbox_dir:
        started = client.start_attempt(run_id=run_id, attempt_id=str(uuid.uuid4()), label=label,
                                       resume_from_step=resume_from_step)
        return started, {}
    outbox = SqliteOutbox(outbox_dir, run_id)
    try:
        counters = replay_attempts(client, outbox)
        attempt_id = outbox.attempt_id(label, resume_from_step, str(uuid.uuid4()))
        started = client.start_attempt(run_id=run_id, attempt_id=attempt_id, label=label,
                                       resume_from_step=resume_from_step)
        outbox.attempt_started(attempt_id, started["attempt"])
        return started, counters
    finally:
        outbox.close()
