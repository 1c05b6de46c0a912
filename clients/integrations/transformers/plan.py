"""A Trainer's plan as the ledger keeps it: the steps it will train (max_steps, for the run's
progress and ETA) and the objective its best checkpoint is chosen by (metric_for_best_model and
greater_is_better, the metric named as the Trainer logs it: "loss" is "eval_loss")."""

from __future__ import annotations

from typing import Any

__all__ = ["planned_steps", "objective_from_args"]


def planned_steps(args: Any, state: Any = None) -> int | None:
    """The optimizer steps the trainer plans: TrainerState.max_steps once train() computed it
    (from max_steps, or from the epochs and the dataloader's length), else
    TrainingArguments.max_steps when it is set (> 0); None when neither says."""
    for value in (getattr(state, "max_steps", None), getattr(args, "max_steps", None)):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def objective_from_args(args: Any) -> tuple[str, str] | None:
    """(metric, "min" | "max") from args.metric_for_best_model and args.greater_is_better (a
    metric ending in "loss" is minimised when greater_is_better is unset, as transformers does);
    the name gets the "eval_" prefix the Trainer logs it with. None when no metric is named."""
    metric = getattr(args, "metric_for_best_model", None)
    if not isinstance(metric, str) or not metric:
        return None
    if not metric.startswith("eval_"):
        metric = f"eval_{metric}"
    greater = getattr(args, "greater_is_better", None)
    if greater is None:
        greater = not metric.endswith("loss")
    return metric, "max" if greater else "min"
