"""Modal: a real modal.App function run in-process with Function.local() against an in-process
ledger. Nothing contacts Modal: MODAL_SERVER_URL points at a closed loopback port, so an
accidental remote call fails instead of leaving the machine; the Volume is a stand-in over
local directories (a real one needs the server for commit/reload)."""

from __future__ import annotations

import importlib.util
import itertools
import json
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

modal = pytest.importorskip("modal")

from clients import LedgerClient, RunEnded, RunRecorder, SpendCapExceeded, dataset_digest, file_digest, run_key  # noqa: E402
from clients.integrations.modal import (  # noqa: E402
    GpuMeter,
    attempt_label,
    client_from_env,
    commit_and_record,
    open_recorder,
    resume_path,
)
from clients.integrations.pricing import GpuPrice  # noqa: E402
from tests.client.server_thread import ServerThread  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PRICE = GpuPrice(3_950_000, gpu_type="H100", sheet="modal-gpu", source="https://modal.com/pricing", as_of="2025-06")
INTERVAL_S = 60.0
LOCAL_WARNING = "ignore:The train function is executing locally:UserWarning"

app = modal.App("trainledger-test")
volume = modal.Volume.from_name("trainledger-test-checkpoints", create_if_missing=True)  # lazy: no network
MOUNT = "/checkpoints"
# What the function reaches at run time; the test swaps in the stand-in volume, a local mount
# directory and a clock it controls.
RUNTIME: dict[str, Any] = {"volume": volume, "mount": MOUNT, "clock": time.monotonic}


@app.function(gpu="H100", volumes={MOUNT: volume}, retries=modal.Retries(max_retries=2), timeout=3600)
def train(spec: dict, steps: int, save_every: int, fail_at_step: int | None = None) -> dict:
    volume, mount = RUNTIME["volume"], Path(RUNTIME["mount"])
    with (
        open_recorder(run_key=run_key(spec), name=spec["name"], spec=spec, batch_interval_s=0.01) as run,
        GpuMeter(run, PRICE, interval_s=INTERVAL_S, clock=RUNTIME["clock"]) as meter,
    ):
        path = resume_path(volume, run.state, mount=mount)
        start = 0 if path is None else json.loads(path.read_text())["step"] + 1
        for step in range(start, steps):
            meter.tick()
            if step == fail_at_step:
                raise RuntimeError("container preempted")
            run.log(step, tokens=100, loss=1.0 / (step + 1))
            if step % save_every == save_every - 1:
                checkpoint = mount / run.run_id / f"step-{step:05d}.json"
                checkpoint.parent.mkdir(parents=True, exist_ok=True)
                checkpoint.write_text(json.dumps({"step": step}))
                commit_and_record(volume, run, step, checkpoint, mount=mount)
    return {"run_id": run.run_id, "attempt": run.attempt, "started_at_step": start}


class StandInVolume:
    """A Volume over local directories: what is under `mount` becomes durable (copied to `store`)
    only at commit(); reload() shows the mount what the store holds. Each commit notes how many
    checkpoints the ledger held at that moment, so the test sees commit-then-record order."""

    name = "trainledger-test-checkpoints"

    def __init__(self, mount: Path, store: Path, client: LedgerClient) -> None:
        self.mount, self.store, self.client = mount, store, client
        self.log: list[tuple[str, int]] = []

    def checkpoints_recorded(self) -> int:
        return sum(1 for event in self.client.read_events(from_position=1) if event.type.endswith("CheckpointSaved"))

    def commit(self) -> None:
        self.log.append(("commit", self.checkpoints_recorded()))
        shutil.copytree(self.mount, self.store, dirs_exist_ok=True)

    def reload(self) -> None:
        self.log.append(("reload", self.checkpoints_recorded()))
        shutil.rmtree(self.mount, ignore_errors=True)
        shutil.copytree(self.store, self.mount)


def ticking_clock(seconds_per_read: float):
    """A clock that moves `seconds_per_read` on every read: the meter reads it once at start, once
    per tick and once at stop."""
    counter = itertools.count()
    return lambda: next(counter) * seconds_per_read


@pytest.fixture
def modal_env(monkeypatch, server: ServerThread, tmp_path) -> None:
    """What a Modal Secret and the container would put in the environment; Modal unreachable."""
    monkeypatch.setenv("MODAL_SERVER_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("MODAL_CONFIG_PATH", str(tmp_path / "no-modal.toml"))
    monkeypatch.delenv("MODAL_TOKEN_ID", raising=False)
    monkeypatch.delenv("MODAL_TOKEN_SECRET", raising=False)
    monkeypatch.setenv("TRAINLEDGER_ADDRESS", server.address)
    monkeypatch.setenv("TRAINLEDGER_PRINCIPAL", "modal-tests")
    monkeypatch.delenv("TRAINLEDGER_TOKEN", raising=False)
    monkeypatch.delenv("TRAINLEDGER_TLS", raising=False)
    monkeypatch.setattr(modal, "current_function_call_id", lambda: "fc-01TEST")


@pytest.mark.filterwarnings(LOCAL_WARNING)
def test_function_records_label_steps_checkpoints_after_commit_and_gpu_spend(
    modal_env, client: LedgerClient, monkeypatch, tmp_path
) -> None:
    mount, store = tmp_path / "mount", tmp_path / "store"
    mount.mkdir()
    stand_in = StandInVolume(mount, store, client)
    monkeypatch.setitem(RUNTIME, "volume", stand_in)
    monkeypatch.setitem(RUNTIME, "mount", str(mount))
    spec = {"name": "modal-sft", "test": str(uuid.uuid4())}

    # The first container runs steps 0..4, commits and records checkpoints at 1 and 3, and is
    # preempted at step 5. The meter reads the clock 25 s apart: start, a tick per step, stop.
    monkeypatch.setenv("MODAL_TASK_ID", "ta-01FIRST")
    monkeypatch.setitem(RUNTIME, "clock", ticking_clock(25.0))
    assert modal.is_local()
    with pytest.raises(RuntimeError, match="preempted"):
        train.local(spec, steps=8, save_every=2, fail_at_step=5)

    # modal.Retries runs the input again in a fresh container: only what was committed is there.
    shutil.rmtree(mount)
    mount.mkdir()
    monkeypatch.setenv("MODAL_TASK_ID", "ta-02RETRY")
    monkeypatch.setitem(RUNTIME, "clock", ticking_clock(25.0))
    result = train.local(spec, steps=8, save_every=2)
    assert result["attempt"] == 2 and result["started_at_step"] == 4
    run_id = result["run_id"]

    state = client.get_run_state(run_id=run_id)
    assert state.run.status == "done"
    assert [(a.number, a.label, a.resumed_from_step) for a in state.attempts] == [
        (1, "modal:ta-01FIRST/fc-01TEST", None),
        (2, "modal:ta-02RETRY/fc-01TEST", 3),
    ]

    series = client.get_series(run_id=run_id, from_step=0, page_size=100)
    assert series.steps == list(range(8)) and series.attempts == [1, 1, 1, 1, 2, 2, 2, 2]
    assert series.tokens == [100] * 8
    everything = client.get_series(run_id=run_id, from_step=0, page_size=100, include_superseded=True)
    assert [
        (s, a) for s, a, gone in zip(everything.steps, everything.attempts, everything.superseded, strict=True) if gone
    ] == [(4, 1)]  # attempt 1's step 4 came after its last committed checkpoint

    # Each checkpoint was recorded only after the commit that made it durable: every commit saw
    # the ledger holding exactly the checkpoints before it, and each recorded file is in the store.
    assert stand_in.log == [("commit", 0), ("commit", 1), ("reload", 2), ("commit", 2), ("commit", 3)]
    saved = [event.data_json for event in client.read_events(from_position=1) if event.type.endswith("CheckpointSaved")]
    assert [(c["attempt"], c["step"]) for c in saved] == [(1, 1), (1, 3), (2, 5), (2, 7)]
    for checkpoint in saved:
        relative = f"{run_id}/step-{checkpoint['step']:05d}.json"
        assert checkpoint["uri"] == f"modal-volume://trainledger-test-checkpoints/{relative}"
        assert checkpoint["backend"] == "modal-volume" and checkpoint["fidelity"] == "weights"
        assert checkpoint["digest"] == file_digest(store / relative)

    # GPU time as spend: one hold per 60 s interval, reserved before it, each committed with the
    # milliseconds used (first container 75 + 75 + 25 s, the retry 75 + 50 s), none left pending.
    reservations = client.list_reservations(account=run_id).reservations
    used_ms = [75_000, 75_000, 25_000, 75_000, 50_000]
    assert [r.state for r in reservations] == ["committed"] * 5
    assert [r.amount_usd_micro for r in reservations] == [PRICE.amount(60_000)] * 5
    assert [r.basis.gpu.gpu_milliseconds for r in reservations] == [60_000] * 5
    assert [r.actual_basis.gpu.gpu_milliseconds for r in reservations] == used_ms
    assert [r.actual_usd_micro for r in reservations] == [PRICE.amount(ms) for ms in used_ms]
    assert [r.attempt for r in reservations] == [1, 1, 1, 2, 2]
    account = client.get_account(account=run_id)
    assert account.committed_usd_micro == sum(PRICE.amount(ms) for ms in used_ms)
    assert account.pending_usd_micro == 0
    assert reservations[0].basis.gpu.gpu_type == "H100"
    assert reservations[0].basis.price_sheet == "modal-gpu (2025-06)"


def test_a_failed_commit_records_no_checkpoint(modal_env, client: LedgerClient, tmp_path) -> None:
    class BrokenVolume:
        name = "broken"

        def commit(self) -> None:
            raise OSError("volume commit failed")

        def reload(self) -> None:
            pass

    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "weights.bin").write_bytes(b"w" * 64)
    with open_recorder(run_key=run_key({"broken": str(uuid.uuid4())})) as run:
        run.log(0, loss=1.0)
        with pytest.raises(OSError):
            commit_and_record(BrokenVolume(), run, 0, tmp_path / "ckpt", mount=tmp_path)
        assert run.refresh_state().checkpoint is None

        # A directory checkpoint gets the content digest of the directory.
        class Volume:
            name = "ok"

            def commit(self) -> None:
                pass

            def reload(self) -> None:
                pass

        commit_and_record(Volume(), run, 0, tmp_path / "ckpt", mount=tmp_path)
        checkpoint = run.refresh_state().checkpoint
        assert checkpoint is not None and checkpoint.handle is not None
        assert checkpoint.handle.uri == "modal-volume://ok/ckpt"
        assert checkpoint.digest == dataset_digest(tmp_path / "ckpt")


def test_meter_stops_on_a_refused_interval_and_still_records_the_time(modal_env, client: LedgerClient) -> None:
    # A cap of one and a half intervals: the second interval's hold is refused.
    cap = PRICE.amount(90_000)
    with open_recorder(run_key=run_key({"cap": str(uuid.uuid4())}), cap_usd_micro=cap) as run:
        meter = GpuMeter(run, PRICE, interval_s=INTERVAL_S, clock=ticking_clock(40.0))
        with pytest.raises(SpendCapExceeded), meter:
            for step in range(10):
                meter.tick()  # 40 s: nothing; 80 s: settle 80 s, refused -> stop training
                run.log(step, loss=1.0)
    # The meter still recorded the 40 s the GPU ran between the refusal and the end, as overrun.
    assert [(i["gpu_milliseconds"], i["reserved_usd_micro"] > 0) for i in meter.intervals] == [
        (80_000, True),
        (40_000, False),
    ]
    account = client.get_account(account=run.run_id)
    assert account.committed_usd_micro == PRICE.amount(80_000) + PRICE.amount(40_000) == meter.committed_usd_micro
    assert account.pending_usd_micro == 0 and account.overrun_usd_micro > 0
    assert client.get_series(run_id=run.run_id).steps == [0]


def test_a_refusal_that_ends_the_block_ends_the_run_stopped_and_a_retry_reopens_it(
    modal_env, client: LedgerClient
) -> None:
    key = run_key({"stopped": str(uuid.uuid4())})
    with pytest.raises(SpendCapExceeded):
        with (
            open_recorder(run_key=key, cap_usd_micro=PRICE.amount(30_000)) as run,
            GpuMeter(run, PRICE, interval_s=INTERVAL_S, clock=ticking_clock(1.0)),
        ):
            pytest.fail("no hold for the first interval, no GPU time")
    state = client.get_run_state(run_id=run.run_id)
    assert state.run.status == "stopped" and state.run.error.startswith("SpendCapExceeded")
    # open_recorder reopens by default (a modal.Retries retry starts a new attempt); asked not to, it refuses.
    with pytest.raises(RunEnded, match="is stopped: use a new run key, or pass reopen=True"):
        open_recorder(run_key=key, reopen=False)
    with open_recorder(run_key=key, cap_usd_micro=PRICE.amount(90_000)) as retry:
        assert retry.attempt == 2 and retry.state.spend.cap_usd_micro == PRICE.amount(90_000)
    assert client.get_run_state(run_id=run.run_id).run.status == "done"


def test_environment_and_labels(monkeypatch) -> None:
    monkeypatch.setattr(modal, "current_function_call_id", lambda: None)
    assert attempt_label({}) is None  # outside a container: the recorder's host:pid label
    assert attempt_label({"MODAL_TASK_ID": "ta-1"}) == "modal:ta-1"
    with pytest.raises(KeyError, match="TRAINLEDGER_ADDRESS"):
        client_from_env({})
    with pytest.raises(ValueError, match="only over TLS"):
        client_from_env({"TRAINLEDGER_ADDRESS": "127.0.0.1:9", "TRAINLEDGER_TOKEN": "t", "TRAINLEDGER_TLS": "0"})
    # A token means TLS with bearer call credentials; building the client contacts nothing.
    with client_from_env(
        {"TRAINLEDGER_ADDRESS": "127.0.0.1:9", "TRAINLEDGER_TOKEN": "t", "TRAINLEDGER_PRINCIPAL": "alice"}
    ) as secure:
        assert secure.principal == "alice"


def test_resume_path_refuses_a_changed_checkpoint(modal_env, client: LedgerClient, tmp_path) -> None:
    key = run_key({"changed": str(uuid.uuid4())})
    (tmp_path / "run").mkdir()
    weights = tmp_path / "run" / "step-1.bin"
    weights.write_bytes(b"a" * 32)

    class Volume:
        name = "v"
        reloads = 0

        def commit(self) -> None:
            pass

        def reload(self) -> None:
            Volume.reloads += 1

    first = open_recorder(run_key=key)
    first.log(1, loss=1.0)
    commit_and_record(Volume(), first, 1, weights, mount=tmp_path)
    first.close()
    second = RunRecorder.open(client, run_key=key, resume_from_step="latest")
    assert resume_path(Volume(), second.state, mount=tmp_path) == weights and Volume.reloads == 1
    weights.write_bytes(b"b" * 32)
    with pytest.raises(ValueError, match="changed"):
        resume_path(Volume(), second.state, mount=tmp_path)
    second.close()


def test_example_app_is_declared_without_contacting_modal(modal_env) -> None:
    spec = importlib.util.spec_from_file_location("modal_train_example", ROOT / "examples" / "modal_train.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    assert isinstance(example.app, modal.App) and isinstance(example.train, modal.Function)
