"""RunRecorder: what a training loop holds. Logging never blocks and never raises; spend is held
before it is spent; checkpoints are recorded after their steps; the run is finished on the way out.

Deferred open (`RunRecorder.open(..., defer=True)`, see clients.opening): when the ledger cannot
be reached at the start, training need not wait for it: steps are held under a pending attempt
and sent once a background opener has started it. Spend is never held for a pending attempt:
`reserve` raises Unavailable (fail closed), so a trainer that pays per interval stops rather than
trains without a hold.

How a run ends (`exit_status`, the same for every trainer integration; see clients.run_end):
"done" when its block ends normally, "stopped" for a spend-cap refusal or an interrupt, "failed"
with the error for any other exception. `open` refuses an ended run with RunEnded: a done run
always, a failed or stopped one unless `reopen=True`.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Mapping
from typing import Any, Literal

import grpc

from clients.batcher import Batcher, make_row
from clients.client import LedgerClient
from clients.errors import LedgerClientError, Unavailable
from clients.heartbeat import Heartbeat
from clients.models import (
    FinishReceipt,
    RunState,
    StartAttemptReceipt,
)
from clients.opening import Opening, first_try, open_and_start
from clients.outbox import MemoryOutbox, SqliteOutbox, check_outbox, pending_run_id
from clients.recorder_records import RecorderRecords
from clients.recorder_reports import RecorderReports
from clients.recorder_spend import RecorderSpend
from clients.recorder_steps import RecorderSteps
from clients.retry import CREDENTIAL_CODES, REFUSAL_CODES
from clients.run_end import ENDED_STATUSES, ERROR_LENGTH_MAX, SigtermStop, exit_error, exit_status, refuse_ended
from clients.sender import Sender
from clients.spend import Hold
from clients.system import SystemSampler

__all__ = ["RunRecorder", "Hold", "exit_status", "exit_error", "refuse_ended", "ENDED_STATUSES"]

log = logging.getLogger("trainledger.clients")
OUTBOX_STEPS_MAX = 1_000_000


class RunRecorder(RecorderSteps, RecorderSpend, RecorderRecords, RecorderReports):
    """Records one attempt of one run. Attach to an attempt that exists with the constructor, or
    open the run and start a new attempt with `RunRecorder.open`. Options: batch_steps_max (steps
    per batch), batch_interval_s (the most a step waits to be batched), queue_steps_max (steps
    queued before log() drops), held_steps_max (steps batched but not yet acked before the queue
    stops draining; default queue_steps_max in memory, a million with an outbox), window (batches
    in flight), ack_timeout_s, flush_timeout_s (flush, finish and close), on_ack (called on the
    sender thread with each StepAck), lease_s (the attempt's lease, which a heartbeat keeps while
    nothing else is written: clients.heartbeat; None: the server's default), system_metrics_s
    (CPU, RAM and GPU use sampled once per this many seconds onto the step logged, as "system/"
    metrics: clients.system; None, the default, records none)."""

    def __init__(
        self,
        client: LedgerClient,
        *,
        run_id: str,
        attempt: int,
        outbox_dir: str | os.PathLike[str] | None = None,
        account: str | None = None,
        state: RunState | None = None,
        batch_steps_max: int = 1_000,
        batch_interval_s: float = 0.2,
        queue_steps_max: int = 65_536,
        held_steps_max: int | None = None,
        window: int = 8,
        ack_timeout_s: float = 30.0,
        flush_timeout_s: float = 30.0,
        on_ack: Any = None,
        lease_s: int | None = None,
        system_metrics_s: float | None = None,
        _pending: Mapping[str, Any] | None = None,
    ) -> None:
        self.client = client
        # System metrics (clients.system), one sample per `system_metrics_s` on the step logged.
        self._system = SystemSampler(system_metrics_s) if system_metrics_s is not None else None
        self.account = account or run_id
        self.flush_timeout_s = flush_timeout_s
        self._run_id, self._attempt, self._state = run_id, attempt, state
        self._lock = threading.Lock()
        self._counters = dict.fromkeys(("sent", "acked", "dropped", "failed", "non_finite", "quarantined"), 0)
        self._opening = Opening(client, opened=_pending is None)
        if _pending is None:
            box_run_id, box_attempt = run_id, attempt
        else:  # A deferred open: batches wait under the pending attempt until it is started.
            box_run_id, box_attempt = pending_run_id(_pending["attempt_id"]), 0
        outbox = (
            SqliteOutbox(outbox_dir, box_run_id, box_attempt) if outbox_dir else MemoryOutbox(box_run_id, box_attempt)
        )
        if _pending is not None and isinstance(outbox, SqliteOutbox):
            outbox.add_pending_open(
                _pending["attempt_id"], _pending["run_key"], _pending["label"], _pending["resume_from_step"]
            )
        if held_steps_max is None:
            held_steps_max = OUTBOX_STEPS_MAX if outbox_dir else queue_steps_max
        batcher = Batcher(box_run_id, box_attempt, batch_steps_max=batch_steps_max, batch_interval_s=batch_interval_s)
        self._sender = Sender(
            client,
            outbox,
            batcher,
            queue_steps_max=queue_steps_max,
            held_steps_max=held_steps_max,
            window=window,
            ack_timeout_s=ack_timeout_s,
            counters=self._counters,
            lock=self._lock,
            on_ack=on_ack,
            ready=_pending is None,
        )
        self._finished: FinishReceipt | None = None
        self._closed = False
        self._sigterm: SigtermStop | None = None
        self._heartbeat = Heartbeat(client, lease_s)
        if _pending is None and run_id:
            self._heartbeat.start(run_id, attempt)

    @classmethod
    def open(
        cls,
        client: LedgerClient,
        *,
        run_key: str,
        name: str = "",
        spec: Mapping[str, Any] | None = None,
        cap_usd_micro: int | None = None,
        parent_account: str = "",
        attempt_label: str | None = None,
        resume_from_step: int | Literal["latest"] | None = None,
        outbox_dir: str | os.PathLike[str] | None = None,
        defer: bool = False,
        reopen: bool = False,
        stop_on_sigterm: bool = False,
        max_steps: int | None = None,
        objective: tuple[str, str] | None = None,
        plan_usd_micro: int | None = None,
        plan_basis: Mapping[str, Any] | None = None,
        source_checkpoint: Any = None,
        **options: Any,
    ) -> RunRecorder:
        """Open (or find) the run, replay what an earlier process left in the outbox for it, and
        start a new attempt, from scratch (None), from the checkpoint at a step, or from the run's
        resumable checkpoint if it has one ("latest"; see state.resume for its handle).
        The cap and parent account go with every open: for an existing run a cap given changes
        its cap (None leaves it as it is).
        A run that has ended is refused with RunEnded: a done run always (use a new run key), a
        failed or stopped one unless `reopen=True` (then the new attempt reopens it).
        `stop_on_sigterm=True` (from the main thread) turns a SIGTERM into KeyboardInterrupt in the
        main thread until the recorder is closed, so the block ends the run "stopped".
        Raises LedgerClientError (Unavailable when the ledger is unreachable). With `defer=True` an
        unreachable ledger (any error but a refusal) does not raise: the recorder opens in the
        background (see clients.opening, `opened`, `wait_open`); "latest" needs the ledger.
        `max_steps` (the trainer's plan) goes with the open and the new attempt, `objective`
        (metric, "min" | "max": what ranks the run's checkpoints) with the open; None leaves each
        as the run has it. `plan_usd_micro` (with `plan_basis`, how it was projected) reserves the
        attempt's whole projected cost up front (see `hold_plan`): a run that cannot afford it is
        finished "stopped" before its first billable call and SpendCapExceeded raised; it needs
        the ledger at open, so not with `defer=True` (ValueError). `source_checkpoint` (another
        run's checkpoint this run starts from: clients.RunSourceCheckpoint or {"run_id", "step",
        "uri"}) goes with the open (LedgerClient.open_run)."""
        if plan_usd_micro is not None and defer:
            raise ValueError("plan_usd_micro is reserved at open: it needs the ledger, not defer=True")
        open_args = dict(
            run_key=run_key,
            name=name,
            spec=spec,
            cap_usd_micro=cap_usd_micro,
            parent_account=parent_account,
            max_steps=max_steps,
            objective=objective,
            source_checkpoint=source_checkpoint,
        )
        label = attempt_label if attempt_label is not None else f"{socket.gethostname()}:{os.getpid()}"
        attempt_id = str(uuid.uuid4()) if defer else None
        lease_s = options.get("lease_s")
        open_and_start_args = (open_args, label, resume_from_step, outbox_dir, attempt_id, reopen, lease_s)
        # What an earlier process left unreadable in the outbox is set aside before anything reads it.
        quarantined = {"quarantined": check_outbox(outbox_dir)} if outbox_dir else {}
        sigterm = SigtermStop() if stop_on_sigterm else None
        try:
            recorder = cls._open_or_defer(client, defer, open_and_start_args, quarantined, sigterm, options)
        except BaseException:
            if sigterm is not None:
                sigterm.restore()
            raise
        if plan_usd_micro is not None:
            recorder.hold_plan(plan_usd_micro, basis=plan_basis)
        return recorder

    @classmethod
    def _open_or_defer(
        cls,
        client: LedgerClient,
        defer: bool,
        open_and_start_args: tuple[Any, ...],
        quarantined: Mapping[str, int],
        sigterm: SigtermStop | None,
        options: Any,
    ) -> RunRecorder:
        """The recorder of the attempt `open_and_start` started, or with `defer` and a ledger that
        cannot be reached (not a refusal), one whose attempt a background opener starts."""
        open_args, label, resume_from_step, outbox_dir, attempt_id = open_and_start_args[:5]
        try:
            with first_try(client, defer and resume_from_step != "latest"):
                started, counters = open_and_start(client, *open_and_start_args)
        except LedgerClientError as error:
            if not defer or error.code in REFUSAL_CODES or resume_from_step == "latest":
                raise
            run_key = open_args["run_key"]
            log.warning("the ledger is unreachable (%s); run %s opens in the background", error.reason, run_key)
            pending = dict(attempt_id=attempt_id, run_key=run_key, label=label, resume_from_step=resume_from_step)
            recorder = cls(client, run_id="", attempt=0, outbox_dir=outbox_dir, _pending=pending, **options)
            recorder._add_counters(quarantined)
            recorder._sigterm = sigterm
            recorder._opening.start(recorder._sender, recorder._started, *open_and_start_args)
            return recorder
        run_id = started.state.run.run_id
        recorder = cls(
            client, run_id=run_id, attempt=started.attempt, outbox_dir=outbox_dir, state=started.state, **options
        )
        recorder._sigterm = sigterm
        recorder._add_counters(counters)
        recorder._add_counters(quarantined)
        return recorder

    def _add_counters(self, counters: Mapping[str, int]) -> None:
        with self._lock:
            for name_, value in counters.items():
                self._counters[name_] += value

    def _started(self, started: StartAttemptReceipt, counters: Mapping[str, int]) -> None:
        """A deferred open has started the attempt: record under it from now on."""
        run_id = started.state.run.run_id
        with self._lock:
            self._run_id, self._attempt, self._state = run_id, started.attempt, started.state
            self.account = self.account or run_id
        self._heartbeat.start(run_id, started.attempt)
        self._add_counters(counters)

    @property
    def opened(self) -> bool:
        """True once the run is open and the attempt started (False while a deferred open waits
        for the ledger, or after it was refused: see open_error)."""
        return self._opening.opened.is_set() and self._opening.error is None

    @property
    def open_error(self) -> LedgerClientError | None:
        """The refusal that ended a deferred open, if any."""
        return self._opening.error

    def wait_open(self, timeout_s: float | None = None) -> bool:
        """Wait up to `timeout_s` for a deferred open; True once open. Raises the refusal that
        ended it, if the ledger refused it for good."""
        return self._opening.wait(timeout_s)

    def require_open(self, timeout_s: float = 0.0) -> None:
        """Return once the run is open (waiting up to `timeout_s`); else raise Unavailable
        (RUN_NOT_OPEN), or the refusal that ended a deferred open."""
        if not self.wait_open(timeout_s):
            raise Unavailable(
                "RUN_NOT_OPEN", "the run is not open yet: the ledger has not answered", code=grpc.StatusCode.UNAVAILABLE
            )

    @property
    def run_id(self) -> str:
        return self._run_id

    @property
    def attempt(self) -> int:
        return self._attempt

    @property
    def state(self) -> RunState | None:
        """The last RunState seen (from open, finish or refresh_state)."""
        return self._state

    @property
    def counters(self) -> dict[str, int]:
        """Steps sent, acked, dropped (queue full, out of order, after close), failed (refused by
        the ledger for good), metric values dropped for not being finite (non_finite), and the
        outbox files and batches set aside as unreadable (quarantined: see clients.outbox)."""
        with self._lock:
            counters = dict(self._counters)
        counters["quarantined"] += getattr(self._sender.outbox, "quarantined", 0)
        return counters

    @property
    def last_error(self) -> LedgerClientError | None:
        """The last error the background sender met, for diagnosis."""
        return self._sender.last_error

    def log(self, step: int, *, tokens: int | None = None, usd_micro: int | None = None, **metrics: Any) -> None:
        """Queue one step's record; returns at once, never raises. Non-finite metric values are
        dropped (counted); non-numeric ones are ignored; a full queue drops the step (counted).
        Several at once: log_steps."""
        try:
            if self._system is not None:
                metrics.update(self._system.sample())
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

    def finish(self, status: str = "done", summary: Mapping[str, Any] | None = None, error: str = "") -> FinishReceipt:
        """Flush, stop the sender and finish the run (once; later calls answer the first result).
        A deferred open that is still waiting after `flush_timeout_s` raises Unavailable; what
        was logged stays in the outbox (with an outbox directory, for a later process)."""
        if self._finished is not None:
            return self._finished
        try:
            self.require_open(self.flush_timeout_s)
        except LedgerClientError:
            self.close(flush_timeout_s=0)
            raise
        self.close()
        if not self._sender.is_idle() and self._sender.link.refused is None:
            log.warning("finishing run %s with steps not yet acked: %s", self._run_id, self.counters)
        finished = self.client.finish_run(
            run_id=self._run_id,
            attempt=self._attempt,
            status=status,
            summary=dict(summary or {}),
            error=error[:ERROR_LENGTH_MAX],
        )
        self._finished = finished
        try:
            self.refresh_state(finished.position)
        except LedgerClientError:
            pass
        return finished

    def refresh_state(self, min_position: int = 0) -> RunState:
        """Read the run's state again (as of `min_position` at least) and keep it as `state`."""
        state = self.client.get_run_state(run_id=self._run_id, min_position=min_position)
        self._state = state
        return state

    def close(self, flush_timeout_s: float | None = None) -> None:
        """Stop sending without finishing the run: flush for up to `flush_timeout_s`; what is left
        stays in the outbox (when there is one) for the next recorder of this run."""
        if not self._closed:
            self._closed = True
            self._heartbeat.stop()
            if self._sigterm is not None:
                self._sigterm.restore()
            self._opening.stop()
            if not self.opened or self._sender.link.refused is not None:
                flush_timeout_s = 0  # Nothing can be sent: keep what is held in the outbox.
            self._sender.stop(self.flush_timeout_s if flush_timeout_s is None else flush_timeout_s)
            if not self._sender.thread.is_alive():
                if not self._opening.opened.is_set() and self._sender.is_idle():
                    self._sender.outbox.abandon("")  # A pending attempt with nothing to deliver: forget it.
                self._sender.outbox.close()

    def __enter__(self) -> RunRecorder:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, traceback: Any) -> None:
        """Finish the run: "done", or as exit_status says with the error ("stopped" for a cap
        refusal or an interrupt, "failed" for any other exception)."""
        status = "done" if exc is None else exit_status(exc)
        try:
            self.finish(status, error="" if exc is None else exit_error(exc))
        except LedgerClientError as error:
            if error.code in CREDENTIAL_CODES:
                log.error("%s", self._refused_line(status, error))
            elif exc is None:
                raise
            else:
                log.warning("could not record the run as %s: %s", status, error)

    def _refused_line(self, status: str, error: LedgerClientError) -> str:
        """The one line a run left unfinished because its credentials were refused ends with."""
        path = getattr(self._sender.outbox, "path", "")
        kept = f"kept in the outbox {path} for the next recorder of this run" if path else "lost (no outbox_dir)"
        return (
            f"run {self._run_id} was not recorded as {status}: the ledger refused this client's credentials"
            f" ({error.reason}); a new token is needed (TRAINLEDGER_TOKEN); the steps not yet sent are {kept}"
        )
