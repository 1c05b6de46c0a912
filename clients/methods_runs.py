"""The Runs RPCs as client methods (see clients.methods); each takes `timeout_s`, the per-try
deadline (the client's default when None), and answers with a typed result of clients.models."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

import msgspec

from clients import codec
from clients.methods import Doc, Transport, field_of, new_id, reply
from clients.models import (
    AppendReceipt,
    CheckpointPage,
    CheckpointReceipt,
    FinishReceipt,
    LinkSessionReceipt,
    MetricStats,
    OpenRunReceipt,
    RunMetrics,
    RunPage,
    RunState,
    SeriesPage,
    StartAttemptReceipt,
    SummaryReceipt,
    WatchUpdate,
)
from trainledger.v1 import common_pb2, runs_pb2

__all__ = ["RunsMethods"]


class RunsMethods(Transport):
    """The Runs RPCs: runs, attempts, steps, checkpoints, finish, state, series, live tail."""

    def open_run(
        self,
        *,
        run_key: str,
        name: str = "",
        spec: Doc | None = None,
        cap_usd_micro: int | None = None,
        parent_account: str = "",
        timeout_s: float | None = None,
    ) -> OpenRunReceipt:
        """Open a run by its key, or find the existing one: its state, whether it was created, the position."""
        request = runs_pb2.OpenRunRequest(
            run_key=run_key,
            name=name,
            spec=codec.struct(spec or {}),
            cap_usd_micro=cap_usd_micro,
            parent_account=parent_account,
        )
        return self._ask("Runs", "OpenRun", request, reply(OpenRunReceipt), timeout_s=timeout_s)

    def start_attempt(
        self,
        *,
        run_id: str,
        attempt_id: str | None = None,
        label: str = "",
        resume_from_step: int | None = None,
        timeout_s: float | None = None,
    ) -> StartAttemptReceipt:
        """Start a new attempt (fencing the previous one): its number, position, duplicate and the state."""
        request = runs_pb2.StartAttemptRequest(
            run_id=run_id, attempt_id=attempt_id or new_id(), label=label, resume_from_step=resume_from_step
        )
        return self._ask("Runs", "StartAttempt", request, reply(StartAttemptReceipt), timeout_s=timeout_s)

    def append_steps(
        self,
        *,
        run_id: str,
        attempt: int,
        steps: Sequence[int],
        tokens: Sequence[int] | None = None,
        usd_micro: Sequence[int] | None = None,
        metrics: Doc | None = None,
        timeout_s: float | None = None,
    ) -> AppendReceipt:
        """Append one column-wise batch: position, duplicate, last_step."""
        batch = codec.step_batch(
            run_id=run_id, attempt=attempt, steps=steps, tokens=tokens, usd_micro=usd_micro, metrics=metrics
        )
        return self.append_batch(batch=batch, timeout_s=timeout_s)

    def append_batch(self, *, batch: common_pb2.StepBatch, timeout_s: float | None = None) -> AppendReceipt:
        """Append a prebuilt StepBatch message (as kept in an outbox): as append_steps."""
        return self._ask(
            "Runs", "AppendSteps", runs_pb2.AppendStepsRequest(batch=batch), reply(AppendReceipt), timeout_s=timeout_s
        )

    def save_checkpoint(
        self,
        *,
        run_id: str,
        attempt: int,
        step: int,
        uri: str,
        backend: str,
        fidelity: str = "weights",
        sampler_uri: str = "",
        final: bool = False,
        expires_at: datetime | None = None,
        digest: str = "",
        timeout_s: float | None = None,
    ) -> CheckpointReceipt:
        """Record a durable checkpoint: position, duplicate."""
        request = runs_pb2.SaveCheckpointRequest(
            run_id=run_id,
            attempt=attempt,
            step=step,
            sampler_uri=sampler_uri,
            final=final,
            digest=digest,
            handle={"backend": backend, "uri": uri, "fidelity": fidelity},
            expires_at=codec.timestamp(expires_at),
        )
        return self._ask("Runs", "SaveCheckpoint", request, reply(CheckpointReceipt), timeout_s=timeout_s)

    def finish_run(
        self,
        *,
        run_id: str,
        attempt: int,
        status: str = "done",
        summary: Doc | None = None,
        error: str = "",
        timeout_s: float | None = None,
    ) -> FinishReceipt:
        """Finish the run with "done" | "failed" | "stopped": the position."""
        request = runs_pb2.FinishRunRequest(
            run_id=run_id,
            attempt=attempt,
            status=codec.status(status),
            summary=codec.struct(summary or {}),
            error=error,
        )
        return self._ask("Runs", "FinishRun", request, reply(FinishReceipt), timeout_s=timeout_s)

    def note_summary(self, *, run_id: str, summary: Doc, timeout_s: float | None = None) -> SummaryReceipt:
        """Merge `summary` into the run's summary: the position."""
        request = runs_pb2.NoteSummaryRequest(run_id=run_id, summary=codec.struct(summary))
        return self._ask("Runs", "NoteSummary", request, reply(SummaryReceipt), timeout_s=timeout_s)

    def link_session(
        self, *, run_id: str, provider: str, session_id: str, attempt: int = 0, timeout_s: float | None = None
    ) -> LinkSessionReceipt:
        """Link the run to a provider's session, so the provider's bill lines for that session are
        the run's even when they carry no run id. Linking again is a duplicate."""
        request = runs_pb2.LinkSessionRequest(run_id=run_id, provider=provider, session_id=session_id, attempt=attempt)
        return self._ask("Runs", "LinkSession", request, reply(LinkSessionReceipt), timeout_s=timeout_s)

    def get_run_state(self, *, run_id: str, min_position: int = 0, timeout_s: float | None = None) -> RunState:
        """The RunState (run, attempts, current_attempt, checkpoint, resume, last_step, spend ...)."""
        request = runs_pb2.GetRunStateRequest(run_id=run_id, min_position=min_position)
        return self._ask("Runs", "GetRunState", request, _state, timeout_s=timeout_s)

    def list_runs(
        self,
        *,
        page_size: int = 0,
        page_token: str = "",
        status: str = "",
        name_contains: str = "",
        run_id_prefix: str = "",
        account: str = "",
        min_position: int = 0,
        timeout_s: float | None = None,
    ) -> RunPage:
        """A page of runs, newest first; pass next_page_token back for the next page. Filters:
        status, a part of the name (case-insensitive), an id prefix, an account the runs' spend
        accounts lie under."""
        request = runs_pb2.ListRunsRequest(
            page_size=page_size,
            page_token=page_token,
            status=codec.status(status),
            name_contains=name_contains,
            run_id_prefix=run_id_prefix,
            account=account,
            min_position=min_position,
        )
        return self._ask("Runs", "ListRuns", request, reply(RunPage), timeout_s=timeout_s)

    def get_metrics(self, *, run_id: str, min_position: int = 0, timeout_s: float | None = None) -> list[MetricStats]:
        """Every metric of the run's live line of steps, by name: count, first and last step, the
        last value, min and max (read a page at a time, each within the deadline)."""
        metrics: list[MetricStats] = []
        token = ""
        while True:
            request = runs_pb2.GetMetricsRequest(run_id=run_id, min_position=min_position, page_token=token)
            page = self._ask("Runs", "GetMetrics", request, reply(RunMetrics), timeout_s=timeout_s)
            metrics += page.metrics
            token = page.next_page_token
            if not token:
                return metrics

    def list_checkpoints(
        self,
        *,
        run_id: str,
        page_size: int = 0,
        page_token: str = "",
        min_position: int = 0,
        timeout_s: float | None = None,
    ) -> CheckpointPage:
        """A page of the run's checkpoints in (step, attempt) order, superseded ones (of an
        attempt that a later one resumed before them) and expired ones included; pass
        next_page_token back for the next page."""
        request = runs_pb2.ListCheckpointsRequest(
            run_id=run_id, page_size=page_size, page_token=page_token, min_position=min_position
        )
        return self._ask("Runs", "ListCheckpoints", request, reply(CheckpointPage), timeout_s=timeout_s)

    def get_series(
        self,
        *,
        run_id: str,
        from_step: int = 0,
        page_size: int = 0,
        metrics: Sequence[str] = (),
        include_superseded: bool = False,
        min_position: int = 0,
        timeout_s: float | None = None,
    ) -> SeriesPage:
        """One page of the step series, column-wise; `next_from_step` is None on the last page."""
        request = runs_pb2.GetSeriesRequest(
            run_id=run_id,
            from_step=from_step,
            page_size=page_size,
            metrics=metrics,
            include_superseded=include_superseded,
            min_position=min_position,
        )
        return self._ask("Runs", "GetSeries", request, reply(SeriesPage), timeout_s=timeout_s)

    def watch_run(
        self, *, run_id: str, from_position: int = 0, timeout_s: float | None = None
    ) -> Iterator[WatchUpdate]:
        """A live tail of the run's events; no deadline unless `timeout_s` is given. Each item is a
        WatchUpdate (position, event_type, steps, state): the first ("state") holds the run's state,
        the later ones the event with the whole state as it stands after it (the server sends only
        what changed; the spec is left out: get_run_state has it). A watcher that falls too far
        behind is dropped with LedgerClientError reason WATCHER_TOO_SLOW, whose
        metadata["next_position"] is where to watch again from."""
        request = runs_pb2.WatchRunRequest(run_id=run_id, from_position=from_position)
        return self._stream("Runs", "WatchRun", request, _WatchedState().apply, timeout_s=timeout_s)


def _state(response: runs_pb2.GetRunStateResponse) -> RunState:
    state = field_of("state", RunState)(response)
    return state if state is not None else RunState()


class _WatchedState:
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
