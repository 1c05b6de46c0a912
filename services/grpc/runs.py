"""The Runs service: decode, call the ledger in a worker thread, encode. Nothing else, but that
RecordSteps reads a stream's batches ahead of those being recorded, to record them together
(services.grpc.read_ahead).

Pages of checkpoints (ListCheckpoints, PlanPrune) go in (step, attempt) order and their token is
the (step, attempt) of a page's last checkpoint (services.runtime.paging), so a checkpoint saved
between pages neither repeats one nor is skipped over.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from typing import Any

import grpc

from ledger import Receipt
from ledger.domain.errors import LedgerError
from ledger.domain.limits import PAGE_SIZE_MAX
from ledger.views.models import RunPage
from ledger.views.series.charts import METRICS_LISTED_MAX
from services.grpc import codec
from services.grpc.codec import messages
from services.grpc.interceptors import SCOPE, audit
from services.grpc.read_ahead import ReadAhead
from services.grpc.watch import Watchers, caller, lineage_message_within
from services.runtime.edge import Edge
from services.runtime.paging import (
    checkpoint_after,
    checkpoint_token,
    name_after,
    name_token,
    search_offset,
    search_token,
)
from services.runtime.scopes import run_state_within
from trainledger.v1 import runs_pb2, runs_pb2_grpc

__all__ = ["RunsServicer"]

Context = grpc.aio.ServicerContext[Any, Any]
RUNS_PAGE_DEFAULT = 100
SERIES_PAGE_DEFAULT = 1_000
CHECKPOINTS_PAGE_DEFAULT = 100
PRUNE_PAGE_DEFAULT = 1_000


class RunsServicer(runs_pb2_grpc.RunsServicer):
    def __init__(self, edge: Edge) -> None:
        self.edge = edge
        self.ledger = edge.ledger

    async def _state(self, run_id: str, min_position: int, context: Context) -> runs_pb2.RunState:
        timeout_s = await self.edge.caught_up(min_position, self.edge.timeout_s(context))
        read = functools.partial(run_state_within, self.ledger, run_id, min_position, timeout_s, SCOPE.get())
        return await self.edge.call(lambda: messages.run_state(read()))  # Encoded in the thread too.

    def _append(self, batch: Any, who: dict[str, Any]) -> Any:
        # Decoded in the worker thread too: a batch holds thousands of values.
        return self.ledger.append_steps(**codec.batch_kwargs(batch), **who)

    async def OpenRun(self, request: runs_pb2.OpenRunRequest, context: Context) -> runs_pb2.OpenRunResponse:
        receipt = await self.edge.call(
            self.ledger.open_run,
            run_key=request.run_key,
            name=request.name,
            spec=codec.document(request.spec),
            cap_usd_micro=codec.optional(request, "cap_usd_micro"),
            parent_account=request.parent_account,
            max_steps=codec.optional(request, "max_steps"),
            objective=codec.objective(request),
            source_checkpoint=codec.source_checkpoint(request),
            **audit(),
        )
        # A run opened again (a restarted trainer) must see everything recorded so far, not the
        # state as of its first opening: wait for the head of the log as read now.
        wanted = receipt.position if receipt.created else max(receipt.position, await self.edge.call(self.ledger.head))
        state = await self._state(receipt.run_id, wanted, context)
        return runs_pb2.OpenRunResponse(state=state, created=receipt.created, position=receipt.position)

    async def StartAttempt(
        self, request: runs_pb2.StartAttemptRequest, context: Context
    ) -> runs_pb2.StartAttemptResponse:
        receipt = await self.edge.call(
            self.ledger.start_attempt,
            run_id=request.run_id,
            attempt_id=request.attempt_id,
            label=request.label,
            resume_from_step=codec.optional(request, "resume_from_step"),
            max_steps=codec.optional(request, "max_steps"),
            lease_s=codec.optional(request, "lease_s"),
            **audit(),
        )
        state = await self._state(request.run_id, receipt.position, context)
        return runs_pb2.StartAttemptResponse(
            attempt=receipt.attempt, position=receipt.position, duplicate=receipt.duplicate, state=state
        )

    async def AppendSteps(self, request: runs_pb2.AppendStepsRequest, context: Context) -> runs_pb2.AppendStepsResponse:
        receipt = await self.edge.call(self._append, request.batch, audit())
        return runs_pb2.AppendStepsResponse(
            position=receipt.position, duplicate=receipt.duplicate, last_step=receipt.last_step or 0
        )

    async def RecordSteps(
        self, request_iterator: AsyncIterator[runs_pb2.RecordStepsRequest], context: Context
    ) -> AsyncIterator[runs_pb2.RecordStepsResponse]:
        """The stream's batches in its order. The batches the client has already sent are read
        while the ones before them are recorded (ReadAhead) and go to the ledger together, in one
        group commit (Ledger.append_steps_all); each is answered in order with its own ack. A
        refused batch ends the stream with its error (its `sequence` in the metadata), after the
        acks of the batches before it; no batch after it is recorded."""
        who = audit()
        ahead = ReadAhead(request_iterator)
        try:
            while taken := await ahead.take():
                outcomes = await self.edge.call(self._append_all, [request.batch for request in taken], who)
                for request, outcome in zip(taken, outcomes, strict=False):
                    if isinstance(outcome, LedgerError):
                        # The refused batch's sequence goes with its error; acks already sent stand.
                        outcome.metadata["sequence"] = str(request.sequence)
                    if isinstance(outcome, Exception):
                        raise outcome
                    yield runs_pb2.RecordStepsResponse(
                        sequence=request.sequence,
                        position=outcome.position,
                        duplicate=outcome.duplicate,
                        last_step=outcome.last_step or 0,
                    )
        finally:
            await ahead.close()

    def _append_all(self, batches: list[Any], who: dict[str, Any]) -> list[Receipt | Exception]:
        """The batches decoded (in the worker thread too: a batch holds thousands of values) and
        recorded in order; those after one that cannot be decoded are not (the outcomes end with
        its error)."""
        decoded: list[dict[str, Any]] = []
        for batch in batches:
            try:
                decoded.append({**codec.batch_kwargs(batch), **who})
            except LedgerError as error:
                return [*self.ledger.append_steps_all(decoded), error]
        return self.ledger.append_steps_all(decoded)

    async def SaveCheckpoint(
        self, request: runs_pb2.SaveCheckpointRequest, context: Context
    ) -> runs_pb2.SaveCheckpointResponse:
        handle = request.handle
        fidelity = {"fidelity": handle.fidelity} if handle.fidelity else {}
        receipt = await self.edge.call(
            self.ledger.save_checkpoint,
            run_id=request.run_id,
            attempt=request.attempt,
            step=request.step,
            backend=handle.backend,
            uri=handle.uri,
            sampler_uri=request.sampler_uri,
            final=request.final,
            expires_at=codec.moment(request, "expires_at"),
            digest=request.digest,
            scores=dict(request.scores),
            **fidelity,
            **audit(),
        )
        return runs_pb2.SaveCheckpointResponse(position=receipt.position, duplicate=receipt.duplicate)

    async def FinishRun(self, request: runs_pb2.FinishRunRequest, context: Context) -> runs_pb2.FinishRunResponse:
        receipt = await self.edge.call(
            self.ledger.finish_run,
            run_id=request.run_id,
            attempt=request.attempt,
            status=codec.status_name(request.status),
            summary=codec.document(request.summary),
            error=request.error,
            **audit(),
        )
        return runs_pb2.FinishRunResponse(position=receipt.position)

    async def NoteSummary(self, request: runs_pb2.NoteSummaryRequest, context: Context) -> runs_pb2.NoteSummaryResponse:
        receipt = await self.edge.call(
            self.ledger.note_summary, run_id=request.run_id, summary=codec.document(request.summary), **audit()
        )
        return runs_pb2.NoteSummaryResponse(position=receipt.position)

    async def SetTags(self, request: runs_pb2.SetTagsRequest, context: Context) -> runs_pb2.SetTagsResponse:
        receipt = await self.edge.call(
            self.ledger.set_tags, run_id=request.run_id, tags=dict(request.set), remove=list(request.remove), **audit()
        )
        return runs_pb2.SetTagsResponse(position=receipt.position)

    async def RecordReport(
        self, request: runs_pb2.RecordReportRequest, context: Context
    ) -> runs_pb2.RecordReportResponse:
        receipt = await self.edge.call(
            self.ledger.record_report,
            run_id=request.run_id,
            kind=request.kind,
            report=codec.document(request.report),
            **audit(),
        )
        return runs_pb2.RecordReportResponse(position=receipt.position)

    async def LinkSession(self, request: runs_pb2.LinkSessionRequest, context: Context) -> runs_pb2.LinkSessionResponse:
        receipt = await self.edge.call(
            self.ledger.link_session,
            run_id=request.run_id,
            provider=request.provider,
            session_id=request.session_id,
            attempt=request.attempt,
            **audit(),
        )
        return runs_pb2.LinkSessionResponse(position=receipt.position, duplicate=receipt.duplicate)

    async def Heartbeat(self, request: runs_pb2.HeartbeatRequest, context: Context) -> runs_pb2.HeartbeatResponse:
        receipt = await self.edge.call(self.ledger.heartbeat, run_id=request.run_id, attempt=request.attempt, **audit())
        return runs_pb2.HeartbeatResponse(position=receipt.position)

    async def GetRunState(self, request: runs_pb2.GetRunStateRequest, context: Context) -> runs_pb2.GetRunStateResponse:
        return runs_pb2.GetRunStateResponse(state=await self._state(request.run_id, request.min_position, context))

    async def ListRuns(self, request: runs_pb2.ListRunsRequest, context: Context) -> runs_pb2.ListRunsResponse:
        size = codec.page_size(request.page_size, RUNS_PAGE_DEFAULT)
        if request.where or request.order_by:
            return await self._search_runs(request, size, context)
        after = codec.runs_after(request.page_token)
        timeout_s = await self.edge.caught_up(request.min_position, self.edge.timeout_s(context))
        scope = SCOPE.get()  # A scoped token lists the runs under its scope (services.runtime.auth).

        def read() -> RunPage:
            self.ledger.wait(request.min_position, timeout_s)
            return self.ledger.list_runs(
                limit=size,
                after=after,
                status=codec.status_name(request.status),
                name_contains=request.name_contains,
                run_id_prefix=request.run_id_prefix,
                account=request.account or scope,
                include_retracted=request.include_retracted,
            )

        page = await self.edge.call(read)
        return runs_pb2.ListRunsResponse(
            runs=[messages.run_summary(r) for r in page.runs], next_page_token=codec.runs_token(page.after)
        )

    async def _search_runs(
        self, request: runs_pb2.ListRunsRequest, size: int, context: Context
    ) -> runs_pb2.ListRunsResponse:
        """ListRuns with a search (`where` or `order_by`: ledger.views.search), its
        other filters ANDed in; the page token holds the offset of the next page."""
        offset = search_offset(request.page_token)
        timeout_s = await self.edge.caught_up(request.min_position, self.edge.timeout_s(context))
        page = await self.edge.search(
            self.ledger.search_runs,
            where=request.where,
            order_by=request.order_by,
            descending=request.descending,
            limit=size,
            offset=offset,
            include_retracted=request.include_retracted,
            min_position=request.min_position,
            timeout_s=timeout_s,
            status=codec.status_name(request.status),
            name_contains=request.name_contains,
            run_id_prefix=request.run_id_prefix,
            account=request.account or SCOPE.get(),
        )
        return runs_pb2.ListRunsResponse(
            runs=[messages.run_summary(r) for r in page.runs], next_page_token=search_token(page.next_offset)
        )

    async def GetMetrics(self, request: runs_pb2.GetMetricsRequest, context: Context) -> runs_pb2.GetMetricsResponse:
        size = codec.page_size(request.page_size, METRICS_LISTED_MAX)
        after = name_after(request.page_token)
        timeout_s = await self.edge.caught_up(request.min_position, self.edge.timeout_s(context))

        def read() -> runs_pb2.GetMetricsResponse:
            stats = self.ledger.metric_stats(
                request.run_id, after=after, limit=size + 1, min_position=request.min_position, timeout_s=timeout_s
            )
            return runs_pb2.GetMetricsResponse(
                metrics=[messages.metric_stats(s) for s in stats[:size]],
                next_page_token=name_token(stats[size - 1].name) if len(stats) > size else "",
            )

        return await self.edge.call(read)

    async def ListCheckpoints(
        self, request: runs_pb2.ListCheckpointsRequest, context: Context
    ) -> runs_pb2.ListCheckpointsResponse:
        """A page of the run's checkpoints in (step, attempt) order, superseded, expired and
        deleted ones included (PAGE_SIZE_MAX checkpoints in all are read per page)."""
        size = codec.page_size(request.page_size, CHECKPOINTS_PAGE_DEFAULT)
        after = checkpoint_after(request.page_token)
        timeout_s = await self.edge.caught_up(request.min_position, self.edge.timeout_s(context))

        def read() -> runs_pb2.ListCheckpointsResponse:
            self.ledger.wait(request.min_position, timeout_s)
            every = self.ledger.checkpoints(request.run_id, limit=PAGE_SIZE_MAX)  # NotFound: RUN_NOT_FOUND.
            later = [c for c in every if after is None or (c.step, c.attempt) > after]
            page = later[:size]
            token = checkpoint_token((page[-1].step, page[-1].attempt) if len(later) > size else None)
            return runs_pb2.ListCheckpointsResponse(
                checkpoints=[messages.checkpoint(c) for c in page], next_page_token=token
            )

        return await self.edge.call(read)

    async def BestCheckpoint(
        self, request: runs_pb2.BestCheckpointRequest, context: Context
    ) -> runs_pb2.BestCheckpointResponse:
        """The usable checkpoint that scores best on the objective asked for (the run's own when
        unset): NOT_FOUND NO_SCORED_CHECKPOINT when none has the score."""
        metric, mode = codec.objective(request) or ("", "")
        timeout_s = await self.edge.caught_up(request.min_position, self.edge.timeout_s(context))
        best = await self.edge.call(
            self.ledger.best_checkpoint,
            request.run_id,
            metric=metric,
            mode=mode,
            include_superseded=request.include_superseded,
            min_position=request.min_position,
            timeout_s=timeout_s,
        )
        return messages.best_checkpoint(best)

    async def RetractRun(self, request: runs_pb2.RetractRunRequest, context: Context) -> runs_pb2.RetractRunResponse:
        receipt = await self.edge.call(self.ledger.retract_run, run_id=request.run_id, reason=request.reason, **audit())
        return runs_pb2.RetractRunResponse(position=receipt.position, duplicate=receipt.duplicate)

    async def RecordDataset(
        self, request: runs_pb2.RecordDatasetRequest, context: Context
    ) -> runs_pb2.RecordDatasetResponse:
        receipt = await self.edge.call(
            self.ledger.record_dataset, run_id=request.run_id, **codec.dataset_kwargs(request.dataset), **audit()
        )
        return runs_pb2.RecordDatasetResponse(position=receipt.position, duplicate=receipt.duplicate)

    async def PlanPrune(self, request: runs_pb2.PlanPruneRequest, context: Context) -> runs_pb2.PlanPruneResponse:
        """A page of the run's retention plan (ledger.domain.retention), in (step, attempt) order."""
        size = codec.page_size(request.page_size, PRUNE_PAGE_DEFAULT)
        after = checkpoint_after(request.page_token)
        timeout_s = await self.edge.caught_up(request.min_position, self.edge.timeout_s(context))
        page = await self.edge.call(
            self.ledger.plan_prune,
            request.run_id,
            keep_last=request.keep_last,
            after=after,
            limit=size,
            min_position=request.min_position,
            timeout_s=timeout_s,
        )
        return runs_pb2.PlanPruneResponse(
            entries=[messages.prune_entry(e) for e in page.entries], next_page_token=checkpoint_token(page.after)
        )

    async def DeleteCheckpoint(
        self, request: runs_pb2.DeleteCheckpointRequest, context: Context
    ) -> runs_pb2.DeleteCheckpointResponse:
        receipt = await self.edge.call(
            self.ledger.delete_checkpoint,
            run_id=request.run_id,
            attempt=request.attempt,
            step=request.step,
            reason=request.reason,
            **audit(),
        )
        return runs_pb2.DeleteCheckpointResponse(position=receipt.position, duplicate=receipt.duplicate)

    async def GetSeries(self, request: runs_pb2.GetSeriesRequest, context: Context) -> runs_pb2.GetSeriesResponse:
        size = codec.page_size(request.page_size, SERIES_PAGE_DEFAULT)
        timeout_s = await self.edge.caught_up(request.min_position, self.edge.timeout_s(context))

        def read() -> runs_pb2.GetSeriesResponse:
            return messages.series(
                self.ledger.series(
                    request.run_id,
                    from_step=request.from_step,
                    limit=size,
                    metrics=list(request.metrics),
                    include_superseded=request.include_superseded,
                    min_position=request.min_position,
                    timeout_s=timeout_s,
                )
            )

        return await self.edge.call(read)

    async def WatchRun(
        self, request: runs_pb2.WatchRunRequest, context: Context
    ) -> AsyncIterator[runs_pb2.WatchRunResponse]:
        """The run's state without its spec, then every later event of the run and of its spend
        account, live, each with the state fields it changed, until the client cancels or the server
        shuts down. Bounded and fanned out by services.grpc.watch (TOO_MANY_WATCHERS, WATCHER_TOO_SLOW)."""
        scope = SCOPE.get()
        async for message in Watchers.of(self.edge).watch(request.run_id, request.from_position, caller(context)):
            if scope and message.HasField("state") and (message.state.HasField("source") or message.state.children):
                message = await self.edge.call(lineage_message_within, self.ledger, message, scope)
            yield message
