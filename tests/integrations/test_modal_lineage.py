"""Modal's open_recorder(source_checkpoint=...): a function started from another run's checkpoint
records it as the run's source when the run is opened, and a retry in a fresh container (which
opens the run again with the same source) is no conflict. Run in-process with Function.local()
against an in-process ledger; nothing contacts Modal (see test_modal)."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pytest

modal = pytest.importorskip("modal")

from clients import LedgerClient, RunSourceCheckpoint, run_key  # noqa: E402
from clients.integrations.modal import commit_and_record, open_recorder, resume_path  # noqa: E402
from tests.integrations.test_modal import (  # noqa: E402
    LOCAL_WARNING,
    MOUNT,
    RUNTIME,
    StandInVolume,
    modal_env,  # noqa: F401  (fixture)
    train,
    volume,
)

app = modal.App("trainledger-test-lineage")


@app.function(gpu="H100", volumes={MOUNT: volume}, retries=modal.Retries(max_retries=2), timeout=3600)
def finetune(spec: dict, source: dict, steps: int, fail_at_step: int | None = None) -> dict:
    """A second stage: starts from the source run's checkpoint file (or its own, on a retry)."""
    volume, mount = RUNTIME["volume"], Path(RUNTIME["mount"])
    with open_recorder(run_key=run_key(spec), name=spec["name"], spec=spec, source_checkpoint=source) as run:
        own = resume_path(volume, run.state, mount=mount)
        start_from = own if own is not None else mount / source["uri"].split("/", 3)[3]
        start = json.loads(start_from.read_text())["step"] + 1 if own is not None else 0
        for step in range(start, steps):
            if step == fail_at_step:
                raise RuntimeError("container preempted")
            run.log(step, loss=1.0 / (step + 1))
            checkpoint = mount / run.run_id / f"step-{step:05d}.json"
            checkpoint.parent.mkdir(parents=True, exist_ok=True)
            checkpoint.write_text(json.dumps({"step": step, "from": str(start_from)}))
            commit_and_record(volume, run, step, checkpoint, mount=mount)
    return {"run_id": run.run_id, "attempt": run.attempt}


@pytest.mark.filterwarnings(LOCAL_WARNING)
@pytest.mark.filterwarnings("ignore:The finetune function is executing locally:UserWarning")
def test_a_function_from_another_runs_checkpoint_records_its_source_across_retries(
    modal_env,  # noqa: F811
    client: LedgerClient,
    monkeypatch,
    tmp_path,
) -> None:
    mount, store = tmp_path / "mount", tmp_path / "store"
    mount.mkdir()
    monkeypatch.setitem(RUNTIME, "volume", StandInVolume(mount, store, client))
    monkeypatch.setitem(RUNTIME, "mount", str(mount))
    monkeypatch.setenv("MODAL_TASK_ID", "ta-01BASE")
    base = train.local({"name": "base", "test": str(uuid.uuid4())}, steps=4, save_every=2)
    base_state = client.get_run_state(run_id=base["run_id"])
    uri = base_state.checkpoint.handle.uri
    source = RunSourceCheckpoint(run_id=base["run_id"], step=3, uri=uri).to_dict()

    spec = {"name": "second-stage", "test": str(uuid.uuid4())}
    monkeypatch.setenv("MODAL_TASK_ID", "ta-02CHILD")
    with pytest.raises(RuntimeError, match="preempted"):
        finetune.local(spec, source, steps=3, fail_at_step=2)
    shutil.rmtree(mount)  # The retry's fresh container: only what was committed is there.
    mount.mkdir()
    monkeypatch.setenv("MODAL_TASK_ID", "ta-03RETRY")
    child = finetune.local(spec, source, steps=3)
    assert child["attempt"] == 2

    state = client.get_run_state(run_id=child["run_id"])
    assert state.run.status == "done"
    assert state.source is not None
    assert (state.source.run_id, state.source.name, state.source.step, state.source.uri) == (
        base["run_id"],
        "base",
        3,
        uri,
    )
    listed = client.get_run_state(run_id=base["run_id"], min_position=state.position)
    assert [(c.run_id, c.step) for c in listed.children] == [(child["run_id"], 3)]
