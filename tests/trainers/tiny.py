"""Tiny, fully offline, deterministic building blocks for trainer integration tests.

Nothing here touches a model hub: the tokenizer is trained in-process on synthetic
sentences, the model is a randomly initialised (seeded) 2-layer Llama, and the
dataset is generated from word lists.

Public API::

    build_tokenizer(seed=0) -> PreTrainedTokenizerFast
    build_model(tokenizer, seed=0) -> LlamaForCausalLM
    build_dataset(n_rows=64, seed=0, conversational=True) -> datasets.Dataset
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
import os
import random
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

# Never reach for a hub; keep tokenizers from forking threads under pytest.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
ROLE_TOKENS = ("<|system|>", "<|user|>", "<|assistant|>")
SPECIAL_TOKENS = [PAD, UNK, BOS, EOS, *ROLE_TOKENS]

# A Llama-ish chat template. Assistant turns are wrapped in {% generation %} so
# SFTConfig(assistant_only_loss=True) works too.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}"
    "<|assistant|> {% generation %}{{ message['content'] }} {{ eos_token }}{% endgeneration %} "
    "{% else %}"
    "<|{{ message['role'] }}|> {{ message['content'] }} "
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)

_THINGS = ["apple", "sky", "grass", "sun", "sea", "snow", "cherry", "lemon", "coal", "cloud", "rose", "leaf"]
_COLORS = {
    "apple": "red",
    "sky": "blue",
    "grass": "green",
    "sun": "yellow",
    "sea": "blue",
    "snow": "white",
    "cherry": "red",
    "lemon": "yellow",
    "coal": "black",
    "cloud": "white",
    "rose": "red",
    "leaf": "green",
}
_NAMES = ["alice", "bob", "carol", "dave", "erin", "frank"]
_VERBS = ["likes", "sees", "paints", "draws", "finds", "wants"]
_NUMBERS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]


def _qa(rng: random.Random) -> tuple[str, str]:
    kind = rng.randrange(3)
    if kind == 0:
        thing = rng.choice(_THINGS)
        return f"what color is the {thing} ?", f"the {thing} is {_COLORS[thing]} ."
    if kind == 1:
        a, b = rng.randrange(5), rng.randrange(5)
        return (
            f"what is {_NUMBERS[a]} plus {_NUMBERS[b]} ?",
            f"{_NUMBERS[a]} plus {_NUMBERS[b]} is {_NUMBERS[a + b]} .",
        )
    name, verb, thing = rng.choice(_NAMES), rng.choice(_VERBS), rng.choice(_THINGS)
    return f"what does {name} do ?", f"{name} {verb} the {_COLORS[thing]} {thing} ."


def synthetic_sentences(n: int = 200, seed: int = 0) -> list[str]:
    """n deterministic sentences covering the whole vocabulary used by build_dataset."""
    rng = random.Random(seed)
    out: list[str] = []
    # Make sure every word appears at least once, whatever n is.
    out.append(" ".join(_THINGS + list(_COLORS.values()) + _NAMES + _VERBS + _NUMBERS))
    out.append("what color is the ? plus do does . a system you are helpful assistant answer briefly")
    while len(out) < n:
        q, a = _qa(rng)
        out.append(q if rng.random() < 0.5 else a)
    return out


def build_tokenizer(seed: int = 0):
    """Word-level tokenizer trained in-process, wrapped in PreTrainedTokenizerFast."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.WordLevelTrainer(special_tokens=SPECIAL_TOKENS, min_frequency=1)
    tok.train_from_iterator(synthetic_sentences(200, seed), trainer=trainer)
    # Plain-text encodes get no BOS/EOS added implicitly: the chat template adds them.
    tok.post_processor = processors.TemplateProcessing(single="$A", pair="$A $B")
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token=UNK,
        pad_token=PAD,
        bos_token=BOS,
        eos_token=EOS,
        additional_special_tokens=list(ROLE_TOKENS),
        padding_side="right",
        model_max_length=128,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_model(tokenizer, seed: int = 0):
    """A ~81k-parameter Llama (hidden 64, intermediate 128, 2 layers, 4 heads, 2 kv heads), seeded."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def build_dataset(n_rows: int = 64, seed: int = 0, conversational: bool = True):
    """n_rows deterministic rows: {"messages": [...]} if conversational else {"text": "..."}."""
    from datasets import Dataset

    rng = random.Random(seed + 1)
    rows: list[dict[str, Any]] = []
    for _ in range(n_rows):
        q, a = _qa(rng)
        if conversational:
            rows.append({"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a}]})
        else:
            rows.append({"text": f"{q} {a}"})
    return Dataset.from_list(rows)


def lora_config():
    from peft import LoraConfig

    return LoraConfig(
        r=8,
        lora_alpha=16,
        lora_dropout=0.0,
        target_modules=["q_proj", "v_proj"],
        bias="none",
        task_type="CAUSAL_LM",
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
    "lora_config",
    "make_sft_config",
    "make_sft_trainer",
    "checkpoint_dir",
    "adapter_bytes",
    "tree_digest",
    "latest_complete_checkpoint",
    "synthetic_sentences",
    "CHAT_TEMPLATE",
    "SPECIAL_TOKENS",
]
