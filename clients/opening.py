"""Opening the run a RunRecorder records: OpenRun, the ended-run check, then the outbox replay
and StartAttempt (`open_and_start`), and for a deferred open the background opener (`Opening`).

Deferred open (`RunRecorder.open(..., defer=True)`): when the ledger cannot be reached at the
start, training need not wait for it. The recorder logs under a pending attempt (into the outbox,
durable with an outbox directory) and a background thread keeps trying to open the run and start
the attempt; once it answers, the held batches are rewritten with the real attempt number and
sent, exactly once. A refusal ends the tries for good: the held batches are abandoned.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from clients.attempts import start_attempt
from clients.errors import LedgerClientError
from clients.models import StartAttemptReceipt
from clients.retry import REFUSAL_CODES, RetryPolicy
from clients.run_end import refuse_ended
from clients.sender import Sender

__all__ = ["DEFERRED_TRY_S", "Opening", "first_try", "open_and_start"]

log = logging.getLogger("trainledger.clients")
# A deferred open tries the ledger this long in the foreground (and per background try) before
# it leaves the open to the background opener.
DEFERRED_TRY_S = 2.0
_REOPEN = RetryPolicy(initial_backoff_s=0.2, max_backoff_s=5.0)

Started = Callable[[StartAttemptReceipt, dict[str, int]], None]


class Opening:
    """Where a recorder's open stands: `opened` is set once the attempt is started, or once a
    deferred open was refused for good (then `error` holds the refusal). An open in the
    foreground is opened from the start; a deferred one runs `start`'s background thread."""

    def __init__(self, client: Any, *, opened: bool) -> None:
        self.client = client
        self.opened = threading.Event()
        self.error: LedgerClientError | None = None
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None
        if opened:
            self.opened.set()

    def start(self, sender: Sender, on_started: Started, *args: Any) -> None:
        """Start the background opener: `args` are those of `open_and_start` after the client."""
        self.thread = threading.Thread(
            target=self._open_later, args=(sender, on_started, *args), name="trainledger-opener", daemon=True
        )
        self.thread.start()

    def _open_later(
        self,
        sender: Sender,
        on_started: Started,
        open_args: dict[str, Any],
        label: str,
        resume_from_step: int | None,
        outbox_dir: str | os.PathLike[str] | None,
        attempt_id: str,
        reopen: bool,
        lease_s: int | None = None,
    ) -> None:
        """The deferred open: retry until the ledger answers, then hand the attempt to the sender
        and to `on_started` (the started attempt and the replay's counters)."""
        tried = 0
        while not self.stopping.wait(_REOPEN.backoff_s(min(tried, 10))):
            tried += 1
            try:
                with first_try(self.client, True):
                    started, counters = open_and_start(
                        self.client, open_args, label, resume_from_step, outbox_dir, attempt_id, reopen, lease_s
                    )
            except LedgerClientError as error:
                if error.code not in REFUSAL_CODES:
                    continue
                log.warning(
                    "the ledger refused to open run %s: %s; its steps will not be recorded", open_args["run_key"], error
                )
                self.error = error
                sender.abandon(error.reason)
                self.opened.set()
                return
            except Exception:  # The opener must outlive its own bugs: log, try again later.
                log.exception("the trainledger recorder's opener failed; retrying")
                continue
            run_id = started.state.run.run_id
            adopted = sender.adopt(run_id, started.attempt)
            while not adopted.wait(0.5) and sender.thread.is_alive():
                pass
            on_started(started, counters)
            log.info("run %s opened: attempt %s", run_id, started.attempt)
            self.opened.set()
            return

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait up to `timeout_s` for the open; True once open. Raises the refusal that ended it."""
        self.opened.wait(timeout_s)
        if self.error is not None:
            raise self.error
        return self.opened.is_set()

    def stop(self) -> None:
        """Stop the background opener's tries and wait for it (up to the client's timeout)."""
        self.stopping.set()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(timeout=self.client.timeout_s if hasattr(self.client, "timeout_s") else 10.0)


def first_try(client: Any, short: bool) -> Any:
    """Within it, a deferred open's calls ride out an outage for DEFERRED_TRY_S at most (the
    background opener tries again), not the client's whole outage budget."""
    if not short or not hasattr(client, "retrying"):
        return nullcontext()
    return client.retrying(outage_budget_s=min(DEFERRED_TRY_S, getattr(client, "outage_budget_s", DEFERRED_TRY_S)))


def open_and_start(
    client: Any,
    open_args: dict[str, Any],
    label: str,
    resume_from_step: Any,
    outbox_dir: Any,
    attempt_id: str | None,
    reopen: bool = False,
    lease_s: int | None = None,
) -> tuple[StartAttemptReceipt, dict[str, int]]:
    """OpenRun, the ended-run check, then the outbox replay and StartAttempt
    (clients.attempts.start_attempt), the attempt taking the run's plan (`max_steps`) and its
    lease (`lease_s`, None: the server's default) too."""
    opened = client.open_run(**open_args)
    refuse_ended(opened.state, reopen=reopen)
    run_id = opened.state.run.run_id
    if resume_from_step == "latest":
        resume = opened.state.resume
        resume_from_step = resume.from_step if resume.available else None
    return start_attempt(
        client,
        run_id=run_id,
        label=label,
        resume_from_step=resume_from_step,
        outbox_dir=outbox_dir,
        run_key=open_args["run_key"],
        attempt_id=attempt_id,
        max_steps=open_args.get("max_steps"),
        lease_s=lease_s,
    )
