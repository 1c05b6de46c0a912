"""mlx-lm from another run's checkpoint: the run says so at its open (RunRecorder.open's
source_checkpoint: the callback is handed a run already open), and source_adapter_file answers
the source's adapter file, checked as a resume's is, to load before training. The real trainer
(tiny llama, CPU) against an in-process server."""

from __future__ import annotations

import os
import uuid

import pytest

os.environ.setdefault("MLX_DISABLE_COMPILE", "1")
pytest.importorskip("mlx.core", reason="mlx needs the CPU backend on Linux: pip install 'mlx[cpu]'")
pytest.importorskip("mlx_lm")

from clients import LedgerClient, RunRecorder, RunSourceCheckpoint, run_key  # noqa: E402
from clients.integrations.mlx import LedgerTrainingCallback, ResumeRefused, source_adapter_file  # noqa: E402
from tests.integrations.test_mlx import train  # noqa: E402


def test_a_training_from_another_runs_adapter_records_its_source(client: LedgerClient, tmp_path) -> None:
    base = RunRecorder.open(client, run_key=run_key({"mlx-base": str(uuid.uuid4())}), name="mlx-base")
    with base, LedgerTrainingCallback(base, tmp_path / "base" / "adapters.safetensors") as callback:
        train(tmp_path / "base", callback, iters=4, steps_per_save=2, steps_per_eval=10)
    source_file = (tmp_path / "base" / "0000004_adapters.safetensors").absolute()
    assert [(c["step"], c["uri"]) for c in callback.checkpoints][-1] == (4, str(source_file))

    source = RunSourceCheckpoint(run_id=base.run_id, step=4, uri=str(source_file))
    child = RunRecorder.open(
        client, run_key=run_key({"mlx-child": str(uuid.uuid4())}), name="mlx-child", source_checkpoint=source
    )
    start = source_adapter_file(client, child.state, adapter_root=tmp_path)
    assert start == source_file.resolve()
    with child, LedgerTrainingCallback(child, tmp_path / "child" / "adapters.safetensors") as callback:
        train(tmp_path / "child", callback, iters=2, steps_per_save=2, steps_per_eval=10, resume_adapter_file=start)

    state = client.get_run_state(run_id=child.run_id, min_position=child.state.position)
    assert state.run.status == "done" and state.last_step == 2
    assert state.source is not None
    assert (state.source.run_id, state.source.name, state.source.step, state.source.uri) == (
        base.run_id,
        "mlx-base",
        4,
        str(source_file),
    )
    listed = client.get_run_state(run_id=base.run_id, min_position=state.position)
    assert [(c.run_id, c.step) for c in listed.children] == [(child.run_id, 4)]

    # The source's file is held to the adapter root and to the digest recorded with it.
    with pytest.raises(ResumeRefused) as outside:
        source_adapter_file(client, state, adapter_root=tmp_path / "child")
    assert outside.value.reason == "OUTSIDE_ROOT"
    source_file.write_bytes(source_file.read_bytes() + b"\0")
    with pytest.raises(ResumeRefused) as changed:
        source_adapter_file(client, state, adapter_root=tmp_path)
    assert changed.value.reason == "DIGEST_MISMATCH"
    assert source_adapter_file(client, listed, adapter_root=tmp_path) is None  # the base has no source
