"""RunRecorder: what a training loop holds. Logging never blocks and never raises; spend is held
before it is spent; checkpoints are recorded after their steps; the run is finished on the way out.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Literal

from clients.attempts import start_attempt
from clients.batcher import Batcher, make_row
from clients.client import LedgerClient
from clients.errors import LedgerClientError
from clients.outbox import MemoryOutbox, SqliteOutbox
from clients.sender import Sender
from clients.spend import Hold, hold_spend

__all__ = ["RunRecorder", "Hold"]

log = logging.getLogger("trainledger.clients")
ERROR_LENGTH_MAX = 2_000
OUTBOX_STEPS_MAX = 1_000_000


class RunRecorder:
    """Records one attempt of one run. Attach to an attempt that exists with the constructor, or
    open the run and start a new attempt with `RunRecorder.open`. Options: batch_steps_max (steps
    per batch), batch_interval_s (the most a step waits to be batched), queue_steps_max (steps
    queued before log() drops), held_steps_max (steps batched but not yet acked before the queue
    stops draining; default queue_steps_max in memory, a million with an outbox), window (batches
    in flight), ack_timeout_s, flush_timeout_s (flush, finish and close), on_ack (called on the
    sender thread with each ack dict)."""

    def __init__(self, client: LedgerClient, *, run_id: str, attempt: int, outbox_dir: str | os.PathLike[str] | None = None,
                 account: str | None = None, state: Mapping[str, Any] | None = None, batch_steps_max: int = 1_000,
                 batch_interval_s: float = 0.2, queue_steps_max: int = 65_536, held_steps_max: int | None = None,
                 window: int = 8, ack_timeout_s: float = 30.0, flush_timeout_s: float = 30.0, on_ack: Any = None) -> None:
        self.client = client
        self.account = account or run_id
        self.flush_timeout_s = flush_timeout_s
        self._run_id, self._attempt, self._state = run_id, attempt, dict(state) if state else None
        self._lock = threading.Lock()
        self._counters = dict.fromkeys(("sent", "acked", "dropped", "failed", "non_finite"), 0)
        outbox = SqliteOutbox(outbox_dir, run_id, attempt) if outbox_dir else MemoryOutbox(run_id, attempt)
        if held_steps_max is None:
            held_steps_max = OUTBOX_STEPS_MAX if outbox_dir else queue_steps_max
        batcher = Batcher(run_id, attempt, batch_steps_max=batch_steps_max, batch_interval_s=batch_interval_s)
        self._sender = Sender(client, outbox, batcher, queue_steps_max=queue_steps_max, held_steps_max=held_steps_max,
                              window=window, ack_timeout_s=ack_timeout_s, counters=self._counters, lock=self._lock,
                              on_ack=on_ack)
        self._finished: dict[str, Any] | None = None
        self._closed = False

    @classmethod
    def open(cls, client: LedgerClient, *, run_key: str, name: str = "", spec: Mapping[str, Any] | None = None,
             cap_usd_micro: int | None = None, parent_account: str = "", attempt_label: str | None = None,
             resume_from_step: int | Literal["latest"] | None = None,
             outbox_dir: str | os.PathLike[str] | None = None, **options: Any) -> RunRecorder:
        """Open (or find) the run, replay what an earlier process left in the outbox for it, and
        start a new attempt, from scratch (None), from the checkpoint at a step, or from the run's
        resumable checkpoint if it has one ("latest"; see state["resume"] for its handle).
        Raises LedgerClientError (Unavailable when the ledger is unreachable)."""
        opened = client.open_run(run_key=run_key, name=name, spec=spec, cap_usd_micro=cap_usd_micro,
                                 parent_account=parent_account)
        run_id = opened["state"]["run"]["run_id"]
        if resume_from_step == "latest":
            resume = opened["state"]["resume"]
            resume_from_step = resume["from_step"] if resume["available"] else None
        started, counters = start_attempt(client, run_id=run_id, label=attempt_label,
                                          resume_from_step=resume_from_step, outbox_dir=outbox_dir)
        recorder = cls(client, run_id=run_id, attempt=started["attempt"], outbox_dir=outbox_dir,
                       state=started["state"], **options)
        for name_, value in counters.items():
            recorder._counters[name_] += value
        return recorder

    @property
    def run_id(self) -> str:
        return self._run_id

    @property
    def attempt(self) -> int:
        return self._attempt

    @property
    def state(self) -> dict[str, Any] | None:
        """The last RunState seen (from open, finish or refresh_state), as a dict."""
        return self._state

    @property
    def counters(self) -> dict[str, int]:
        """Steps sent, acked, dropped (queue full, out of order, after close), failed (refused by
        the ledger for good), and metric values dropped for not being finite (non_finite)."""
        with self._lock:
            return dict(self._counters)

    @property
    def last_error(self) -> LedgerClientError | None:
        """The last error the background sender met, for diagnosis."""
        return self._sender.last_error

    def log(self, step: int, *, tokens: int | None = None, usd_micro: int | None = None, **metrics: Any) -> None:
        """Queue one step's record; returns at once, never raises. Non-finite metric values are
        dropped (counted); non-numeric ones are ignored; a full queue drops the step (counted)."""
        try:
            row, non_finite = make_row(step, tokens, usd_micro, metrics)
            queued = not self._closed and self._sender.put(row)
        except Exception:  # Never into the training loop: a bad value drops the step.
            non_finite, queued = 0, False
        with self._lock:
            self._counters["non_finite"] += non_finite
            self._counters["dropped"] += 0 if queued else 1

    def flush(self, timeout_s: float | None = None) -> bool:
        """Wait until every step queued so far is acked (or failed for good); False on timeout."""
        return self._sender.flush(self.flush_timeout_s if timeout_s is None else timeout_s)

    @contextmanager
    def reserve(self, amount_usd_micro: int, *, basis: Mapping[str, Any] | None = None, ttl_s: float | None = None,
                reservation_id: str | None = None) -> Iterator[Hold]:
        """Hold spend for a billable call (see clients.spend.hold_spend): blocks for the hold, raises
        SpendCapExceeded when refused and Unavailable when the ledger cannot be reached."""
        with hold_spend(self.client, account=self.account, amount_usd_micro=amount_usd_micro, basis=basis,
                        ttl_s=ttl_s, attempt=self._attempt, reservation_id=reservation_id) as hold:
            yield hold

    def checkpoint(self, step: int, uri: str, backend: str, fidelity: str = "weights", *, sampler_uri: str = "",
                   final: bool = False, expires_at: datetime | None = None, digest: str = "") -> dict[str, Any]:
        """Record a durable checkpoint after flushing the steps logged before it. Raises
        LedgerClientError when it cannot be recorded."""
        self.flush()
        return self.client.save_checkpoint(run_id=self._run_id, attempt=self._attempt, step=step, uri=uri,
                                           backend=backend, fidelity=fidelity, sampler_uri=sampler_uri, final=final,
                                           expires_at=expires_at, digest=digest)

    def finish(self, status: str = "done", summary: Mapping[str, Any] | None = None, error: str = "") -> dict[str, Any]:
        """Flush, stop the sender and finish the run (once; later calls answer the first result)."""
        if self._finished is not None:
            return self._finished
        self.close()
        if not self._sender.is_idle():
            log.warning("finishing run %s with steps not yet acked: %s", self._run_id, self.counters)
        self._finished = self.client.finish_run(run_id=self._run_id, attempt=self._attempt, status=status,
                                                summary=dict(summary or {}), error=error[:ERROR_LENGTH_MAX])
        try:
            self.refresh_state(self._finished["position"])
        except LedgerClientError:
            pass
        return self._finished

    def refresh_state(self, min_position: int = 0) -> dict[str, Any]:
        self._state = self.client.get_run_state(run_id=self._run_id, min_position=min_position)
        return self._state

    def close(self, flush_timeout_s: float | None = None) -> None:
        """Stop sending without finishing the run: flush for up to `flush_timeout_s`; what is left
        stays in the outbox (when there is one) for the next recorder of this run."""
        if not self._closed:
            self._closed = True
            self._sender.stop(self.flush_timeout_s if flush_timeout_s is None else flush_timeout_s)
            if not self._sender.thread.is_alive():
                self._sender.outbox.close()

    def __enter__(self) -> RunRecorder:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, traceback: Any) -> None:
        if exc is None:
            self.finish("done")
            return
        try:
            self.finish("failed", error=f"{exc_type.__name__}: {exc}")
        except LedgerClientError as error:
            log.warning("could not record the run as failed: %s", error)

