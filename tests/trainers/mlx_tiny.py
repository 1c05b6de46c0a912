"""Tiny, offline mlx-lm LoRA training (Linux CPU backend: pip install "mlx[cpu]" "mlx-lm[cpu]").

    build_mlx_model(vocab_size, seed=0) -> mlx_lm.models.llama.Model
    build_mlx_dataset(tokenizer, n_rows=64, seed=0) -> mlx_lm.tuner.datasets.CacheDataset
    run_mlx_lora(adapter_dir, *, iters=6, steps_per_report=1, steps_per_save=3, seed=0,
                 callback=None, resume_adapter_file=None, learning_rate=1e-2, batch_size=4) -> MlxRun

mlx_lm.tuner.trainer.train() has only two hooks (TrainingCallback.on_train_loss_report /
on_val_loss_report), saves adapter weights only (no optimizer / iteration state), writes
``adapters.safetensors`` plus ``{it:07d}_adapters.safetensors`` every ``steps_per_save``.
Resuming from an adapter file restarts iteration 1, the optimizer and the LR schedule.

MLX_DISABLE_COMPILE=1 is set (unless already set) before mlx is imported: mx.compile on CPU
costs ~20 s cold per process; without it a tiny run takes a few seconds.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("MLX_DISABLE_COMPILE", "1")

from clients.integrations import tiny  # noqa: E402  (the tokenizer, the rows, the tiny mlx llama)

LORA_PARAMETERS = tiny.MLX_LORA_PARAMETERS
NUM_LORA_LAYERS = tiny.MLX_LORA_LAYERS
build_mlx_model = tiny.build_mlx_model
add_lora = tiny.add_mlx_lora
build_mlx_dataset = tiny.build_mlx_dataset
adapter_config = tiny.mlx_adapter_config


@dataclass
class MlxRun:
    adapter_dir: Path
    adapter_file: Path
    reports: list[dict[str, Any]] = field(default_factory=list)
    trainable_parameters: int = 0


def make_callback_class():
    """A TrainingCallback subclass that records reports (import-deferred so this module imports cheaply)."""
    from mlx_lm.tuner.callbacks import TrainingCallback

    class RecordingCallback(TrainingCallback):
        def __init__(self, sink: list[dict[str, Any]] | None = None, forward=None):
            self.reports = sink if sink is not None else []
            self.forward = forward

        def on_train_loss_report(self, train_info: dict):
            self.reports.append({"kind": "train", **train_info})
            if self.forward is not None:
                self.forward.on_train_loss_report(train_info)

        def on_val_loss_report(self, val_info: dict):
            self.reports.append({"kind": "val", **val_info})
            if self.forward is not None:
                self.forward.on_val_loss_report(val_info)

    return RecordingCallback


def run_mlx_lora(
    adapter_dir: str | os.PathLike,
    *,
    iters: int = 6,
    steps_per_report: int = 1,
    steps_per_save: int = 3,
    seed: int = 0,
    callback=None,
    resume_adapter_file: str | os.PathLike | None = None,
    learning_rate: float = 1e-2,
    batch_size: int = 4,
) -> MlxRun:
    """Build tokenizer + tiny mlx llama + LoRA, train ``iters`` iterations, save adapters in adapter_dir.

    ``callback``: an optional mlx_lm TrainingCallback; its reports are forwarded to it and
    also recorded in ``MlxRun.reports``.
    """
    import mlx.core as mx
    import mlx.optimizers as optim
    import numpy as np
    from mlx.utils import tree_flatten
    from mlx_lm.tuner.trainer import TrainingArgs, train

    if os.environ.get("MLX_DISABLE_COMPILE"):
        mx.disable_compile()
    adapter_dir = Path(adapter_dir)
    adapter_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = tiny.build_tokenizer(seed)
    model = build_mlx_model(len(tokenizer), seed)
    add_lora(model)
    if resume_adapter_file is not None:
        model.load_weights(str(resume_adapter_file), strict=False)
    run = MlxRun(adapter_dir=adapter_dir, adapter_file=adapter_dir / "adapters.safetensors")
    run.trainable_parameters = sum(v.size for _, v in tree_flatten(model.trainable_parameters()))
    (adapter_dir / "adapter_config.json").write_text(json.dumps(adapter_config(iters), indent=2))

    np.random.seed(seed)  # iterate_batches shuffles with numpy's global RNG
    recorder = make_callback_class()(run.reports, forward=callback)
    args = TrainingArgs(
        batch_size=batch_size,
        iters=iters,
        steps_per_report=steps_per_report,
        steps_per_save=steps_per_save,
        steps_per_eval=10**9,
        val_batches=0,
        max_seq_length=64,
        adapter_file=str(run.adapter_file),
    )
    train(
        model=model,
        optimizer=optim.Adam(learning_rate=learning_rate),
        train_dataset=build_mlx_dataset(tokenizer, seed=seed),
        val_dataset=None,
        args=args,
        training_callback=recorder,
    )
    return run


def load_trained_model(adapter_dir: str | os.PathLike, vocab_size: int, seed: int = 0):
    """A fresh tiny model with the saved adapters applied (via mlx_lm's own load_adapters)."""
    from mlx_lm.utils import load_adapters

    model = build_mlx_model(vocab_size, seed)
    return load_adapters(model, str(adapter_dir))
