"""mlx-lm LoRA/full fine-tuning into the ledger (extra `mlx`: pip install "trainledger[mlx]").

    recorder = RunRecorder.open(client, run_key=..., cap_usd_micro=..., resume_from_step="latest")
    resume = resume_adapter_file(recorder.state, adapter_root="runs/sft")   # None for a fresh run
    ...load the model, apply LoRA, model.load_weights(str(resume), strict=False) when resuming...
    with recorder, LedgerTrainingCallback(recorder, adapter_file=args.adapter_file) as callback:
        mlx_lm.tuner.train(model, optimizer, train_set, val_set, args=args, training_callback=callback)

The recorder's block finishes the run (clients.recorder.exit_status): "done"; "stopped" for a
spend-cap refusal or an interrupt (KeyboardInterrupt; SIGTERM with stop_on_sigterm=True);
"failed" for any other exception; the callback closes first (no final checkpoint after an
exception). A failed or stopped run is resumed only with RunRecorder.open(..., reopen=True).

What lands in the ledger:

- Steps. `on_train_loss_report` is one step record at ``step_offset + iteration``: train_loss as
  ``loss``, learning_rate as ``lr``, and as ``tokens`` the tokens trained since the previous
  report (the ledger's tokens are per step; mlx-lm's trained_tokens is a running total that
  restarts on resume, so the difference is what is sent). iterations_per_second,
  tokens_per_second and peak_memory (as ``peak_memory_gb``) are kept as throughput metrics;
  pass ``throughput=False`` to drop them.
- Eval. `on_val_loss_report` adds ``eval_loss`` (and ``eval_seconds`` with throughput) to the
  step it measured: mlx-lm evaluates before iteration ``it`` and reports ``it - 1``, the model
  after ``it - 1`` updates (step 0 = before training). Eval is sparse: only the steps that have
  it carry it. The callback holds the latest step back until the next report (or a checkpoint,
  or close) so that an eval for that step is merged into the same record; the recorder cannot
  take a step after a later one within an attempt.
- Checkpoints. mlx-lm has no save hook: it writes ``adapters.safetensors`` and
  ``NNNNNNN_adapters.safetensors`` every ``steps_per_save`` iterations, after the report of that
  iteration. On each report (and on close) the callback looks for numbered adapter files it has
  not seen, fsyncs each, and records it as a ``weights`` checkpoint (backend ``mlx``, uri the
  absolute file path, digest its sha256). Files already in the directory when the callback was
  made are ignored unless rewritten. ``close(final=True)`` records the last iteration's weights
  as the final checkpoint (copying adapters.safetensors to its numbered name when
  steps_per_save did not fall on the last iteration). ``record_adapter(path, iteration)`` records
  one file explicitly, for loops that save adapters themselves.

- Scores. The validation loss mlx-lm reports goes with the adapter checkpoint saved after it, as
  its ``val_loss`` score (what BestCheckpoint ranks by, with the run's objective ("val_loss",
  "min")): the latest validation since the previous checkpoint, measured at or before the
  checkpoint's step (mlx-lm evaluates before iteration ``it``, so a save at ``it`` carries the
  loss of the model after ``it - 1`` updates). A non-finite loss is not a score (logged).
- The plan. Pass ``max_steps`` (the run's total iterations) to RunRecorder.open; with ``iters``
  (TrainingArgs.iters of this attempt) the callback makes the run's plan ``step_offset + iters``
  at its first report when the ledger holds another one (OpenRun's max_steps records the change).
- Datasets. ``train_dataset`` / ``val_dataset`` (what is handed to mlx-lm's train(): its
  ChatDataset / CacheDataset are read through to the rows they were made from) are recorded on
  the run at the first report, on a thread of their own (clients.integrations.provenance).

Lineage is given at the open (the callback gets an open run): RunRecorder.open(...,
source_checkpoint=...); source_adapter_file(client, state, adapter_root=...) is its file to load.

Resume is weights-only. mlx-lm saves no optimizer, iteration or LR-schedule state, and a run
given ``resume_adapter_file`` starts again at iteration 1 with a fresh optimizer and schedule.
The ledger keeps steps absolute: the callback adds the attempt's resume point (the checkpoint
step) to every iteration, so attempt 2 resumed from step 6 records its iteration 1 as step 7.
Train ``total_iters - resume_step(state)`` iterations to end where the first attempt would have.
An eval at iteration 0 of a resumed attempt measures the checkpoint itself (step 6 above): the
ledger takes no step at or below an attempt's resume point, so it is skipped (``skipped``).
Numbered adapter files are named by the attempt's own iterations, so give each attempt its own
adapter directory: a resumed attempt writing into the first one's directory would overwrite the
files the first attempt's checkpoints point to (``resume_adapter_file`` checks the digest and
refuses a file that changed). It trusts nothing in the checkpoint's uri: the file must be under
``adapter_root`` (the directory every attempt's adapter directory is in; real paths resolved, so a
`..` or a symlink out of it is refused) and match the digest recorded with it
(``verify_digest=False`` accepts a checkpoint recorded without one).

Ledger errors never reach mlx-lm's loop from a report, except AttemptSuperseded and RunFinished
(this process is a zombie and must stop). A checkpoint that could not be recorded for a
transient reason (Unavailable, DeadlineExceeded) is tried again on a report `retry_after_s`
later (and on close), so an outage costs one stalled report rather than every one. Recording
a checkpoint first flushes the recorder (up to its flush_timeout_s): it is the one place a
report may wait on the ledger.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from clients.errors import AttemptSuperseded, LedgerClientError, RunFinished
from clients.integrations.extras import extra
from clients.integrations.mlx_adapters import (
    NUMBERED_ADAPTER,
    adapter_iteration,
    current_attempt,
    fsync_file,
    resume_adapter_file,
    resume_step,
    source_adapter_file,
)
from clients.integrations.provenance import finite_scores, record_dataset
from clients.integrations.resume import ResumeReason, ResumeRefused
from clients.recorder import RunRecorder

with extra("mlx"):
    from mlx_lm.tuner.callbacks import TrainingCallback
from clients.retry import REFUSAL_CODES
from clients.runkey import file_digest

__all__ = [
    "LedgerTrainingCallback",
    "resume_adapter_file",
    "resume_step",
    "source_adapter_file",
    "adapter_iteration",
    "ResumeRefused",
    "ResumeReason",
    "BACKEND",
    "FIDELITY",
    "SCORE",
    "OBJECTIVE",
]

log = logging.getLogger("trainledger.clients.mlx")

BACKEND = "mlx"
FIDELITY = "weights"
SCORE = "val_loss"
OBJECTIVE = (SCORE, "min")


class LedgerTrainingCallback(TrainingCallback):
    """An mlx-lm TrainingCallback writing steps, eval and adapter checkpoints to a RunRecorder (see
    the module docstring). `adapter_file` is TrainingArgs.adapter_file (its directory is watched
    for numbered adapter files; None records no checkpoints by itself). `step_offset` defaults to
    the attempt's resume point from ``recorder.state`` (read at the first report). A checkpoint
    that could not be recorded for a transient reason is tried again after `retry_after_s`.
    `wrapped_callback` gets every report after the ledger (as mlx-lm's WandBCallback does).
    `iters` (this attempt's TrainingArgs.iters) makes the run's plan step_offset + iters;
    `train_dataset` / `val_dataset` are recorded as the run's datasets (see the module docstring).
    Usable as a context manager: close() on the way out, with the final checkpoint only when no
    exception escaped."""

    def __init__(
        self,
        recorder: RunRecorder,
        adapter_file: str | os.PathLike[str] | None = None,
        *,
        step_offset: int | None = None,
        throughput: bool = True,
        fsync: bool = True,
        wrapped_callback: TrainingCallback | None = None,
        retry_after_s: float = 60.0,
        iters: int | None = None,
        train_dataset: Any = None,
        val_dataset: Any = None,
    ) -> None:
        self.recorder = recorder
        self.iters = iters
        self._datasets = {"train": train_dataset, "eval": val_dataset}
        self._datasets_thread: threading.Thread | None = None
        self._val: tuple[int, dict[str, float]] | None = None  # (step, scores) of the latest validation
        self._offset: tuple[int, int] | None = None  # (step_offset, min_step), read at first use
        self._given_offset = step_offset
        self.throughput = throughput
        self.retry_after_s = retry_after_s
        self.fsync = fsync
        self.wrapped_callback = wrapped_callback
        self.adapter_file = Path(adapter_file).absolute() if adapter_file is not None else None
        self.checkpoints: list[dict[str, Any]] = []  # what was recorded: step, uri, digest, final
        self.skipped = 0  # reports dropped for falling at or below the resume point
        self.last_iteration: int | None = None
        self._tokens_seen = 0
        self._pending: list[Any] | None = None  # [step, tokens, metrics] held for a same-step eval
        self._done: set[str] = set()
        self._existing = self._stat_numbered()
        self._retry_at = 0.0
        self._closed = False

    @property
    def step_offset(self) -> int:
        """What is added to mlx-lm's iterations: the attempt's resume point (0 when fresh)."""
        return self._resolve()[0]

    @property
    def min_step(self) -> int:
        """The first step the ledger takes from this attempt (after its resume point)."""
        return self._resolve()[1]

    def _resolve(self) -> tuple[int, int]:
        # Read from the recorder's state at first use, not at construction, so a recorder whose
        # open completes later (after the callback was made) still gives the right offset.
        if self._offset is None:
            state = self.recorder.state
            attempt = current_attempt(state)
            offset = resume_step(state) if self._given_offset is None else int(self._given_offset)
            from_checkpoint = (attempt is not None and attempt.resumed_from_step is not None) or offset > 0
            self._offset = (offset, offset + 1 if from_checkpoint else 0)
        return self._offset

    # -- mlx-lm hooks ---------------------------------------------------------------------------

    def on_train_loss_report(self, train_info: dict[str, Any]) -> None:
        self._first_report()
        iteration = int(train_info["iteration"])
        total = int(train_info.get("trained_tokens", self._tokens_seen))
        tokens, self._tokens_seen = max(0, total - self._tokens_seen), total
        metrics = {"loss": train_info.get("train_loss"), "lr": train_info.get("learning_rate")}
        if self.throughput:
            metrics.update(
                iterations_per_second=train_info.get("iterations_per_second"),
                tokens_per_second=train_info.get("tokens_per_second"),
                peak_memory_gb=train_info.get("peak_memory"),
            )
        self._add(self.step_offset + iteration, tokens, metrics)
        self.last_iteration = iteration
        # mlx-lm saves iteration N's adapters after N's report: what is there now is older.
        self._record_new(below=iteration, in_loop=True)
        if self.wrapped_callback is not None:
            self.wrapped_callback.on_train_loss_report(train_info)

    def on_val_loss_report(self, val_info: dict[str, Any]) -> None:
        self._first_report()
        metrics = {"eval_loss": val_info.get("val_loss")}
        if self.throughput:
            metrics["eval_seconds"] = val_info.get("val_time")
        step = self.step_offset + int(val_info["iteration"])
        self._add(step, None, metrics)
        if step >= self.min_step:  # Not the resumed-from checkpoint's own loss.
            scores = finite_scores({SCORE: val_info.get("val_loss")}, what=f"the validation at step {step}")
            self._val = (step, scores) if scores else None
        if self.wrapped_callback is not None:
            self.wrapped_callback.on_val_loss_report(val_info)

    # -- checkpoints ----------------------------------------------------------------------------

    def record_adapter(self, path: str | os.PathLike[str], iteration: int, *, final: bool = False) -> dict[str, Any]:
        """Record one adapter file written at `iteration` (this attempt's count) as a weights
        checkpoint at ``step_offset + iteration``: the steps up to it are sent first, the file is
        fsynced and digested. Raises LedgerClientError."""
        path = Path(path).absolute()
        step = self.step_offset + int(iteration)
        if self._pending is not None and self._pending[0] <= step:
            self._emit()  # a later held step stays held: an eval for it may still come
        if self.fsync:
            fsync_file(path)
        digest = file_digest(path)
        scores = None
        if self._val is not None and self._val[0] <= step:
            scores, self._val = self._val[1], None  # One checkpoint's scores: the next has its own.
        self.recorder.checkpoint(step, str(path), BACKEND, FIDELITY, final=final, digest=digest, scores=scores)
        self._done.add(path.name)
        recorded = {"step": step, "uri": str(path), "digest": digest, "final": final, "scores": scores or {}}
        self.checkpoints.append(recorded)
        return recorded

    def record_saved_adapters(self) -> list[dict[str, Any]]:
        """Record every numbered adapter file written since the callback was made and not yet
        recorded, oldest first (call after mlx-lm saved, e.g. once train() returned). Raises
        LedgerClientError."""
        return self._record_new(below=None, in_loop=False)

    def close(self, *, final: bool = True) -> list[dict[str, Any]]:
        """Send the held step, record the adapter files not yet recorded and, with `final`, the
        last iteration's weights as the final checkpoint; then flush. Returns the checkpoints
        recorded by this call. Call once train() has returned. Raises LedgerClientError."""
        if self._closed:
            return []
        self._closed = True
        if self._datasets_thread is not None:
            self._datasets_thread.join(self.recorder.flush_timeout_s)
        self._emit()
        if not final or self.adapter_file is None or self.last_iteration is None:
            recorded = self._record_new(below=None, in_loop=False)
            self.recorder.flush()
            return recorded
        last = self.last_iteration
        recorded = self._record_new(below=last, in_loop=False)
        numbered = self.adapter_file.parent / f"{last:07d}_adapters.safetensors"
        if not self._is_new(numbered):
            # steps_per_save did not fall on the last iteration: keep its weights under the name
            # mlx-lm would have given them, so the checkpoint's uri never changes under it (and
            # never over an older attempt's file of that name).
            if numbered.exists():
                numbered = numbered.with_name(f"{last:07d}_adapters.attempt{self.recorder.attempt}.safetensors")
            temporary = numbered.with_name(numbered.name + ".tmp")
            shutil.copyfile(self.adapter_file, temporary)
            os.replace(temporary, numbered)
        recorded.append(self.record_adapter(numbered, last, final=True))
        self.recorder.flush()
        return recorded

    def __enter__(self) -> LedgerTrainingCallback:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, traceback: Any) -> None:
        if exc is None:
            self.close(final=True)
            return
        try:
            self.close(final=False)
        except LedgerClientError as error:
            log.warning("could not record the last steps and adapters: %s", error)

    # -- internals ------------------------------------------------------------------------------

    def _first_report(self) -> None:
        """At the first report: the run's plan (with `iters`) and its datasets (on a thread)."""
        if self._datasets_thread is not None:
            return
        self._datasets_thread = threading.Thread(target=self._record_datasets, name="trainledger-datasets", daemon=True)
        self._datasets_thread.start()
        if self.iters is not None:
            self._note_plan(self.step_offset + int(self.iters))

    def _record_datasets(self) -> None:
        for role, dataset in self._datasets.items():
            if dataset is not None:
                record_dataset(self.recorder, dataset, role=role)  # logs a failure, never raises

    def _note_plan(self, max_steps: int) -> None:
        """Make the run's plan `max_steps` when the ledger holds another one; a failure is logged."""
        state = self.recorder.state
        progress = getattr(state, "progress", None)
        if state is None or getattr(progress, "max_steps", None) == max_steps:
            return
        try:
            self.recorder.client.open_run(run_key=state.run.run_key, max_steps=max_steps)
        except LedgerClientError as error:
            log.warning("could not record the run's plan of %d steps: %s", max_steps, error)

    def _add(self, step: int, tokens: int | None, metrics: dict[str, Any]) -> None:
        if step < self.min_step:
            self.skipped += 1
            return
        pending = self._pending
        if pending is not None and pending[0] == step:
            pending[1] = tokens if tokens is not None else pending[1]
            pending[2].update(metrics)
            return
        if pending is not None and step < pending[0]:
            self.skipped += 1  # never from mlx-lm; steps within an attempt only increase
            return
        self._emit()
        self._pending = [step, tokens, dict(metrics)]

    def _emit(self) -> None:
        if self._pending is not None:
            step, tokens, metrics = self._pending
            self._pending = None
            # An eval-only step trained no tokens; 0 rather than None, since a batch drops its
            # whole tokens column when any row lacks tokens (clients.codec.batch_from_columns).
            self.recorder.log(step, tokens=tokens or 0, **metrics)

    def _stat_numbered(self) -> dict[str, tuple[int, int]]:
        if self.adapter_file is None or not self.adapter_file.parent.is_dir():
            return {}
        found = {}
        for entry in os.scandir(self.adapter_file.parent):
            if NUMBERED_ADAPTER.match(entry.name) and entry.is_file():
                stat = entry.stat()
                found[entry.name] = (stat.st_mtime_ns, stat.st_size)
        return found

    def _is_new(self, path: Path) -> bool:
        if not path.is_file():
            return False
        stat = path.stat()
        return self._existing.get(path.name) != (stat.st_mtime_ns, stat.st_size)

    def _record_new(self, *, below: int | None, in_loop: bool) -> list[dict[str, Any]]:
        """Record new numbered files with an iteration under `below` (all when None). In the loop
        only a zombie's errors escape; a transient failure is retried on the next call."""
        if self.adapter_file is None or (in_loop and time.monotonic() < self._retry_at):
            return []
        now = self._stat_numbered()
        fresh = sorted(
            (adapter_iteration(name), name)
            for name, stat in now.items()
            if name not in self._done and self._existing.get(name) != stat
        )
        recorded = []
        for iteration, name in fresh:
            assert iteration is not None
            if below is not None and iteration >= below:
                continue
            try:
                recorded.append(self.record_adapter(self.adapter_file.parent / name, iteration))
            except (AttemptSuperseded, RunFinished):
                raise
            except LedgerClientError as error:
                if not in_loop:
                    raise
                log.warning("could not record adapter checkpoint %s: %s", name, error)
                if error.code in REFUSAL_CODES:
                    self._done.add(name)  # refused for good: do not ask again every report
                    continue
                # Transient: keep checkpoints in step order and try again on a report after
                # retry_after_s, so a ledger outage does not stall every report.
                self._retry_at = time.monotonic() + self.retry_after_s
                break
        return recorded
