"""Resume never trusts a checkpoint uri from the ledger as it stands: the path it names must stay
inside the output directory (Transformers), the mount (Modal) or the adapter root (mlx-lm), real
paths resolved (no `..` escape, no symlink out), and a local checkpoint must carry a digest that
matches, unless the caller opts out with verify_digest=False. Tinker resumes only from tinker://
paths. Every refusal is the one ResumeRefused of clients.integrations.resume, with one reason per
case, whichever integration raises it."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clients import LedgerClient, RunRecorder, dataset_digest, file_digest, run_key
from clients.models import RunState
from tests.client.conftest import QUICK_RETRIES

ADAPTER_CONFIG = {"r": 8, "lora_alpha": 16, "lora_dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}


def record(
    client: LedgerClient, key: str, uri: str, backend: str, *, digest: str, spec: Any = None, step: int = 5
) -> None:
    """A run of `key` whose first attempt recorded a checkpoint at `step` with this uri and digest,
    then died."""
    recorder = RunRecorder.open(client, run_key=key, spec=spec)
    recorder.log(step, loss=1.0)
    recorder.checkpoint(step, uri, backend, "weights+optimizer", digest=digest)
    recorder.close()


def resumed_state(client: LedgerClient, key: str) -> tuple[RunRecorder, RunState]:
    """The next attempt of the run, resumed from its latest checkpoint, and its RunState."""
    recorder = RunRecorder.open(client, run_key=key, resume_from_step="latest")
    assert recorder.state is not None
    return recorder, recorder.state


def hf_checkpoint(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "trainer_state.json").write_text("{}")
    (path / "adapter_config.json").write_text(json.dumps(ADAPTER_CONFIG))
    return path


# ---- Transformers / TRL -------------------------------------------------------------------------


@pytest.fixture
def hf() -> Any:
    pytest.importorskip("transformers")
    from clients.integrations import transformers as hf

    return hf


def hf_spec(hf: Any, name: str) -> dict[str, Any]:
    return hf.spec_for(
        name=f"{name}-{uuid.uuid4()}",
        base_model="tiny-llama",
        revision="r1",
        method="sft",
        lora={"r": 8, "alpha": 16, "target_modules": ["q_proj", "v_proj"], "dropout": 0.0},
        hyperparameters={"learning_rate": 5e-3},
        dataset="sha256:" + "1" * 64,
    )


def hf_reason(hf: Any, client: LedgerClient, spec: dict[str, Any], **options: Any) -> str:
    with pytest.raises(hf.ResumeRefused) as refused:
        hf.resume_checkpoint(client, spec=spec, **options)
    return refused.value.reason


def test_transformers_resumes_only_from_inside_the_output_dir(hf: Any, client: LedgerClient, tmp_path: Path) -> None:
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    outside = hf_checkpoint(elsewhere / "checkpoint-5")

    def recorded(uri: str, digest: str | None = None) -> dict[str, Any]:
        spec = hf_spec(hf, "outside")
        record(
            client,
            hf.training_run_key(spec),
            uri,
            "hf",
            spec=spec,
            digest=digest if digest is not None else hf.checkpoint_digest(outside),
        )
        return spec

    # The ledger names a system directory, a `..` escape, a checkpoint elsewhere.
    assert hf_reason(hf, client, recorded("file:///etc", "sha256:" + "0" * 64), output_dir=out) == "OUTSIDE_ROOT"
    assert hf_reason(hf, client, recorded(f"{out}/../elsewhere/checkpoint-5"), output_dir=out) == "OUTSIDE_ROOT"
    assert hf_reason(hf, client, recorded(str(outside)), output_dir=out) == "OUTSIDE_ROOT"
    # A checkpoint directory under the output dir that is a symlink out of it.
    (out / "checkpoint-5").symlink_to(outside, target_is_directory=True)
    assert hf_reason(hf, client, recorded(str(out / "checkpoint-5")), output_dir=out) == "OUTSIDE_ROOT"
    (out / "checkpoint-5").unlink()
    # A file inside the checkpoint that is a symlink out of the output dir.
    inside = hf_checkpoint(out / "checkpoint-5")
    (inside / "optimizer.pt").symlink_to(outside / "trainer_state.json")
    spec = recorded(str(inside), hf.checkpoint_digest(inside))
    assert hf_reason(hf, client, spec, output_dir=out) == "OUTSIDE_ROOT"
    (inside / "optimizer.pt").unlink()
    # The real thing, under the output dir, resumes; without the output dir there is nothing to hold it to.
    spec = recorded(str(inside), hf.checkpoint_digest(inside))
    assert hf.resume_checkpoint(client, spec=spec, output_dir=out) == str(inside.resolve())
    assert hf.resume_checkpoint(client, spec=spec, output_dir=str(out / "." / "")) == str(inside.resolve())
    assert hf_reason(hf, client, spec) == "ROOT_UNKNOWN"


def test_transformers_refuses_a_checkpoint_without_a_digest_unless_told(
    hf: Any, client: LedgerClient, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    path = hf_checkpoint(out / "checkpoint-5")
    spec = hf_spec(hf, "no-digest")
    record(client, hf.training_run_key(spec), str(path), "hf", spec=spec, digest="")
    assert hf_reason(hf, client, spec, output_dir=out) == "DIGEST_MISSING"
    # An old checkpoint recorded before digests: the caller says so.
    assert hf.resume_checkpoint(client, spec=spec, output_dir=out, verify_digest=False) == str(path.resolve())
    # Even then it stays inside the output dir.
    assert hf_reason(hf, client, spec, output_dir=tmp_path / "other", verify_digest=False) == "OUTSIDE_ROOT"

    spec = hf_spec(hf, "changed")
    record(client, hf.training_run_key(spec), str(path), "hf", spec=spec, digest=hf.checkpoint_digest(path))
    (path / "trainer_state.json").write_text('{"changed": true}')
    assert hf_reason(hf, client, spec, output_dir=out) == "DIGEST_MISMATCH"


def test_the_callback_holds_the_checkpoint_to_the_trainers_output_dir(
    hf: Any, client: LedgerClient, tmp_path: Path
) -> None:
    from tests.trainers import tiny

    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    outside = hf_checkpoint(elsewhere / "checkpoint-5")
    spec = hf_spec(hf, "callback")
    record(client, hf.training_run_key(spec), str(outside), "hf", spec=spec, digest=hf.checkpoint_digest(outside))

    # Told its output dir, the callback refuses at once.
    told = hf.LedgerCallback(client=client, spec=spec, check_spec=False, output_dir=out)
    with pytest.raises(hf.ResumeRefused) as refused:
        told.resume_checkpoint()
    assert refused.value.reason == "OUTSIDE_ROOT"

    # Asked before the trainer exists, it holds the path to the trainer's output dir when the
    # trainer is built: the trainer is refused before it can load anything.
    callback = hf.LedgerCallback(client=client, spec=spec, check_spec=False)
    path = callback.resume_checkpoint()
    assert path == str(outside.resolve())
    with pytest.raises(hf.ResumeRefused) as refused:
        tiny.make_sft_trainer(out, max_steps=2, save_steps=2, callbacks=[callback])
    assert refused.value.reason == "OUTSIDE_ROOT"

    # Built first, the trainer's output dir is what the callback checks against.
    callback = hf.LedgerCallback(client=client, spec=spec, check_spec=False)
    tiny.make_sft_trainer(out, max_steps=2, save_steps=2, callbacks=[callback])
    with pytest.raises(hf.ResumeRefused) as refused:
        callback.resume_checkpoint()
    assert refused.value.reason == "OUTSIDE_ROOT"
    inner = tiny.make_sft_trainer(
        elsewhere, max_steps=2, save_steps=2, callbacks=[hf.LedgerCallback(client=client, spec=spec, check_spec=False)]
    )
    ledger_callback = next(c for c in inner.callback_handler.callbacks if isinstance(c, hf.LedgerCallback))
    assert ledger_callback.resume_checkpoint() == str(outside.resolve())


# ---- Modal --------------------------------------------------------------------------------------


class Volume:
    """What resume_path uses of a modal.Volume."""

    name = "vol"

    def commit(self) -> None:
        pass

    def reload(self) -> None:
        pass


@pytest.fixture
def modal_env(monkeypatch: pytest.MonkeyPatch, server: Any, tmp_path: Path) -> Iterator[None]:
    """A container's environment with Modal unreachable (nothing here may contact it)."""
    modal = pytest.importorskip("modal")
    monkeypatch.setenv("MODAL_SERVER_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("MODAL_CONFIG_PATH", str(tmp_path / "no-modal.toml"))
    monkeypatch.delenv("MODAL_TOKEN_ID", raising=False)
    monkeypatch.delenv("MODAL_TOKEN_SECRET", raising=False)
    monkeypatch.setenv("TRAINLEDGER_ADDRESS", server.address)
    monkeypatch.delenv("TRAINLEDGER_TOKEN", raising=False)
    monkeypatch.delenv("TRAINLEDGER_TLS", raising=False)
    monkeypatch.setattr(modal, "current_function_call_id", lambda: None)
    yield


def modal_reason(state: RunState, **options: Any) -> str:
    from clients.integrations.modal import ResumeRefused, resume_path

    with pytest.raises(ResumeRefused) as refused:
        resume_path(Volume(), state, **options)
    assert isinstance(refused.value, ValueError)  # what resume_path raised before for a bad checkpoint
    return refused.value.reason


def test_modal_resume_path_stays_inside_the_mount(modal_env: None, client: LedgerClient, tmp_path: Path) -> None:
    from clients.integrations.modal import commit_and_record, resume_path

    mount, elsewhere = tmp_path / "mount", tmp_path / "elsewhere"
    (mount / "run").mkdir(parents=True)
    elsewhere.mkdir()
    (elsewhere / "weights.bin").write_bytes(b"w" * 64)

    def state_of(uri: str, digest: str) -> RunState:
        key = run_key({"modal-trust": str(uuid.uuid4())})
        record(client, key, uri, "modal-volume", digest=digest)
        recorder, state = resumed_state(client, key)
        recorder.close()
        return state

    # The finding: a uri that climbs out of the mount to a system file.
    hostile = state_of("modal-volume://vol/../../../../etc/hostname", "sha256:" + "0" * 64)
    assert modal_reason(hostile, mount=mount) == "OUTSIDE_ROOT"
    assert modal_reason(hostile, mount=mount, verify=False) == "OUTSIDE_ROOT"  # never skipped
    # A plain path outside the mount; a file under the mount that is a symlink out of it.
    assert (
        modal_reason(state_of(str(elsewhere / "weights.bin"), file_digest(elsewhere / "weights.bin")), mount=mount)
        == "OUTSIDE_ROOT"
    )
    (mount / "run" / "link.bin").symlink_to(elsewhere / "weights.bin")
    assert (
        modal_reason(state_of("modal-volume://vol/run/link.bin", file_digest(elsewhere / "weights.bin")), mount=mount)
        == "OUTSIDE_ROOT"
    )
    # A directory checkpoint with a file in it that is a symlink out.
    (mount / "run" / "dir").mkdir()
    (mount / "run" / "dir" / "a.bin").symlink_to(elsewhere / "weights.bin")
    assert (
        modal_reason(state_of("modal-volume://vol/run/dir", dataset_digest(mount / "run" / "dir")), mount=mount)
        == "OUTSIDE_ROOT"
    )
    # Another volume's checkpoint is not looked for under this one's mount.
    assert modal_reason(state_of("modal-volume://other/run/x.bin", "sha256:" + "0" * 64), mount=mount) == "OTHER_VOLUME"
    # Without the mount there is nothing to hold the path to.
    assert modal_reason(state_of(str(mount / "run" / "x.bin"), "sha256:" + "0" * 64)) == "ROOT_UNKNOWN"

    # What commit_and_record records resumes.
    weights = mount / "run" / "step-5.bin"
    weights.write_bytes(b"a" * 32)
    key = run_key({"modal-good": str(uuid.uuid4())})
    recorder = RunRecorder.open(LedgerClient(client.address, retries=QUICK_RETRIES), run_key=key)
    recorder.log(5, loss=1.0)
    answer = commit_and_record(Volume(), recorder, 5, weights, mount=mount)
    assert answer is not None
    recorder.close()
    recorder.client.close()
    second, state = resumed_state(client, key)
    assert state.checkpoint.digest == file_digest(weights)
    assert resume_path(Volume(), state, mount=mount) == weights.resolve()
    second.close()


def test_modal_refuses_a_checkpoint_without_a_digest_unless_told(
    modal_env: None, client: LedgerClient, tmp_path: Path
) -> None:
    from clients.integrations.modal import resume_path

    mount = tmp_path / "mount"
    (mount / "run").mkdir(parents=True)
    weights = mount / "run" / "step-5.bin"
    weights.write_bytes(b"a" * 32)

    def state_of(digest: str) -> RunState:
        key = run_key({"modal-digest": str(uuid.uuid4())})
        record(client, key, "modal-volume://vol/run/step-5.bin", "modal-volume", digest=digest)
        recorder, state = resumed_state(client, key)
        recorder.close()
        return state

    assert modal_reason(state_of(""), mount=mount) == "DIGEST_MISSING"
    assert resume_path(Volume(), state_of(""), mount=mount, verify_digest=False) == weights.resolve()
    assert modal_reason(state_of("sha256:" + "0" * 64), mount=mount) == "DIGEST_MISMATCH"
    assert modal_reason(state_of("md5:0123"), mount=mount) == "DIGEST_UNVERIFIABLE"


@pytest.mark.filterwarnings("ignore:The .* function is executing locally:UserWarning")
def test_a_modal_function_refuses_a_hostile_checkpoint_before_training(
    modal_env: None, client: LedgerClient, tmp_path: Path
) -> None:
    import modal

    from clients.integrations.modal import ResumeRefused, open_recorder, resume_path

    app = modal.App("trainledger-resume-trust")
    mount = tmp_path / "mount"
    mount.mkdir()
    trained: list[int] = []

    @app.function(serialized=True)
    def train(key: str) -> None:
        with open_recorder(run_key=key) as run:
            resume_path(Volume(), run.state, mount=mount)
            trained.append(run.attempt)

    key = run_key({"modal-function": str(uuid.uuid4())})
    record(client, key, "modal-volume://vol/../../../../etc/hostname", "modal-volume", digest="sha256:" + "0" * 64)
    with pytest.raises(ResumeRefused, match="OUTSIDE_ROOT"):
        train.local(key)
    assert trained == []
    state = client.open_run(run_key=key).state
    assert state.run.status == "failed" and "OUTSIDE_ROOT" in state.run.error


# ---- mlx-lm -------------------------------------------------------------------------------------


@pytest.fixture
def mlx() -> Any:
    os.environ.setdefault("MLX_DISABLE_COMPILE", "1")
    pytest.importorskip("mlx.core", reason="mlx needs the CPU backend on Linux: pip install 'mlx[cpu]'")
    pytest.importorskip("mlx_lm")
    from clients.integrations import mlx

    return mlx


def test_mlx_resume_adapter_file_stays_inside_the_adapter_root(mlx: Any, client: LedgerClient, tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "adapters", tmp_path / "elsewhere"
    (root / "a1").mkdir(parents=True)
    elsewhere.mkdir()
    stray = elsewhere / "0000005_adapters.safetensors"
    stray.write_bytes(b"x" * 64)

    def state_of(uri: str, digest: str) -> RunState:
        key = run_key({"mlx-trust": str(uuid.uuid4())})
        record(client, key, uri, "mlx", digest=digest)
        recorder, state = resumed_state(client, key)
        recorder.close()
        return state

    def reason(state: RunState, **options: Any) -> str:
        with pytest.raises(mlx.ResumeRefused) as refused:
            mlx.resume_adapter_file(state, **options)
        assert isinstance(refused.value, ValueError)
        return refused.value.reason

    assert reason(state_of("file:///etc/hostname", "sha256:" + "0" * 64), adapter_root=root) == "OUTSIDE_ROOT"
    assert (
        reason(state_of(f"{root}/a1/../../elsewhere/{stray.name}", file_digest(stray)), adapter_root=root)
        == "OUTSIDE_ROOT"
    )
    (root / "a1" / stray.name).symlink_to(stray)
    linked = state_of(str(root / "a1" / stray.name), file_digest(stray))
    assert reason(linked, adapter_root=root) == "OUTSIDE_ROOT"
    assert reason(linked, adapter_root=root, verify=False) == "OUTSIDE_ROOT"
    (root / "a1" / stray.name).unlink()

    adapter = root / "a1" / "0000005_adapters.safetensors"
    adapter.write_bytes(b"a" * 64)
    good = state_of(str(adapter), file_digest(adapter))
    assert mlx.resume_adapter_file(good, adapter_root=root) == adapter.resolve()
    assert reason(good) == "ROOT_UNKNOWN"
    assert reason(state_of(str(adapter), ""), adapter_root=root) == "DIGEST_MISSING"
    assert (
        mlx.resume_adapter_file(state_of(str(adapter), ""), adapter_root=root, verify_digest=False) == adapter.resolve()
    )
    adapter.write_bytes(b"b" * 64)
    assert reason(good, adapter_root=root) == "DIGEST_MISMATCH"


# ---- Tinker -------------------------------------------------------------------------------------


def test_tinker_resumes_only_from_a_tinker_path(client: LedgerClient, tmp_path: Path) -> None:
    pytest.importorskip("tinker")
    from clients.integrations.pricing import TokenPrices
    from clients.integrations.tinker import LedgeredServiceClient, ResumeRefused, tinker_spec
    from tests.fakes.tinker import FakeTinkerServer

    fake = FakeTinkerServer().start()
    try:
        sheet = TokenPrices({"prefill": 1, "sample": 1, "train": 1}, sheet="tinker-test", source="tests")
        service = LedgeredServiceClient(
            client,
            prices={FakeTinkerServer.BASE_MODEL: sheet},
            base_url=fake.base_url,
            api_key=FakeTinkerServer.API_KEY,
        )
        for uri in ("file:///etc/weights/x", "/etc/weights/x", "https://example.invalid/weights/x"):
            key = run_key({"tinker-trust": str(uuid.uuid4())})
            record(client, key, uri, "tinker", digest="", spec=tinker_spec(FakeTinkerServer.BASE_MODEL, 8, {}))
            with pytest.raises(ResumeRefused) as refused:
                service.resume(run_key=key)
            assert refused.value.reason == "URI_SCHEME_MISMATCH"
            assert len(client.open_run(run_key=key).state.attempts) == 1  # no attempt started
        assert fake.count("load_weights") == 0 and fake.count("create_session") == 0
    finally:
        fake.stop()
    assert not fake.errors, fake.errors
