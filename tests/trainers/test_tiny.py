"""The tiny offline SFT fixtures build, train, checkpoint and resume bit-identically."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.trainers import tiny


class _Recorder:
    """Collects on_log / on_save from a TrainerCallback without importing transformers at module level."""

    def __new__(cls):
        from transformers import TrainerCallback

        class Recorder(TrainerCallback):
            def __init__(self):
                self.logs: list[tuple[int, dict]] = []
                self.saves: list[int] = []

            def on_log(self, args, state, control, logs=None, **kwargs):
                self.logs.append((state.global_step, dict(logs or {})))

            def on_save(self, args, state, control, **kwargs):
                self.saves.append(state.global_step)

        return Recorder()


def test_tokenizer_model_dataset_build_offline():
    tok = tiny.build_tokenizer()
    ds = tiny.build_dataset()
    assert len(ds) == 64
    ids = tok.apply_chat_template(ds[0]["messages"], tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    tokens = tok.convert_ids_to_tokens(ids["input_ids"])
    assert tokens[0] == "<s>" and tokens[-1] == "</s>"
    for row in ds:  # the tokenizer's vocabulary covers every synthetic row
        row_ids = tok.apply_chat_template(row["messages"], tokenize=True, return_dict=True)["input_ids"]
        assert tok.unk_token_id not in row_ids
    assert any(ids["assistant_masks"]) and not all(ids["assistant_masks"])
    model = tiny.build_model(tok)
    assert sum(p.numel() for p in model.parameters()) < 100_000
    # Seeded: the same seed gives the same weights.
    again = tiny.build_model(tiny.build_tokenizer())
    assert all((a == b).all() for a, b in zip(model.state_dict().values(), again.state_dict().values(), strict=True))


def test_train_four_steps_writes_checkpoint(tmp_path):
    rec = _Recorder()
    trainer = tiny.make_sft_trainer(tmp_path, max_steps=4, save_steps=2, callbacks=[rec])
    trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    assert trainable == 3584  # LoRA r=8 on q_proj/v_proj, 2 layers
    result = trainer.train()
    assert result.global_step == 4
    losses = [logs["loss"] for _, logs in rec.logs if "loss" in logs]
    assert len(losses) == 4 and all(math.isfinite(x) for x in losses)
    assert rec.saves == [2, 4]
    ckpt = tiny.checkpoint_dir(tmp_path, 4)
    assert (ckpt / "adapter_model.safetensors").is_file()
    assert (ckpt / "trainer_state.json").is_file()
    assert tiny.latest_complete_checkpoint(tmp_path) == ckpt


def test_resume_in_process_is_bit_identical(tmp_path):
    full, part = tmp_path / "full", tmp_path / "part"
    tiny.make_sft_trainer(full, max_steps=8, save_steps=4).train()

    class Crash(Exception):
        pass

    from transformers import TrainerCallback

    class CrashAfter(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 6:
                raise Crash

    with pytest.raises(Crash):
        tiny.make_sft_trainer(part, max_steps=8, save_steps=4, callbacks=[CrashAfter()]).train()
    assert not tiny.checkpoint_dir(part, 8).exists()

    rec = _Recorder()
    tiny.make_sft_trainer(part, max_steps=8, save_steps=4, callbacks=[rec]).train(
        resume_from_checkpoint=str(tiny.checkpoint_dir(part, 4))
    )
    assert [s for s, logs in rec.logs if "loss" in logs] == [5, 6, 7, 8]
    assert tiny.adapter_bytes(tiny.checkpoint_dir(full, 8)) == tiny.adapter_bytes(tiny.checkpoint_dir(part, 8))
    assert tiny.tree_digest(tiny.checkpoint_dir(full, 8)) == tiny.tree_digest(tiny.checkpoint_dir(part, 8))


SCRIPT = Path(__file__).with_name("sft_script.py")


def _run_script(*args: str) -> list[str]:
    out = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-4000:]
    return out.stdout.splitlines()


@pytest.mark.subprocess
@pytest.mark.slow
@pytest.mark.e2e
def test_script_sigkill_and_resume_is_bit_identical(tmp_path):
    """Three processes: uninterrupted; SIGKILLed at step >= 7 after checkpoint-5; resumed from checkpoint-5."""
    full, part = tmp_path / "full", tmp_path / "part"
    full_lines = _run_script("--output-dir", str(full), "--max-steps", "10", "--save-steps", "5")
    assert full_lines[-1].startswith("end step=10 ")

    child = subprocess.Popen(
        [
            sys.executable,
            str(SCRIPT),
            "--output-dir",
            str(part),
            "--max-steps",
            "10",
            "--save-steps",
            "5",
            "--sleep-per-step",
            "0.2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    seen: list[str] = []
    try:
        saved = False
        assert child.stdout is not None
        for line in child.stdout:
            seen.append(line.rstrip("\n"))
            saved = saved or line.startswith("save step=5 ")
            if saved and line.startswith("log step=") and int(line.split()[1].split("=")[1]) >= 7:
                child.send_signal(signal.SIGKILL)
                break
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=60)
        if child.stdout:
            child.stdout.close()
    assert child.returncode == -signal.SIGKILL, seen
    assert not tiny.checkpoint_dir(part, 10).exists()

    ckpt5 = tiny.checkpoint_dir(part, 5)
    resumed_lines = _run_script(
        "--output-dir", str(part), "--max-steps", "10", "--save-steps", "5", "--resume-from", str(ckpt5)
    )
    full_logs = [line for line in full_lines if line.startswith("log ")]
    resumed_logs = [line for line in resumed_lines if line.startswith("log ")]
    assert resumed_logs == full_logs[5:]  # steps 6..10: identical losses, to the last bit of the repr
    assert tiny.adapter_bytes(tiny.checkpoint_dir(full, 10)) == tiny.adapter_bytes(tiny.checkpoint_dir(part, 10))
