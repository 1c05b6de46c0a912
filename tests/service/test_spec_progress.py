"""Progress against the spec's max_steps when the run has no plan: a run opened without
max_steps whose spec says how many steps it trains (at the top, or among its hyperparameters)
reports its fraction against that number, in its state and in the list of runs alike; a plan
given with the open wins over the spec."""

from __future__ import annotations

from typing import Any

from tests.service.support import Stubs, batch, open_run
from trainledger.v1 import runs_pb2


def _recorded(stubs: Stubs, spec: dict[str, Any], **fields: Any) -> runs_pb2.RunState:
    request_spec = runs_pb2.OpenRunRequest().spec
    request_spec.update(spec)
    run_id = open_run(stubs, spec=request_spec, **fields).state.run.run_id
    position = stubs.runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch(run_id, range(10))), timeout=10).position
    return stubs.runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id, min_position=position), timeout=10).state


def _listed(stubs: Stubs, run_id: str) -> runs_pb2.RunSummary:
    listed = stubs.runs.ListRuns(runs_pb2.ListRunsRequest(run_id_prefix=run_id), timeout=10).runs
    assert [summary.run_id for summary in listed] == [run_id]
    return listed[0]


def test_a_run_without_a_plan_takes_the_specs_max_steps(stubs: Stubs) -> None:
    state = _recorded(stubs, {"model": "tiny", "max_steps": 40})
    assert (state.progress.max_steps, state.progress.step, state.progress.fraction) == (40, 9, 0.225)
    summary = _listed(stubs, state.run.run_id)
    assert (summary.progress.max_steps, summary.progress.fraction) == (40, 0.225)


def test_the_specs_hyperparameters_say_max_steps_too(stubs: Stubs) -> None:
    state = _recorded(stubs, {"hyperparameters": {"max_steps": 20, "learning_rate": 0.01}})
    assert (state.progress.max_steps, state.progress.fraction) == (20, 0.45)


def test_the_plan_wins_over_the_spec(stubs: Stubs) -> None:
    state = _recorded(stubs, {"max_steps": 40}, max_steps=100)
    assert (state.progress.max_steps, state.progress.fraction) == (100, 0.09)
    assert _listed(stubs, state.run.run_id).progress.max_steps == 100


def test_a_spec_max_steps_that_is_no_step_count_is_ignored(stubs: Stubs) -> None:
    for spec in ({"max_steps": -1}, {"max_steps": "forty"}, {"max_steps": 2.5}, {"hyperparameters": [1]}):
        state = _recorded(stubs, spec)
        assert not state.progress.HasField("max_steps") and not state.progress.HasField("fraction"), spec
