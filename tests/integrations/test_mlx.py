"""mlx-lm LoRA into the ledger: the real trainer (tiny llama, CPU, MLX_DISABLE_COMPILE=1) with
LedgerTrainingCallback against an in-process server."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

os.environ.setdefault("MLX_DISABLE_COMPILE", "1")
pytest.importorskip("mlx.core", reason="mlx needs the CPU backend on Linux: pip install 'mlx[cpu]'")
pytest.importorskip("mlx_lm")

from clients import LedgerClient, RunRecorder, file_digest, run_key  # noqa: E402
from clients.integrations.mlx import LedgerTrainingCallback, resume_adapter_file, resume_step  # noqa: E402
from tests.client.conftest import series_steps  # noqa: E402
from tests.trainers import mlx_tiny  # noqa: E402


def train(
    adapter_dir: Path,
    callback,
    *,
    iters: int,
    steps_per_save: int,
    steps_per_eval: int,
    resume_adapter_file: Path | None = None,
) -> None:
    """mlx_tiny.run_mlx_lora with a validation set (eval at iteration 0, every steps_per_eval and
    at the end), so on_val_loss_report fires."""
    import mlx.core as mx
    import mlx.optimizers as optim
    import numpy as np
    from mlx_lm.tuner.trainer import TrainingArgs
    from mlx_lm.tuner.trainer import train as mlx_train

    mx.disable_compile()
    adapter_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = mlx_tiny.tiny.build_tokenizer(0)
    model = mlx_tiny.build_mlx_model(len(tokenizer), 0)
    mlx_tiny.add_lora(model)
    if resume_adapter_file is not None:
        model.load_weights(str(resume_adapter_file), strict=False)
    np.random.seed(0)
    args = TrainingArgs(
        batch_size=4,
        iters=iters,
        steps_per_report=1,
        steps_per_save=steps_per_save,
        steps_per_eval=steps_per_eval,
        val_batches=1,
        max_seq_length=64,
        adapter_file=str(adapter_dir / "adapters.safetensors"),
    )
    mlx_train(
        model=model,
        optimizer=optim.Adam(learning_rate=1e-2),
        train_dataset=mlx_tiny.build_mlx_dataset(tokenizer, seed=0),
        val_dataset=mlx_tiny.build_mlx_dataset(tokenizer, n_rows=8, seed=1),
        args=args,
        training_callback=callback,
    )


def checkpoint_events(client: LedgerClient, run_id: str) -> list[dict]:
    return [
        event.data_json
        for event in client.read_events(from_position=1)
        if event.type.endswith("CheckpointSaved") and event.originator_id == run_id
    ]


def test_steps_eval_and_checkpoints_land_in_the_ledger(client: LedgerClient, tmp_path) -> None:
    recorder = RunRecorder.open(client, run_key=run_key({"mlx": str(uuid.uuid4())}), name="mlx-tiny")
    reports = []
    forward = mlx_tiny.make_callback_class()(reports)
    with LedgerTrainingCallback(
        recorder, tmp_path / "a" / "adapters.safetensors", wrapped_callback=forward
    ) as callback:
        train(tmp_path / "a", callback, iters=7, steps_per_save=3, steps_per_eval=3)
    recorder.finish()
    counters = recorder.counters
    assert counters["acked"] == counters["sent"] == 8 and counters["dropped"] == counters["failed"] == 0

    # Every report reached the wrapped callback; one step per iteration plus the eval before training.
    assert [r["iteration"] for r in reports if r["kind"] == "train"] == [1, 2, 3, 4, 5, 6, 7]
    assert [r["iteration"] for r in reports if r["kind"] == "val"] == [0, 2, 5, 6]
    assert series_steps(client, recorder.run_id) == list(range(8))
    page = client.get_series(run_id=recorder.run_id, from_step=0, page_size=100)
    columns = {column.name: column for column in page.metrics}
    assert set(columns) == {
        "loss",
        "lr",
        "eval_loss",
        "iterations_per_second",
        "tokens_per_second",
        "peak_memory_gb",
        "eval_seconds",
    }
    assert columns["loss"].index == list(range(1, 8))  # sparse: step 0 is eval only
    train_reports = [r for r in reports if r["kind"] == "train"]
    assert columns["loss"].values == pytest.approx([r["train_loss"] for r in train_reports])
    assert columns["lr"].values == pytest.approx([1e-2] * 7)
    # Eval is merged into the step it measured (mlx-lm reports it - 1), never a NaN placeholder.
    assert columns["eval_loss"].index == [0, 2, 5, 6]
    assert columns["eval_loss"].values == pytest.approx([r["val_loss"] for r in reports if r["kind"] == "val"])
    # tokens are per step; their sum is mlx-lm's running trained_tokens.
    assert page.tokens[0] == 0 and all(t > 0 for t in page.tokens[1:])
    assert sum(page.tokens) == train_reports[-1]["trained_tokens"]

    # Numbered adapter saves at 3 and 6 as weights checkpoints, and the last iteration (7, no
    # save of its own) as the final one, copied to the name mlx-lm would have given it.
    adapter_dir = (tmp_path / "a").absolute()
    saved = checkpoint_events(client, recorder.run_id)
    assert [(c["step"], c["final"]) for c in saved] == [(3, False), (6, False), (7, True)]
    for c, name in zip(saved, ["0000003", "0000006", "0000007"], strict=True):
        path = adapter_dir / f"{name}_adapters.safetensors"
        assert c["uri"] == str(path) and c["backend"] == "mlx" and c["fidelity"] == "weights"
        assert c["digest"] == file_digest(path)
    assert (adapter_dir / "0000007_adapters.safetensors").read_bytes() == (
        adapter_dir / "adapters.safetensors"
    ).read_bytes()
    state = recorder.state
    assert state.checkpoint.step == 7 and state.checkpoint.final and state.run.status == "done"


def test_resume_starts_attempt_two_from_the_checkpoint_with_absolute_steps(client: LedgerClient, tmp_path) -> None:
    key = run_key({"mlx-resume": str(uuid.uuid4())})

    # Attempt 1: 5 iterations, adapters saved at 3, then the process "dies" (no final checkpoint,
    # the run is not finished).
    first = RunRecorder.open(client, run_key=key, name="mlx-resume", resume_from_step="latest")
    assert resume_adapter_file(first.state) is None and resume_step(first.state) == 0
    callback = LedgerTrainingCallback(first, tmp_path / "a1" / "adapters.safetensors")
    train(tmp_path / "a1", callback, iters=5, steps_per_save=3, steps_per_eval=10**9)
    callback.close(final=False)
    first.close()
    assert [c["step"] for c in callback.checkpoints] == [3]

    # Attempt 2 resumes from the ledger's checkpoint, in its own adapter directory.
    second = RunRecorder.open(client, run_key=key, name="mlx-resume", resume_from_step="latest")
    opened_state = second.state
    assert second.attempt == 2 and resume_step(opened_state) == 3
    resume = resume_adapter_file(opened_state, adapter_root=tmp_path)
    assert resume == (tmp_path / "a1" / "0000003_adapters.safetensors").absolute()
    with LedgerTrainingCallback(second, tmp_path / "a2" / "adapters.safetensors") as callback:
        assert callback.step_offset == 3
        train(tmp_path / "a2", callback, iters=3, steps_per_save=3, steps_per_eval=10**9, resume_adapter_file=resume)
    # mlx-lm's eval at its iteration 0 measured the checkpoint (step 3): not after the resume point.
    assert callback.skipped == 1
    second.finish()
    for recorder in (first, second):
        counters = recorder.counters
        assert counters["acked"] == counters["sent"] and counters["dropped"] == counters["failed"] == 0

    state = second.state
    assert [(a.number, a.resumed_from_step) for a in state.attempts] == [(1, None), (2, 3)]
    series = client.get_series(run_id=second.run_id, from_step=0, page_size=100)
    assert series.steps == [0, 1, 2, 3, 4, 5, 6]
    assert series.attempts == [1, 1, 1, 1, 2, 2, 2]  # absolute steps: iteration 1 of attempt 2 is step 4
    everything = client.get_series(run_id=second.run_id, from_step=0, page_size=100, include_superseded=True)
    assert list(zip(everything.steps, everything.attempts, everything.superseded, strict=True)) == [
        (0, 1, False),
        (1, 1, False),
        (2, 1, False),
        (3, 1, False),
        (4, 1, True),
        (4, 2, False),
        (5, 1, True),
        (5, 2, False),
        (6, 2, False),
    ]
    final = state.checkpoint
    assert (final.attempt, final.step, final.final) == (2, 6, True)
    assert final.handle.uri == str((tmp_path / "a2" / "0000003_adapters.safetensors").absolute())

    # The checkpoint's file is checked against its digest before it is handed to mlx-lm.
    resume.write_bytes(b"overwritten")
    with pytest.raises(ValueError, match="changed"):
        resume_adapter_file(opened_state, adapter_root=tmp_path)


def test_an_interrupt_in_mlx_training_ends_the_run_stopped_and_an_error_failed(client: LedgerClient, tmp_path) -> None:
    from mlx_lm.tuner.callbacks import TrainingCallback

    class Raise(TrainingCallback):
        def __init__(self, error: BaseException) -> None:
            self.error = error

        def on_train_loss_report(self, train_info: dict) -> None:
            if train_info["iteration"] == 2:
                raise self.error

    for name, error, status in (
        ("interrupted", KeyboardInterrupt(), "stopped"),
        ("raised", RuntimeError("NaN loss"), "failed"),
    ):
        with pytest.raises(type(error)):
            with (
                RunRecorder.open(client, run_key=run_key({"mlx-end": name, "id": str(uuid.uuid4())})) as recorder,
                LedgerTrainingCallback(
                    recorder, tmp_path / name / "adapters.safetensors", wrapped_callback=Raise(error)
                ) as callback,
            ):
                train(tmp_path / name, callback, iters=5, steps_per_save=1, steps_per_eval=10**9)
        state = client.get_run_state(run_id=recorder.run_id)
        assert state.run.status == status and state.run.error.startswith(type(error).__name__)
        # The callback closed first (no final checkpoint): the steps and saved adapters are there.
        assert state.last_step == 2 and state.checkpoint.step == 1 and not state.checkpoint.final


def test_validation_losses_score_the_checkpoints_after_them_and_iters_is_the_plan(
    client: LedgerClient, tmp_path
) -> None:
    from tests.trainers import tiny

    recorder = RunRecorder.open(
        client, run_key=run_key({"mlx": str(uuid.uuid4())}), name="mlx-scored", objective=("val_loss", "min")
    )
    assert recorder.state is not None and recorder.state.progress.max_steps is None
    tokenizer = mlx_tiny.tiny.build_tokenizer(0)
    reports: list[dict] = []
    forward = mlx_tiny.make_callback_class()(reports)
    with LedgerTrainingCallback(
        recorder,
        tmp_path / "a" / "adapters.safetensors",
        wrapped_callback=forward,
        iters=6,
        train_dataset=mlx_tiny.build_mlx_dataset(tokenizer, seed=0),  # read through to its rows
        val_dataset=tiny.build_rows(8, seed=1),
    ) as callback:
        train(tmp_path / "a", callback, iters=6, steps_per_save=2, steps_per_eval=2)
    recorder.finish("done")
    validations = {report["iteration"]: report["val_loss"] for report in reports if report["kind"] == "val"}
    assert sorted(validations) == [0, 1, 3, 5]  # before iterations 1, 2, 4 and 6
    state = client.get_run_state(run_id=recorder.run_id)
    assert state.progress.max_steps == 6 and state.progress.step == 6
    checkpoints = client.list_checkpoints(run_id=recorder.run_id).checkpoints
    # Each save carries the latest validation before it: mlx-lm evaluates before an iteration.
    assert {checkpoint.step: checkpoint.scores for checkpoint in checkpoints} == {
        2: {"val_loss": pytest.approx(validations[1])},
        4: {"val_loss": pytest.approx(validations[3])},
        6: {"val_loss": pytest.approx(validations[5])},
    }
    best = min((1, 3, 5), key=lambda iteration: validations[iteration]) + 1
    assert client.best_checkpoint(run_id=recorder.run_id).checkpoint.step == best
    datasets = {dataset.role: dataset for dataset in state.datasets}
    assert datasets["train"].digest == tiny.rows_digest_by_hand(tiny.build_rows(64, seed=0))
    assert datasets["eval"].digest == tiny.rows_digest_by_hand(tiny.build_rows(8, seed=1))
    assert (datasets["train"].rows, datasets["train"].format, datasets["eval"].rows) == (64, "chat", 8)
