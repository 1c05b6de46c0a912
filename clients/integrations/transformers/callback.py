"""LedgerCallback: a Transformers/TRL Trainer's run, steps, checkpoints and GPU spend in the ledger
(see clients.integrations.transformers for what it records and how it resumes). The callback opens
and finishes the run and routes the trainer's events; what a step record holds is in steps, the
holds of GPU time in spend, the background checkpoint and dataset records in jobs, what a dataset
record and a checkpoint's scores hold in clients.integrations.provenance."""

from __future__ import annotations

import logging
import os
import socket
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clients.client import LedgerClient
from clients.errors import LedgerClientError
from clients.integrations.extras import extra
from clients.integrations.pricing import GpuPrice
from clients.integrations.provenance import DatasetRecord, describe_dataset, finite_scores
from clients.integrations.resume import ResumeReason, ResumeRefused
from clients.integrations.transformers.checkpoints import (
    CLIENT_RETRIES,
    FIDELITY_FULL,
    FIDELITY_WEIGHTS,
)
from clients.integrations.transformers.jobs import Jobs, record_checkpoint
from clients.integrations.transformers.plan import objective_from_args, planned_steps
from clients.integrations.transformers.resuming import ResumeHelper
from clients.integrations.transformers.spec import check_spec, training_run_key
from clients.integrations.transformers.spend import Spend, SpendHoldRefused
from clients.integrations.transformers.steps import StepRows
from clients.recorder import RunRecorder, exit_error, exit_status
from clients.system import SYSTEM_PERIOD_S
from clients.tls import TLS
from trainledger.text import usd_text

with extra("trl"):
    from transformers import TrainerCallback

__all__ = ["LedgerCallback", "LedgerCallbackWarning"]

log = logging.getLogger("trainledger.clients.transformers")


class LedgerCallbackWarning(UserWarning):
    """Something about the ledger callback's use that loses data silently."""


class LedgerCallback(ResumeHelper, TrainerCallback):
    """Records a Trainer's run in the ledger (see the module docstring). Give `address` (a client
    is made, and closed at the end; its calls ride out a ledger outage of `outage_budget_s`, 30 s
    by default; `token` and `tls` as LedgerClient's, from TRAINLEDGER_TOKEN and the TLS variables
    of clients.tls when not given) or `client`; `spec` (spec_for) or `run_key` (then `name`).
    Spend: `gpu_price` (GpuPrice), `cap_usd_micro` (given on every open: it sets the cap of a new
    run and changes an existing one's), `parent_account`, `interval_s` / `interval_steps`.
    `outbox_dir` keeps unsent steps on disk across an outage and a crash. `output_dir`: the
    trainer's output directory, which resume_checkpoint() holds the checkpoint to (default: the
    args.output_dir of the trainer the callback is given to). `reopen=True` lets a
    failed or stopped run take a new attempt (else RunEnded). Use `with callback:` around
    trainer.train() so that an exception ends the run "failed" (an interrupt "stopped").
    `recorder_options` go to RunRecorder.open (batch_interval_s, flush_timeout_s, stop_on_sigterm,
    system_metrics_s: every 15 s unless given, None for none ...).
    `check_spec` refuses (SpecMismatch) a spec whose LoRA shape or hyperparameters differ from
    the trainer's. `count_tokens` turns on the trainer's token count (args.include_num_input_tokens_seen
    "non_padding") when it is off, so steps carry tokens. `objective` ((metric, "min" | "max"))
    is the run's objective when args.metric_for_best_model does not name one. `train_dataset` /
    `eval_dataset`: the rows handed to the trainer, recorded as the run's datasets (default: the
    datasets the trainer's dataloaders read, as the trainer prepared them), with
    `train_source_uri` / `eval_source_uri`; `record_datasets=False` records none.
    `source_checkpoint` (clients.RunSourceCheckpoint or {"run_id", "step", "uri"}): the checkpoint
    of another run this training starts from, recorded as the run's source when it is opened.
    Only the world's process zero records."""

    def __init__(
        self,
        *,
        address: str | None = None,
        client: LedgerClient | None = None,
        spec: Mapping[str, Any] | None = None,
        run_key: str | None = None,
        name: str = "",
        gpu_price: GpuPrice | None = None,
        cap_usd_micro: int | None = None,
        parent_account: str = "",
        outbox_dir: str | os.PathLike[str] | None = None,
        output_dir: str | os.PathLike[str] | None = None,
        interval_s: float = 60.0,
        interval_steps: int | None = None,
        attempt_label: str | None = None,
        principal: str = "",
        token: str | None = None,
        tls: bool | TLS | None = None,
        check_spec: bool = True,
        count_tokens: bool = True,
        reopen: bool = False,
        outage_budget_s: float | None = None,
        recorder_options: Mapping[str, Any] | None = None,
        objective: tuple[str, str] | None = None,
        train_dataset: Any = None,
        eval_dataset: Any = None,
        train_source_uri: str = "",
        eval_source_uri: str = "",
        record_datasets: bool = True,
        source_checkpoint: Any = None,
    ) -> None:
        if (address is None) == (client is None):
            raise TypeError("LedgerCallback needs exactly one of address= and client=")
        if spec is None and run_key is None:
            raise TypeError("LedgerCallback needs spec= (see spec_for) or run_key=")
        if gpu_price is not None and not isinstance(gpu_price, GpuPrice):
            raise TypeError("gpu_price must be a clients.integrations.pricing.GpuPrice")
        if interval_s <= 0 or (interval_steps is not None and interval_steps < 1):
            raise ValueError("interval_s must be > 0 and interval_steps >= 1")
        self.address, self.spec = address, dict(spec) if spec is not None else None
        self.run_key = run_key or training_run_key(self.spec)
        self.name = name or str((self.spec or {}).get("name", "")) or self.run_key
        self.gpu_price, self.cap_usd_micro, self.parent_account = gpu_price, cap_usd_micro, parent_account
        self.outbox_dir, self.interval_s, self.interval_steps = outbox_dir, float(interval_s), interval_steps
        self.output_dir = output_dir
        self._trainer_output_dir: str | None = None  # args.output_dir of the trainer it was given to
        self._unchecked: str | None = None  # a resume path not yet held to an output directory
        self.attempt_label, self.principal, self.check_spec = attempt_label, principal, check_spec
        self._token, self.tls = token, tls  # For the client made for `address` (None: the environment's).
        self.count_tokens, self.reopen, self.outage_budget_s = count_tokens, reopen, outage_budget_s
        # GPU jobs record system metrics (clients.system) unless told otherwise, as W&B users expect.
        self.recorder_options = {"system_metrics_s": SYSTEM_PERIOD_S, **(recorder_options or {})}
        if source_checkpoint is not None:  # The run's lineage, given with its open.
            self.recorder_options["source_checkpoint"] = source_checkpoint
        self.objective = objective
        self.datasets: dict[str, Any] = {"train": train_dataset, "eval": eval_dataset}
        self.source_uris = {"train": train_source_uri, "eval": eval_source_uri}
        self.record_datasets = record_datasets
        self.recorded_datasets: dict[str, DatasetRecord] = {}  # role -> what was sent, by the job thread
        self._client, self._owns_client = client, client is None
        self.recorder: RunRecorder | None = None
        self._warned = False
        self._reset()

    def _reset(self) -> None:
        self._active = False
        self._steps = StepRows()
        self._jobs: Jobs | None = None
        self._spend: Spend | None = None  # GPU spend, with gpu_price
        self._trainer_state: Any = None  # the TrainerState of this train() (one object, updated in place)
        self._scores: dict[str, float] | None = None  # of the evaluation since the last save
        self._datasets_queued: set[str] = set()  # the roles whose record is queued in this train()

    def _get_client(self) -> LedgerClient:
        if self._client is None:
            self._client = LedgerClient(
                str(self.address),
                principal=self.principal,
                token=self._token,
                tls=self.tls,
                timeout_s=10.0,
                retries=CLIENT_RETRIES,
                outage_budget_s=self.outage_budget_s,
            )
        return self._client

    # -- the way out of train() --

    def __enter__(self) -> LedgerCallback:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, traceback: Any) -> None:
        """After trainer.train(): when it raised, end the attempt it left open as exit_status says
        ("failed", or "stopped" for an interrupt), after its steps and checkpoints."""
        if exc is not None and self._active and self._trainer_state is not None:
            self._end(self._trainer_state, error=exc)
        elif self._owns_client and self._client is not None and not self._active:
            self._client.close()
            self._client = None

    # -- trainer events --

    def on_init_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._trainer_output_dir = getattr(args, "output_dir", None)
        self._hold_to_output_dir(args)

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        self._hold_to_output_dir(args)  # A callback added after the trainer was built saw no on_init_end.
        if self.recorder is not None and self._active:  # An earlier train() that raised: its attempt ends here.
            if self._jobs is not None:
                self._jobs.close(0)
            self.recorder.close(flush_timeout_s=5.0)
        self._reset()
        if self.count_tokens and getattr(args, "include_num_input_tokens_seen", "all") in ("no", False):
            args.include_num_input_tokens_seen = "non_padding"  # Every rank: the count is gathered.
        if not state.is_world_process_zero:
            return
        self._trainer_state = state
        if self.check_spec and self.spec is not None:
            check_spec(self.spec, args, model)
        resume_from = state.global_step if state.global_step > 0 else None
        label = self.attempt_label or f"{socket.gethostname()}:{os.getpid()}"
        try:
            self.recorder = self._open_recorder(args, state, label, resume_from)
        except LedgerClientError as error:
            if error.reason not in ("CHECKPOINT_NOT_FOUND", "CHECKPOINT_EXPIRED"):
                raise
            raise ResumeRefused(
                ResumeReason.CHECKPOINT_UNKNOWN,
                f"the trainer resumed at step {resume_from}, but "
                f"the ledger has no live checkpoint there ({error.reason}): resume from "
                "resume_checkpoint()'s path",
            ) from error
        self._active = True
        held = self.recorder.state
        held_cap = held.spend.cap_usd_micro if held is not None else None
        if held is not None and self.cap_usd_micro is not None and held_cap != self.cap_usd_micro:
            log.warning(
                "run %s has a cap of %s, not the %s given: this ledger did not change it on open (set_cap does)",
                self.run_key,
                "none" if held_cap is None else usd_text(held_cap),
                usd_text(self.cap_usd_micro),
            )
        self._steps.logs_at_begin = len(state.log_history)
        self._jobs = Jobs()
        self._queue_dataset("train", kwargs.get("train_dataloader"))
        if self.datasets["eval"] is not None:
            self._queue_dataset("eval", None)
        if self.gpu_price is not None:
            self._spend = Spend(
                self.recorder,
                self.gpu_price,
                interval_s=self.interval_s,
                interval_steps=self.interval_steps,
                run_key=self.run_key,
            )
            try:
                self._spend.start(state, self._jobs)
            except SpendHoldRefused:
                self._active = False
                raise

    def _open_recorder(self, args: Any, state: Any, label: str, resume_from: int | None) -> RunRecorder:
        """RunRecorder.open for this train(): the plan and the objective go with it. The objective
        is provenance: a run that holds none (opened before one was named, by resume_checkpoint()
        or an older trainer) or another one is opened without it, with a warning, rather than
        refused: it never stops training (OBJECTIVE_DIFFERS)."""
        objective = objective_from_args(args) or self.objective
        options: dict[str, Any] = dict(
            run_key=self.run_key,
            name=self.name,
            spec=self.spec,
            cap_usd_micro=self.cap_usd_micro,
            parent_account=self.parent_account,
            attempt_label=label,
            resume_from_step=resume_from,
            outbox_dir=self.outbox_dir,
            defer=True,
            reopen=self.reopen,
            max_steps=planned_steps(args, state),
            **self.recorder_options,
        )
        try:
            return RunRecorder.open(self._get_client(), objective=objective, **options)
        except LedgerClientError as error:
            if error.reason != "OBJECTIVE_DIFFERS":
                raise
            held = error.metadata.get("metric") or "none"
            log.warning("run %s keeps its objective (%s), not %s: %s", self.run_key, held, objective, error.message)
            return RunRecorder.open(self._get_client(), objective=None, **options)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._active:
            steps = self._steps
            if steps.row is not None:
                steps.step_over(self.recorder)
            if not steps.points and not self._warned:  # Once a point is recorded there is nothing to warn of.
                self._check_points(state)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._active and self._spend is not None and self._spend.meter is not None:
            self._spend.next_interval(state, control)

    def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        if not self._active or not logs:
            return
        try:
            self._steps.add(logs, state, self.recorder)
        except Exception:  # noqa: BLE001 - logging never raises into the training loop.
            log.exception("could not record a log of step %s", getattr(state, "global_step", "?"))

    def on_evaluate(
        self, args: Any, state: Any, control: Any, metrics: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> None:
        """Keep the evaluation's scores for the next save; record the eval dataset (once)."""
        if not self._active:
            return
        self._scores = finite_scores(metrics, what=f"the evaluation at step {state.global_step}")
        self._queue_dataset("eval", kwargs.get("eval_dataloader"))

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not self._active:
            return
        self._steps.send(self.recorder)
        self._check_points(state)
        step = state.global_step
        path = Path(args.output_dir) / f"checkpoint-{step}"
        if not path.is_dir():
            log.warning("on_save at step %s but %s is not there: the checkpoint is not recorded", step, path)
            return
        fidelity = FIDELITY_WEIGHTS if getattr(args, "save_only_model", False) else FIDELITY_FULL
        recorder = self.recorder
        assert recorder is not None and self._jobs is not None
        # The scores of the evaluation that came before this save, since the last one (none: no
        # evaluation in between; a checkpoint is never given the scores of another).
        scores, self._scores = self._scores or None, None
        self._jobs.submit(
            f"the checkpoint at step {step}", lambda: record_checkpoint(recorder, step, path, fidelity, scores)
        )

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._active:
            self._end(state)

    def _end(self, state: Any, error: BaseException | None = None) -> None:
        """Finish the attempt: "done" (or "stopped" after a spend stop) from on_train_end; as
        exit_status says, with the error, when train() raised."""
        self._active = False
        recorder = self.recorder
        assert recorder is not None and self._jobs is not None
        stop_reason = self._spend.stop_reason if self._spend is not None else None
        try:
            self._steps.send(recorder)
            if error is None:
                self._check_points(state, ended=True)
            if self._spend is not None:
                self._spend.stop()
            timeout_s = recorder.flush_timeout_s
            if not self._jobs.close(timeout_s):
                log.warning("some checkpoints of run %s could not be recorded in %s s", self.run_key, timeout_s)
            summary = self._steps.run_summary(state.global_step, recorder.attempt)
            if stop_reason:
                summary["stop_reason"] = stop_reason
            if error is not None:
                recorder.finish(exit_status(error), summary=summary, error=exit_error(error))
            else:
                recorder.finish("stopped" if stop_reason else "done", summary=summary)
        except LedgerClientError as error:
            log.warning(
                "could not finish run %s in the ledger (%s); unsent steps stay in the outbox", self.run_key, error
            )
            recorder.close(flush_timeout_s=0)
        except Exception:  # noqa: BLE001 - never into the trainer.
            log.exception("the ledger callback failed to finish run %s", self.run_key)
            recorder.close(flush_timeout_s=0)
        finally:
            if self._owns_client and self._client is not None:
                self._client.close()
                self._client = None

    # -- datasets --

    def _queue_dataset(self, role: str, dataloader: Any) -> None:
        """Queue the record of the `role` dataset (the one given, else `dataloader`'s) on the job
        thread, once per train(): digesting it never holds the training loop up, and a failure is
        logged there (a resumed attempt records it again: the ledger answers a duplicate)."""
        if not self.record_datasets or role in self._datasets_queued or self._jobs is None:
            return
        dataset = self.datasets[role]
        if dataset is None:
            dataset = getattr(dataloader, "dataset", None)
        if dataset is None:
            return
        self._datasets_queued.add(role)
        recorder, source_uri = self.recorder, self.source_uris[role]
        assert recorder is not None
        described: list[DatasetRecord] = []

        def record() -> None:
            if not described:  # Read once, even when the ledger has to be asked again.
                described.append(describe_dataset(dataset, role=role, source_uri=source_uri))
            recorder.record_dataset(**described[0].arguments())
            self.recorded_datasets[role] = described[0]

        self._jobs.submit(f"the {role} dataset", record)

    # -- steps --

    def _check_points(self, state: Any, *, ended: bool = False) -> None:
        """Warn once when the trainer has logged but this callback recorded no point (an on_log
        override that does not call super().on_log(), for one)."""
        if self._warned:
            return
        logged = self._steps.unrecorded(state, ended=ended)
        if logged > 0:
            self._warned = True
            warnings.warn(
                f"{type(self).__name__} has recorded no point although the trainer logged {logged} "
                "time(s): does its on_log call super().on_log()?",
                LedgerCallbackWarning,
                stacklevel=3,
            )
