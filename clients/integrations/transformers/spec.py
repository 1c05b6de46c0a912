"""What defines a Transformers/TRL training run: its spec (base model and revision, method, LoRA
shape, run-defining hyperparameters, dataset identity by content), its run key, and the check that
a spec describes the trainer it is attached to (SpecMismatch)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import Any

from clients.runkey import rows_digest, run_key

__all__ = [
    "RUN_DEFINING_ARGS",
    "SpecMismatch",
    "lora_shape",
    "hyperparameters_from_args",
    "dataset_content_digest",
    "spec_for",
    "training_run_key",
    "check_spec",
    "jsonable",
]

# TrainingArguments (and TRL config) fields that define a run; the ones a spec's hyperparameters
# are checked against in on_train_begin.
RUN_DEFINING_ARGS = (
    "learning_rate",
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "max_steps",
    "num_train_epochs",
    "seed",
    "data_seed",
    "lr_scheduler_type",
    "warmup_steps",
    "warmup_ratio",
    "weight_decay",
    "adam_beta1",
    "adam_beta2",
    "adam_epsilon",
    "max_grad_norm",
    "optim",
    "bf16",
    "fp16",
    "max_length",
    "packing",
    "completion_only_loss",
    "assistant_only_loss",
    "loss_type",
    "beta",
)


class SpecMismatch(ValueError):
    """The spec (hence the run key) does not describe the trainer it is attached to."""


def _number(value: Any) -> Any:
    """An int for integral numbers (16 and 16.0 give the same key), a float otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    return int(value) if float(value).is_integer() else float(value)


def jsonable(value: Any) -> Any:
    """A value as a spec holds it: enums by value, numbers as _number, mappings, sets (sorted) and
    sequences item by item."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _number(value)
    if isinstance(value, Mapping):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, set | frozenset):
        return sorted(jsonable(item) for item in value)
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
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
    return {
        "r": _number(get("r")),
        "alpha": _number(alpha),
        "target_modules": modules,
        "dropout": _number(dropout or 0),
    }


def hyperparameters_from_args(args: Any, names: Iterable[str] = RUN_DEFINING_ARGS) -> dict[str, Any]:
    """The run-defining fields of a TrainingArguments / TRL config that it has and that are set."""
    picked = {}
    for name in names:
        value = getattr(args, name, None)
        if value is not None:
            picked[name] = jsonable(value)
    return picked


def dataset_content_digest(dataset: Iterable[Mapping[str, Any]]) -> str:
    """ "sha256:<hex>" of a dataset's rows in order: clients.runkey.rows_digest, for in-memory
    datasets (datasets.Dataset, a list of dicts). For files use clients.runkey.dataset_digest."""
    return rows_digest(dataset)


def spec_for(
    *,
    name: str,
    base_model: str,
    revision: str = "",
    method: str = "sft",
    lora: Any = None,
    hyperparameters: Mapping[str, Any] | None = None,
    args: Any = None,
    dataset: Any = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The spec of a training run: name, base model id and pinned revision, method ("sft", "dpo",
    ...), LoRA shape (lora_shape), hyperparameters (the run-defining fields of `args`, then
    `hyperparameters` over them) and the dataset's identity by content (a digest string from
    clients.runkey.dataset_digest / file_digest, or an in-memory dataset, digested here).
    Leave out what may change between attempts (resume points, hosts, the cap)."""
    params = hyperparameters_from_args(args) if args is not None else {}
    params.update(jsonable(dict(hyperparameters or {})))
    if dataset is not None and not isinstance(dataset, str | Mapping):
        dataset = dataset_content_digest(dataset)
    spec: dict[str, Any] = {
        "name": name,
        "base_model": {"id": base_model, "revision": revision},
        "method": method,
        "lora": lora_shape(lora),
        "hyperparameters": params,
        "dataset": jsonable(dataset),
    }
    if extra:
        spec["extra"] = jsonable(dict(extra))
    return spec


def training_run_key(spec: Mapping[str, Any] | None = None, **fields: Any) -> str:
    """The run key of a spec, or of spec_for(**fields)."""
    return run_key(spec if spec is not None else spec_for(**fields))


def check_spec(spec: Mapping[str, Any], args: Any, model: Any) -> None:
    problems = []
    lora = spec.get("lora")
    if lora is not None and getattr(model, "peft_config", None):
        actual = lora_shape(model)
        if actual != lora_shape(lora):
            problems.append(f"LoRA shape: spec {lora_shape(lora)}, model {actual}")
    for name, value in (spec.get("hyperparameters") or {}).items():
        if hasattr(args, name) and jsonable(getattr(args, name)) != jsonable(value):
            problems.append(f"{name}: spec {value!r}, trainer {jsonable(getattr(args, name))!r}")
    if problems:
        raise SpecMismatch(
            "the run spec does not describe this trainer (its run key would be wrong): " + "; ".join(problems)
        )
