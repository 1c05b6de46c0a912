"""The answers of the Runs RPCs made into clients.models: the pages read whole, the best
checkpoint with its objective, the run's state, and a live tail's changes folded into whole states."""

from __future__ import annotations

import copy
from typing import Any

import msgspec

from clients import codec
from clients.methods import field_of
from clients.models import BestCheckpoint, MetricStats, PruneEntry, PrunePage, RunMetrics, RunState, WatchUpdate
from trainledger.v1 import runs_pb2


def metrics_of_page(page: RunMetrics) -> list[MetricStats]:
    return page.metrics


def entries_of_page(page: PrunePage) -> list[PruneEntry]:
    return page.entries


def best_checkpoint(response: runs_pb2.BestCheckpointResponse) -> BestCheckpoint:
    """BestCheckpoint's answer with its objective's metric and mode beside the checkpoint."""
    answer = codec.to_dict(response, omit_unset=True)
    objective = answer.pop("objective", None) or {}
    return msgspec.convert({**answer, **objective}, BestCheckpoint)


def run_state(response: runs_pb2.GetRunStateResponse) -> RunState:
    state = field_of("state", RunState)(response)
    return state if state is not None else RunState()


class WatchedState:
    """Folds the changed fields of each WatchRun message into the state the stream has built."""

    def __init__(self) -> None:
        self.state: dict[str, Any] = {}

    def apply(self, response: runs_pb2.WatchRunResponse) -> WatchUpdate:
        message = codec.to_dict(response, omit_unset=True)
        delta = message.pop("state", None) or {}
        for path in message.pop("state_mask", None) and response.state_mask.paths or ():
            *parents, name = path.split(".")
            source, target = delta, self.state
            for key in parents:
                source = source.get(key) or {}
                target = target.setdefault(key, {})
            if name in source:
                target[name] = source[name]
            else:
                target.pop(name, None)
        message["state"] = copy.deepcopy(self.state)
        return msgspec.convert(message, WatchUpdate)
