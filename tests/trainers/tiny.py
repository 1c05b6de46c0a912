"""Tiny, fully offline, deterministic building blocks for trainer integration tests.

Nothing here touches a model hub: the tokenizer is trained in-process on synthetic
sentences, the model is a randomly initialised (seeded) 2-layer Llama, and the
dataset is generated from word lists (clients.integrations.tiny, re-exported here).

Public API::

    build_tokenizer(seed=0) -> PreTrainedTokenizerFast
    build_model(tokenizer, seed=0) -> LlamaForCausalLM
    build_dataset(n_rows=64, seed=0, conversational=True) -> datasets.Dataset
    build_rows(n_rows=64, seed=0, conversational=True) -> list[dict] (the same rows)
    lora_config() -> peft.LoraConfig
    make_sft_trainer(output_dir, *, max_steps=20, save_steps=5, callbacks=(), seed=0,
                     learning_rate=5e-3, batch_size=4, save_total_limit=None,
                     conversational=True, **config_overrides) -> trl.SFTTrainer
    checkpoint_dir(output_dir, step) -> Path
    adapter_bytes(path) -> bytes         # raw adapter_model.safetensors bytes
    tree_digest(path) -> str             # sha256 over the LoRA tensors of an adapter dir

A run killed after ``checkpoint-N`` and resumed with
``make_sft_trainer(same args).train(resume_from_checkpoint=checkpoint_dir(out, N))``
produces an adapter bit-identical to an uninterrupted run (see test_tiny.py).
Always resume from an explicit checkpoint path, never ``resume_from_checkpoint=True``
(that picks the highest-numbered dir even if it is half written).
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

# The tokenizer, model and rows live in the package (dry runs of the examples use them too);
# importing it sets the offline environment before transformers is imported.
from clients.integrations.tiny import (
    CHAT_TEMPLATE,
    SPECIAL_TOKENS,
    build_dataset,
    build_model,
    build_rows,
    build_tokenizer,
    lora_config,
    synthetic_sentences,
)


def make_sft_config(
    output_dir: str | os.PathLike,
    *,
    max_steps: int = 20,
    save_steps: int = 5,
    seed: int = 0,
    learning_rate: float = 5e-3,
    batch_size: int = 4,
    save_total_limit: int | None = None,
    **overrides: Any,
):
    from trl import SFTConfig

    kwargs: dict[str, Any] = dict(
        output_dir=str(output_dir),
        max_steps=max_steps,
        save_strategy="steps",
        save_steps=save_steps,
        save_total_limit=save_total_limit,
        logging_strategy="steps",
        logging_steps=1,
        per_device_train_batch_size=batch_size,
        gradient_accumulation_steps=1,
        learning_rate=learning_rate,
        lr_scheduler_type="linear",
        warmup_steps=0,
        seed=seed,
        data_seed=seed,
        max_length=64,
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
        dataloader_num_workers=0,
        dataloader_pin_memory=False,
        save_only_model=False,  # optimizer/scheduler/RNG are needed for an exact resume
        eval_strategy="no",
        # TRL defaults gradient_checkpointing=True; transformers 5 renamed it and warns (FutureWarning)
        # unless the new name is set. Nothing to save on an 80k-parameter model anyway.
        activation_checkpointing=False,
    )
    kwargs.update(overrides)
    return SFTConfig(**kwargs)


def make_sft_trainer(
    output_dir: str | os.PathLike,
    *,
    max_steps: int = 20,
    save_steps: int = 5,
    callbacks: Iterable[Any] = (),
    seed: int = 0,
    learning_rate: float = 5e-3,
    batch_size: int = 4,
    save_total_limit: int | None = None,
    conversational: bool = True,
    n_rows: int = 64,
    quiet: bool = True,
    **config_overrides: Any,
):
    """TRL SFTTrainer with a LoRA adapter (r=8 on q_proj/v_proj, dropout 0) on CPU.

    Everything (tokenizer, base model, LoRA init, data order) is a function of ``seed``,
    so calling this twice with the same arguments gives identical trainers: build a fresh
    one and call ``.train(resume_from_checkpoint=checkpoint_dir(output_dir, N))`` to resume.
    Extra keyword arguments go to SFTConfig. ``quiet`` drops transformers' PrinterCallback
    (which prints every log dict to stdout) so that stdout belongs to the caller.
    """
    from transformers import PrinterCallback
    from trl import SFTTrainer

    tokenizer = build_tokenizer(seed)
    model = build_model(tokenizer, seed)
    dataset = build_dataset(n_rows, seed, conversational=conversational)
    args = make_sft_config(
        output_dir,
        max_steps=max_steps,
        save_steps=save_steps,
        seed=seed,
        learning_rate=learning_rate,
        batch_size=batch_size,
        save_total_limit=save_total_limit,
        **config_overrides,
    )
    with warnings.catch_warnings():
        # peft 0.21 reads model.is_gradient_checkpointing, which transformers 5 deprecated (FutureWarning);
        # keep it from failing suites that run with -W error / filterwarnings=error.
        warnings.filterwarnings("ignore", message=".*is deprecated and will be removed in v6", category=FutureWarning)
        trainer = SFTTrainer(
            model=model,
            args=args,
            train_dataset=dataset,
            processing_class=tokenizer,
            peft_config=lora_config(),
            callbacks=list(callbacks),
        )
    if quiet:
        trainer.remove_callback(PrinterCallback)
    return trainer


def checkpoint_dir(output_dir: str | os.PathLike, step: int) -> Path:
    """Where transformers writes the checkpoint of ``step`` (on_save has no path argument)."""
    return Path(output_dir) / f"checkpoint-{step}"


def adapter_bytes(path: str | os.PathLike) -> bytes:
    """Raw bytes of adapter_model.safetensors in an adapter / checkpoint dir."""
    return (Path(path) / "adapter_model.safetensors").read_bytes()


def tree_digest(path: str | os.PathLike) -> str:
    """sha256 over the (sorted) tensors of adapter_model.safetensors: name, dtype, shape, raw bytes."""
    from safetensors.numpy import load_file

    tensors = load_file(str(Path(path) / "adapter_model.safetensors"))
    h = hashlib.sha256()
    for name in sorted(tensors):
        arr = tensors[name]
        h.update(name.encode())
        h.update(str(arr.dtype).encode())
        h.update(str(arr.shape).encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def rows_digest_by_hand(rows: Iterable[dict[str, Any]]) -> str:
    """The row digest as the ledger's docs define it, computed without the client's code: sha256
    over each row's canonical JSON (sorted keys, no spaces, UTF-8) and a newline."""
    digest = hashlib.sha256()
    for row in rows:
        line = json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        digest.update(line.encode("utf-8") + b"\n")
    return "sha256:" + digest.hexdigest()


def latest_complete_checkpoint(output_dir: str | os.PathLike) -> Path | None:
    """Highest checkpoint-N dir that has trainer_state.json (i.e. was fully written)."""
    best: tuple[int, Path] | None = None
    for p in Path(output_dir).glob("checkpoint-*"):
        try:
            n = int(p.name.split("-", 1)[1])
        except ValueError:
            continue
        if (p / "trainer_state.json").is_file() and (best is None or n > best[0]):
            best = (n, p)
    return best[1] if best else None


__all__: Sequence[str] = [
    "build_tokenizer",
    "build_model",
    "build_dataset",
    "build_rows",
    "lora_config",
    "make_sft_config",
    "make_sft_trainer",
    "checkpoint_dir",
    "adapter_bytes",
    "tree_digest",
    "latest_complete_checkpoint",
    "rows_digest_by_hand",
    "synthetic_sentences",
    "CHAT_TEMPLATE",
    "SPECIAL_TOKENS",
]
