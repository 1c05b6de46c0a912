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

Modules: common (names, spec, prices, refusals), futures (holds and their settling), sampling,
training (LedgeredTrainingClient), service (opening and resuming) and lineage; every public name is
importable from here.

Leaving the `with` block finishes the run (clients.recorder.exit_status): "done"; "stopped" when a
cap refusal (SpendCapExceeded) or an interrupt (KeyboardInterrupt) ends it; "failed" for any
other exception. An ended run is not resumed or restarted unless asked: RunEnded (RunDone) for a
done run, and for a failed or stopped one without reopen=True. Every other refusal to resume or
start is ResumeRefused (clients.integrations.resume) with its ResumeReason.

Each attempt gets its own Tinker session whose user_metadata carries the ledger run id and run key
(METADATA_RUN_ID, METADATA_RUN_KEY; and METADATA_ACCOUNT, the parent account, when one is given),
and the session is linked to the run on the ledger (Runs.LinkSession, with the attempt) as soon as
the attempt and the session exist, a resumed run's new session too. Tinker's bill
(AdminClient.get_billing_usage, pulled by clients.billing.pull_tinker) names each bucket's session
and its user_metadata, so the ledger finds the run of every line through either and reconciles the
ledger's estimates with the bill. A link that fails is logged, never raised into training, except
AttemptSuperseded and RunFinished.

Spend: forward_backward, forward, optim_step, sample and compute_logprobs reserve their projected
cost on the run's account before anything is sent to Tinker (SpendCapExceeded or Unavailable is
raised from the call itself: no billable call without a hold), commit the actual cost when the
result is settled and release the hold when the call fails. Tokens are counted on the client:
training data -> "train" (the sum of ModelInput.length), forward-only -> "prefill", a sample ->
the prompt once as "prefill" and max_tokens x num_samples as "sample" (actual: the generated
tokens; prompt_cache_hit_tokens, and the shared prompt of the other samples, as "prefill_cached"
when the sheet prices that class). An optimizer step costs `optim_step_usd_micro` (default 0).
Checkpoint storage is not priced here.

Plan, scores and datasets: create_lora_training_client and resume take `max_steps` (the
optimizer steps the loop plans: the run's progress and ETA), `objective` ((metric, "min" |
"max"), which BestCheckpoint ranks checkpoints by) and `datasets` ({"train": rows, "eval": rows},
recorded by their row digest, count and guessed format); record_dataset() records one later.
evaluate(data) is a forward pass over held-out data (priced as prefill) whose loss is the
"eval_loss" score of the next checkpoint saved; save_state / save_checkpoint take `scores` too.

Lineage: create_lora_training_client(..., source_checkpoint=RunSourceCheckpoint(run_id, step,
uri)) starts a run from another run's checkpoint (a tinker:// path): recorded as the run's source
when it is opened, and the model made from its weights with a fresh optimizer (lineage module).
resume() takes it too, as every open of the run does; a resumed run loads its own checkpoint.

Futures: the wrappers return LedgeredFuture. The futures of a training client settle in the order
they were submitted (a result settles every earlier one first), so steps, spend and checkpoints
reach the ledger in Tinker's order; finish() settles whatever is left. One ledger step is recorded
per optimizer step: loss (loss:sum over the loss-weighted target tokens), the forward_backward
metrics, learning_rate, tokens and the spend committed since the previous step.
"""

from __future__ import annotations

from clients.errors import RunEnded
from clients.integrations.resume import ResumeReason, ResumeRefused
from clients.integrations.tinker.common import (
    BACKEND,
    FIDELITY_STATE,
    FIDELITY_WEIGHTS,
    METADATA_ACCOUNT,
    METADATA_RUN_ID,
    METADATA_RUN_KEY,
    BackendMismatch,
    CheckpointConflict,
    CheckpointExpired,
    LoraRankMismatch,
    NotATinkerPath,
    NothingToResume,
    NotResumable,
    RunAlreadyStarted,
    RunDone,
    SpecMismatch,
    tinker_spec,
)
from clients.integrations.tinker.futures import LedgeredFuture
from clients.integrations.tinker.sampling import LedgeredSamplingClient
from clients.integrations.tinker.service import LedgeredServiceClient, ledgered_training_client, resume
from clients.integrations.tinker.training import LedgeredTrainingClient

__all__ = [
    "BACKEND",
    "METADATA_RUN_ID",
    "METADATA_RUN_KEY",
    "METADATA_ACCOUNT",
    "FIDELITY_STATE",
    "FIDELITY_WEIGHTS",
    "LedgeredServiceClient",
    "LedgeredTrainingClient",
    "LedgeredSamplingClient",
    "LedgeredFuture",
    "ledgered_training_client",
    "resume",
    "tinker_spec",
    "ResumeRefused",
    "ResumeReason",
    "NothingToResume",
    "CheckpointExpired",
    "BackendMismatch",
    "NotATinkerPath",
    "NotResumable",
    "SpecMismatch",
    "LoraRankMismatch",
    "RunDone",
    "RunEnded",
    "RunAlreadyStarted",
    "CheckpointConflict",
]
