"""WatchRun's state messages: a run's state without its spec, and what changed in it since the
last state a stream sent, named by a FieldMask."""

from __future__ import annotations

from typing import Any

import msgspec
from google.protobuf.field_mask_pb2 import FieldMask

from ledger.views import models
from services.grpc.codec.messages import run_state
from trainledger.v1 import runs_pb2

__all__ = ["PATHS", "state_without_spec", "state_message"]

# The paths a state message may name: every field of RunState, RunInfo's one by one, the spec aside.
PATHS = (
    *(f"run.{field.name}" for field in runs_pb2.RunInfo.DESCRIPTOR.fields if field.name != "spec"),
    *(field.name for field in runs_pb2.RunState.DESCRIPTOR.fields if field.name != "run"),
)


def state_without_spec(state: models.RunState) -> runs_pb2.RunState:
    """A RunState message without the run's spec (GetRunState has it): the spec is never encoded."""
    message = run_state(msgspec.structs.replace(state, run=msgspec.structs.replace(state.run, spec={})))
    message.run.ClearField("spec")
    return message


def _value(state: runs_pb2.RunState, path: str) -> Any:
    message, name = (state.run, path[4:]) if path.startswith("run.") else (state, path)
    if message.DESCRIPTOR.fields_by_name[name].has_presence and not message.HasField(name):
        return None
    return getattr(message, name)


def state_message(
    position: int, event_type: str, state: runs_pb2.RunState, before: runs_pb2.RunState | None
) -> runs_pb2.WatchRunResponse:
    """A message carrying the fields of `state` that differ from `before` (all of them when None)."""
    changed = [path for path in PATHS if before is None or _value(before, path) != _value(state, path)]
    message = runs_pb2.WatchRunResponse(position=position, event_type=event_type)
    if changed:
        mask = FieldMask(paths=changed)
        mask.MergeMessage(state, message.state)
        message.state_mask.CopyFrom(mask)
    return message
