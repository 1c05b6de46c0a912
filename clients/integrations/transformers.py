"""transformers.Trainer and TRL trainers (extra `trl`): the run, its steps, checkpoints and GPU
spend in the ledger, with one line, and resume from what the ledger knows.

    spec = spec_for(name="sft-demo", base_model="org/model", revision="<commit>", method="sft",
                    lora=peft_config, args=training_args, dataset=dataset_digest("data.jsonl"))
    callback = LedgerCallback(address="127.0.0.1:50051", spec=spec, outbox_dir="outbox",
                              gpu_price=GpuPrice(2_500_000, gpu_type="H100"), cap_usd_micro=50_000_000)
    trainer.add_callback(callback)
    with callback:                 # ends the run "failed" or "stopped" if train() raises
        trainer.train(resume_from_checkpoint=callback.resume_checkpoint())   # a path or None, never True

Resume trusts nothing the ledger says about a checkpoint's files: the directory must be under the
trainer's output directory (real paths resolved: no `..` out of it, no symlink out of it, nor any
file in it linking out), and its digest must be the one recorded with it (verify_digest=False
accepts a checkpoint recorded without one, or changed since). The callback knows the output
directory from `output_dir=`, or from the trainer it is given to (Trainer(callbacks=[callback])):
asked before that trainer is built, it holds the path to args.output_dir when the trainer is
built (on_init_end; on_train_begin at the latest) and refuses it there.

What it records
- The run, opened by its run key (the sha256 of the spec: see spec_for), and one attempt per
  train() call, started in on_train_begin. A trainer that resumed (global_step > 0) starts its
  attempt from that step, which must be a checkpoint the ledger knows: steps above it that earlier
  attempts recorded are superseded.
- Steps from on_log: learning_rate -> lr, mean_token_accuracy -> token_accuracy, eval_* kept,
  runtime, throughput and flops keys dropped, TRL's num_tokens dropped (it restarts on resume):
  tokens are TrainerState.num_input_tokens_seen, restored on resume (with count_tokens, the
  default, the callback turns args.include_num_input_tokens_seen from "no" to "non_padding", on
  every rank). Non-finite values are dropped and counted. The
  logs of one step (train, then eval) are merged into one record, sent when the step is over.
  The final summary log (train_loss, train_runtime) goes into the run's summary.
- Checkpoints from on_save (output_dir/checkpoint-<step>, whole by then): backend "hf", uri the
  absolute path, fidelity weights+optimizer (weights with save_only_model), digest over the
  directory's files (checkpoint_digest). Digested and recorded on a background thread, after the
  steps before it, so the training loop never waits for the ledger or the disk.
- The finish in on_train_end: done, or stopped with the reason after a spend stop; summary with
  the steps, the final loss and the trainer's train_loss. transformers calls no callback when
  train() raises: run it inside `with callback:` and the run ends as clients.recorder.exit_status
  says, with the error: "stopped" for KeyboardInterrupt (SIGTERM too, with
  recorder_options={"stop_on_sigterm": True}), "failed" for any other exception.
- An ended run is not trained again by accident: a done run is refused (RunEnded: use a new run
  key), a failed or stopped one too unless the callback (and resume_checkpoint) has reopen=True.
- The cap and parent account go with every open of the run (resume_checkpoint's, the callback's):
  a cap given changes the cap of a run that exists.

GPU spend (with gpu_price): before each interval of GPU time (`interval_s` seconds, or
`interval_steps` steps, whichever ends first) a hold of price x interval is reserved with its cost
basis; when the interval ends the milliseconds actually used are committed and the next hold is
reserved at once, so every step runs under a hold. An interval ends early rather than let the
next step outrun its hold. When the cap refuses a hold (a smaller hold for what remains is tried
first), or the ledger cannot be reached for one, training stops cleanly: control.should_save and
control.should_training_stop, a checkpoint at that step, the run finished "stopped" with the
reason. If no hold can be had for the very first interval, nothing may train: on_train_begin
raises SpendHoldRefused (the run is finished "stopped" when the ledger can be reached).

An unreachable ledger: the recorder opens in the background (RunRecorder.open(defer=True)).
Without gpu_price, training goes on; steps wait in the outbox (durable with outbox_dir) and are
delivered exactly once when the ledger answers, checkpoints are recorded then. With gpu_price,
no hold can be had, so training does not start (or, mid-run, stops cleanly): spend is never
made without a hold. Logging never blocks and never raises into the training loop.

A killed attempt's last hold is not committed: the ledger expires it at its TTL (2 x interval + 60 s).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import socket
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from clients.client import LedgerClient
from clients.errors import LedgerClientError, RunEnded, SpendCapExceeded
from clients.integrations.pricing import GpuPrice
from clients.integrations.paths import outside as _outside
from clients.recorder import RunRecorder, exit_error, exit_status, refuse_ended
from clients.retry import REFUSAL_CODES, RetryPolicy
from clients.runkey import canonical_json, run_key

__all__ = [
    "LedgerCallback", "LedgerCallbackWarning", "ResumeRefused", "RunEnded", "SpendHoldRefused", "SpecMismatch",
    "resume_checkpoint", "checkpoint_from_state", "spec_for", "training_run_key", "lora_shape",
    "hyperparameters_from_args", "dataset_content_digest", "checkpoint_digest", "map_log_keys", "BACKEND",
]

log = logging.getLogger("trainledger.clients.transformers")

BACKEND = "hf"
FIDELITY_FULL, FIDELITY_WEIGHTS = "weights+optimizer", "weights"
RENAMED = {"learning_rate": "lr", "mean_token_accuracy": "token_accuracy"}
DROPPED = frozenset({"total_flos", "num_tokens", "num_input_tokens_seen", "step"})
DROPPED_SUFFIXES = ("_runtime", "_per_second", "_flos")
SUMMARY_KEYS = ("train_loss", "train_runtime", "train_samples_per_second", "train_steps_per_second", "total_flos")
# TrainingArguments (and TRL config) fields that define a run; the ones a spec's hyperparameters
# are checked against in on_train_begin.
RUN_DEFINING_ARGS = (
    "learning_rate", "per_device_train_batch_size", "gradient_accumulation_steps", "max_steps", "num_train_epochs",
    "seed", "data_seed", "lr_scheduler_type", "warmup_steps", "warmup_ratio", "weight_decay", "adam_beta1",
    "adam_beta2", "adam_epsilon", "max_grad_norm", "optim", "bf16", "fp16", "max_length", "packing",
    "completion_only_loss", "assistant_only_loss", "loss_type", "beta",
)
_CHUNK_BYTES = 1 << 20
_JOB_BACKOFF = RetryPolicy(initial_backoff_s=0.2, max_backoff_s=5.0)
# The client made from an address: quick first retries, and the default outage budget (30 s) for
# UNAVAILABLE, so a ledger restart does not stop training for want of a spend hold.
_CLIENT_RETRIES = RetryPolicy(attempts=4, initial_backoff_s=0.05, max_backoff_s=0.5)


class LedgerCallbackWarning(UserWarning):
    """Something about the ledger callback's use that loses data silently."""


class ResumeRefused(Exception):
    """The ledger's resume point cannot be used as it stands. `reason`: CHECKPOINTS_EXPIRED (pass
    allow_restart=True to start again from step 0), OTHER_BACKEND, OUTPUT_DIR_UNKNOWN (no output
    directory to hold the checkpoint to), OUTSIDE_OUTPUT_DIR (the checkpoint, or a file in it,
    resolves outside the output directory), CHECKPOINT_MISSING, DIGEST_MISSING (recorded without a
    digest: verify_digest=False to accept it), DIGEST_MISMATCH, LORA_MISMATCH, CHECKPOINT_UNKNOWN
    (the trainer resumed from a step the ledger has no live checkpoint at). A run that has ended is
    refused with clients.errors.RunEnded."""

    def __init__(self, reason: str, message: str, *, state: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason, self.message, self.state = reason, message, state


class SpendHoldRefused(RuntimeError):
    """No hold could be had for the first interval of GPU time, so training did not start.
    `reason`: SPEND_CAP_EXCEEDED or LEDGER_UNAVAILABLE; the ledger's error is the __cause__."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason, self.message = reason, message


class SpecMismatch(ValueError):
    """The spec (hence the run key) does not describe the trainer it is attached to."""


# ---- Run specs and keys -------------------------------------------------------------------------

def _number(value: Any) -> Any:
    """An int for integral numbers (16 and 16.0 give the same key), a float otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    return int(value) if float(value).is_integer() else float(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _number(value)
    if isinstance(value, Mapping):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, set | frozenset):
        return sorted(_jsonable(item) for item in value)
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    return value


def lora_shape(lora: Any) -> dict[str, Any] | None:
    """The LoRA shape that defines a run: {"r", "alpha", "target_modules", "dropout"}, from a
    mapping (r/alpha/target_modules/dropout, or peft's lora_alpha/lora_dropout, as in
    adapter_config.json), a peft LoraConfig, or a PeftModel (its active adapter). None stays None."""
    if lora is None:
        return None
    peft_configs = getattr(lora, "peft_config", None)
    if isinstance(peft_configs, Mapping) and peft_configs:
        lora = peft_configs.get(getattr(lora, "active_adapter", "default")) or next(iter(peft_configs.values()))
    get: Callable[[str], Any]
    if isinstance(lora, Mapping):
        get = lora.get
    else:
        get = lambda name: getattr(lora, name, None)  # noqa: E731
    alpha = get("alpha") if get("alpha") is not None else get("lora_alpha")
    dropout = get("dropout") if get("dropout") is not None else get("lora_dropout")
    modules = get("target_modules")
    if modules is not None and not isinstance(modules, str):
        modules = sorted(str(module) for module in modules)
    if get("r") is None:
        raise ValueError(f"not a LoRA configuration: {lora!r}")
    return {"r": _number(get("r")), "alpha": _number(alpha), "target_modules": modules,
            "dropout": _number(dropout or 0)}


def hyperparameters_from_args(args: Any, names: Iterable[str] = RUN_DEFINING_ARGS) -> dict[str, Any]:
    """The run-defining fields of a TrainingArguments / TRL config that it has and that are set."""
    picked = {}
    for name in names:
        value = getattr(args, name, None)
        if value is not None:
            picked[name] = _jsonable(value)
    return picked


def dataset_content_digest(dataset: Iterable[Mapping[str, Any]]) -> str:
    """"sha256:<hex>" of a dataset's rows in order (each row as canonical JSON): for in-memory
    datasets (datasets.Dataset, a list of dicts). For files use clients.runkey.dataset_digest."""
    digest = hashlib.sha256()
    for row in dataset:
        digest.update(canonical_json(_jsonable(dict(row))).encode("utf-8"))
        digest.update(b"\n")
    return "sha256:" + digest.hexdigest()


def spec_for(*, name: str, base_model: str, revision: str = "", method: str = "sft", lora: Any = None,
             hyperparameters: Mapping[str, Any] | None = None, args: Any = None, dataset: Any = None,
             extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The spec of a training run: name, base model id and pinned revision, method ("sft", "dpo",
    ...), LoRA shape (lora_shape), hyperparameters (the run-defining fields of `args`, then
    `hyperparameters` over them) and the dataset's identity by content (a digest string from
    clients.runkey.dataset_digest / file_digest, or an in-memory dataset, digested here).
    Leave out what may change between attempts (resume points, hosts, the cap)."""
    params = hyperparameters_from_args(args) if args is not None else {}
    params.update(_jsonable(dict(hyperparameters or {})))
    if dataset is not None and not isinstance(dataset, str | Mapping):
        dataset = dataset_content_digest(dataset)
    spec: dict[str, Any] = {"name": name, "base_model": {"id": base_model, "revision": revision}, "method": method,
                            "lora": lora_shape(lora), "hyperparameters": params, "dataset": _jsonable(dataset)}
    if extra:
        spec["extra"] = _jsonable(dict(extra))
    return spec


def training_run_key(spec: Mapping[str, Any] | None = None, **fields: Any) -> str:
    """The run key of a spec, or of spec_for(**fields)."""
    return run_key(spec if spec is not None else spec_for(**fields))


def _check_spec(spec: Mapping[str, Any], args: Any, model: Any) -> None:
    problems = []
    lora = spec.get("lora")
    if lora is not None and getattr(model, "peft_config", None):
        actual = lora_shape(model)
        if actual != lora_shape(lora):
            problems.append(f"LoRA shape: spec {lora_shape(lora)}, model {actual}")
    for name, value in (spec.get("hyperparameters") or {}).items():
        if hasattr(args, name) and _jsonable(getattr(args, name)) != _jsonable(value):
            problems.append(f"{name}: spec {value!r}, trainer {_jsonable(getattr(args, name))!r}")
    if problems:
        raise SpecMismatch("the run spec does not describe this trainer (its run key would be wrong): "
                           + "; ".join(problems))


# ---- Checkpoints and resume ---------------------------------------------------------------------

def checkpoint_digest(path: str | os.PathLike[str]) -> str:
    """"sha256:<hex>" over a checkpoint directory: each file's path relative to it (sorted) and
    the sha256 of its content."""
    root = Path(path)
    files = sorted((item.relative_to(root).as_posix(), item) for item in root.rglob("*") if item.is_file())
    outer = hashlib.sha256()
    for relative, item in files:
        inner = hashlib.sha256()
        with open(item, "rb") as handle:
            while chunk := handle.read(_CHUNK_BYTES):
                inner.update(chunk)
        outer.update(relative.encode("utf-8") + b"\0" + inner.digest())
    return "sha256:" + outer.hexdigest()


def _path_of(uri: str) -> Path:
    return Path(uri.removeprefix("file://"))


def _resume_candidate(state: Mapping[str, Any], *, backend: str, allow_restart: bool, reopen: bool) -> Path | None:
    """The path of the RunState's resume handle, before anything about it is checked; None for a
    fresh start."""
    refuse_ended(state, reopen=reopen)
    resume = state["resume"]
    if not resume["available"]:
        if state.get("expired_checkpoints") and not allow_restart:
            steps = [checkpoint["step"] for checkpoint in state["expired_checkpoints"]]
            raise ResumeRefused("CHECKPOINTS_EXPIRED", f"every checkpoint of the run has expired (steps {steps}): "
                                "starting again from step 0 needs allow_restart=True", state=state)
        return None
    handle, step = resume["handle"], resume["from_step"]
    if handle["backend"] != backend:
        raise ResumeRefused("OTHER_BACKEND", f"the checkpoint at step {step} is a {handle['backend']!r} state, "
                            f"not {backend!r}: {handle['uri']}", state=state)
    return _path_of(handle["uri"])


def _verified(path: Path, state: Mapping[str, Any], *, output_dir: str | os.PathLike[str] | None, lora: Any,
              verify_digest: bool) -> str:
    """The checkpoint directory's real path once it is under `output_dir` (not checked when None:
    the caller holds it to one later), there, with the digest recorded with it, and the LoRA
    shape; else ResumeRefused."""
    step = state["resume"]["from_step"]
    if output_dir is not None and (problem := _outside(path, output_dir)):
        raise ResumeRefused("OUTSIDE_OUTPUT_DIR", f"the checkpoint at step {step} is not under the output directory: "
                            f"{problem}", state=state)
    if not path.is_dir():
        raise ResumeRefused("CHECKPOINT_MISSING", f"the checkpoint at step {step} is not on this machine: {path}",
                            state=state)
    checkpoint = state.get("checkpoint") or {}
    expected = checkpoint.get("digest", "") if checkpoint.get("step") == step else ""
    if verify_digest:
        if not expected:
            raise ResumeRefused("DIGEST_MISSING", f"the checkpoint at step {step} ({path}) was recorded without a "
                                "digest, so its files cannot be checked: pass verify_digest=False to resume from "
                                "it anyway", state=state)
        actual = checkpoint_digest(path)
        if actual != expected:
            raise ResumeRefused("DIGEST_MISMATCH", f"{path} is not the checkpoint the ledger recorded at step {step}: "
                                f"digest {actual}, recorded {expected}", state=state)
    wanted = lora_shape(lora)
    if wanted is not None:
        config = path / "adapter_config.json"
        found = lora_shape(json.loads(config.read_text())) if config.is_file() else None
        if found != wanted:
            raise ResumeRefused("LORA_MISMATCH", f"{path} holds LoRA shape {found}, the run's is {wanted}", state=state)
    return os.path.realpath(path)


def checkpoint_from_state(state: Mapping[str, Any], *, output_dir: str | os.PathLike[str] | None = None,
                          backend: str = BACKEND, lora: Any = None, allow_restart: bool = False,
                          verify_digest: bool = True, reopen: bool = False) -> str | None:
    """The checkpoint directory to resume from, by a RunState, under `output_dir` (see
    resume_checkpoint). ResumeRefused OUTPUT_DIR_UNKNOWN when there is a checkpoint and no
    output_dir to hold it to."""
    path = _resume_candidate(state, backend=backend, allow_restart=allow_restart, reopen=reopen)
    if path is None:
        return None
    if output_dir is None:
        raise ResumeRefused("OUTPUT_DIR_UNKNOWN", f"the checkpoint at step {state['resume']['from_step']} ({path}) "
                            "cannot be checked against the trainer's output directory: pass output_dir", state=state)
    return _verified(path, state, output_dir=output_dir, lora=lora, verify_digest=verify_digest)


def _as_client(client_or_address: LedgerClient | str, principal: str = "",
               outage_budget_s: float | None = None) -> tuple[LedgerClient, bool]:
    if isinstance(client_or_address, str):
        return LedgerClient(client_or_address, principal=principal, timeout_s=10.0, retries=_CLIENT_RETRIES,
                            outage_budget_s=outage_budget_s), True
    return client_or_address, False


def _open_state(client_or_address: LedgerClient | str, *, key: str, spec: Mapping[str, Any] | None, name: str,
                cap_usd_micro: int | None, parent_account: str) -> dict[str, Any]:
    client, owned = _as_client(client_or_address)
    try:
        opened = client.open_run(run_key=key, name=name or str((spec or {}).get("name", "")), spec=spec,
                                 cap_usd_micro=cap_usd_micro, parent_account=parent_account)
    finally:
        if owned:
            client.close()
    return opened["state"]


def resume_checkpoint(client_or_address: LedgerClient | str, *, run_key: str | None = None,
                      spec: Mapping[str, Any] | None = None, output_dir: str | os.PathLike[str] | None = None,
                      backend: str = BACKEND, lora: Any = None, allow_restart: bool = False,
                      verify_digest: bool = True, name: str = "", cap_usd_micro: int | None = None,
                      parent_account: str = "", reopen: bool = False) -> str | None:
    """The path to pass as trainer.train(resume_from_checkpoint=...), from the ledger's RunState:
    the run's most progressed live checkpoint, or None when the run has none (a fresh start).
    Never True. The run is opened by its key with `name`, `cap_usd_micro` and `parent_account`:
    pass the callback's (or use LedgerCallback.resume_checkpoint), since this may be the open
    that creates the run, and a cap given changes an existing run's cap.
    The checkpoint must be under `output_dir`, the trainer's args.output_dir (real paths: a `..`
    or a symlink out of it is refused). Its digest must be the one recorded with it:
    `verify_digest=False` resumes from a checkpoint recorded without a digest (from before
    digests were recorded) or changed since. The LoRA shape checked is `lora`, else the spec's.
    Raises RunEnded when the run is done, or failed or stopped without reopen=True. Raises
    ResumeRefused: every checkpoint expired (restart from 0 only with allow_restart=True), a
    handle of another backend, no output_dir (OUTPUT_DIR_UNKNOWN), a checkpoint outside it
    (OUTSIDE_OUTPUT_DIR), the directory missing, no digest recorded (DIGEST_MISSING) or another
    one (DIGEST_MISMATCH), its adapter_config.json another LoRA shape.
    Raises LedgerClientError when the ledger cannot answer."""
    if run_key is None and spec is None:
        raise TypeError("resume_checkpoint needs run_key or spec")
    state = _open_state(client_or_address, key=run_key or training_run_key(spec), spec=spec, name=name,
                        cap_usd_micro=cap_usd_micro, parent_account=parent_account)
    return checkpoint_from_state(state, output_dir=output_dir, backend=backend,
                                 lora=lora if lora is not None else (spec or {}).get("lora"),
                                 allow_restart=allow_restart, verify_digest=verify_digest, reopen=reopen)


# ---- Log mapping --------------------------------------------------------------------------------

def map_log_keys(logs: Mapping[str, Any]) -> dict[str, Any]:
    """A trainer's log dict as step metrics: renamed (learning_rate -> lr, mean_token_accuracy ->
    token_accuracy), eval_* and the rest kept, runtime / throughput / flops / token-count keys
    dropped. Values are left as they are (the recorder drops what is not a finite number)."""
    metrics = {}
    for key, value in logs.items():
        if key in DROPPED or key.endswith(DROPPED_SUFFIXES):
            continue
        metrics[RENAMED.get(key, key)] = value
    return metrics


def _is_summary(logs: Mapping[str, Any]) -> bool:
    """The end-of-training log (train_loss, train_runtime ...); step logs with token counting on
    carry train_runtime too, but never train_loss."""
    return "train_loss" in logs and "loss" not in logs


# ---- Background ledger writes -------------------------------------------------------------------

class _Jobs:
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
                    self._condition.wait(min(_JOB_BACKOFF.backoff_s(min(tried, 10)),
                                             max(0.0, self._give_up_at - time.monotonic())))
                tried += 1
            with self._condition:
                self._busy = False
                self._condition.notify_all()


def _record_checkpoint(recorder: RunRecorder, step: int, path: Path, fidelity: str) -> None:
    """Digest a saved checkpoint and record it (after the steps before it). Off the training
    thread: a directory rotated away before its turn came is not recorded (nothing could resume
    from it); the next save does not touch it (each step has its own directory)."""
    try:
        digest = checkpoint_digest(path)
    except OSError as error:
        log.warning("the checkpoint at step %s is gone or unreadable (%s): not recorded", step, error)
        return
    recorder.checkpoint(step, str(path.resolve()), BACKEND, fidelity, digest=digest)


# ---- The callback -------------------------------------------------------------------------------

@dataclass
class _Interval:
    reservation_id: str
    amount_usd_micro: int
    milliseconds: int
    started: float
    first_step: int


class LedgerCallback(TrainerCallback):
    """Records a Trainer's run in the ledger (see the module docstring). Give `address` (a client
    is made, and closed at the end; its calls ride out a ledger outage of `outage_budget_s`, 30 s
    by default) or `client`; `spec` (spec_for) or `run_key` (then `name`).
    Spend: `gpu_price` (GpuPrice), `cap_usd_micro` (given on every open: it sets the cap of a new
    run and changes an existing one's), `parent_account`, `interval_s` / `interval_steps`.
    `outbox_dir` keeps unsent steps on disk across an outage and a crash. `output_dir`: the
    trainer's output directory, which resume_checkpoint() holds the checkpoint to (default: the
    args.output_dir of the trainer the callback is given to). `reopen=True` lets a
    failed or stopped run take a new attempt (else RunEnded). Use `with callback:` around
    trainer.train() so that an exception ends the run "failed" (an interrupt "stopped").
    `recorder_options` go to RunRecorder.open (batch_interval_s, flush_timeout_s, stop_on_sigterm ...).
    `check_spec` refuses (SpecMismatch) a spec whose LoRA shape or hyperparameters differ from
    the trainer's. `count_tokens` turns on the trainer's token count (args.include_num_input_tokens_seen
    "non_padding") when it is off, so steps carry tokens. Only the world's process zero records."""

    def __init__(self, *, address: str | None = None, client: LedgerClient | None = None,
                 spec: Mapping[str, Any] | None = None, run_key: str | None = None, name: str = "",
                 gpu_price: GpuPrice | None = None, cap_usd_micro: int | None = None, parent_account: str = "",
                 outbox_dir: str | os.PathLike[str] | None = None,
                 output_dir: str | os.PathLike[str] | None = None, interval_s: float = 60.0,
                 interval_steps: int | None = None, attempt_label: str | None = None, principal: str = "",
                 check_spec: bool = True, count_tokens: bool = True, reopen: bool = False,
                 outage_budget_s: float | None = None, recorder_options: Mapping[str, Any] | None = None) -> None:
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
        self.count_tokens, self.reopen, self.outage_budget_s = count_tokens, reopen, outage_budget_s
        self.recorder_options = dict(recorder_options or {})
        self._client, self._owns_client = client, client is None
        self.recorder: RunRecorder | None = None
        self._warned = False
        self._reset()

    def _reset(self) -> None:
        self._active = False
        self._row: list[Any] | None = None  # [step, tokens, metrics] of the step being logged
        self._points = 0
        self._logs_at_begin = 0
        self._last_loss: float | None = None
        self._summary: dict[str, Any] = {}
        self._jobs: _Jobs | None = None
        self._interval: _Interval | None = None
        self._intervals = 0
        self._step_seconds: deque[float] = deque(maxlen=20)
        self._last_step_end = 0.0
        self._stop_reason: str | None = None
        self._uncommitted: list[tuple[str, int, int]] = []  # (reservation id, milliseconds used, amount held)
        self._trainer_state: Any = None  # the TrainerState of this train() (one object, updated in place)

    # -- the one-call resume helper --

    def resume_checkpoint(self, *, allow_restart: bool = False, verify_digest: bool = True,
                          output_dir: str | os.PathLike[str] | None = None) -> str | None:
        """resume_checkpoint() for this callback's run, opened as the callback opens it, held to
        `output_dir`, else the callback's, else the args.output_dir of the trainer it was given
        to. Asked before any of these is known (before Trainer(callbacks=[callback]) is built),
        it checks the rest now and holds the path to args.output_dir when the trainer is built:
        on_init_end (or on_train_begin, at the latest) raises ResumeRefused OUTSIDE_OUTPUT_DIR.
        `verify_digest=False` accepts a checkpoint recorded without a digest."""
        root = next((d for d in (output_dir, self.output_dir, self._trainer_output_dir) if d is not None), None)
        state = _open_state(self._get_client(), key=self.run_key, spec=self.spec, name=self.name,
                            cap_usd_micro=self.cap_usd_micro, parent_account=self.parent_account)
        candidate = _resume_candidate(state, backend=BACKEND, allow_restart=allow_restart, reopen=self.reopen)
        self._unchecked = None
        if candidate is None:
            return None
        path = _verified(candidate, state, output_dir=root, lora=(self.spec or {}).get("lora"),
                         verify_digest=verify_digest)
        if root is None:
            self._unchecked = path
        return path

    def _hold_to_output_dir(self, args: Any) -> None:
        """Refuse the resume path handed out before the output directory was known unless it is
        under args.output_dir."""
        path, self._unchecked = self._unchecked, None
        output_dir = getattr(args, "output_dir", None)
        if path is None or output_dir is None:
            return
        if problem := _outside(path, output_dir):
            raise ResumeRefused("OUTSIDE_OUTPUT_DIR", f"the checkpoint to resume from is not under the trainer's "
                                f"output directory: {problem}")

    def _get_client(self) -> LedgerClient:
        if self._client is None:
            self._client = LedgerClient(str(self.address), principal=self.principal, timeout_s=10.0,
                                        retries=_CLIENT_RETRIES, outage_budget_s=self.outage_budget_s)
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
            _check_spec(self.spec, args, model)
        resume_from = state.global_step if state.global_step > 0 else None
        label = self.attempt_label or f"{socket.gethostname()}:{os.getpid()}"
        try:
            self.recorder = RunRecorder.open(
                self._get_client(), run_key=self.run_key, name=self.name, spec=self.spec,
                cap_usd_micro=self.cap_usd_micro, parent_account=self.parent_account, attempt_label=label,
                resume_from_step=resume_from, outbox_dir=self.outbox_dir, defer=True, reopen=self.reopen,
                **self.recorder_options)
        except LedgerClientError as error:
            if error.reason not in ("CHECKPOINT_NOT_FOUND", "CHECKPOINT_EXPIRED"):
                raise
            raise ResumeRefused("CHECKPOINT_UNKNOWN", f"the trainer resumed at step {resume_from}, but the ledger "
                                f"has no live checkpoint there ({error.reason}): resume from resume_checkpoint()'s "
                                "path") from error
        self._active = True
        held_cap = ((self.recorder.state or {}).get("spend") or {}).get("cap_usd_micro")
        if self.recorder.state is not None and self.cap_usd_micro is not None and held_cap != self.cap_usd_micro:
            log.warning("run %s has a cap of %s micro-USD, not the %s given: this ledger did not change it on "
                        "open (set_cap does)", self.run_key, held_cap, self.cap_usd_micro)
        self._logs_at_begin = len(state.log_history)
        self._jobs = _Jobs()
        if self.gpu_price is not None:
            self._first_interval(state)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._active:
            self._send_row()
            self._check_points(state)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._active and self._interval is not None:
            self._next_interval(state, control)

    def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None,
               **kwargs: Any) -> None:
        if not self._active or not logs:
            return
        try:
            if _is_summary(logs):
                self._summary.update({key: logs[key] for key in SUMMARY_KEYS if key in logs})
                return
            metrics = map_log_keys(logs)
            loss = metrics.get("loss")
            if isinstance(loss, int | float) and math.isfinite(loss):
                self._last_loss = float(loss)
            seen = getattr(state, "num_input_tokens_seen", 0)
            tokens = int(seen) if seen else None
            step = state.global_step
            if self._row is not None and self._row[0] == step:
                self._row[1] = tokens if tokens is not None else self._row[1]
                self._row[2].update(metrics)
            else:
                self._send_row()
                self._row = [step, tokens, metrics]
            self._points += 1
        except Exception:  # noqa: BLE001 - logging never raises into the training loop.
            log.exception("could not record a log of step %s", getattr(state, "global_step", "?"))

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not self._active:
            return
        self._send_row()
        self._check_points(state)
        step = state.global_step
        path = Path(args.output_dir) / f"checkpoint-{step}"
        if not path.is_dir():
            log.warning("on_save at step %s but %s is not there: the checkpoint is not recorded", step, path)
            return
        fidelity = FIDELITY_WEIGHTS if getattr(args, "save_only_model", False) else FIDELITY_FULL
        recorder = self.recorder
        assert recorder is not None and self._jobs is not None
        self._jobs.submit(f"the checkpoint at step {step}", lambda: _record_checkpoint(recorder, step, path, fidelity))

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._active:
            self._end(state)

    def _end(self, state: Any, error: BaseException | None = None) -> None:
        """Finish the attempt: "done" (or "stopped" after a spend stop) from on_train_end; as
        exit_status says, with the error, when train() raised."""
        self._active = False
        recorder = self.recorder
        assert recorder is not None and self._jobs is not None
        try:
            self._send_row()
            if error is None:
                self._check_points(state, ended=True)
            if self._interval is not None:
                self._close_interval()
            self._commit_left()
            timeout_s = recorder.flush_timeout_s
            if not self._jobs.close(timeout_s):
                log.warning("some checkpoints of run %s could not be recorded in %s s", self.run_key, timeout_s)
            summary: dict[str, Any] = {"steps": state.global_step, "attempt": recorder.attempt}
            if self._last_loss is not None:
                summary["final_loss"] = self._last_loss
            summary.update({key: value for key, value in self._summary.items()
                            if isinstance(value, int | float) and math.isfinite(value)})
            if self._stop_reason:
                summary["stop_reason"] = self._stop_reason
            if error is not None:
                recorder.finish(exit_status(error), summary=summary, error=exit_error(error))
            else:
                recorder.finish("stopped" if self._stop_reason else "done", summary=summary)
        except LedgerClientError as error:
            log.warning("could not finish run %s in the ledger (%s); unsent steps stay in the outbox",
                        self.run_key, error)
            recorder.close(flush_timeout_s=0)
        except Exception:  # noqa: BLE001 - never into the trainer.
            log.exception("the ledger callback failed to finish run %s", self.run_key)
            recorder.close(flush_timeout_s=0)
        finally:
            if self._owns_client and self._client is not None:
                self._client.close()
                self._client = None

    # -- steps --

    def _send_row(self) -> None:
        row, self._row = self._row, None
        if row is not None and self.recorder is not None:
            self.recorder.log(row[0], tokens=row[1], **row[2])

    def _check_points(self, state: Any, *, ended: bool = False) -> None:
        """Warn once when the trainer has logged but this callback recorded no point (an on_log
        override that does not call super().on_log(), for one)."""
        if self._warned or self._points:
            return
        logged = len(state.log_history) - self._logs_at_begin
        if ended and state.log_history and _is_summary(state.log_history[-1]):
            logged -= 1
        if logged > 0:
            self._warned = True
            warnings.warn(f"{type(self).__name__} has recorded no point although the trainer logged {logged} "
                          "time(s): does its on_log call super().on_log()?", LedgerCallbackWarning, stacklevel=3)

    # -- spend --

    def _reserve(self, milliseconds: int, step: int) -> _Interval:
        recorder, price = self.recorder, self.gpu_price
        assert recorder is not None and price is not None
        recorder.require_open()  # Fail closed: no hold for an attempt the ledger has not started.
        amount = price.amount(milliseconds)
        self._intervals += 1
        reservation_id = f"{recorder.run_id}:a{recorder.attempt}:i{self._intervals}:{os.urandom(4).hex()}"
        answer = recorder.client.reserve(account=recorder.account, amount_usd_micro=amount,
                                         reservation_id=reservation_id, basis=price.basis(milliseconds),
                                         ttl_s=self.interval_s * 2 + 60, attempt=recorder.attempt)
        return _Interval(answer["reservation_id"], amount, milliseconds, time.monotonic(), step)

    def _hold(self, step: int) -> _Interval:
        """A hold for the next interval: the whole interval, else what remains under the cap if
        that still covers the next step."""
        milliseconds = max(1, int(self.interval_s * 1000))
        try:
            return self._reserve(milliseconds, step)
        except SpendCapExceeded as refused:
            price = self.gpu_price
            assert price is not None
            remaining = refused.remaining_usd_micro or 0
            rate = price.usd_micro_per_gpu_hour * max(1, price.gpu_count)
            affordable = remaining * 3_600_000 // rate if rate > 0 else 0
            if affordable >= milliseconds or affordable < max(1.0, self._predicted_step_s() * 1000):
                raise
            return self._reserve(int(affordable), step)

    def _predicted_step_s(self) -> float:
        """What the next step (with its logging and saving) may take: twice the slowest of the last
        20, plus 50 ms; one second before any step has run."""
        return 2.0 * max(self._step_seconds) + 0.05 if self._step_seconds else 1.0

    def _first_interval(self, state: Any) -> None:
        recorder = self.recorder
        assert recorder is not None
        try:
            self._interval = self._hold(state.global_step)
        except SpendCapExceeded as refused:
            reason = f"spend cap reached before training: {refused.remaining_usd_micro} micro-USD left on " \
                     f"{refused.account or recorder.account}"
            self._refuse_start("SPEND_CAP_EXCEEDED", reason, refused, state)
        except LedgerClientError as error:
            self._refuse_start("LEDGER_UNAVAILABLE", f"no spend hold: the ledger cannot be reached ({error.reason})",
                               error, state)
        self._last_step_end = self._interval.started

    def _refuse_start(self, reason: str, message: str, error: LedgerClientError, state: Any) -> None:
        self._active = False
        recorder = self.recorder
        assert recorder is not None and self._jobs is not None
        self._jobs.close(0)
        try:
            if recorder.opened:
                recorder.finish("stopped", summary={"steps": state.global_step, "stop_reason": message})
            else:
                recorder.close(flush_timeout_s=0)
        except LedgerClientError as finish_error:
            log.warning("could not record the stop of run %s: %s", self.run_key, finish_error)
            recorder.close(flush_timeout_s=0)
        raise SpendHoldRefused(reason, message + "; nothing was trained") from error

    def _next_interval(self, state: Any, control: Any) -> None:
        """At a step's end: end the interval if the next step might outrun its hold (or it has
        run interval_steps steps), commit what it used and hold the next one; stop cleanly when
        no hold can be had."""
        interval = self._interval
        assert interval is not None
        now = time.monotonic()
        self._step_seconds.append(now - self._last_step_end)
        self._last_step_end = now
        if state.global_step >= state.max_steps or control.should_training_stop:
            return  # Training ends: on_train_end commits.
        elapsed = now - interval.started
        due = elapsed + self._predicted_step_s() > interval.milliseconds / 1000 or (
            self.interval_steps is not None and state.global_step - interval.first_step >= self.interval_steps)
        if not due:
            return
        self._close_interval(now)
        self._commit_left()
        try:
            self._interval = self._hold(state.global_step)
        except SpendCapExceeded as refused:
            self._spend_stop(control, f"spend cap reached at step {state.global_step}: "
                             f"{refused.remaining_usd_micro} micro-USD left on {refused.account}")
        except LedgerClientError as error:
            self._spend_stop(control, f"no spend hold at step {state.global_step}: the ledger cannot be reached "
                             f"({error.reason})")

    def _spend_stop(self, control: Any, reason: str) -> None:
        log.warning("stopping training: %s", reason)
        self._stop_reason = reason
        control.should_save = True
        control.should_training_stop = True

    def _close_interval(self, now: float | None = None) -> None:
        interval, self._interval = self._interval, None
        if interval is None:
            return
        used = max(1, math.ceil(((now or time.monotonic()) - interval.started) * 1000))
        self._uncommitted.append((interval.reservation_id, used, interval.amount_usd_micro))

    def _commit_left(self) -> None:
        """Commit the used time of closed intervals; what cannot be committed now is tried again
        at the next interval and at the end."""
        recorder, price = self.recorder, self.gpu_price
        if not self._uncommitted or recorder is None or price is None:
            return
        left = []
        for reservation_id, used, reserved in self._uncommitted:
            actual = price.amount(used)
            try:
                recorder.client.commit(account=recorder.account, reservation_id=reservation_id,
                                       actual_usd_micro=actual, basis=price.basis(used))
            except LedgerClientError as error:
                if error.code in REFUSAL_CODES:
                    log.warning("the ledger refused the commit of %s: %s", reservation_id, error)
                    continue
                left.append((reservation_id, used, reserved))
                continue
            if actual > reserved:
                log.info("interval %s ran over its hold: %s > %s micro-USD", reservation_id, actual, reserved)
        self._uncommitted = left
