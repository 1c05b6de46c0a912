"""Opening and resuming ledgered Tinker runs: one Tinker session per attempt, tagged with the run's
id and key (and, given a parent account, "ledger_account"), and linked to the run on the ledger
(Runs.LinkSession) as soon as the attempt and the session exist, so Tinker's bill reaches the run
through either; a resume goes through the one resume decision (clients.integrations.resume) before
anything is sent to Tinker's training API."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import tinker

from clients.client import LedgerClient
from clients.integrations.resume import Loader, ResumePoint, ResumeReason, ResumeRefused, decide, latest
from clients.integrations.tinker.common import (
    BACKEND,
    FIDELITY_STATE,
    METADATA_ACCOUNT,
    METADATA_RUN_ID,
    METADATA_RUN_KEY,
    TINKER_SCHEME,
    PriceSheets,
    sheet_for,
    tinker_spec,
)
from clients.integrations.tinker.lineage import model_from_source, source_uri
from clients.integrations.tinker.training import LedgeredTrainingClient
from clients.models import RunState
from clients.recorder import RunRecorder, refuse_ended
from clients.runkey import run_key as make_run_key

__all__ = ["LedgeredServiceClient", "ledgered_training_client", "resume"]

log = logging.getLogger("trainledger.clients.tinker")


class LedgeredServiceClient:
    """Opens ledgered Tinker runs: one Tinker session per run, tagged with the run's id and key.
    `prices`: a TokenPrices sheet, or one per base model. Tinker's own settings (base_url,
    api_key, project_id) default to its environment (TINKER_BASE_URL, TINKER_API_KEY ...)."""

    def __init__(
        self,
        ledger: LedgerClient,
        *,
        prices: PriceSheets,
        optim_step_usd_micro: int = 0,
        base_url: str | None = None,
        api_key: str | None = None,
        project_id: str | None = None,
        user_metadata: Mapping[str, str] | None = None,
        hold_ttl_s: float | None = None,
        attempt_label: str | None = None,
        outbox_dir: str | None = None,
        recorder_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.ledger, self.prices, self.optim_step_usd_micro = ledger, prices, optim_step_usd_micro
        self.base_url, self.api_key, self.project_id = base_url, api_key, project_id
        self.user_metadata = dict(user_metadata or {})
        self.hold_ttl_s, self.attempt_label, self.outbox_dir = hold_ttl_s, attempt_label, outbox_dir
        self.recorder_options = dict(recorder_options or {})

    def create_lora_training_client(
        self,
        base_model: str,
        rank: int = 32,
        *,
        hyperparameters: Mapping[str, Any] | None = None,
        extra_spec: Mapping[str, Any] | None = None,
        run_key: str | None = None,
        name: str = "",
        cap_usd_micro: int | None = None,
        parent_account: str = "",
        seed: int | None = None,
        restart: bool = False,
        reopen: bool = False,
        max_steps: int | None = None,
        objective: tuple[str, str] | None = None,
        datasets: Mapping[str, Any] | None = None,
        source_checkpoint: Any = None,
        **lora_options: Any,
    ) -> LedgeredTrainingClient:
        """Open the run (spec: tinker_spec(base_model, rank, hyperparameters, **extra_spec); run key
        from the spec unless given) with its cap and parent account (a cap given for an existing
        run changes its cap), start an attempt from scratch and create the LoRA model.
        Raises RunEnded when the run has ended (done; failed or stopped unless reopen=True),
        ResumeRefused RUN_ALREADY_STARTED when it has recorded steps or checkpoints (resume it, or
        pass restart=True), SpendCapExceeded/Unavailable/LedgerClientError from the ledger.
        `max_steps` (the optimizer steps the loop plans) and `objective` ((metric, "min" | "max"))
        go with the open and the attempt; `datasets` ({"train": rows, "eval": rows}) are recorded
        on the run (see LedgeredTrainingClient.record_dataset). `source_checkpoint`
        (clients.RunSourceCheckpoint or {"run_id", "step", "uri"}): another run's checkpoint this
        training starts from (clients.integrations.tinker.lineage), recorded as the run's source
        at the open (NotFound when it does not exist; ResumeRefused URI_SCHEME_MISMATCH unless a
        tinker:// path) and the model made from its weights (LORA_MISMATCH unless of `rank`)."""
        sheet_for(self.prices, base_model)  # No sheet, no run.
        source = source_uri(source_checkpoint)  # Refused before anything is recorded.
        spec = tinker_spec(base_model, rank, hyperparameters, **(extra_spec or {}))
        key = run_key or make_run_key(spec)
        opening = {"objective": objective, "max_steps": max_steps, "source_checkpoint": source_checkpoint}
        state = self._open_run(key, name, spec, cap_usd_micro, parent_account, **opening)
        refuse_ended(state, reopen=reopen)
        if not restart and (state.last_step is not None or state.checkpoint or state.expired_checkpoints):
            raise ResumeRefused(
                ResumeReason.RUN_ALREADY_STARTED,
                f"run {state.run.run_id} already recorded steps or "
                "checkpoints: resume() it, or pass restart=True to start it again from step 0",
                state=state,
            )
        recorder = self._recorder(key, name, spec, cap_usd_micro, parent_account, None, reopen, opening)
        service = self._service_client(recorder.run_id, key, parent_account)
        metadata = self._model_metadata(recorder.run_id, key)
        try:
            if source:
                training = model_from_source(service, source, metadata, rank, state)
            else:
                training = service.create_lora_training_client(
                    base_model, rank, seed=seed, user_metadata=metadata, **lora_options
                ).result()
        except BaseException:
            service.close("errored").result()
            recorder.close()
            raise
        client = self._wrap(service, training, recorder, base_model, key, start_step=0, resumed_from_step=None)
        return _record_datasets(client, datasets)

    def resume(
        self,
        *,
        run_key: str | None = None,
        run_id: str | None = None,
        base_model: str | None = None,
        rank: int | None = None,
        hyperparameters: Mapping[str, Any] | None = None,
        extra_spec: Mapping[str, Any] | None = None,
        name: str = "",
        cap_usd_micro: int | None = None,
        parent_account: str = "",
        reopen: bool = False,
        max_steps: int | None = None,
        objective: tuple[str, str] | None = None,
        datasets: Mapping[str, Any] | None = None,
        source_checkpoint: Any = None,
    ) -> LedgeredTrainingClient:
        """Resume a run from the ledger's RunState: load its checkpoint's weights and optimizer
        state into a new Tinker model and start the next attempt from the checkpoint's step. The
        run is found by run_id, run_key, or the spec (base_model, rank, hyperparameters, extra_spec)
        as create_lora_training_client makes it, and opened with the same name, cap and parent
        account as create_lora_training_client is given (a cap given changes the run's cap; when
        the run does not exist yet, it is created with them, so a create after NO_CHECKPOINT finds
        it capped). Raises RunEnded (RunDone) for a done run, and for a failed or stopped one
        unless reopen=True; ResumeRefused (nothing started) with its reason: NO_CHECKPOINT,
        CHECKPOINT_EXPIRED, BACKEND_MISMATCH, URI_SCHEME_MISMATCH (a uri that is not a tinker://
        path), FIDELITY_MISMATCH (no optimizer state), SPEC_MISMATCH, LORA_MISMATCH; and the
        ledger's and Tinker's errors. Tinker records no digest with its checkpoints (it holds
        their files), so there is none to check. `max_steps`, `objective`, `datasets` and
        `source_checkpoint` as create_lora_training_client's (max_steps None: the run's plan
        stays; a source other than the one the run was opened with is a Conflict)."""
        spec: dict[str, Any] | None = None
        if run_id:
            run_key = self.ledger.get_run_state(run_id=run_id).run.run_key
        elif run_key is None:
            if base_model is None or rank is None:
                raise ValueError("give run_id, run_key, or base_model and rank")
            spec = tinker_spec(base_model, rank, hyperparameters, **(extra_spec or {}))
            run_key = make_run_key(spec)
        opening = {"objective": objective, "max_steps": max_steps, "source_checkpoint": source_checkpoint}
        state = self._open_run(
            run_key, name, spec, cap_usd_micro, parent_account, objective=objective, source_checkpoint=source_checkpoint
        )
        refuse_ended(state, reopen=reopen)
        key, spec = state.run.run_key, state.run.spec
        spec_rank, spec_model = _check_spec(state, spec, rank, base_model)
        point = _resume_point(state, reopen)
        base_model = spec_model or base_model
        if base_model is None:
            raise ResumeRefused(
                ResumeReason.SPEC_MISMATCH, "the run's spec names no base_model and none was given", state=state
            )
        sheet_for(self.prices, base_model)
        run_id, step = state.run.run_id, point.step
        service = self._service_client(run_id, key, parent_account)
        try:
            metadata = self._model_metadata(run_id, key)
            training = _load_state(service, point, metadata, spec_rank if spec_rank is not None else rank, state)
            recorder = self._recorder(key, name, spec, cap_usd_micro, parent_account, step, reopen, opening)
        except BaseException:
            service.close("errored").result()
            raise
        client = self._wrap(service, training, recorder, base_model, key, start_step=step, resumed_from_step=step)
        return _record_datasets(client, datasets)

    def _open_run(
        self,
        key: str,
        name: str,
        spec: Mapping[str, Any] | None,
        cap_usd_micro: int | None,
        parent_account: str,
        *,
        objective: tuple[str, str] | None,
        max_steps: int | None = None,
        source_checkpoint: Any = None,
    ) -> RunState:
        """The run's state once opened (or found) with its cap and parent account, as every open
        of the run, the plan it was given and its source checkpoint (None leaves each as the run
        has it)."""
        return self.ledger.open_run(
            run_key=key,
            name=name,
            spec=spec,
            cap_usd_micro=cap_usd_micro,
            parent_account=parent_account,
            max_steps=max_steps,
            objective=objective,
            source_checkpoint=source_checkpoint,
        ).state

    def _recorder(
        self,
        key: str,
        name: str,
        spec: Mapping[str, Any] | None,
        cap_usd_micro: int | None,
        parent_account: str,
        resume_from_step: int | None,
        reopen: bool,
        opening: Mapping[str, Any],
    ) -> RunRecorder:
        """RunRecorder.open with the run's cap and parent account, as every open of the run, and
        what else it was opened with (max_steps, objective, source_checkpoint)."""
        return RunRecorder.open(
            self.ledger,
            run_key=key,
            name=name,
            spec=spec,
            cap_usd_micro=cap_usd_micro,
            parent_account=parent_account,
            attempt_label=self.attempt_label,
            resume_from_step=resume_from_step,
            outbox_dir=self.outbox_dir,
            reopen=reopen,
            max_steps=opening.get("max_steps"),
            objective=opening.get("objective"),
            source_checkpoint=opening.get("source_checkpoint"),
            **self.recorder_options,
        )

    def _service_client(self, run_id: str, key: str, parent_account: str = "") -> tinker.ServiceClient:
        account = {METADATA_ACCOUNT: parent_account} if parent_account else {}
        metadata = {**account, **self.user_metadata, METADATA_RUN_ID: run_id, METADATA_RUN_KEY: key}
        return tinker.ServiceClient(
            user_metadata=metadata, project_id=self.project_id, base_url=self.base_url, api_key=self.api_key
        )

    @staticmethod
    def _model_metadata(run_id: str, key: str) -> dict[str, str]:
        return {METADATA_RUN_ID: run_id, METADATA_RUN_KEY: key}

    def _wrap(
        self,
        service: tinker.ServiceClient,
        training: tinker.TrainingClient,
        recorder: RunRecorder,
        base_model: str,
        key: str,
        *,
        start_step: int,
        resumed_from_step: int | None,
    ) -> LedgeredTrainingClient:
        """The ledgered client of a started attempt, its Tinker session linked to the run."""
        client = LedgeredTrainingClient(
            service_client=service,
            training_client=training,
            recorder=recorder,
            prices=self.prices,
            base_model=base_model,
            optim_step_usd_micro=self.optim_step_usd_micro,
            hold_ttl_s=self.hold_ttl_s,
            start_step=start_step,
            resumed_from_step=resumed_from_step,
            run_key=key,
        )
        try:
            client.link_session()
        except BaseException:  # only what stops this attempt (AttemptSuperseded, RunFinished)
            client.close()
            raise
        return client


def _record_datasets(client: LedgeredTrainingClient, datasets: Mapping[str, Any] | None) -> LedgeredTrainingClient:
    """Record the datasets handed to the run helper ({role: rows}); a failure is logged."""
    for role, rows in (datasets or {}).items():
        if rows is not None:
            client.record_dataset(rows, role=role)
    return client


# A checkpoint Tinker holds (a tinker:// path, no files here to check) with its optimizer state.
_LOADER = Loader(backend=BACKEND, uri_prefix=TINKER_SCHEME, fidelity=FIDELITY_STATE, files=False)


def _check_spec(state: RunState, spec: Mapping[str, Any], rank: int | None, base_model: str | None) -> tuple[Any, Any]:
    """The spec's LoRA rank and base model, once they agree with those given."""
    spec_rank, spec_model = spec.get("lora_rank"), spec.get("base_model")
    if rank is not None and spec_rank is not None and int(spec_rank) != rank:
        raise ResumeRefused(
            ResumeReason.LORA_MISMATCH, f"the run's spec has LoRA rank {int(spec_rank)}, not {rank}", state=state
        )
    if base_model is not None and spec_model is not None and spec_model != base_model:
        raise ResumeRefused(
            ResumeReason.SPEC_MISMATCH, f"the run's spec has base model {spec_model!r}, not {base_model!r}", state=state
        )
    return spec_rank, spec_model


def _load_state(
    service: tinker.ServiceClient,
    point: ResumePoint,
    metadata: dict[str, str],
    expected_rank: Any,
    state: RunState,
) -> tinker.TrainingClient:
    """A new Tinker model from the checkpoint's weights and optimizer state, once its LoRA rank is
    the run's (`expected_rank`, when known)."""
    training = service.create_training_client_from_state_with_optimizer(point.uri, user_metadata=metadata).result()
    info = training.get_info()
    if expected_rank is not None and info.lora_rank != int(expected_rank):
        raise ResumeRefused(
            ResumeReason.LORA_MISMATCH,
            f"the checkpoint at step {point.step} has LoRA rank {info.lora_rank}, the run's spec {int(expected_rank)}",
            state=state,
        )
    return training


def _resume_point(state: RunState, reopen: bool) -> ResumePoint:
    """The RunState's checkpoint if Tinker can resume from it with its optimizer, else a refusal."""
    point = latest(state, reopen=reopen, required=True)
    assert point is not None  # required: a refusal otherwise
    decide(point, _LOADER, state=state)
    if "/weights/" not in point.uri:
        raise ResumeRefused(
            ResumeReason.FIDELITY_MISMATCH,
            f"the checkpoint at step {point.step} holds no optimizer "
            f"state ({point.uri}): save_state() or save_checkpoint() make resumable ones",
            state=state,
        )
    newer = [checkpoint.step for checkpoint in state.expired_checkpoints if checkpoint.step > point.step]
    if newer:
        log.warning(
            "resuming from step %d: the checkpoints after it have expired (%s)",
            point.step,
            ", ".join(str(step) for step in newer),
        )
    return point


def ledgered_training_client(
    ledger: LedgerClient, base_model: str, rank: int = 32, *, prices: PriceSheets, **options: Any
) -> LedgeredTrainingClient:
    """LedgeredServiceClient(ledger, prices=..., <its options>).create_lora_training_client(base_model,
    rank, <its options>), options split by name."""
    service_options, run_options = _split(options)
    return LedgeredServiceClient(ledger, prices=prices, **service_options).create_lora_training_client(
        base_model, rank, **run_options
    )


def resume(ledger: LedgerClient, *, prices: PriceSheets, **options: Any) -> LedgeredTrainingClient:
    """LedgeredServiceClient(ledger, prices=..., <its options>).resume(<its options>)."""
    service_options, run_options = _split(options)
    return LedgeredServiceClient(ledger, prices=prices, **service_options).resume(**run_options)


_SERVICE_OPTIONS = frozenset(
    {
        "optim_step_usd_micro",
        "base_url",
        "api_key",
        "project_id",
        "user_metadata",
        "hold_ttl_s",
        "attempt_label",
        "outbox_dir",
        "recorder_options",
    }
)


def _split(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    service = {key: value for key, value in options.items() if key in _SERVICE_OPTIONS}
    return service, {key: value for key, value in options.items() if key not in _SERVICE_OPTIONS}
