"""RunRecorder: what a training loop holds. Logging never blocks and never raises; spend is held
before it is spent; checkpoints are recorded after their steps; the run is finished on the way out.

Deferred open (`RunRecorder.open(..., defer=True)`): when the ledger cannot be reached at the
start, training need not wait for it. The recorder logs under a pending attempt (into the outbox,
durable with an outbox directory) and a background thread keeps trying to open the run and start
the attempt; once it answers, the held batches are rewritten with the real attempt number and
sent, exactly once. Spend is never held for a pending attempt: `reserve` raises Unavailable
(fail closed), so a trainer that pays per interval stops rather than trains without a hold.

How a run ends (`exit_status`, the same for every trainer integration): "done" when its block
ends normally, "stopped" when a spend-cap refusal (SpendCapExceeded) or an interrupt
(KeyboardInterrupt; SIGTERM too with `stop_on_sigterm=True`) ends it, "failed" with the error
for any other exception. An ended run is opened again only on purpose: `open` refuses a done run
(it takes no new attempt: use a new run key) and a failed or stopped one unless `reopen=True`
(then a new attempt starts on it), with RunEnded naming the run.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from datetime import datetime
from typing import Any, Literal

import grpc

from clients.attempts import start_attempt
from clients.batcher import Batcher, make_row
from clients.client import LedgerClient
from clients.errors import LedgerClientError, RunEnded, SpendCapExceeded, Unavailable
from clients.models import CheckpointReceipt, FinishReceipt, RunState, StartAttemptReceipt
from clients.outbox import MemoryOutbox, SqliteOutbox, check_outbox, pending_run_id
from clients.retry import REFUSAL_CODES, RetryPolicy
from clients.sender import Sender
from clients.spend import Hold, hold_spend

__all__ = ["RunRecorder", "Hold", "exit_status", "exit_error", "refuse_ended", "ENDED_STATUSES"]

log = logging.getLogger("trainledger.clients")
ERROR_LENGTH_MAX = 2_000
OUTBOX_STEPS_MAX = 1_000_000
ENDED_STATUSES = ("done", "failed", "stopped")
# A deferred open tries the ledger this long in the foreground (and per background try) before
# it leaves the open to the background opener.
DEFERRED_TRY_S = 2.0
_REOPEN = RetryPolicy(initial_backoff_s=0.2, max_backoff_s=5.0)


def exit_status(error: BaseException | None) -> str:
    """The status a run ends with when its training ends with `error`: "done" with none;
    "stopped" for a spend-cap refusal (SpendCapExceeded) or an interrupt (KeyboardInterrupt,
    which a SIGTERM becomes with stop_on_sigterm, SystemExit); "failed" for any other exception."""
    if error is None:
        return "done"
    if isinstance(error, SpendCapExceeded) or not isinstance(error, Exception):
        return "stopped"
    return "failed"


def exit_error(error: BaseException | None) -> str:
    """The error text a run is finished with: "<type>: <message>" ("<type>" when it says
    nothing more), or "" with none."""
    if error is None:
        return ""
    message = str(error)
    return (f"{type(error).__name__}: {message}" if message else type(error).__name__)[:ERROR_LENGTH_MAX]


def refuse_ended(state: RunState | Mapping[str, Any], *, reopen: bool = False) -> None:
    """Raise RunEnded when the RunState's run has ended and may not take a new attempt: a done
    run never does; a failed or stopped one only with `reopen`. (A RunState in its dict form,
    `RunState.to_dict()`, is taken too.)"""
    document = state.to_dict() if isinstance(state, RunState) else state
    status = document["run"]["status"]
    if status == "done" or (status in ENDED_STATUSES and not reopen):
        raise RunEnded.of(document)


class _SigtermStop:
    """SIGTERM as KeyboardInterrupt in the main thread, once: the handler puts the previous one
    back before it raises, so a second SIGTERM does what it did before."""

    def __init__(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            raise ValueError("stop_on_sigterm needs the main thread: Python runs signal handlers there only")
        self._previous = signal.signal(signal.SIGTERM, self._handle)

    def _handle(self, signum: int, frame: Any) -> None:
        self.restore()
        raise KeyboardInterrupt("SIGTERM")

    def restore(self) -> None:
        """Put the previous handler back (from the main thread, and only if ours is still set)."""
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == self._handle:
            signal.signal(signal.SIGTERM, self._previous)


class RunRecorder:
    """Records one attempt of one run. Attach to an attempt that exists with the constructor, or
    open the run and start a new attempt with `RunRecorder.open`. Options: batch_steps_max (steps
    per batch), batch_interval_s (the most a step waits to be batched), queue_steps_max (steps
    queued before log() drops), held_steps_max (steps batched but not yet acked before the queue
    stops draining; default queue_steps_max in memory, a million with an outbox), window (batches
    in flight), ack_timeout_s, flush_timeout_s (flush, finish and close), on_ack (called on the
    sender thread with each StepAck)."""

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
        _pending: Mapping[str, Any] | None = None,
    ) -> None:
        self.client = client
        self.account = account or run_id
        self.flush_timeout_s = flush_timeout_s
        self._run_id, self._attempt, self._state = run_id, attempt, state
        self._lock = threading.Lock()
        self._counters = dict.fromkeys(("sent", "acked", "dropped", "failed", "non_finite", "quarantined"), 0)
        self._opened = threading.Event()
        self._open_error: LedgerClientError | None = None
        self._stop_opening = threading.Event()
        self._opener: threading.Thread | None = None
        if _pending is None:
            self._opened.set()
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
        self._sigterm: _SigtermStop | None = None

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
        background (see the module docstring, `opened`, `wait_open`); "latest" needs the ledger."""
        open_args = dict(
            run_key=run_key, name=name, spec=spec, cap_usd_micro=cap_usd_micro, parent_account=parent_account
        )
        label = attempt_label if attempt_label is not None else f"{socket.gethostname()}:{os.getpid()}"
        attempt_id = str(uuid.uuid4()) if defer else None
        # What an earlier process left unreadable in the outbox is set aside before anything reads it.
        quarantined = {"quarantined": check_outbox(outbox_dir)} if outbox_dir else {}
        sigterm = _SigtermStop() if stop_on_sigterm else None
        try:
            try:
                with _first_try(client, defer and resume_from_step != "latest"):
                    started, counters = _open_and_start(
                        client, open_args, label, resume_from_step, outbox_dir, attempt_id, reopen
                    )
            except LedgerClientError as error:
                if not defer or error.code in REFUSAL_CODES or resume_from_step == "latest":
                    raise
                log.warning("the ledger is unreachable (%s); run %s opens in the background", error.reason, run_key)
                pending = dict(attempt_id=attempt_id, run_key=run_key, label=label, resume_from_step=resume_from_step)
                recorder = cls(client, run_id="", attempt=0, outbox_dir=outbox_dir, _pending=pending, **options)
                recorder._add_counters(quarantined)
                recorder._sigterm = sigterm
                recorder._opener = threading.Thread(
                    target=recorder._open_later,
                    args=(open_args, label, resume_from_step, outbox_dir, attempt_id, reopen),
                    name="trainledger-opener",
                    daemon=True,
                )
                recorder._opener.start()
                return recorder
            run_id = started.state.run.run_id
            recorder = cls(
                client, run_id=run_id, attempt=started.attempt, outbox_dir=outbox_dir, state=started.state, **options
            )
        except BaseException:
            if sigterm is not None:
                sigterm.restore()
            raise
        recorder._sigterm = sigterm
        recorder._add_counters(counters)
        recorder._add_counters(quarantined)
        return recorder

    def _add_counters(self, counters: Mapping[str, int]) -> None:
        with self._lock:
            for name_, value in counters.items():
                self._counters[name_] += value

    def _open_later(
        self,
        open_args: dict[str, Any],
        label: str,
        resume_from_step: int | None,
        outbox_dir: str | os.PathLike[str] | None,
        attempt_id: str,
        reopen: bool,
    ) -> None:
        """The deferred open: retry until the ledger answers, then hand the attempt to the sender."""
        tried = 0
        while not self._stop_opening.wait(_REOPEN.backoff_s(min(tried, 10))):
            tried += 1
            try:
                with _first_try(self.client, True):
                    started, counters = _open_and_start(
                        self.client, open_args, label, resume_from_step, outbox_dir, attempt_id, reopen
                    )
            except LedgerClientError as error:
                if error.code not in REFUSAL_CODES:
                    continue
                log.warning(
                    "the ledger refused to open run %s: %s; its steps will not be recorded", open_args["run_key"], error
                )
                self._open_error = error
                self._sender.abandon(error.reason)
                self._opened.set()
                return
            except Exception:  # The opener must outlive its own bugs: log, try again later.
                log.exception("the trainledger recorder's opener failed; retrying")
                continue
            run_id = started.state.run.run_id
            adopted = self._sender.adopt(run_id, started.attempt)
            while not adopted.wait(0.5) and self._sender.thread.is_alive():
                pass
            with self._lock:
                self._run_id, self._attempt, self._state = run_id, started.attempt, started.state
                self.account = self.account or run_id
            self._add_counters(counters)
            log.info("run %s opened: attempt %s", run_id, started.attempt)
            self._opened.set()
            return

    @property
    def opened(self) -> bool:
        """True once the run is open and the attempt started (False while a deferred open waits
        for the ledger, or after it was refused: see open_error)."""
        return self._opened.is_set() and self._open_error is None

    @property
    def open_error(self) -> LedgerClientError | None:
        """The refusal that ended a deferred open, if any."""
        return self._open_error

    def wait_open(self, timeout_s: float | None = None) -> bool:
        """Wait up to `timeout_s` for a deferred open; True once open. Raises the refusal that
        ended it, if the ledger refused it for good."""
        self._opened.wait(timeout_s)
        if self._open_error is not None:
            raise self._open_error
        return self._opened.is_set()

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
    def reserve(
        self,
        amount_usd_micro: int,
        *,
        basis: Mapping[str, Any] | None = None,
        ttl_s: float | None = None,
        reservation_id: str | None = None,
    ) -> Iterator[Hold]:
        """Hold spend for a billable call (see clients.spend.hold_spend): blocks for the hold, raises
        SpendCapExceeded when refused and Unavailable when the ledger cannot be reached within the
        client's outage budget (outage_budget_s): no hold, so no billable call."""
        self.require_open()
        with hold_spend(
            self.client,
            account=self.account,
            amount_usd_micro=amount_usd_micro,
            basis=basis,
            ttl_s=ttl_s,
            attempt=self._attempt,
            reservation_id=reservation_id,
        ) as hold:
            yield hold

    def checkpoint(
        self,
        step: int,
        uri: str,
        backend: str,
        fidelity: str = "weights",
        *,
        sampler_uri: str = "",
        final: bool = False,
        expires_at: datetime | None = None,
        digest: str = "",
    ) -> CheckpointReceipt:
        """Record a durable checkpoint after flushing the steps logged before it. Raises
        LedgerClientError when it cannot be recorded (Unavailable while a deferred open still
        waits for the ledger after `flush_timeout_s`)."""
        self.require_open(self.flush_timeout_s)
        self.flush()
        return self.client.save_checkpoint(
            run_id=self._run_id,
            attempt=self._attempt,
            step=step,
            uri=uri,
            backend=backend,
            fidelity=fidelity,
            sampler_uri=sampler_uri,
            final=final,
            expires_at=expires_at,
            digest=digest,
        )

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
        if not self._sender.is_idle():
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
            if self._sigterm is not None:
                self._sigterm.restore()
            self._stop_opening.set()
            if self._opener is not None and self._opener is not threading.current_thread():
                self._opener.join(timeout=self.client.timeout_s if hasattr(self.client, "timeout_s") else 10.0)
            if not self.opened:
                flush_timeout_s = 0  # Nothing can be sent: keep what is held in the outbox.
            self._sender.stop(self.flush_timeout_s if flush_timeout_s is None else flush_timeout_s)
            if not self._sender.thread.is_alive():
                if not self._opened.is_set() and self._sender.is_idle():
                    self._sender.outbox.abandon("")  # A pending attempt with nothing to deliver: forget it.
                self._sender.outbox.close()

    def __enter__(self) -> RunRecorder:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, traceback: Any) -> None:
        """Finish the run: "done", or as exit_status says with the error ("stopped" for a cap
        refusal or an interrupt, "failed" for any other exception)."""
        if exc is None:
            self.finish("done")
            return
        status = exit_status(exc)
        try:
            self.finish(status, error=exit_error(exc))
        except LedgerClientError as error:
            log.warning("could not record the run as %s: %s", status, error)


def _first_try(client: Any, short: bool) -> Any:
    """Within it, a deferred open's calls ride out an outage for DEFERRED_TRY_S at most (the
    background opener tries again), not the client's whole outage budget."""
    if not short or not hasattr(client, "retrying"):
        return nullcontext()
    return client.retrying(outage_budget_s=min(DEFERRED_TRY_S, getattr(client, "outage_budget_s", DEFERRED_TRY_S)))


def _open_and_start(
    client: Any,
    open_args: dict[str, Any],
    label: str,
    resume_from_step: Any,
    outbox_dir: Any,
    attempt_id: str | None,
    reopen: bool = False,
) -> tuple[StartAttemptReceipt, dict[str, int]]:
    """OpenRun, the ended-run check, then the outbox replay and StartAttempt
    (clients.attempts.start_attempt)."""
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
    )
