"""How a Trainer's log dicts become ledger step metrics: renamed, kept or dropped, and the
end-of-training summary log told apart from step logs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["RENAMED", "DROPPED", "DROPPED_SUFFIXES", "SUMMARY_KEYS", "map_log_keys", "is_summary"]

RENAMED = {"learning_rate": "lr", "mean_token_accuracy": "token_accuracy"}
DROPPED = frozenset({"total_flos", "num_tokens", "num_input_tokens_seen", "step"})
DROPPED_SUFFIXES = ("_runtime", "_per_second", "_flos")
SUMMARY_KEYS = ("train_loss", "train_runtime", "train_samples_per_second", "train_steps_per_second", "total_flos")


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


def is_summary(logs: Mapping[str, Any]) -> bool:
    """The end-of-training log (train_loss, train_runtime ...); step logs with token counting on
    carry train_runtime too, but never train_loss."""
    return "train_loss" in logs and "loss" not in logs
