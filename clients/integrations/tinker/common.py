"""What the Tinker integration's modules share: its names (backend, fidelities, metadata keys),
the run spec, price sheets by base model, loss weights and the merge of Tinker's metrics, and the
refusals it raises (ResumeRefused of clients.integrations.resume; its old names kept as aliases)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clients.errors import RunEnded
from clients.integrations.extras import extra
from clients.integrations.pricing import TokenPrices
from clients.integrations.resume import ResumeRefused

with extra("tinker"):
    from tinker import types

__all__ = [
    "BACKEND",
    "TINKER_SCHEME",
    "FIDELITY_STATE",
    "FIDELITY_WEIGHTS",
    "METADATA_RUN_ID",
    "METADATA_RUN_KEY",
    "METADATA_ACCOUNT",
    "CACHED_PREFILL",
    "RESERVED_LOG_NAMES",
    "PriceSheets",
    "tinker_spec",
    "sheet_for",
    "loss_weight",
    "merge_metrics",
    "CheckpointConflict",
    "RunDone",
    "NothingToResume",
    "CheckpointExpired",
    "BackendMismatch",
    "NotATinkerPath",
    "NotResumable",
    "SpecMismatch",
    "LoraRankMismatch",
    "RunAlreadyStarted",
]

BACKEND = "tinker"
TINKER_SCHEME = "tinker://"  # Tinker's checkpoints are handles its service holds, never local files.
FIDELITY_STATE = "weights+optimizer"
FIDELITY_WEIGHTS = "weights"
METADATA_RUN_ID = "ledger_run_id"
METADATA_RUN_KEY = "ledger_run_key"
METADATA_ACCOUNT = "ledger_account"  # the run's parent account, on a session opened with one
CACHED_PREFILL = "prefill_cached"
RESERVED_LOG_NAMES = frozenset({"step", "tokens", "usd_micro"})

PriceSheets = TokenPrices | Mapping[str, TokenPrices]

RunDone = RunEnded
"""The run has ended: done (it takes no new attempt), or failed or stopped and not reopened
(pass reopen=True). clients.errors.RunEnded, the refusal RunRecorder.open gives; RunDone is its
old name here."""

# The refusals of resume() and create_lora_training_client() are all ResumeRefused, told apart by
# its `reason` (clients.integrations.resume.ResumeReason); these are its names from before, kept
# so that code catching them still does: each catches every refusal, so check `reason`.
NothingToResume = ResumeRefused  # reason NO_CHECKPOINT
CheckpointExpired = ResumeRefused  # reason CHECKPOINT_EXPIRED
BackendMismatch = ResumeRefused  # reason BACKEND_MISMATCH
NotATinkerPath = ResumeRefused  # reason URI_SCHEME_MISMATCH
NotResumable = ResumeRefused  # reason FIDELITY_MISMATCH
SpecMismatch = ResumeRefused  # reason SPEC_MISMATCH
LoraRankMismatch = ResumeRefused  # reason LORA_MISMATCH
RunAlreadyStarted = ResumeRefused  # reason RUN_ALREADY_STARTED


class CheckpointConflict(RuntimeError):
    """A training checkpoint was asked at a step that already has a sampler-only checkpoint."""


def tinker_spec(
    base_model: str, lora_rank: int, hyperparameters: Mapping[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """The run spec (and so the run key) of a Tinker LoRA run. Put the dataset identity in `extra`."""
    return {
        "method": "lora",
        "base_model": base_model,
        "lora_rank": int(lora_rank),
        "hyperparameters": dict(hyperparameters or {}),
        **extra,
    }


def sheet_for(prices: PriceSheets, base_model: str) -> TokenPrices:
    if isinstance(prices, TokenPrices):
        return prices
    try:
        return prices[base_model]
    except KeyError:
        raise KeyError(f"no price sheet for base model {base_model!r}") from None


def loss_weight(datum: types.Datum) -> float:
    """The tokens a datum's loss is summed over: its weights, else its targets, else its input."""
    inputs = datum.loss_fn_inputs
    if "weights" in inputs:
        return float(inputs["weights"].to_numpy().sum())
    if "target_tokens" in inputs:
        return float(inputs["target_tokens"].to_numpy().size)
    return float(datum.model_input.length)


def merge_metrics(into: dict[str, tuple[str, float, int]], metrics: Mapping[str, float]) -> None:
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
