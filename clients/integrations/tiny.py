"""A tiny model, tokenizer and dataset built in-process, for dry runs of the trainer integrations
without a model hub or a GPU: what examples/trl_sft.py and examples/mlx_lora.py train when they
are given no model, and what the integrations' tests train.

Everything is a function of a seed: the tokenizer is a word-level one trained here on synthetic
sentences; the model is a randomly initialised 2-layer Llama (hidden 64, intermediate 128, 4
heads, 2 kv heads: about 81k parameters), for transformers (build_model) or for mlx-lm
(build_mlx_model, the same shape); the data are question/answer conversations made from word
lists (build_rows: plain dicts; build_dataset: a datasets.Dataset of the same rows). A LoRA of
rank 8 on q_proj/v_proj trains 3,584 parameters, 20 steps in a second or two on a CPU.

Importing this module asks for an offline run: it sets HF_HUB_OFFLINE, HF_DATASETS_OFFLINE and
TRANSFORMERS_OFFLINE (unless they are set), so import it before transformers; and
MLX_DISABLE_COMPILE=1, as mx.compile on a CPU costs ~20 s per process for a model this small.
The trainer libraries themselves are imported by the functions that need them (extra `trl`:
transformers, tokenizers, datasets, peft; extra `mlx`: mlx-lm).
"""

from __future__ import annotations

import os
import random
from typing import Any

__all__ = [
    "CHAT_TEMPLATE",
    "SPECIAL_TOKENS",
    "MODEL_ID",
    "MLX_LORA_PARAMETERS",
    "MLX_LORA_LAYERS",
    "synthetic_sentences",
    "build_rows",
    "build_tokenizer",
    "build_model",
    "build_dataset",
    "lora_config",
    "build_mlx_model",
    "add_mlx_lora",
    "build_mlx_dataset",
    "mlx_adapter_config",
]

for _name, _value in (
    ("HF_HUB_OFFLINE", "1"),
    ("HF_DATASETS_OFFLINE", "1"),
    ("TRANSFORMERS_OFFLINE", "1"),
    ("TOKENIZERS_PARALLELISM", "false"),  # no tokenizer threads across a fork
    ("HF_HUB_DISABLE_TELEMETRY", "1"),
    ("HF_DATASETS_DISABLE_PROGRESS_BARS", "1"),
    ("MLX_DISABLE_COMPILE", "1"),
):
    os.environ.setdefault(_name, _value)

MODEL_ID = "tiny-llama-81k"  # what a run spec names as its base model for these models
PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
ROLE_TOKENS = ("<|system|>", "<|user|>", "<|assistant|>")
SPECIAL_TOKENS = [PAD, UNK, BOS, EOS, *ROLE_TOKENS]

# A Llama-ish chat template. Assistant turns are wrapped in {% generation %} so that
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
_THINGS = list(_COLORS)
_NAMES = ["alice", "bob", "carol", "dave", "erin", "frank"]
_VERBS = ["likes", "sees", "paints", "draws", "finds", "wants"]
_NUMBERS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]

# mlx-lm's LoRA of the same shape as lora_config(): rank 8 on the attention's q and v projections.
MLX_LORA_PARAMETERS: dict[str, Any] = {
    "rank": 8,
    "scale": 20.0,
    "dropout": 0.0,
    "keys": ["self_attn.q_proj", "self_attn.v_proj"],
}
MLX_LORA_LAYERS = 2


def _qa(rng: random.Random) -> tuple[str, str]:
    kind = rng.randrange(3)
    if kind == 0:
        thing = rng.choice(_THINGS)
        return f"what color is the {thing} ?", f"the {thing} is {_COLORS[thing]} ."
    if kind == 1:
        a, b = rng.randrange(5), rng.randrange(5)
        return f"what is {_NUMBERS[a]} plus {_NUMBERS[b]} ?", f"{_NUMBERS[a]} plus {_NUMBERS[b]} is {_NUMBERS[a + b]} ."
    name, verb, thing = rng.choice(_NAMES), rng.choice(_VERBS), rng.choice(_THINGS)
    return f"what does {name} do ?", f"{name} {verb} the {_COLORS[thing]} {thing} ."


def synthetic_sentences(n: int = 200, seed: int = 0) -> list[str]:
    """`n` deterministic sentences covering the whole vocabulary of build_rows."""
    rng = random.Random(seed)
    out = [
        " ".join(_THINGS + list(_COLORS.values()) + _NAMES + _VERBS + _NUMBERS),
        "what color is the ? plus do does . a system you are helpful assistant answer briefly",
    ]
    while len(out) < n:
        question, answer = _qa(rng)
        out.append(question if rng.random() < 0.5 else answer)
    return out


def build_rows(n_rows: int = 64, seed: int = 0, conversational: bool = True) -> list[dict[str, Any]]:
    """`n_rows` deterministic rows: {"messages": [user, assistant]} when `conversational`, else
    {"text": "<question> <answer>"}."""
    rng = random.Random(seed + 1)
    rows: list[dict[str, Any]] = []
    for _ in range(n_rows):
        question, answer = _qa(rng)
        if conversational:
            messages = [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
            rows.append({"messages": messages})
        else:
            rows.append({"text": f"{question} {answer}"})
    return rows


def build_dataset(n_rows: int = 64, seed: int = 0, conversational: bool = True) -> Any:
    """build_rows as a datasets.Dataset."""
    from datasets import Dataset

    return Dataset.from_list(build_rows(n_rows, seed, conversational))


def build_tokenizer(seed: int = 0) -> Any:
    """A word-level tokenizer trained here, as a transformers PreTrainedTokenizerFast with
    CHAT_TEMPLATE (pad on the right, 128 tokens at most)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordLevel(unk_token=UNK))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.WordLevelTrainer(special_tokens=SPECIAL_TOKENS, min_frequency=1)
    tokenizer.train_from_iterator(synthetic_sentences(200, seed), trainer=trainer)
    # Plain-text encodes get no BOS/EOS added implicitly: the chat template adds them.
    tokenizer.post_processor = processors.TemplateProcessing(single="$A", pair="$A $B")
    wrap: Any = PreTrainedTokenizerFast  # untyped in some transformers releases
    fast = wrap(
        tokenizer_object=tokenizer,
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


def build_model(tokenizer: Any, seed: int = 0) -> Any:
    """The tiny Llama (transformers LlamaForCausalLM) for `tokenizer`'s vocabulary, seeded."""
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


def lora_config() -> Any:
    """peft LoraConfig: rank 8, alpha 16, no dropout, on q_proj and v_proj."""
    from peft import LoraConfig

    return LoraConfig(
        r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "v_proj"], bias="none", task_type="CAUSAL_LM"
    )


def build_mlx_model(vocab_size: int, seed: int = 0) -> Any:
    """The tiny Llama for mlx-lm (mlx_lm.models.llama.Model), the shape of build_model's, seeded."""
    import mlx.core as mx
    from mlx_lm.models import llama

    if os.environ.get("MLX_DISABLE_COMPILE"):
        mx.disable_compile()
    mx.random.seed(seed)
    args = llama.ModelArgs(
        model_type="llama",
        hidden_size=64,
        num_hidden_layers=2,
        intermediate_size=128,
        num_attention_heads=4,
        num_key_value_heads=2,
        rms_norm_eps=1e-5,
        vocab_size=vocab_size,
        max_position_embeddings=128,
        tie_word_embeddings=True,
    )
    model = llama.Model(args)
    mx.eval(model.parameters())
    return model


def add_mlx_lora(model: Any) -> None:
    """Freeze `model` and add mlx-lm LoRA layers (MLX_LORA_PARAMETERS) to its MLX_LORA_LAYERS layers."""
    from mlx_lm.tuner.utils import linear_to_lora_layers

    model.freeze()
    linear_to_lora_layers(model, MLX_LORA_LAYERS, MLX_LORA_PARAMETERS)


def build_mlx_dataset(tokenizer: Any, n_rows: int = 64, seed: int = 0, rows: list[dict[str, Any]] | None = None) -> Any:
    """build_rows (or `rows`) as an mlx-lm chat dataset (prompt masked), tokenized once."""
    from mlx_lm.tuner.datasets import CacheDataset, ChatDataset

    chosen = rows if rows is not None else build_rows(n_rows, seed, conversational=True)
    return CacheDataset(ChatDataset(chosen, tokenizer, chat_key="messages", mask_prompt=True))


def mlx_adapter_config(iters: int) -> dict[str, Any]:
    """What mlx_lm.utils.load_adapters() reads from adapter_config.json for these adapters."""
    return {
        "fine_tune_type": "lora",
        "num_layers": MLX_LORA_LAYERS,
        "lora_parameters": MLX_LORA_PARAMETERS,
        "iters": iters,
    }
