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
built (on_init_end; on_train_begin at the latest) and refuses it there. The decision is the one
every integration makes (clients.integrations.resume): a refusal is ResumeRefused with its
ResumeReason.

Modules: spec (run specs and keys), checkpoints (digests and the resume point), logs (log keys
as metrics), steps (step records), spend (holds of GPU time), jobs (background checkpoint and
dataset records), plan (max_steps and the objective from the trainer's arguments) and callback
(LedgerCallback); every public name is importable from here.

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
- The plan and the objective, with the open and each attempt: max_steps is the trainer's
  (TrainerState.max_steps as train() computed it, from max_steps or the epochs), so the run
  shows its progress and ETA; the objective is args.metric_for_best_model ("loss" is
  "eval_loss") with greater_is_better ("max") or not ("min"), else the callback's `objective`.
  A run's objective never changes once set: a run that holds none, or another one, is opened
  without it, with a warning (it never stops training). Give resume_checkpoint(args=...) the
  TrainingArguments (or the callback `objective=`) so that the open that creates the run names it.
- Scores: the finite eval metrics (eval_loss, eval_mean_token_accuracy ...; runtime, throughput
  and epoch left out, NaN dropped with a log line) of the evaluation that came before a save,
  since the previous save, go with that checkpoint (BestCheckpoint picks by them); a save with
  no evaluation before it has none.
- Datasets, once per train() (a resumed attempt's record is a duplicate): the train dataset and
  the eval dataset, the ones given to the callback (train_dataset=, eval_dataset=: the rows
  handed to the trainer) or else those the trainer's dataloaders read (as the trainer prepared
  them), each with its row digest (clients.runkey.rows_digest), rows, format guessed from its
  columns, tokens when its rows carry input_ids, source_uri when given, and a report (columns,
  rows). Read and sent on the background thread (clients.integrations.provenance).
- The finish in on_train_end: done, or stopped with the reason after a spend stop; summary with
  the steps, the final loss and the trainer's train_loss. transformers calls no callback when
  train() raises: run it inside `with callback:` and the run ends as clients.recorder.exit_status
  says, with the error: "stopped" for KeyboardInterrupt (SIGTERM too, with
  recorder_options={"stop_on_sigterm": True}), "failed" for any other exception.
- An ended run is not trained again by accident: a done run is refused (RunEnded: use a new run
  key), a failed or stopped one too unless the callback (and resume_checkpoint) has reopen=True.
- The cap and parent account go with every open of the run (resume_checkpoint's, the callback's):
  a cap given changes the cap of a run that exists.

GPU spend (with gpu_price, by clients.integrations.meter.GpuMeter, the meter Modal functions
use too): before each interval of GPU time (`interval_s` seconds, or
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

from clients.errors import RunEnded
from clients.integrations.resume import ResumeReason, ResumeRefused
from clients.integrations.transformers.callback import LedgerCallback, LedgerCallbackWarning
from clients.integrations.transformers.checkpoints import (
    BACKEND,
    checkpoint_digest,
    checkpoint_from_state,
    resume_checkpoint,
)
from clients.integrations.transformers.logs import map_log_keys
from clients.integrations.transformers.plan import objective_from_args, planned_steps
from clients.integrations.transformers.spec import (
    SpecMismatch,
    dataset_content_digest,
    hyperparameters_from_args,
    lora_shape,
    spec_for,
    training_run_key,
)
from clients.integrations.transformers.spend import SpendHoldRefused

__all__ = [
    "LedgerCallback",
    "LedgerCallbackWarning",
    "ResumeRefused",
    "ResumeReason",
    "RunEnded",
    "SpendHoldRefused",
    "SpecMismatch",
    "resume_checkpoint",
    "checkpoint_from_state",
    "spec_for",
    "training_run_key",
    "lora_shape",
    "hyperparameters_from_args",
    "dataset_content_digest",
    "checkpoint_digest",
    "map_log_keys",
    "planned_steps",
    "objective_from_args",
    "BACKEND",
]
