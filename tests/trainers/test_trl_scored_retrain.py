"""A real TRL + PEFT run of the tiny model, in-process, with evaluation, recorded by LedgerCallback
against a real ledger server: the run's datasets (by the digest of the rows handed to the
trainer, the format guessed from their columns), each checkpoint's scores (the eval metrics the
trainer logged at the evaluation before that save), the plan (max_steps as the trainer computed
it) and the objective (metric_for_best_model); then examples/retrain.py, run as a user runs it
from another directory, picks the checkpoint whose logged eval_loss is lowest and registers it
with its source checkpoint."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")

from clients import LedgerClient  # noqa: E402
from clients.integrations.transformers import LedgerCallback, spec_for  # noqa: E402
from clients.models import Objective  # noqa: E402
from services.embedded import ServerThread  # noqa: E402
from tests.trainers import tiny  # noqa: E402

RETRAIN = Path(__file__).resolve().parents[2] / "examples" / "retrain.py"
# What describes the evaluation rather than the model: never a score.
NOT_SCORES = {"eval_runtime", "eval_samples_per_second", "eval_steps_per_second", "epoch", "step"}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerThread]:
    with ServerThread(str(tmp_path / "ledger.db")) as server:
        yield server


@pytest.mark.subprocess
def test_a_trl_run_records_datasets_scores_and_plan_and_a_retrain_registers_its_best(
    server: ServerThread, tmp_path: Path
) -> None:
    from datasets import Dataset
    from transformers import PrinterCallback
    from trl import SFTTrainer

    train_rows, eval_rows = tiny.build_rows(64, seed=0), tiny.build_rows(16, seed=5)
    train_set, eval_set = Dataset.from_list(train_rows), Dataset.from_list(eval_rows)
    args = tiny.make_sft_config(
        tmp_path / "out",
        max_steps=6,
        save_steps=2,
        learning_rate=2e-2,
        eval_strategy="steps",
        eval_steps=2,
        per_device_eval_batch_size=8,
        metric_for_best_model="loss",  # the Trainer's "eval_loss"
        greater_is_better=False,
    )
    spec = spec_for(
        name="tiny-scored", base_model="tiny-llama-81k", lora=tiny.lora_config(), args=args, dataset=train_set
    )
    with LedgerClient(server.address, principal="tests") as client:
        callback = LedgerCallback(
            client=client,
            spec=spec,
            train_dataset=train_set,
            eval_dataset=eval_set,
            train_source_uri="memory://tiny/train",
        )
        tokenizer = tiny.build_tokenizer(0)
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore", message=".*is deprecated and will be removed in v6", category=FutureWarning
            )
            trainer = SFTTrainer(
                model=tiny.build_model(tokenizer, 0),
                args=args,
                train_dataset=train_set,
                eval_dataset=eval_set,
                processing_class=tokenizer,
                peft_config=tiny.lora_config(),
                callbacks=[callback],
            )
        trainer.remove_callback(PrinterCallback)
        with callback:
            trainer.train()
        logged = {entry["step"]: entry for entry in trainer.state.log_history if "eval_loss" in entry}
        assert sorted(logged) == [2, 4, 6]
        run_id = callback.recorder.run_id
        state = client.get_run_state(run_id=run_id)

        # The plan and the objective.
        assert trainer.state.max_steps == 6
        assert state.progress.max_steps == 6 and state.progress.step == 6 and state.progress.fraction == 1.0
        assert state.run.objective == Objective(metric="eval_loss", mode="min")

        # The datasets, by the digest of the rows handed over.
        datasets = {dataset.role: dataset for dataset in state.datasets}
        assert sorted(datasets) == ["eval", "train"]
        train, evaluation = datasets["train"], datasets["eval"]
        assert train.digest == tiny.rows_digest_by_hand(train_rows) and evaluation.digest == tiny.rows_digest_by_hand(
            eval_rows
        )
        assert (train.format, train.rows, train.tokens, train.source_uri) == ("chat", 64, None, "memory://tiny/train")
        assert (evaluation.format, evaluation.rows, evaluation.source_uri) == ("chat", 16, "")
        assert train.report == {"columns": ["messages"], "rows": 64}
        assert spec["dataset"] == train.digest  # the run key names the dataset the run recorded

        # Each checkpoint carries the eval metrics logged at the evaluation before its save.
        checkpoints = client.list_checkpoints(run_id=run_id).checkpoints
        assert [checkpoint.step for checkpoint in checkpoints] == [2, 4, 6]
        for checkpoint in checkpoints:
            expected = {name: value for name, value in logged[checkpoint.step].items() if name not in NOT_SCORES}
            assert "eval_loss" in expected and len(expected) >= 2
            assert checkpoint.scores == pytest.approx(expected, rel=1e-12)

        best_step = min(logged, key=lambda step: logged[step]["eval_loss"])
        best = client.best_checkpoint(run_id=run_id)
        assert (best.checkpoint.step, best.metric, best.mode) == (best_step, "eval_loss", "min")
        assert state.best_checkpoint is not None and state.best_checkpoint.step == best_step

        # The retrain example, from another directory, picks that checkpoint and registers it.
        environment = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
        done = subprocess.run(
            [sys.executable, str(RETRAIN), "--ledger", server.address, "--run-id", run_id, "--family", "tiny-sft"],
            cwd=tmp_path,
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        picked = re.search(r"best checkpoint of run \S+: step (\d+)", done.stdout)
        assert picked is not None and int(picked.group(1)) == best_step, done.stdout
        current = client.get_current(family="tiny-sft")
        assert current is not None and current.source_run_id == run_id and current.source_step == best_step
        assert current.source_checkpoint is not None
        assert current.source_checkpoint.checkpoint_digest == best.checkpoint.digest
        assert current.artifact_uri == str(tiny.checkpoint_dir(tmp_path / "out", best_step).resolve())


def test_a_callback_given_no_datasets_records_what_the_trainers_dataloader_reads(
    server: ServerThread, tmp_path: Path
) -> None:
    from datasets import Dataset
    from transformers import PrinterCallback
    from trl import SFTTrainer

    train_set = Dataset.from_list(tiny.build_rows(64, seed=0))
    args = tiny.make_sft_config(tmp_path / "out", max_steps=2, save_steps=2)
    spec = spec_for(name="tiny-prepared", base_model="tiny-llama-81k", lora=tiny.lora_config(), args=args)
    with LedgerClient(server.address, principal="tests") as client:
        callback = LedgerCallback(client=client, spec=spec)
        tokenizer = tiny.build_tokenizer(0)
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore", message=".*is deprecated and will be removed in v6", category=FutureWarning
            )
            trainer = SFTTrainer(
                model=tiny.build_model(tokenizer, 0),
                args=args,
                train_dataset=train_set,
                processing_class=tokenizer,
                peft_config=tiny.lora_config(),
                callbacks=[callback],
            )
        trainer.remove_callback(PrinterCallback)
        with callback:
            trainer.train()
        state = client.get_run_state(run_id=callback.recorder.run_id)
    # SFTTrainer tokenized the rows and the dataloader reads only the model's inputs of each: the
    # record is of those rows (no eval dataset was given, so none is recorded).
    (recorded,) = state.datasets
    prepared = [{name: row[name] for name in ("input_ids", "labels") if name in row} for row in trainer.train_dataset]
    assert recorded.role == "train" and recorded.rows == 64
    assert recorded.tokens == sum(len(row["input_ids"]) for row in trainer.train_dataset) > 64
    assert recorded.report["columns"] == sorted(prepared[0])
    assert recorded.digest == tiny.rows_digest_by_hand(prepared)
    assert state.progress.max_steps == 2 and state.run.objective is None
