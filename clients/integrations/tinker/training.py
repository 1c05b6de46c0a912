"""A Tinker TrainingClient recorded as one attempt of a ledger run: every billable call holds its
projected cost first, one ledger step per optimizer step, checkpoints with their tinker:// paths
and TTLs, the attempt's Tinker session linked to the run (link_session), and the run finished as
the `with` block ends (see clients.integrations.tinker). Evaluations (evaluate(): a forward pass,
priced as prefill) give the next checkpoint its scores, "eval_loss"; datasets handed to it are
recorded on the run (clients.integrations.provenance)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

import tinker
from tinker import types

from clients.errors import AttemptSuperseded, LedgerClientError, RunFinished
from clients.integrations.provenance import DatasetRecord, finite_scores
from clients.integrations.provenance import record_dataset as record_dataset_on
from clients.integrations.tinker.checkpoints import TrainingCheckpoints
from clients.integrations.tinker.common import (
    BACKEND,
    METADATA_RUN_ID,
    METADATA_RUN_KEY,
    RESERVED_LOG_NAMES,
    PriceSheets,
    loss_weight,
    merge_metrics,
    sheet_for,
)
from clients.integrations.tinker.futures import LedgeredFuture, OpenHold, Settler, Spend
from clients.integrations.tinker.sampling import LedgeredSamplingClient
from clients.models import FinishReceipt, LinkSessionReceipt
from clients.recorder import RunRecorder, exit_error, exit_status

__all__ = ["LedgeredTrainingClient"]

log = logging.getLogger("trainledger.clients.tinker")


class LedgeredTrainingClient(TrainingCheckpoints, Settler):
    """A Tinker TrainingClient recorded as one attempt of a ledger run. The plain clients are
    `training_client` and `service_client`; calls made on them directly are not ledgered."""

    def __init__(
        self,
        *,
        service_client: tinker.ServiceClient,
        training_client: tinker.TrainingClient,
        recorder: RunRecorder,
        prices: PriceSheets,
        base_model: str,
        optim_step_usd_micro: int = 0,
        hold_ttl_s: float | None = None,
        start_step: int = 0,
        resumed_from_step: int | None = None,
        run_key: str = "",
    ) -> None:
        super().__init__(ordered=True)
        self.service_client, self.training_client, self.recorder = service_client, training_client, recorder
        self.base_model, self.run_key = base_model, run_key
        self.prices = sheet_for(prices, base_model)
        self._spend = Spend(recorder, prices, optim_step_usd_micro=optim_step_usd_micro, hold_ttl_s=hold_ttl_s)
        self._step, self._submitted_steps = start_step, start_step
        self.resumed_from_step = resumed_from_step
        self._tokens, self._loss_weight = 0, 0.0
        self._metrics: dict[str, tuple[str, float, int]] = {}
        self._checkpoints: dict[int, str] = {}  # step -> "state" | "sampler", recorded by this attempt
        self._finished: FinishReceipt | None = None
        self._scores: dict[str, float] = {}  # of the evaluations since the last checkpoint
        self._submit_lock = threading.Lock()
        self.link: LinkSessionReceipt | None = None  # the ledger's answer to link_session()

    @property
    def run_id(self) -> str:
        return self.recorder.run_id

    @property
    def attempt(self) -> int:
        return self.recorder.attempt

    @property
    def step(self) -> int:
        """Optimizer steps done (settled), counted from the run's start."""
        return self._step

    @property
    def session_id(self) -> str:
        """The Tinker session of this attempt ("" when it cannot be read)."""
        return self._session_id()

    def link_session(self) -> LinkSessionReceipt | None:
        """Link the run to this attempt's Tinker session on the ledger (Runs.LinkSession), so that
        Tinker's bill lines of the session are the run's even when they carry no run id. The
        service client calls it as soon as the attempt and the session exist (a new run's and a
        resumed run's). A failure is logged and answered None, never raised into training, except
        AttemptSuperseded and RunFinished: this attempt may no longer train."""
        session_id = self._session_id()
        if not session_id:
            log.warning("run %s: no Tinker session id to link", self.run_id)
            return None
        try:
            self.link = self.recorder.client.link_session(
                run_id=self.run_id, provider=BACKEND, session_id=session_id, attempt=self.attempt
            )
        except (AttemptSuperseded, RunFinished):
            raise
        except LedgerClientError as error:
            log.warning("could not link run %s to Tinker session %s: %s", self.run_id, session_id, error)
            return None
        return self.link

    # Billable calls.
    def forward_backward(
        self,
        data: Iterable[types.Datum],
        loss_fn: types.LossFnType,
        loss_fn_config: Mapping[str, float | str] | None = None,
    ) -> LedgeredFuture[types.ForwardBackwardOutput]:
        data = list(data)
        usage = {"train": sum(datum.model_input.length for datum in data)}
        weight = sum(loss_weight(datum) for datum in data)
        hold = self._spend.hold(self.prices.amount(usage), self.prices.basis(usage))

        def settle(output: types.ForwardBackwardOutput) -> types.ForwardBackwardOutput:
            hold.commit(self.prices.amount(usage), self.prices.basis(usage))
            self._tokens += usage["train"]
            self._loss_weight += weight
            merge_metrics(self._metrics, output.metrics)
            return output

        return self._submit(
            "forward_backward",
            hold,
            settle,
            lambda: self.training_client.forward_backward(data, loss_fn, loss_fn_config),
        )

    def forward(
        self,
        data: Iterable[types.Datum],
        loss_fn: types.LossFnType,
        loss_fn_config: Mapping[str, float | str] | None = None,
    ) -> LedgeredFuture[types.ForwardBackwardOutput]:
        """A forward pass only, priced as prefill of its input tokens."""
        return self._forward(list(data), loss_fn, loss_fn_config, None)

    def _forward(
        self,
        data: list[types.Datum],
        loss_fn: types.LossFnType,
        loss_fn_config: Mapping[str, float | str] | None,
        note: Callable[[types.ForwardBackwardOutput], None] | None,
    ) -> LedgeredFuture[types.ForwardBackwardOutput]:
        usage = {"prefill": sum(datum.model_input.length for datum in data)}
        hold = self._spend.hold(self.prices.amount(usage), self.prices.basis(usage))

        def settle(output: types.ForwardBackwardOutput) -> types.ForwardBackwardOutput:
            hold.commit(self.prices.amount(usage), self.prices.basis(usage))
            if note is not None:
                note(output)
            return output

        return self._submit(
            "forward", hold, settle, lambda: self.training_client.forward(data, loss_fn, loss_fn_config)
        )

    def evaluate(
        self,
        data: Iterable[types.Datum],
        loss_fn: types.LossFnType = "cross_entropy",
        loss_fn_config: Mapping[str, float | str] | None = None,
        *,
        name: str = "eval_loss",
    ) -> LedgeredFuture[types.ForwardBackwardOutput]:
        """A forward pass over held-out `data` (priced as forward()), whose loss (loss:sum over
        the loss-weighted target tokens) is the score `name` of the next checkpoint saved."""
        data = list(data)
        weight = sum(loss_weight(datum) for datum in data)

        def note(output: types.ForwardBackwardOutput) -> None:
            total = (output.metrics or {}).get("loss:sum")
            if total is not None and weight > 0:
                self._scores.update(finite_scores({name: float(total) / weight}, what=f"step {self._step}"))

        return self._forward(data, loss_fn, loss_fn_config, note)

    def record_dataset(
        self, rows: Iterable[Mapping[str, Any]], *, role: str = "train", source_uri: str = "", format: str | None = None
    ) -> DatasetRecord | None:
        """Record a dataset this run trains ("train") or evaluates ("eval") on: its rows' digest,
        count, format (guessed from the columns unless given) and a report. A failure is logged
        and answered None, never raised into training."""
        return record_dataset_on(self.recorder, rows, role=role, source_uri=source_uri, format=format)

    def optim_step(
        self, optim_params: types.OptimParams | None = None, *, adam_params: types.AdamParams | None = None
    ) -> LedgeredFuture[types.OptimStepResponse]:
        """One optimizer step; its result records one ledger step."""
        amount, basis = self._spend.optim_step_usd_micro, self.prices.basis({})
        hold = self._spend.hold(amount, basis)
        params = optim_params or adam_params
        learning_rate = getattr(params, "learning_rate", None)

        def settle(response: types.OptimStepResponse) -> types.OptimStepResponse:
            hold.commit(amount, basis)
            self._step += 1
            self._log_step(learning_rate, response.metrics or {})
            return response

        def fail(error: BaseException) -> None:
            self._submitted_steps -= 1
            hold.release(error)

        self._submitted_steps += 1
        return self._submit(
            "optim_step",
            hold,
            settle,
            lambda: self.training_client.optim_step(optim_params, adam_params=adam_params),
            fail,
        )

    # Sampling.
    def create_sampling_client(
        self, model_path: str | None = None, *, base_model: str | None = None, **options: Any
    ) -> LedgeredSamplingClient:
        """A ledgered SamplingClient for saved weights (model_path) or a base model."""
        sampling = self.service_client.create_sampling_client(
            model_path=model_path, base_model=base_model, **options
        ).result()
        return LedgeredSamplingClient(sampling, self._spend, base_model or self.base_model)

    def save_weights_and_get_sampling_client(self, **options: Any) -> LedgeredSamplingClient:
        sampling = self.training_client.save_weights_and_get_sampling_client(**options).result()
        return LedgeredSamplingClient(sampling, self._spend, self.base_model)

    def get_info(self) -> types.GetInfoResponse:
        return self.training_client.get_info()

    def get_tokenizer(self) -> Any:
        return self.training_client.get_tokenizer()

    # Lifecycle.
    def finish(self, status: str = "done", summary: Mapping[str, Any] | None = None, error: str = "") -> FinishReceipt:
        """Settle every pending call, finish the ledger run and close the Tinker session (once)."""
        if self._finished is not None:
            return self._finished
        for failure in self._settle_everything():
            log.warning("a call failed and nobody asked for its result: %r", failure)
        self._spend.retry_deferred()
        info = {"steps": self._step, "tinker_session_id": self._session_id()}
        try:
            self._finished = self.recorder.finish(status, summary={**info, **(summary or {})}, error=error)
        finally:
            reason: Literal["success", "errored", "interrupted"] = (
                "success" if status == "done" else "interrupted" if status == "stopped" else "errored"
            )
            self.service_client.close(reason, detail=error or None).result()
        return self._finished

    def close(self, settle_timeout_s: float | None = 30.0) -> None:
        """Stop without finishing the run (what a preempted job does): settle the calls already
        sent (their spend is committed) for up to `settle_timeout_s`, stop the recorder and close
        the Tinker session. A hold left unsettled expires on the ledger."""
        try:
            for failure in self._settle_everything(settle_timeout_s):
                log.warning("a call failed and nobody asked for its result: %r", failure)
        except TimeoutError:
            log.warning("closing with calls still in flight; their holds expire on the ledger")
        finally:
            self.recorder.close()
            self.service_client.close("interrupted").result()

    def __enter__(self) -> LedgeredTrainingClient:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, traceback: Any) -> None:
        """Finish the run as clients.recorder.exit_status says: "done"; "stopped" for a cap
        refusal or an interrupt; "failed" for any other exception."""
        if exc is None:
            self.finish("done")
            return
        status = exit_status(exc)
        try:
            self.finish(status, error=exit_error(exc))
        except LedgerClientError as error:
            log.warning("could not record the run as %s: %s", status, error)

    # Internals.
    def _settle_everything(self, timeout: float | None = None) -> list[BaseException]:
        errors = self.settle_all(timeout)
        for future in list(self._spend.loose):
            try:
                future.result(timeout)
            except TimeoutError:
                raise
            except Exception as failure:  # noqa: BLE001 - reported, not raised, at finish.
                errors.append(failure)
        return errors

    def _submit(
        self,
        kind: str,
        hold: OpenHold | None,
        settle: Callable[[Any], Any],
        call: Callable[[], Any],
        fail: Callable[[BaseException], None] | None = None,
    ) -> LedgeredFuture[Any]:
        fail = fail or (hold.release if hold is not None else (lambda error: None))
        with self._submit_lock:  # The pending futures keep the order Tinker got the calls in.
            try:
                future = call()
            except Exception as error:
                fail(error)
                raise
            return self.add(LedgeredFuture(kind, future.result, settle, fail, self))

    def _metadata(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        return {METADATA_RUN_ID: self.run_id, METADATA_RUN_KEY: self.run_key, **(extra or {})}

    def _log_step(self, learning_rate: float | None, optim_metrics: Mapping[str, float]) -> None:
        metrics = {name: value for name, (_, value, _) in self._metrics.items()}
        if "loss:sum" in metrics and self._loss_weight > 0:
            metrics["loss"] = metrics["loss:sum"] / self._loss_weight
        if learning_rate is not None:
            metrics["learning_rate"] = learning_rate
        metrics.update({f"optim/{name}": value for name, value in optim_metrics.items()})
        metrics = {(f"metric/{name}" if name in RESERVED_LOG_NAMES else name): value for name, value in metrics.items()}
        self.recorder.log(self._step, tokens=self._tokens, usd_micro=self._spend.take_spend(), **metrics)
        self._tokens, self._loss_weight, self._metrics = 0, 0.0, {}

    def _session_id(self) -> str:
        try:
            return str(self.service_client.holder.get_session_id())
        except Exception:  # noqa: BLE001 - only for the summary.
            return ""
