"""LedgerCallback in-process, against an in-process server: how trainer logs become step records
(renames, drops, merges, non-finite values), the warn-once rule, spend intervals and their stop,
an unreachable ledger at the start, and the refusals of resume_checkpoint. Driven by hand with
transformers' own TrainerState/TrainerControl (no model), plus one real tiny TRL run."""

from __future__ import annotations

import json
import math
import re
import shutil
import time
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from clients import LedgerClient, RunEnded, RunRecorder
from clients.integrations.pricing import GpuPrice
from clients.integrations.transformers import (
    LedgerCallback,
    LedgerCallbackWarning,
    ResumeRefused,
    SpecMismatch,
    SpendHoldRefused,
    checkpoint_digest,
    lora_shape,
    map_log_keys,
    resume_checkpoint,
    spec_for,
    training_run_key,
)
from clients.models import RunState
from tests.client.conftest import QUICK_RETRIES, series_steps
from tests.client.server_thread import ServerThread, free_port

LORA = {"r": 8, "alpha": 16, "target_modules": ["v_proj", "q_proj"], "dropout": 0.0}


def make_spec(name: str, **hyperparameters: Any) -> dict[str, Any]:
    return spec_for(
        name=name,
        base_model="tiny-llama",
        revision="r1",
        method="sft",
        lora=LORA,
        hyperparameters={"learning_rate": 5e-3, **hyperparameters},
        dataset="sha256:" + "1" * 64,
    )


class Trainer:
    """Drives a callback the way transformers' training loop does."""

    def __init__(self, callback: LedgerCallback, output_dir: Path, *, max_steps: int = 20) -> None:
        from transformers import TrainerControl, TrainerState

        self.callback, self.control = callback, TrainerControl()
        self.state = TrainerState(max_steps=max_steps)
        self.args = SimpleNamespace(output_dir=str(output_dir), save_only_model=False, learning_rate=5e-3)

    def begin(self, global_step: int = 0) -> None:
        self.state.global_step = global_step
        self.callback.on_train_begin(self.args, self.state, self.control)

    def step(self, logs: dict[str, Any] | None = None, *, tokens: int = 0, save: bool = False) -> None:
        self.callback.on_step_begin(self.args, self.state, self.control)
        self.state.global_step += 1
        self.state.num_input_tokens_seen += tokens
        self.callback.on_step_end(self.args, self.state, self.control)
        if logs is not None:
            self.log(logs)
        if save or self.control.should_save:
            path = Path(self.args.output_dir) / f"checkpoint-{self.state.global_step}"
            path.mkdir(parents=True, exist_ok=True)
            (path / "trainer_state.json").write_text(json.dumps({"global_step": self.state.global_step}))
            (path / "adapter_config.json").write_text(
                json.dumps({"r": 8, "lora_alpha": 16, "lora_dropout": 0.0, "target_modules": ["q_proj", "v_proj"]})
            )
            self.control.should_save = False
            self.callback.on_save(self.args, self.state, self.control)

    def log(self, logs: dict[str, Any]) -> None:
        self.state.log_history.append({**logs, "step": self.state.global_step})
        self.callback.on_log(self.args, self.state, self.control, logs=dict(logs))

    def end(self, summary: dict[str, Any] | None = None) -> None:
        self.log(
            summary or {"train_runtime": 1.5, "train_loss": 0.75, "train_samples_per_second": 9.0, "total_flos": 1e9}
        )
        self.callback.on_train_end(self.args, self.state, self.control)


@pytest.fixture
def server(tmp_path: Path):
    server = ServerThread(str(tmp_path / "ledger.db")).start()
    yield server
    server.stop()


@pytest.fixture
def client(server: ServerThread):
    with LedgerClient(server.address, principal="tests", retries=QUICK_RETRIES) as client:
        yield client


def run_state(client: LedgerClient, spec: dict[str, Any]) -> RunState:
    return client.open_run(run_key=training_run_key(spec)).state


def wait_for(condition: Any, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_log_keys_are_renamed_kept_or_dropped() -> None:
    logs = {
        "loss": 1.5,
        "grad_norm": 0.3,
        "learning_rate": 1e-3,
        "entropy": 2.0,
        "mean_token_accuracy": 0.4,
        "num_tokens": 1234.0,
        "epoch": 0.5,
        "num_input_tokens_seen": 99,
        "train_runtime": 3.0,
        "train_tokens_per_second": 10.0,
        "eval_loss": 1.2,
        "eval_runtime": 0.5,
        "eval_samples_per_second": 100.0,
        "eval_steps_per_second": 4.0,
        "eval_mean_token_accuracy": 0.6,
        "total_flos": 1e12,
        "rewards/chosen": 0.1,
    }
    assert map_log_keys(logs) == {
        "loss": 1.5,
        "grad_norm": 0.3,
        "lr": 1e-3,
        "entropy": 2.0,
        "token_accuracy": 0.4,
        "epoch": 0.5,
        "eval_loss": 1.2,
        "eval_mean_token_accuracy": 0.6,
        "rewards/chosen": 0.1,
    }


def test_spec_and_key_are_stable_and_lora_shapes_normalise() -> None:
    from peft import LoraConfig

    config = LoraConfig(r=8, lora_alpha=16.0, lora_dropout=0.0, target_modules=["v_proj", "q_proj"])
    assert (
        lora_shape(config)
        == lora_shape(LORA)
        == lora_shape({"r": 8, "lora_alpha": 16, "lora_dropout": 0, "target_modules": ["q_proj", "v_proj"]})
    )
    assert training_run_key(make_spec("a")) == training_run_key(make_spec("a"))
    assert training_run_key(make_spec("a")) != training_run_key(make_spec("a", seed=1))
    assert (
        spec_for(name="d", base_model="m", dataset=[{"x": 1}, {"x": 2}])["dataset"]
        != spec_for(name="d", base_model="m", dataset=[{"x": 2}, {"x": 1}])["dataset"]
    )


def test_steps_are_mapped_merged_per_step_and_non_finite_values_dropped(client: LedgerClient, tmp_path: Path) -> None:
    spec = make_spec("mapping")
    callback = LedgerCallback(client=client, spec=spec, recorder_options={"batch_interval_s": 0.01})
    trainer = Trainer(callback, tmp_path, max_steps=5)
    trainer.begin()
    for step in range(1, 6):
        trainer.step(
            {
                "loss": 2.0 / step,
                "grad_norm": math.nan if step == 3 else 0.5,
                "learning_rate": 1e-3 * step,
                "mean_token_accuracy": 0.1 * step,
                "num_tokens": 7.0,
                "epoch": step / 10,
                "entropy": math.inf if step == 4 else 1.0,
            },
            tokens=100,
        )
        time.sleep(0.02)  # The step's record goes once the next step begins: an eval log still merges.
    trainer.log({"eval_loss": 0.9, "eval_runtime": 0.1, "eval_samples_per_second": 50.0})
    trainer.end()
    recorder = callback.recorder
    assert recorder is not None and recorder.counters["non_finite"] == 2
    assert recorder.counters["acked"] == 5 and recorder.counters["dropped"] == 0
    page = client.get_series(run_id=recorder.run_id)
    assert page.steps == [1, 2, 3, 4, 5] and page.tokens == [100, 200, 300, 400, 500]
    columns = {column.name: column for column in page.metrics}
    system = {name for name in columns if name.startswith("system/")}
    assert set(columns) - system == {"loss", "grad_norm", "lr", "token_accuracy", "epoch", "entropy", "eval_loss"}
    # System metrics by default: one sample in 15 s, on the first step logged.
    assert "system/ram_used_bytes" in system and all(columns[name].index == [0] for name in system)
    assert columns["lr"].values == pytest.approx([1e-3, 2e-3, 3e-3, 4e-3, 5e-3])
    assert columns["grad_norm"].index == [0, 1, 3, 4] and columns["entropy"].index == [0, 1, 2, 4]
    assert columns["eval_loss"].index == [4] and columns["eval_loss"].values == [0.9]
    state = client.get_run_state(run_id=recorder.run_id)
    assert state.run.status == "done"
    assert state.run.summary == {
        "steps": 5,
        "attempt": 1,
        "final_loss": 0.4,
        "train_loss": 0.75,
        "train_runtime": 1.5,
        "train_samples_per_second": 9.0,
        "total_flos": 1e9,
    }


def test_a_subclass_that_never_logs_a_point_warns_once(client: LedgerClient, tmp_path: Path) -> None:
    class Quiet(LedgerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):  # Forgets super().on_log().
            pass

    callback = Quiet(client=client, spec=make_spec("quiet"))
    trainer = Trainer(callback, tmp_path, max_steps=10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.begin()
        for _ in range(10):
            trainer.step({"loss": 1.0}, save=trainer.state.global_step == 4)
        trainer.end()
    ours = [w for w in caught if issubclass(w.category, LedgerCallbackWarning)]
    assert len(ours) == 1 and "Quiet" in str(ours[0].message)
    # A callback that logs never warns.
    with warnings.catch_warnings():
        warnings.simplefilter("error", LedgerCallbackWarning)
        trainer = Trainer(LedgerCallback(client=client, spec=make_spec("loud")), tmp_path / "loud", max_steps=3)
        trainer.begin()
        for _ in range(3):
            trainer.step({"loss": 1.0})
        trainer.end()


def test_checkpoints_are_recorded_with_their_digest_and_resumed_from(client: LedgerClient, tmp_path: Path) -> None:
    spec = make_spec("checkpoints")
    callback = LedgerCallback(client=client, spec=spec, recorder_options={"batch_interval_s": 0.01})
    trainer = Trainer(callback, tmp_path, max_steps=10)
    trainer.begin()
    for _ in range(7):
        trainer.step({"loss": 1.0}, save=trainer.state.global_step + 1 in (3, 6))
    wait_for(lambda: getattr(run_state(client, spec).checkpoint, "step", None) == 6)  # Recorded in the background.
    callback.recorder.close()  # The process dies after step 7, before its end.
    state = run_state(client, spec)
    checkpoint = state.checkpoint
    path = tmp_path / "checkpoint-6"
    assert checkpoint.step == 6 and checkpoint.digest == checkpoint_digest(path)
    assert checkpoint.handle.to_dict() == {"backend": "hf", "uri": str(path.resolve()), "fidelity": "weights+optimizer"}
    assert resume_checkpoint(client, spec=spec, output_dir=tmp_path) == str(path.resolve())
    # A trainer that resumed from step 6 starts attempt 2 there; steps 7.. are superseded.
    second = Trainer(LedgerCallback(client=client, spec=spec), tmp_path, max_steps=10)
    second.begin(global_step=6)
    for _ in range(4):
        second.step({"loss": 0.5})
    second.end()
    state = run_state(client, spec)
    assert state.attempts[1].resumed_from_step == 6 and state.run.status == "done"
    page = client.get_series(run_id=state.run.run_id)
    assert list(zip(page.steps, page.attempts, strict=True)) == [(s, 1 if s <= 6 else 2) for s in range(1, 11)]
    # A trainer resumed from a step the ledger has no checkpoint at is refused before it trains.
    third = Trainer(LedgerCallback(client=client, spec=make_spec("unknown")), tmp_path, max_steps=10)
    with pytest.raises(ResumeRefused) as refused:
        third.begin(global_step=4)
    assert refused.value.reason == "CHECKPOINT_UNKNOWN"


def test_resume_checkpoint_refuses_what_it_cannot_trust(client: LedgerClient, tmp_path: Path) -> None:
    assert resume_checkpoint(client, spec=make_spec("fresh")) is None  # No checkpoint: a fresh start.

    def recorded(
        name: str, *, backend: str = "hf", expires_at: datetime | None = None, lora: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], Path]:
        spec = make_spec(name)
        path = tmp_path / name / "checkpoint-5"
        path.mkdir(parents=True)
        (path / "trainer_state.json").write_text("{}")
        (path / "adapter_config.json").write_text(
            json.dumps(lora or {"r": 8, "lora_alpha": 16, "lora_dropout": 0.0, "target_modules": ["q_proj", "v_proj"]})
        )
        recorder = RunRecorder.open(client, run_key=training_run_key(spec), spec=spec)
        recorder.log(5, loss=1.0)
        recorder.checkpoint(
            5, str(path), backend, "weights+optimizer", digest=checkpoint_digest(path), expires_at=expires_at
        )
        recorder.close()
        return spec, path

    def reason(spec: dict[str, Any], **options: Any) -> str:
        with pytest.raises(ResumeRefused) as refused:
            resume_checkpoint(client, spec=spec, **{"output_dir": tmp_path, **options})
        return refused.value.reason

    spec, path = recorded("good")
    assert resume_checkpoint(
        LedgerClient(client.address, retries=QUICK_RETRIES), spec=spec, output_dir=tmp_path
    ) == str(path)
    (path / "trainer_state.json").write_text('{"tampered": true}')
    assert reason(spec) == "DIGEST_MISMATCH"
    assert resume_checkpoint(client, spec=spec, output_dir=tmp_path, verify_digest=False) == str(path)
    shutil.rmtree(path)
    assert reason(spec) == "CHECKPOINT_MISSING"
    spec, _ = recorded("tinker", backend="tinker")
    assert reason(spec) == "BACKEND_MISMATCH"
    spec, _ = recorded("rank4", lora={"r": 4, "lora_alpha": 16, "lora_dropout": 0.0, "target_modules": ["q_proj"]})
    assert reason(spec) == "LORA_MISMATCH"
    expires_at = datetime.now(UTC) + timedelta(seconds=3)  # Saved before it expires, even under load.
    spec, _ = recorded("expired", expires_at=expires_at)
    time.sleep(max(0.0, (expires_at - datetime.now(UTC)).total_seconds()) + 0.2)
    assert reason(spec) == "CHECKPOINT_EXPIRED"
    assert resume_checkpoint(client, spec=spec, allow_restart=True) is None


def test_spend_is_held_per_interval_and_a_refused_hold_stops_cleanly(client: LedgerClient, tmp_path: Path) -> None:
    price = GpuPrice(3_600_000_000, gpu_type="test", sheet="test-sheet", source="tests")  # 1,000 micro-USD per ms
    cap = 400_000  # 0.4 s of GPU time
    spec = make_spec("spend")
    callback = LedgerCallback(client=client, spec=spec, gpu_price=price, cap_usd_micro=cap, interval_s=0.15)
    trainer = Trainer(callback, tmp_path, max_steps=100)
    trainer.begin()
    while not trainer.control.should_training_stop:
        time.sleep(0.02)
        trainer.step({"loss": 1.0})
        assert trainer.state.global_step < 100, "the cap never stopped training"
    stop_step = trainer.state.global_step  # The stop asked for a save at this step (done by step()).
    assert (Path(trainer.args.output_dir) / f"checkpoint-{stop_step}").is_dir()
    trainer.end()
    state = run_state(client, spec)
    assert state.run.status == "stopped" and "spend cap reached" in state.run.summary["stop_reason"]
    # Said in dollars, naming the run whose cap refused the hold.
    who = re.escape(f"run {state.run.name} ({state.run.run_id})")
    stopped = rf"spend cap reached at step {stop_step}: \$0\.\d+ left on {who}"
    assert re.fullmatch(stopped, state.run.summary["stop_reason"])
    assert state.checkpoint.step == stop_step == state.last_step
    account = client.get_account(account=state.run.run_id)
    assert account.committed_usd_micro + account.pending_usd_micro <= cap
    assert account.pending_usd_micro == 0 and account.overrun_usd_micro == 0
    entries = client.list_reservations(account=state.run.run_id, page_size=1_000).reservations
    committed = [e for e in entries if e.state == "committed"]
    assert len(committed) >= 2 and sum(e.actual_usd_micro for e in committed) == account.committed_usd_micro
    assert all(e.basis.gpu.usd_micro_per_gpu_hour == price.usd_micro_per_gpu_hour for e in entries)
    assert any(e.state == "refused" for e in entries)
    # The stopped run is not started again by accident ...
    again = Trainer(LedgerCallback(client=client, spec=spec, gpu_price=price, interval_s=0.15), tmp_path)
    with pytest.raises(RunEnded, match="is stopped: use a new run key, or pass reopen=True"):
        again.begin(global_step=stop_step)
    # ... and reopened, with nothing left, the next attempt may not even start.
    again = Trainer(LedgerCallback(client=client, spec=spec, gpu_price=price, interval_s=0.15, reopen=True), tmp_path)
    with pytest.raises(SpendHoldRefused) as refused:
        again.begin(global_step=stop_step)
    assert refused.value.reason == "SPEND_CAP_EXCEEDED"


def test_an_unreachable_ledger_at_the_start(tmp_path: Path) -> None:
    server = ServerThread(str(tmp_path / "ledger.db"), port=free_port())  # Down until started below.
    address = server.address
    spec = make_spec("outage")
    # With a price sheet: no hold can be had, so nothing trains.
    priced = Trainer(LedgerCallback(address=address, spec=spec, gpu_price=GpuPrice(1_000_000)), tmp_path / "priced")
    with pytest.raises(SpendHoldRefused) as refused:
        priced.begin()
    assert refused.value.reason == "LEDGER_UNAVAILABLE"
    # Without one, training goes on and its steps arrive once the ledger is back.
    callback = LedgerCallback(
        address=address, spec=spec, outbox_dir=tmp_path / "outbox", recorder_options={"batch_interval_s": 0.01}
    )
    trainer = Trainer(callback, tmp_path / "out", max_steps=12)
    started = time.monotonic()
    trainer.begin()
    for _ in range(6):
        trainer.step({"loss": 1.0}, tokens=10, save=trainer.state.global_step == 4)
    assert time.monotonic() - started < 10 and not callback.recorder.opened
    server.start()
    try:
        for _ in range(6):
            trainer.step({"loss": 0.5}, tokens=10)
        trainer.end()
        with LedgerClient(address, retries=QUICK_RETRIES) as client:
            state = run_state(client, spec)
            assert state.run.status == "done" and state.checkpoint.step == 5
            assert series_steps(client, state.run.run_id, include_superseded=True) == list(range(1, 13))
        assert callback.recorder.counters["acked"] == 12
    finally:
        server.stop()


def test_a_real_tiny_trl_run_in_process(client: LedgerClient, tmp_path: Path) -> None:
    from tests.trainers import tiny

    args = tiny.make_sft_config(tmp_path, max_steps=4, save_steps=2)
    spec = spec_for(
        name="tiny-in-process",
        base_model="tiny-llama-81k",
        revision="seed-0",
        method="sft",
        lora=tiny.lora_config(),
        args=args,
        dataset=tiny.build_dataset(),
    )
    callback = LedgerCallback(client=client, spec=spec)
    trainer = tiny.make_sft_trainer(tmp_path, max_steps=4, save_steps=2)
    trainer.add_callback(callback)
    assert callback.resume_checkpoint() is None
    trainer.train(resume_from_checkpoint=callback.resume_checkpoint())
    state = run_state(client, spec)
    assert state.run.status == "done" and state.checkpoint.step == 4
    assert state.checkpoint.digest == checkpoint_digest(tiny.checkpoint_dir(tmp_path, 4))
    page = client.get_series(run_id=state.run.run_id)
    assert page.steps == [1, 2, 3, 4] and page.tokens == sorted(page.tokens) and page.tokens[0] > 0
    names = {column.name for column in page.metrics}
    assert {"loss", "lr", "token_accuracy", "grad_norm", "entropy", "epoch"} <= names
    assert not names & {"learning_rate", "num_tokens", "train_runtime", "total_flos", "mean_token_accuracy"}
    with pytest.raises(RunEnded, match="is done: use a new run key") as refused:
        callback.resume_checkpoint()  # A done run is not resumed.
    assert refused.value.status == "done" and state.run.run_id in str(refused.value)
    # A spec that does not describe the trainer is refused before anything trains.
    wrong = LedgerCallback(client=client, spec={**spec, "lora": {**spec["lora"], "r": 4}})
    trainer = tiny.make_sft_trainer(tmp_path / "wrong", max_steps=2, save_steps=2, callbacks=[wrong])
    with pytest.raises(SpecMismatch):
        trainer.train()


def test_an_exception_or_an_interrupt_in_train_ends_the_run_failed_or_stopped(
    client: LedgerClient, tmp_path: Path
) -> None:
    for name, error, status in (
        ("raises", RuntimeError("CUDA out of memory"), "failed"),
        ("interrupted", KeyboardInterrupt(), "stopped"),
    ):
        spec = make_spec(name)
        callback = LedgerCallback(client=client, spec=spec, recorder_options={"batch_interval_s": 0.01})
        trainer = Trainer(callback, tmp_path / name, max_steps=10)
        with pytest.raises(type(error)), callback:  # trainer.train() never calls on_train_end on the way out
            trainer.begin()
            for _ in range(3):
                trainer.step({"loss": 1.0}, save=trainer.state.global_step == 1)
            raise error
        run = run_state(client, spec).run
        assert (run.status, run.error) == (status, f"{type(error).__name__}: {error}".rstrip(": "))
        assert run.summary["steps"] == 3 and run.summary["final_loss"] == 1.0
        state = run_state(client, spec)
        assert state.last_step == 3 and state.checkpoint.step == 2  # flushed before the finish
    # A normal end inside the block is "done", as without it.
    spec = make_spec("normal")
    callback = LedgerCallback(client=client, spec=spec)
    trainer = Trainer(callback, tmp_path / "normal", max_steps=2)
    with callback:
        trainer.begin()
        trainer.step({"loss": 1.0})
        trainer.end()
    assert run_state(client, spec).run.status == "done"


def test_an_ended_run_is_resumed_only_with_reopen(client: LedgerClient, tmp_path: Path) -> None:
    spec = make_spec("reopen")
    callback = LedgerCallback(client=client, spec=spec, recorder_options={"batch_interval_s": 0.01})
    trainer = Trainer(callback, tmp_path, max_steps=10)
    with pytest.raises(RuntimeError), callback:
        trainer.begin()
        for _ in range(4):
            trainer.step({"loss": 1.0}, save=trainer.state.global_step == 2)
        raise RuntimeError("disk full")
    path = str((tmp_path / "checkpoint-3").resolve())
    for resume in (
        lambda: resume_checkpoint(client, spec=spec),
        LedgerCallback(client=client, spec=spec).resume_checkpoint,
    ):
        with pytest.raises(RunEnded) as refused:
            resume()
        assert refused.value.status == "failed"
        assert "pass reopen=True to start a new attempt on it" in str(refused.value)
    assert resume_checkpoint(client, spec=spec, output_dir=tmp_path, reopen=True) == path
    again = LedgerCallback(client=client, spec=spec, reopen=True)
    assert again.resume_checkpoint() == path
    second = Trainer(again, tmp_path, max_steps=10)
    second.begin(global_step=3)
    second.step({"loss": 0.5})
    second.end()
    state = run_state(client, spec)
    assert state.run.status == "done" and state.current_attempt == 2


def test_the_plan_and_the_objective_come_from_the_trainers_arguments() -> None:
    from clients.integrations.transformers import objective_from_args, planned_steps

    assert planned_steps(SimpleNamespace(max_steps=-1), SimpleNamespace(max_steps=120)) == 120  # from the epochs
    assert planned_steps(SimpleNamespace(max_steps=40), None) == 40
    assert planned_steps(SimpleNamespace(max_steps=-1), SimpleNamespace(max_steps=0)) is None
    assert objective_from_args(SimpleNamespace(metric_for_best_model=None)) is None
    assert objective_from_args(SimpleNamespace(metric_for_best_model="loss", greater_is_better=False)) == (
        "eval_loss",
        "min",
    )
    assert objective_from_args(SimpleNamespace(metric_for_best_model="eval_accuracy", greater_is_better=True)) == (
        "eval_accuracy",
        "max",
    )
    assert objective_from_args(SimpleNamespace(metric_for_best_model="rouge", greater_is_better=None)) == (
        "eval_rouge",
        "max",
    )


def test_a_save_is_scored_by_the_evaluation_before_it_and_bad_provenance_never_stops_training(
    client: LedgerClient, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spec = make_spec("scored-by-hand")
    callback = LedgerCallback(
        client=client,
        spec=spec,
        objective=("eval_loss", "min"),
        train_dataset=[["a row that is not a mapping"]],  # cannot be read: logged, not raised
        eval_dataset=[{"text": "held out"}],
    )
    trainer = Trainer(callback, tmp_path, max_steps=6)
    trainer.begin()
    trainer.step({"loss": 2.0})
    evaluation = {"eval_loss": 1.5, "eval_accuracy": float("nan"), "eval_runtime": 0.3, "epoch": 0.1}
    callback.on_evaluate(trainer.args, trainer.state, trainer.control, metrics=evaluation)
    trainer.step({"loss": 1.8}, save=True)  # step 2: scored by the evaluation at step 1
    trainer.step({"loss": 1.7}, save=True)  # step 3: no evaluation since the last save
    callback.on_evaluate(trainer.args, trainer.state, trainer.control, metrics={"eval_loss": 1.25})
    trainer.step({"loss": 1.6}, save=True)
    trainer.end()
    state = run_state(client, spec)
    assert state.run.status == "done" and state.progress.max_steps == 6
    assert state.run.objective is not None and state.run.objective.metric == "eval_loss"
    checkpoints = client.list_checkpoints(run_id=state.run.run_id).checkpoints
    assert {checkpoint.step: checkpoint.scores for checkpoint in checkpoints} == {
        2: {"eval_loss": 1.5},
        3: {},
        4: {"eval_loss": 1.25},
    }
    assert client.best_checkpoint(run_id=state.run.run_id).checkpoint.step == 4
    assert [(dataset.role, dataset.format, dataset.rows) for dataset in state.datasets] == [("eval", "text", 1)]
    assert any("could not" in record.getMessage() and "train" in record.getMessage() for record in caplog.records)
    assert any("eval_accuracy" in record.getMessage() for record in caplog.records)  # the NaN, dropped


def test_a_run_opened_without_an_objective_keeps_training_without_one(
    client: LedgerClient, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spec = make_spec("no-objective-first")
    client.open_run(run_key=training_run_key(spec), name="no-objective-first", spec=spec)
    callback = LedgerCallback(client=client, spec=spec, objective=("eval_loss", "min"))
    trainer = Trainer(callback, tmp_path, max_steps=2)
    trainer.begin()
    trainer.step({"loss": 2.0})
    trainer.step({"loss": 1.9})
    trainer.end()
    state = run_state(client, spec)
    assert state.run.status == "done" and state.run.objective is None and state.progress.max_steps == 2
    assert any("keeps its objective" in record.getMessage() for record in caplog.records)
