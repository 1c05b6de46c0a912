"""mlx-lm LoRA on a tiny in-process llama, CPU backend, with a TrainingCallback."""

from __future__ import annotations

import math
import os

import pytest

os.environ.setdefault("MLX_DISABLE_COMPILE", "1")
mx = pytest.importorskip("mlx.core", reason="mlx needs the CPU backend on Linux: pip install 'mlx[cpu]'")
pytest.importorskip("mlx_lm")

from tests.trainers import mlx_tiny  # noqa: E402


def test_lora_train_with_callback_saves_adapters(tmp_path):
    from mlx.utils import tree_flatten
    from mlx_lm.tuner.callbacks import TrainingCallback

    class Ledgerish(TrainingCallback):
        def __init__(self):
            self.train, self.val = [], []

        def on_train_loss_report(self, train_info):
            self.train.append(train_info)

        def on_val_loss_report(self, val_info):
            self.val.append(val_info)

    cb = Ledgerish()
    run = mlx_tiny.run_mlx_lora(tmp_path / "a", iters=6, steps_per_report=1, steps_per_save=3, callback=cb)

    assert run.trainable_parameters == 3584  # same LoRA shape as the torch fixture
    assert [r["iteration"] for r in cb.train] == [1, 2, 3, 4, 5, 6]
    assert cb.val == []
    assert all(math.isfinite(r["train_loss"]) for r in cb.train)
    tokens = [r["trained_tokens"] for r in cb.train]
    assert tokens == sorted(tokens) and tokens[0] > 0
    assert set(cb.train[0]) == {
        "iteration",
        "train_loss",
        "learning_rate",
        "iterations_per_second",
        "tokens_per_second",
        "trained_tokens",
        "peak_memory",
    }
    assert sorted(p.name for p in run.adapter_dir.iterdir()) == [
        "0000003_adapters.safetensors",
        "0000006_adapters.safetensors",
        "adapter_config.json",
        "adapters.safetensors",
    ]
    assert run.adapter_file.read_bytes() == (run.adapter_dir / "0000006_adapters.safetensors").read_bytes()

    # mlx_lm's own loader applies the adapters to a fresh model.
    saved = mx.load(str(run.adapter_file))
    model = mlx_tiny.load_trained_model(run.adapter_dir, vocab_size=len(mlx_tiny.tiny.build_tokenizer()))
    params = dict(tree_flatten(model.parameters()))
    assert saved and all(mx.array_equal(params[k], v).item() for k, v in saved.items())

    # Deterministic: the same seed gives the same adapter bytes.
    again = mlx_tiny.run_mlx_lora(tmp_path / "b", iters=6, steps_per_report=1, steps_per_save=3)
    assert again.adapter_file.read_bytes() == run.adapter_file.read_bytes()


def test_resume_adapter_file_restarts_iteration_count(tmp_path):
    first = mlx_tiny.run_mlx_lora(tmp_path / "a", iters=4, steps_per_save=2)
    resumed = mlx_tiny.run_mlx_lora(
        tmp_path / "b",
        iters=2,
        steps_per_save=2,
        resume_adapter_file=first.adapter_dir / "0000002_adapters.safetensors",
    )
    # mlx-lm keeps no iteration/optimizer state: a resumed run counts from 1 again and its
    # adapters differ from the uninterrupted run's (fresh Adam moments). The ledger maps steps itself.
    assert [r["iteration"] for r in resumed.reports] == [1, 2]
    assert resumed.adapter_file.read_bytes() != first.adapter_file.read_bytes()
    assert resumed.reports[0]["train_loss"] < first.reports[0]["train_loss"]
