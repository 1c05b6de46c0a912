"""Tinker behind the ledger (extra `tinker`): every billable call holds its projected cost first.

    ledger = LedgerClient("127.0.0.1:50051")
    sheet = TokenPrices({"prefill": 200_000, "sample": 600_000, "train": 600_000}, sheet="tinker", as_of="2025-10")
    service = LedgeredServiceClient(ledger, prices={"Qwen/Qwen3-8B": sheet})
    with service.create_lora_training_client("Qwen/Qwen3-8B", rank=32, hyperparameters=hp, cap_usd_micro=cap) as tc:
        for batch in batches:
            tc.forward_backward(batch, "cross_entropy")
            tc.optim_step(types.AdamParams(learning_rate=1e-4)).result()   # one ledger step
            if tc.step % 100 == 0:
                tc.save_state(f"step-{tc.step}", ttl_seconds=7 * 86_400).result()  # a checkpoint
    # A new process after a crash: the same spec finds the run, resumes with the optimizer state.
    # Give the cap (and parent account) on every open: resume() may be the one that creates the run.
    tc = service.resume(base_model="Qwen/Qwen3-8B", rank=32, hyperparameters=hp, cap_usd_micro=cap)

Leaving the `with` block finishes the run (clients.recorder.exit_status): "done"; "stopped" when a
cap refusal (SpendCapExceeded) or an interrupt (KeyboardInterrupt) ends it; "failed" for any
other exception. An ended run is not resumed or restarted unless asked: RunEnded (RunDone) for a
done run, and for a failed or stopped one without reopen=True.

Each run gets its own Tinker session whose user_metadata carries the ledger run id and run key
(METADATA_RUN_ID, METADATA_RUN_KEY), so AdminClient.get_billing_usage (by session ->
user_metadata) can reconcile the ledger's estimates with the bill.

Spend: forward_backward, forward, optim_step, sample and compute_logprobs reserve their projected
cost on the run's account before anything is sent to Tinker (SpendCapExceeded or Unavailable is
raised from the call itself: no billable call without a hold), commit the actual cost when the
result is settled and release the hold when the call fails. Tokens are counted on the client:
training data -> "train" (the sum of ModelInput.length), forward-only -> "prefill", a sample ->
the prompt once as "prefill" and max_tokens x num_samples as "sample" (actual: the generated
tokens; prompt_cache_hit_tokens, and the shared prompt of the other samples, as "prefill_cached"
when the sheet prices that class). An optimizer step costs `optim_step_usd_micro` (default 0).
Checkpoint storage is not priced here.

Futures: the wrappers return LedgeredFuture. The futures of a training client settle in the order
they were submitted (a result settles every earlier one first), so steps, spend and checkpoints
reach the ledger in Tinker's order; finish() settles whatever is left. One ledger step is recorded
per optimizer step: loss (loss:sum over the loss-weighted target tokens), the forward_backward
metrics, learning_rate, tokens and the spend committed since the previous step.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, Generic, TypeVar

import tinker
from tinker import types

from clients.client import LedgerClient
from clients.errors import DeadlineExceeded, LedgerClientError, RunEnded, Unavailable
from clients.integrations.pricing import TokenPrices
from clients.recorder import RunRecorder, exit_error, exit_status, refuse_ended
from clients.runkey import run_key as make_run_key
from clients.spend import release_reason

__all__ = [
    "BACKEND", "METADATA_RUN_ID", "METADATA_RUN_KEY", "FIDELITY_STATE", "FIDELITY_WEIGHTS",
    "LedgeredServiceClient", "LedgeredTrainingClient", "LedgeredSamplingClient", "LedgeredFuture",
    "ledgered_training_client", "resume", "tinker_spec",
    "ResumeRefused", "NothingToResume", "CheckpointExpired", "BackendMismatch", "NotATinkerPath", "NotResumable",
    "SpecMismatch", "LoraRankMismatch", "RunDone", "RunEnded", "RunAlreadyStarted", "CheckpointConflict",
]

log = logging.getLogger("trainledger.clients.tinker")
T = TypeVar("T")

BACKEND = "tinker"
TINKER_SCHEME = "tinker://"  # Tinker's checkpoints are handles its service holds, never local files.
FIDELITY_STATE = "weights+optimizer"
FIDELITY_WEIGHTS = "weights"
METADATA_RUN_ID = "ledger_run_id"
METADATA_RUN_KEY = "ledger_run_key"
CACHED_PREFILL = "prefill_cached"
_RESERVED_LOG_NAMES = frozenset({"step", "tokens", "usd_micro"})

PriceSheets = TokenPrices | Mapping[str, TokenPrices]


# ---------------------------------------------------------------- refusals
class ResumeRefused(RuntimeError):
    """The run cannot be (re)started as asked; nothing was sent to Tinker's training API and no
    attempt was started. `reason` is a stable name, `state` the RunState it was judged on."""

    reason = "RESUME_REFUSED"

    def __init__(self, message: str, state: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"{self.reason}: {message}")
        self.state = dict(state or {})


class NothingToResume(ResumeRefused):
    reason = "NO_CHECKPOINT"


class CheckpointExpired(ResumeRefused):
    reason = "CHECKPOINT_EXPIRED"


class BackendMismatch(ResumeRefused):
    reason = "BACKEND_MISMATCH"


class NotATinkerPath(ResumeRefused):
    """The checkpoint's uri is not a tinker:// path: Tinker holds its checkpoints itself (there
    are no local files to check), so nothing else is handed to it to load."""

    reason = "NOT_A_TINKER_PATH"


class NotResumable(ResumeRefused):
    """The checkpoint holds no optimizer state (sampler weights only)."""

    reason = "NOT_RESUMABLE"


class SpecMismatch(ResumeRefused):
    reason = "SPEC_MISMATCH"


class LoraRankMismatch(SpecMismatch):
    reason = "LORA_RANK_MISMATCH"


RunDone = RunEnded
"""The run has ended: done (it takes no new attempt), or failed or stopped and not reopened
(pass reopen=True). clients.errors.RunEnded, the refusal RunRecorder.open gives; RunDone is its
old name here."""


class RunAlreadyStarted(ResumeRefused):
    """A fresh start was asked of a run that already recorded steps or checkpoints."""

    reason = "RUN_ALREADY_STARTED"


class CheckpointConflict(RuntimeError):
    """A training checkpoint was asked at a step that already has a sampler-only checkpoint."""


# ---------------------------------------------------------------- spec and prices
def tinker_spec(base_model: str, lora_rank: int, hyperparameters: Mapping[str, Any] | None = None,
                **extra: Any) -> dict[str, Any]:
    """The run spec (and so the run key) of a Tinker LoRA run. Put the dataset identity in `extra`."""
    return {"method": "lora", "base_model": base_model, "lora_rank": int(lora_rank),
            "hyperparameters": dict(hyperparameters or {}), **extra}


def _sheet_for(prices: PriceSheets, base_model: str) -> TokenPrices:
    if isinstance(prices, TokenPrices):
        return prices
    try:
        return prices[base_model]
    except KeyError:
        raise KeyError(f"no price sheet for base model {base_model!r}") from None


def _loss_weight(datum: types.Datum) -> float:
    """The tokens a datum's loss is summed over: its weights, else its targets, else its input."""
    inputs = datum.loss_fn_inputs
    if "weights" in inputs:
        return float(inputs["weights"].to_numpy().sum())
    if "target_tokens" in inputs:
        return float(inputs["target_tokens"].to_numpy().size)
    return float(datum.model_input.length)


def _merge_metrics(into: dict[str, tuple[str, float, int]], metrics: Mapping[str, float]) -> None:
    """Accumulate Tinker "name:reduction" metrics over the calls of one step."""
    for name, value in metrics.items():
        value = float(value)
        reduction = name.rsplit(":", 1)[1] if ":" in name else ""
        if name not in into:
            into[name] = (reduction, value, 1)
            continue
        _, old, count = into[name]
        if reduction == "sum":
            into[name] = (reduction, old + value, count + 1)
        elif reduction == "max":
            into[name] = (reduction, max(old, value), count + 1)
        elif reduction == "min":
            into[name] = (reduction, min(old, value), count + 1)
        elif reduction == "mean":
            into[name] = (reduction, old + (value - old) / (count + 1), count + 1)
        else:
            into[name] = (reduction, value, count + 1)


# ---------------------------------------------------------------- holds and futures
class _Spend:
    """What a training client and its sampling clients share: the recorder, the price sheets, the
    holds, and the spend committed since the last recorded step."""

    def __init__(self, recorder: RunRecorder, prices: PriceSheets, *, optim_step_usd_micro: int,
                 hold_ttl_s: float | None) -> None:
        self.recorder, self.prices = recorder, prices
        self.optim_step_usd_micro = int(optim_step_usd_micro)
        self.hold_ttl_s = hold_ttl_s
        self._lock = threading.Lock()
        self._usd_since_step = 0
        self._deferred: list[tuple[str, int, dict[str, Any]]] = []
        self.loose: set[LedgeredFuture[Any]] = set()  # sampling futures not yet settled

    def hold(self, amount: int, basis: dict[str, Any]) -> _OpenHold:
        self.retry_deferred()
        return _OpenHold(self, amount, basis)

    def add_spend(self, usd_micro: int) -> None:
        with self._lock:
            self._usd_since_step += usd_micro

    def take_spend(self) -> int:
        with self._lock:
            usd, self._usd_since_step = self._usd_since_step, 0
            return usd

    def defer(self, reservation_id: str, actual: int, basis: dict[str, Any], error: LedgerClientError) -> None:
        log.warning("could not commit reservation %s (%s); will retry", reservation_id, error.reason)
        with self._lock:
            self._deferred.append((reservation_id, actual, basis))

    def retry_deferred(self) -> None:
        """Commit what an earlier commit could not (the call was made: the money is spent)."""
        with self._lock:
            deferred, self._deferred = self._deferred, []
        for index, (reservation_id, actual, basis) in enumerate(deferred):
            try:
                self.recorder.client.commit(account=self.recorder.account, reservation_id=reservation_id,
                                            actual_usd_micro=actual, basis=basis)
            except LedgerClientError as error:
                if not isinstance(error, Unavailable | DeadlineExceeded):
                    log.error("giving up on committing reservation %s: %s", reservation_id, error)
                    continue
                with self._lock:
                    self._deferred[:0] = deferred[index:]
                raise


class _OpenHold:
    """A reservation held across an asynchronous Tinker call: the steps of clients.spend.hold_spend
    (which is a block, not a span), with no release when the hold is merely dropped: a hold
    whose call may have run is left to expire on the ledger."""

    def __init__(self, spend: _Spend, amount: int, basis: dict[str, Any]) -> None:
        self._spend, self.account = spend, spend.recorder.account
        answer = spend.recorder.client.reserve(account=self.account, amount_usd_micro=amount, basis=basis,
                                               ttl_s=spend.hold_ttl_s, attempt=spend.recorder.attempt)
        self.reservation_id, self.amount_usd_micro = answer["reservation_id"], amount

    def commit(self, actual: int, basis: dict[str, Any]) -> None:
        try:
            self._spend.recorder.client.commit(account=self.account, reservation_id=self.reservation_id,
                                               actual_usd_micro=actual, basis=basis)
        except LedgerClientError as error:
            self._spend.defer(self.reservation_id, actual, basis, error)
        self._spend.add_spend(actual)

    def release(self, error: BaseException) -> None:
        try:
            self._spend.recorder.client.release(account=self.account, reservation_id=self.reservation_id,
                                                reason=release_reason(error))
        except LedgerClientError as release_error:
            log.warning("could not release reservation %s (%s); it expires on the ledger",
                        self.reservation_id, release_error.reason)


class LedgeredFuture(Generic[T]):
    """A Tinker call's future whose spend (and step or checkpoint) is settled when it completes:
    result() waits for it, commits or releases its hold, then answers or raises like Tinker's."""

    def __init__(self, kind: str, wait: Callable[[float | None], Any], settle: Callable[[Any], Any],
                 fail: Callable[[BaseException], None], owner: Any) -> None:
        self.kind = kind
        self._wait, self._settle_ok, self._settle_error, self._owner = wait, settle, fail, owner
        self._settled = False
        self._value: Any = None
        self._error: BaseException | None = None
        self._observed = False

    def done(self) -> bool:
        """True once settled (its spend committed or released)."""
        return self._settled

    def result(self, timeout: float | None = None) -> T:
        self._owner._settle_through(self, timeout)
        self._observed = True
        if self._error is not None:
            raise self._error
        return self._value

    async def result_async(self, timeout: float | None = None) -> T:
        return await asyncio.to_thread(self.result, timeout)

    def __await__(self):  # type: ignore[no-untyped-def]
        return self.result_async().__await__()

    def _settle(self, timeout: float | None) -> None:
        """Wait for the call and settle it; a timeout leaves it pending (and raises TimeoutError)."""
        try:
            value = self._wait(timeout)
        except TimeoutError:
            if timeout is not None:
                raise
            value, error = None, TimeoutError()
        except Exception as failure:  # noqa: BLE001 - the call failed: its hold is released.
            value, error = None, failure
        else:
            error = None
        if error is None:
            try:
                value = self._settle_ok(value)
            except Exception as failure:  # noqa: BLE001 - e.g. a checkpoint the ledger refused.
                error = failure
        else:
            self._settle_error(error)
        self._value, self._error, self._settled = value, error, True


class _Settler:
    """Settles futures one at a time; a training client settles its futures in submission order."""

    def __init__(self, ordered: bool) -> None:
        self._ordered = ordered
        self._lock = threading.RLock()
        self._pending: deque[LedgeredFuture[Any]] = deque()

    def add(self, future: LedgeredFuture[Any]) -> LedgeredFuture[Any]:
        with self._lock:
            self._pending.append(future)
        return future

    def _settle_through(self, target: LedgeredFuture[Any], timeout: float | None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while not target._settled:
                head = self._pending[0] if self._ordered else target
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                head._settle(left)
                self._pending.remove(head)
                self._after_settle(head)
                if head is not target and head._error is not None:
                    log.warning("%s failed before a later result was asked for: %r", head.kind, head._error)

    def _after_settle(self, future: LedgeredFuture[Any]) -> None:
        pass

    def settle_all(self, timeout: float | None = None) -> list[BaseException]:
        """Settle every pending future (TimeoutError past `timeout`); returns the errors of those
        whose result nobody asked for."""
        deadline = None if timeout is None else time.monotonic() + timeout
        errors = []
        while True:
            with self._lock:
                if not self._pending:
                    return errors
                future = self._pending[0]
            self._settle_through(future, None if deadline is None else max(0.0, deadline - time.monotonic()))
            if future._error is not None and not future._observed:
                errors.append(future._error)


# ---------------------------------------------------------------- sampling
class LedgeredSamplingClient(_Settler):
    """A Tinker SamplingClient whose sample and compute_logprobs calls hold their cost first."""

    def __init__(self, sampling_client: tinker.SamplingClient, spend: _Spend, base_model: str) -> None:
        super().__init__(ordered=False)
        self.sampling_client, self._spend = sampling_client, spend
        self.prices = _sheet_for(spend.prices, base_model)

    def sample(self, prompt: types.ModelInput, num_samples: int, sampling_params: types.SamplingParams,
               **options: Any) -> LedgeredFuture[types.SampleResponse]:
        """As SamplingClient.sample; sampling_params.max_tokens is required (it bounds the hold)."""
        if sampling_params.max_tokens is None:
            raise ValueError("sampling_params.max_tokens is required to reserve the sample's cost")
        prompt_tokens, priced_cache = prompt.length, CACHED_PREFILL in self.prices.usd_micro_per_million
        projected = {"prefill": prompt_tokens, "sample": sampling_params.max_tokens * num_samples}
        if priced_cache and num_samples > 1:
            projected[CACHED_PREFILL] = prompt_tokens * (num_samples - 1)
        hold = self._spend.hold(self.prices.amount(projected), self.prices.basis(projected))

        def settle(response: types.SampleResponse) -> types.SampleResponse:
            actual = {"prefill": prompt_tokens, "sample": sum(len(s.tokens) for s in response.sequences)}
            if priced_cache:
                cached = min(response.prompt_cache_hit_tokens, prompt_tokens) + prompt_tokens * (num_samples - 1)
                actual = {"prefill": prompt_tokens - min(response.prompt_cache_hit_tokens, prompt_tokens),
                          CACHED_PREFILL: cached, "sample": actual["sample"]}
            hold.commit(self.prices.amount(actual), self.prices.basis(actual))
            return response

        return self._submit("sample", hold, settle,
                            lambda: self.sampling_client.sample(prompt, num_samples, sampling_params, **options))

    def compute_logprobs(self, prompt: types.ModelInput, **options: Any) -> LedgeredFuture[list[float | None]]:
        usage = {"prefill": prompt.length}
        hold = self._spend.hold(self.prices.amount(usage), self.prices.basis(usage))

        def settle(logprobs: list[float | None]) -> list[float | None]:
            hold.commit(self.prices.amount(usage), self.prices.basis(usage))
            return logprobs

        return self._submit("compute_logprobs", hold, settle,
                            lambda: self.sampling_client.compute_logprobs(prompt, **options))

    def _submit(self, kind: str, hold: _OpenHold, settle: Callable[[Any], Any], call: Callable[[], Any]):
        try:
            future = call()
        except Exception as error:
            hold.release(error)
            raise
        wrapped = LedgeredFuture(kind, future.result, settle, hold.release, self)
        self._spend.loose.add(wrapped)
        return self.add(wrapped)

    def _after_settle(self, future: LedgeredFuture[Any]) -> None:
        self._spend.loose.discard(future)

    def get_tokenizer(self) -> Any:
        return self.sampling_client.get_tokenizer()

    def get_base_model(self) -> str:
        return self.sampling_client.get_base_model()


# ---------------------------------------------------------------- training
class LedgeredTrainingClient(_Settler):
    """A Tinker TrainingClient recorded as one attempt of a ledger run. The plain clients are
    `training_client` and `service_client`; calls made on them directly are not ledgered."""

    def __init__(self, *, service_client: tinker.ServiceClient, training_client: tinker.TrainingClient,
                 recorder: RunRecorder, prices: PriceSheets, base_model: str, optim_step_usd_micro: int = 0,
                 hold_ttl_s: float | None = None, start_step: int = 0, resumed_from_step: int | None = None,
                 run_key: str = "") -> None:
        super().__init__(ordered=True)
        self.service_client, self.training_client, self.recorder = service_client, training_client, recorder
        self.base_model, self.run_key = base_model, run_key
        self.prices = _sheet_for(prices, base_model)
        self._spend = _Spend(recorder, prices, optim_step_usd_micro=optim_step_usd_micro, hold_ttl_s=hold_ttl_s)
        self._step, self._submitted_steps = start_step, start_step
        self.resumed_from_step = resumed_from_step
        self._tokens, self._loss_weight = 0, 0.0
        self._metrics: dict[str, tuple[str, float, int]] = {}
        self._checkpoints: dict[int, str] = {}  # step -> "state" | "sampler", recorded by this attempt
        self._finished: dict[str, Any] | None = None
        self._submit_lock = threading.Lock()

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

    # Billable calls.
    def forward_backward(self, data: Iterable[types.Datum], loss_fn: types.LossFnType,
                         loss_fn_config: Mapping[str, float | str] | None = None
                         ) -> LedgeredFuture[types.ForwardBackwardOutput]:
        data = list(data)
        usage = {"train": sum(datum.model_input.length for datum in data)}
        weight = sum(_loss_weight(datum) for datum in data)
        hold = self._spend.hold(self.prices.amount(usage), self.prices.basis(usage))

        def settle(output: types.ForwardBackwardOutput) -> types.ForwardBackwardOutput:
            hold.commit(self.prices.amount(usage), self.prices.basis(usage))
            self._tokens += usage["train"]
            self._loss_weight += weight
            _merge_metrics(self._metrics, output.metrics)
            return output

        return self._submit("forward_backward", hold, settle,
                            lambda: self.training_client.forward_backward(data, loss_fn, loss_fn_config))

    def forward(self, data: Iterable[types.Datum], loss_fn: types.LossFnType,
                loss_fn_config: Mapping[str, float | str] | None = None) -> LedgeredFuture[types.ForwardBackwardOutput]:
        """A forward pass only, priced as prefill of its input tokens."""
        data = list(data)
        usage = {"prefill": sum(datum.model_input.length for datum in data)}
        hold = self._spend.hold(self.prices.amount(usage), self.prices.basis(usage))

        def settle(output: types.ForwardBackwardOutput) -> types.ForwardBackwardOutput:
            hold.commit(self.prices.amount(usage), self.prices.basis(usage))
            return output

        return self._submit("forward", hold, settle,
                            lambda: self.training_client.forward(data, loss_fn, loss_fn_config))

    def optim_step(self, optim_params: types.OptimParams | None = None, *,
                   adam_params: types.AdamParams | None = None) -> LedgeredFuture[types.OptimStepResponse]:
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
        return self._submit("optim_step", hold, settle,
                            lambda: self.training_client.optim_step(optim_params, adam_params=adam_params), fail)

    # Checkpoints.
    def save_state(self, name: str, ttl_seconds: int | None = None, *, overwrite: bool = False, final: bool = False,
                   user_metadata: dict[str, str] | None = None) -> LedgeredFuture[types.SaveWeightsResponse]:
        """Save weights and optimizer state; its result records a weights+optimizer checkpoint
        (uri tinker://.../weights/<name>) at the current step, expiring after `ttl_seconds`."""
        self._check_no_sampler_checkpoint()
        saved_at, metadata = datetime.now(timezone.utc), self._metadata(user_metadata)

        def settle(response: types.SaveWeightsResponse) -> types.SaveWeightsResponse:
            self._record_checkpoint(response.path, FIDELITY_STATE, "", saved_at, ttl_seconds, final, "state")
            return response

        return self._submit("save_state", None, settle, lambda: self.training_client.save_state(
            name, ttl_seconds=ttl_seconds, overwrite=overwrite, user_metadata=metadata))

    def save_weights_for_sampler(self, name: str, ttl_seconds: int | None = None, *, record: bool = True,
                                 user_metadata: dict[str, str] | None = None
                                 ) -> LedgeredFuture[types.SaveWeightsForSamplerResponse]:
        """Save sampler weights; its result records a weights-only checkpoint (uri and sampler_uri
        the sampler path) unless `record` is False or this step already has a checkpoint. It is
        no resume point: prefer save_checkpoint() for one checkpoint with both paths."""
        saved_at, metadata = datetime.now(timezone.utc), self._metadata(user_metadata)

        def settle(response: types.SaveWeightsForSamplerResponse) -> types.SaveWeightsForSamplerResponse:
            if record and self._step not in self._checkpoints:
                self._record_checkpoint(response.path, FIDELITY_WEIGHTS, response.path, saved_at, ttl_seconds,
                                        False, "sampler")
            return response

        return self._submit("save_weights_for_sampler", None, settle,
                            lambda: self.training_client.save_weights_for_sampler(
                                name, ttl_seconds=ttl_seconds, user_metadata=metadata))

    def save_checkpoint(self, name: str, ttl_seconds: int | None = None, *, final: bool = False,
                        user_metadata: dict[str, str] | None = None) -> LedgeredFuture[dict[str, str]]:
        """save_state and save_weights_for_sampler under one name, recorded as one checkpoint:
        {"path": tinker://.../weights/<name>, "sampler_path": tinker://.../sampler_weights/<name>}."""
        self._check_no_sampler_checkpoint()
        saved_at, metadata = datetime.now(timezone.utc), self._metadata(user_metadata)
        futures: list[Any] = []

        def wait(timeout: float | None) -> dict[str, str]:
            return {"path": futures[0].result(timeout).path, "sampler_path": futures[1].result(timeout).path}

        def settle(paths: dict[str, str]) -> dict[str, str]:
            self._record_checkpoint(paths["path"], FIDELITY_STATE, paths["sampler_path"], saved_at, ttl_seconds,
                                    final, "state")
            return paths

        with self._submit_lock:
            futures.append(self.training_client.save_state(name, ttl_seconds=ttl_seconds, user_metadata=metadata))
            futures.append(self.training_client.save_weights_for_sampler(name, ttl_seconds=ttl_seconds,
                                                                         user_metadata=metadata))
            return self.add(LedgeredFuture("save_checkpoint", wait, settle, lambda error: None, self))

    # Sampling.
    def create_sampling_client(self, model_path: str | None = None, *, base_model: str | None = None,
                               **options: Any) -> LedgeredSamplingClient:
        """A ledgered SamplingClient for saved weights (model_path) or a base model."""
        sampling = self.service_client.create_sampling_client(model_path=model_path, base_model=base_model,
                                                              **options).result()
        return LedgeredSamplingClient(sampling, self._spend, base_model or self.base_model)

    def save_weights_and_get_sampling_client(self, **options: Any) -> LedgeredSamplingClient:
        sampling = self.training_client.save_weights_and_get_sampling_client(**options).result()
        return LedgeredSamplingClient(sampling, self._spend, self.base_model)

    def get_info(self) -> types.GetInfoResponse:
        return self.training_client.get_info()

    def get_tokenizer(self) -> Any:
        return self.training_client.get_tokenizer()

    # Lifecycle.
    def finish(self, status: str = "done", summary: Mapping[str, Any] | None = None, error: str = "") -> dict[str, Any]:
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
            reason = {"done": "success", "stopped": "interrupted"}.get(status, "errored")
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

    def _submit(self, kind: str, hold: _OpenHold | None, settle: Callable[[Any], Any], call: Callable[[], Any],
                fail: Callable[[BaseException], None] | None = None) -> LedgeredFuture[Any]:
        fail = fail or (hold.release if hold is not None else (lambda error: None))
        with self._submit_lock:  # The pending futures keep the order Tinker got the calls in.
            try:
                future = call()
            except Exception as error:
                fail(error)
                raise
            return self.add(LedgeredFuture(kind, future.result, settle, fail, self))

    def _check_no_sampler_checkpoint(self) -> None:
        # The ledger keeps one checkpoint per step and attempt: a sampler-only one would hide this.
        if self._checkpoints.get(self._submitted_steps) == "sampler":
            raise CheckpointConflict(f"step {self._submitted_steps} already has a sampler-only checkpoint; "
                                     "save_checkpoint() records weights, optimizer and sampler paths in one")

    def _metadata(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        return {METADATA_RUN_ID: self.run_id, METADATA_RUN_KEY: self.run_key, **(extra or {})}

    def _log_step(self, learning_rate: float | None, optim_metrics: Mapping[str, float]) -> None:
        metrics = {name: value for name, (_, value, _) in self._metrics.items()}
        if "loss:sum" in metrics and self._loss_weight > 0:
            metrics["loss"] = metrics["loss:sum"] / self._loss_weight
        if learning_rate is not None:
            metrics["learning_rate"] = learning_rate
        metrics.update({f"optim/{name}": value for name, value in optim_metrics.items()})
        metrics = {(f"metric/{name}" if name in _RESERVED_LOG_NAMES else name): value
                   for name, value in metrics.items()}
        self.recorder.log(self._step, tokens=self._tokens, usd_micro=self._spend.take_spend(), **metrics)
        self._tokens, self._loss_weight, self._metrics = 0, 0.0, {}

    def _record_checkpoint(self, uri: str, fidelity: str, sampler_uri: str, saved_at: datetime,
                           ttl_seconds: int | None, final: bool, kind: str) -> None:
        step = self._step
        if self.resumed_from_step is not None and step <= self.resumed_from_step:
            log.info("not recording %s at step %d: this attempt resumed from it", uri, step)
            return
        expires_at = saved_at + timedelta(seconds=ttl_seconds) if ttl_seconds else None
        self.recorder.checkpoint(step, uri, BACKEND, fidelity, sampler_uri=sampler_uri, final=final,
                                 expires_at=expires_at)
        self._checkpoints[step] = kind

    def _session_id(self) -> str:
        try:
            return str(self.service_client.holder.get_session_id())
        except Exception:  # noqa: BLE001 - only for the summary.
            return ""


# ---------------------------------------------------------------- opening and resuming
class LedgeredServiceClient:
    """Opens ledgered Tinker runs: one Tinker session per run, tagged with the run's id and key.
    `prices`: a TokenPrices sheet, or one per base model. Tinker's own settings (base_url,
    api_key, project_id) default to its environment (TINKER_BASE_URL, TINKER_API_KEY ...)."""

    def __init__(self, ledger: LedgerClient, *, prices: PriceSheets, optim_step_usd_micro: int = 0,
                 base_url: str | None = None, api_key: str | None = None, project_id: str | None = None,
                 user_metadata: Mapping[str, str] | None = None, hold_ttl_s: float | None = None,
                 attempt_label: str | None = None, outbox_dir: str | None = None,
                 recorder_options: Mapping[str, Any] | None = None) -> None:
        self.ledger, self.prices, self.optim_step_usd_micro = ledger, prices, optim_step_usd_micro
        self.base_url, self.api_key, self.project_id = base_url, api_key, project_id
        self.user_metadata = dict(user_metadata or {})
        self.hold_ttl_s, self.attempt_label, self.outbox_dir = hold_ttl_s, attempt_label, outbox_dir
        self.recorder_options = dict(recorder_options or {})

    def create_lora_training_client(self, base_model: str, rank: int = 32, *,
                                    hyperparameters: Mapping[str, Any] | None = None,
                                    extra_spec: Mapping[str, Any] | None = None, run_key: str | None = None,
                                    name: str = "", cap_usd_micro: int | None = None, parent_account: str = "",
                                    seed: int | None = None, restart: bool = False, reopen: bool = False,
                                    **lora_options: Any) -> LedgeredTrainingClient:
        """Open the run (spec: tinker_spec(base_model, rank, hyperparameters, **extra_spec); run key
        from the spec unless given) with its cap and parent account (a cap given for an existing
        run changes its cap), start an attempt from scratch and create the LoRA model.
        Raises RunEnded when the run has ended (done; failed or stopped unless reopen=True),
        RunAlreadyStarted when it has recorded steps or checkpoints (resume it, or pass
        restart=True), SpendCapExceeded/Unavailable/LedgerClientError from the ledger."""
        _sheet_for(self.prices, base_model)  # No sheet, no run.
        spec = tinker_spec(base_model, rank, hyperparameters, **(extra_spec or {}))
        key = run_key or make_run_key(spec)
        opened = self.ledger.open_run(run_key=key, name=name, spec=spec, cap_usd_micro=cap_usd_micro,
                                      parent_account=parent_account)
        state = opened["state"]
        refuse_ended(state, reopen=reopen)
        if not restart and (state["last_step"] is not None or state["checkpoint"] or state["expired_checkpoints"]):
            raise RunAlreadyStarted(f"run {state['run']['run_id']} already recorded steps or checkpoints: "
                                    "resume() it, or pass restart=True to start it again from step 0", state)
        recorder = self._recorder(key, name, spec, cap_usd_micro, parent_account, None, reopen)
        service = self._service_client(recorder.run_id, key)
        try:
            training = service.create_lora_training_client(
                base_model, rank, seed=seed, user_metadata=self._model_metadata(recorder.run_id, key),
                **lora_options).result()
        except BaseException:
            service.close("errored").result()
            recorder.close()
            raise
        return self._wrap(service, training, recorder, base_model, key, start_step=0, resumed_from_step=None)

    def resume(self, *, run_key: str | None = None, run_id: str | None = None, base_model: str | None = None,
               rank: int | None = None, hyperparameters: Mapping[str, Any] | None = None,
               extra_spec: Mapping[str, Any] | None = None, name: str = "", cap_usd_micro: int | None = None,
               parent_account: str = "", reopen: bool = False) -> LedgeredTrainingClient:
        """Resume a run from the ledger's RunState: load its checkpoint's weights and optimizer
        state into a new Tinker model and start the next attempt from the checkpoint's step. The
        run is found by run_id, run_key, or the spec (base_model, rank, hyperparameters, extra_spec)
        as create_lora_training_client makes it, and opened with the same name, cap and parent
        account as create_lora_training_client is given (a cap given changes the run's cap; when
        the run does not exist yet, it is created with them, so a create after NothingToResume
        finds it capped). Raises RunEnded (RunDone) for a done run, and for a failed or stopped one
        unless reopen=True; NothingToResume, CheckpointExpired, BackendMismatch, NotATinkerPath (a
        uri that is not a tinker:// path), NotResumable, SpecMismatch/LoraRankMismatch (nothing
        started), and the ledger's and Tinker's errors. Tinker records no digest with its
        checkpoints (it holds their files), so there is none to check."""
        spec: dict[str, Any] | None = None
        if run_id:
            run_key = self.ledger.get_run_state(run_id=run_id)["run"]["run_key"]
        elif run_key is None:
            if base_model is None or rank is None:
                raise ValueError("give run_id, run_key, or base_model and rank")
            spec = tinker_spec(base_model, rank, hyperparameters, **(extra_spec or {}))
            run_key = make_run_key(spec)
        state = self.ledger.open_run(run_key=run_key, name=name, spec=spec, cap_usd_micro=cap_usd_micro,
                                     parent_account=parent_account)["state"]
        refuse_ended(state, reopen=reopen)
        key, spec = state["run"]["run_key"], state["run"]["spec"] or {}
        spec_rank, spec_model = spec.get("lora_rank"), spec.get("base_model")
        if rank is not None and spec_rank is not None and int(spec_rank) != rank:
            raise LoraRankMismatch(f"the run's spec has LoRA rank {int(spec_rank)}, not {rank}", state)
        if base_model is not None and spec_model is not None and spec_model != base_model:
            raise SpecMismatch(f"the run's spec has base model {spec_model!r}, not {base_model!r}", state)
        checkpoint = _resumable_checkpoint(state)
        base_model = spec_model or base_model
        if base_model is None:
            raise SpecMismatch("the run's spec names no base_model and none was given", state)
        _sheet_for(self.prices, base_model)
        run_id, step = state["run"]["run_id"], int(checkpoint["step"])
        service = self._service_client(run_id, key)
        try:
            training = service.create_training_client_from_state_with_optimizer(
                checkpoint["handle"]["uri"], user_metadata=self._model_metadata(run_id, key)).result()
            info = training.get_info()
            expected_rank = spec_rank if spec_rank is not None else rank
            if expected_rank is not None and info.lora_rank != int(expected_rank):
                raise LoraRankMismatch(f"the checkpoint at step {step} has LoRA rank {info.lora_rank}, "
                                       f"the run's spec {int(expected_rank)}", state)
            recorder = self._recorder(key, name, spec, cap_usd_micro, parent_account, step, reopen)
        except BaseException:
            service.close("errored").result()
            raise
        return self._wrap(service, training, recorder, base_model, key, start_step=step, resumed_from_step=step)

    def _recorder(self, key: str, name: str, spec: Mapping[str, Any] | None, cap_usd_micro: int | None,
                  parent_account: str, resume_from_step: int | None, reopen: bool) -> RunRecorder:
        """RunRecorder.open with the run's cap and parent account, as every open of the run."""
        return RunRecorder.open(self.ledger, run_key=key, name=name, spec=spec, cap_usd_micro=cap_usd_micro,
                                parent_account=parent_account, attempt_label=self.attempt_label,
                                resume_from_step=resume_from_step, outbox_dir=self.outbox_dir, reopen=reopen,
                                **self.recorder_options)

    def _service_client(self, run_id: str, key: str) -> tinker.ServiceClient:
        metadata = {**self.user_metadata, METADATA_RUN_ID: run_id, METADATA_RUN_KEY: key}
        return tinker.ServiceClient(user_metadata=metadata, project_id=self.project_id, base_url=self.base_url,
                                    api_key=self.api_key)

    @staticmethod
    def _model_metadata(run_id: str, key: str) -> dict[str, str]:
        return {METADATA_RUN_ID: run_id, METADATA_RUN_KEY: key}

    def _wrap(self, service: tinker.ServiceClient, training: tinker.TrainingClient, recorder: RunRecorder,
              base_model: str, key: str, *, start_step: int, resumed_from_step: int | None) -> LedgeredTrainingClient:
        return LedgeredTrainingClient(service_client=service, training_client=training, recorder=recorder,
                                      prices=self.prices, base_model=base_model,
                                      optim_step_usd_micro=self.optim_step_usd_micro, hold_ttl_s=self.hold_ttl_s,
                                      start_step=start_step, resumed_from_step=resumed_from_step, run_key=key)


def _resumable_checkpoint(state: Mapping[str, Any]) -> dict[str, Any]:
    """The RunState's checkpoint if Tinker can resume from it with its optimizer, else a refusal
    (the run's status was judged before: refuse_ended)."""
    checkpoint = state.get("checkpoint")
    expired = state.get("expired_checkpoints") or []
    if not checkpoint:
        if expired:
            last = max(expired, key=lambda c: c["step"])
            raise CheckpointExpired(f"every checkpoint of run {state['run']['run_id']} has expired (the last, "
                                    f"step {last['step']} at {last['handle']['uri']}, on {last['expires_at']}); "
                                    "start it again from step 0 only on purpose (restart=True)", state)
        raise NothingToResume(f"run {state['run']['run_id']} has no checkpoint", state)
    handle, step = checkpoint["handle"] or {}, checkpoint["step"]
    if handle.get("backend") != BACKEND:
        raise BackendMismatch(f"the checkpoint at step {step} is held by {handle.get('backend')!r}, not "
                              f"{BACKEND!r}: {handle.get('uri')}", state)
    if not str(handle.get("uri", "")).startswith(TINKER_SCHEME):
        raise NotATinkerPath(f"the checkpoint at step {step} is recorded at {handle.get('uri')!r}, not a "
                             f"{TINKER_SCHEME} path Tinker holds", state)
    expires_at = checkpoint.get("expires_at")
    if expires_at is not None and expires_at <= datetime.now(timezone.utc):
        raise CheckpointExpired(f"the checkpoint at step {step} expired on {expires_at}", state)
    if handle.get("fidelity") != FIDELITY_STATE or "/weights/" not in handle.get("uri", ""):
        raise NotResumable(f"the checkpoint at step {step} holds no optimizer state ({handle.get('fidelity')}, "
                           f"{handle.get('uri')}): save_state() or save_checkpoint() make resumable ones", state)
    newer = [c for c in expired if c["step"] > step]
    if newer:
        log.warning("resuming from step %d: the checkpoints after it have expired (%s)", step,
                    ", ".join(str(c["step"]) for c in newer))
    return dict(checkpoint)


def ledgered_training_client(ledger: LedgerClient, base_model: str, rank: int = 32, *, prices: PriceSheets,
                             **options: Any) -> LedgeredTrainingClient:
    """LedgeredServiceClient(ledger, prices=..., <its options>).create_lora_training_client(base_model,
    rank, <its options>), options split by name."""
    service_options, run_options = _split(options)
    return LedgeredServiceClient(ledger, prices=prices, **service_options).create_lora_training_client(
        base_model, rank, **run_options)


def resume(ledger: LedgerClient, *, prices: PriceSheets, **options: Any) -> LedgeredTrainingClient:
    """LedgeredServiceClient(ledger, prices=..., <its options>).resume(<its options>)."""
    service_options, run_options = _split(options)
    return LedgeredServiceClient(ledger, prices=prices, **service_options).resume(**run_options)


_SERVICE_OPTIONS = frozenset({"optim_step_usd_micro", "base_url", "api_key", "project_id", "user_metadata",
                              "hold_ttl_s", "attempt_label", "outbox_dir", "recorder_options"})


def _split(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    service = {key: value for key, value in options.items() if key in _SERVICE_OPTIONS}
    return service, {key: value for key, value in options.items() if key not in _SERVICE_OPTIONS}
