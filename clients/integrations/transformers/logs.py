"""How a Trainer's log dicts become ledger step metrics: renamed, kept or dropped, and the
end-of-training summary log told apart from step logs. A trainer logs the same keys every step,
so what each key becomes is worked out once and remembered (up to NAMES_MAX keys)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "RENAMED",
    "DROPPED",
    "DROPPED_SUFFIXES",
    "SUMMARY_KEYS",
    "NAMES_MAX",
    "map_log_keys",
    "step_metrics",
    "is_summary",
]

RENAMED = {"learning_rate": "lr", "mean_token_accuracy": "token_accuracy"}
DROPPED = frozenset({"total_flos", "num_tokens", "num_input_tokens_seen", "step"})
DROPPED_SUFFIXES = ("_runtime", "_per_second", "_flos")
SUMMARY_KEYS = ("train_loss", "train_runtime", "train_samples_per_second", "train_steps_per_second", "total_flos")
NAMES_MAX = 4096

_names: dict[str, str | None] = {}  # log key -> its metric name, None when it is dropped


def _name(key: str) -> str | None:
    name = None if key in DROPPED or key.endswith(DROPPED_SUFFIXES) else RENAMED.get(key, key)
    if len(_names) < NAMES_MAX:
        _names[key] = name
    return name


def map_log_keys(logs: Mapping[str, Any]) -> dict[str, Any]:
    """A trainer's log dict as step metrics: renamed (learning_rate -> lr, mean_token_accuracy ->
    token_accuracy), eval_* and the rest kept, runtime / throughput / flops / token-count keys
    dropped. Values are left as they are (the recorder drops what is not a finite number)."""
    metrics = {}
    for key, value in logs.items():
        name = _names[key] if key in _names else _name(key)
        if name is not None:
            metrics[name] = value
    return metrics


def step_metrics(logs: Mapping[str, Any]) -> dict[str, Any]:
    """map_log_keys with the values read now, for RunRecorder.log_steps (which checks them later,
    on its sender thread): floats and ints kept as they are, any other number (a numpy or torch
    scalar) turned into a float now, what is not a number (text, None, bools) left out, as the
    recorder would leave it out."""
    metrics: dict[str, Any] = {}
    for key, value in logs.items():
        name = _names[key] if key in _names else _name(key)
        if name is None:
            continue
        kind = value.__class__
        if kind is float or kind is int:
            metrics[name] = value
        elif value is not None and not isinstance(value, bool | str | bytes):
            try:
                metrics[name] = float(value)
            except (TypeError, ValueError, OverflowError):
                continue
    return metrics


def is_summary(logs: Mapping[str, Any]) -> bool:
    """The end-of-training log (train_loss, train_runtime ...); step logs with token counting on
    carry train_runtime too, but never train_loss."""
    return "train_loss" in logs and "loss" not in logs
