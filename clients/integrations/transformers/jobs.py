"""The ledger writes a Transformers callback leaves to a background thread so that the training loop
never waits for the ledger or the disk: checkpoint records (with the scores of the evaluation
before them) and dataset records, digested and sent in order."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from clients.errors import LedgerClientError
from clients.integrations.transformers.checkpoints import BACKEND, checkpoint_digest
from clients.recorder import RunRecorder
from clients.retry import REFUSAL_CODES, RetryPolicy

__all__ = ["Jobs", "record_checkpoint"]

log = logging.getLogger("trainledger.clients.transformers")

_BACKOFF = RetryPolicy(initial_backoff_s=0.2, max_backoff_s=5.0)


class Jobs:
    """Ledger writes the training loop must not wait for (checkpoint records), in order on one
    thread, each retried while the ledger is unreachable; a refusal is logged and dropped."""

    def __init__(self) -> None:
        self._jobs: deque[tuple[str, Callable[[], Any]]] = deque()
        self._condition = threading.Condition()
        self._busy, self._give_up_at = False, math.inf
        self._thread = threading.Thread(target=self._run, name="trainledger-callback", daemon=True)
        self._thread.start()

    def submit(self, what: str, job: Callable[[], Any]) -> None:
        with self._condition:
            self._jobs.append((what, job))
            self._condition.notify_all()

    def close(self, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for the queued jobs, then give up on what is left; True when all ran."""
        with self._condition:
            self._give_up_at = time.monotonic() + timeout_s
            self._condition.notify_all()
            done = self._condition.wait_for(lambda: not self._jobs and not self._busy, timeout_s)
            self._jobs.append(("", lambda: None))  # The end marker.
            self._condition.notify_all()
        return done

    def _run(self) -> None:
        while True:
            with self._condition:
                self._condition.wait_for(lambda: bool(self._jobs))
                what, job = self._jobs.popleft()
                self._busy = True
            if not what:
                return
            tried = 0
            while True:
                try:
                    job()
                    break
                except LedgerClientError as error:
                    if error.code in REFUSAL_CODES:
                        log.warning("the ledger refused %s: %s", what, error)
                        break
                    if time.monotonic() >= self._give_up_at:
                        log.warning("gave up on %s: the ledger is unreachable (%s)", what, error.reason)
                        break
                except Exception:  # noqa: BLE001 - never die: log and go on.
                    log.exception("could not record %s", what)
                    break
                with self._condition:
                    self._condition.wait(
                        min(_BACKOFF.backoff_s(min(tried, 10)), max(0.0, self._give_up_at - time.monotonic()))
                    )
                tried += 1
            with self._condition:
                self._busy = False
                self._condition.notify_all()


def record_checkpoint(
    recorder: RunRecorder, step: int, path: Path, fidelity: str, scores: Mapping[str, float] | None = None
) -> None:
    """Digest a saved checkpoint and record it (after the steps before it), with the `scores` of
    the evaluation before it. Off the training thread: a directory rotated away before its turn
    came is not recorded (nothing could resume from it); the next save does not touch it (each
    step has its own directory)."""
    try:
        digest = checkpoint_digest(path)
    except OSError as error:
        log.warning("the checkpoint at step %s is gone or unreadable (%s): not recorded", step, error)
        return
    recorder.checkpoint(step, str(path.resolve()), BACKEND, fidelity, digest=digest, scores=scores or None)
