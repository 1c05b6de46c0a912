"""Reads of runs: a run's state, its metrics, charts and series, its checkpoints (the best on the
run's objective, the retention plan) and the list of runs, from the views (ledger.views.queries,
as the read models of ledger.views.models) through the reader (ledger.application.reads). Each
may first wait for a position (read-your-writes). Storage outages become Unavailable.

The best checkpoint and the retention plan are read from the views and decided by
ledger.domain.retention (the rule a checkpoint's deletion applies on the Run aggregate), with the
server's clock as `now`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ledger.application.commands import check_objective
from ledger.application.outcomes import storage_read
from ledger.application.reads import Reads
from ledger.domain.errors import Invalid, NotFound
from ledger.domain.limits import (
    ID_LENGTH_MAX,
    METRICS_PER_BATCH_MAX,
    PAGE_SIZE_MAX,
    check_int,
    check_name,
    check_reference,
    check_text,
)
from ledger.domain.reasons import Reason
from ledger.views import models
from ledger.views.search.reads import SEARCH_OFFSET_MAX, SearchPage, compile_search
from ledger.views.series.charts import METRICS_LISTED_MAX

__all__ = ["RunReads"]

RUN_ID_PREFIX = re.compile(r"[0-9a-f-]{1,36}")
#: The widths in points a chart may be asked for.
CHART_WIDTH_MIN, CHART_WIDTH_MAX = 16, 4000


class RunReads:
    """The reads of runs."""

    def __init__(self, reader: Reads) -> None:
        self.reader = reader
        self.storage = reader.storage

    @storage_read
    def run_state(self, run_id: str, *, min_position: int = 0, timeout_s: float = 5.0) -> models.RunState:
        """The RunState of ledger.views.queries.ViewReader.run_state. Raises NotFound."""
        check_reference(run_id, "run_id")
        self.reader.wait(min_position, timeout_s)
        state = self.reader.views.run_state(run_id, self.reader.clock())
        if state is None:
            raise NotFound(f"no run {run_id}", reason=Reason.RUN_NOT_FOUND, run_id=run_id)
        return state

    @storage_read
    def run_fields(
        self, run_ids: Sequence[str], *, keys: Sequence[str] = (), prefix: str = ""
    ) -> dict[str, dict[str, float | str]]:
        """The search view's field values of `run_ids` named `keys`, else under `prefix`
        (ledger.views.search.reads.run_fields: bounded)."""
        for run_id in run_ids:
            check_reference(run_id, "run_id")
        return self.reader.views.run_fields(list(run_ids), keys=list(keys), prefix=prefix)

    @storage_read
    def children_opened(self, run_id: str, position: int, limit: int) -> tuple[list[tuple[int, str]], int]:
        """(position, run id) of at most `limit` runs opened from `run_id`'s checkpoints at
        `position` or after, in the log's order, and the position the lineage view has reached
        (a run opened after it may not be listed yet)."""
        check_reference(run_id, "run_id")
        reached = self.reader.views.position("lineage")
        return self.reader.views.children_opened(run_id, position, limit), reached

    @storage_read
    def metric_stats(
        self,
        run_id: str,
        *,
        after: str = "",
        limit: int = METRICS_LISTED_MAX,
        min_position: int = 0,
        timeout_s: float = 5.0,
    ) -> tuple[models.MetricStats, ...]:
        """At most `limit` metrics of the run's live line of steps, by name after `after`
        (ViewReader.metric_stats). Raises NotFound."""
        check_reference(run_id, "run_id")
        check_int(limit, "limit", minimum=1, maximum=PAGE_SIZE_MAX + 1)
        check_text(after, "after", limit=ID_LENGTH_MAX)
        self.reader.wait(min_position, timeout_s)
        stats = self.reader.views.metric_stats(run_id, after=after, limit=limit)
        if stats is None:
            raise NotFound(f"no run {run_id}", reason=Reason.RUN_NOT_FOUND, run_id=run_id)
        return stats

    @storage_read
    def chart(
        self,
        run_id: str,
        *,
        metrics: Sequence[str] = (),
        from_step: int | None = None,
        to_step: int | None = None,
        width: int = 800,
        min_position: int = 0,
        timeout_s: float = 5.0,
    ) -> models.Chart:
        """A run's metrics against step (all when `metrics` is empty) over [from_step, to_step]
        (default: every recorded step), each series downsampled to at most about `width` points
        (ViewReader.chart). Raises NotFound, or Invalid for a width outside CHART_WIDTH_MIN..MAX,
        a bad step or metric name, or from_step after to_step."""
        check_reference(run_id, "run_id")
        check_int(width, "width", minimum=CHART_WIDTH_MIN, maximum=CHART_WIDTH_MAX)
        if from_step is not None:
            check_int(from_step, "from_step")
        if to_step is not None:
            check_int(to_step, "to_step")
        if from_step is not None and to_step is not None and from_step > to_step:
            raise Invalid(
                f"from_step {from_step} is after to_step {to_step}",
                reason=Reason.OUT_OF_RANGE,
                field="from_step",
            )
        if isinstance(metrics, str):
            raise Invalid("metrics is a list of names", reason=Reason.INVALID_FIELD, field="metrics")
        check_int(len(metrics), "metrics", maximum=METRICS_PER_BATCH_MAX)
        for name in metrics:
            check_name(name, "metric name")
        self.reader.wait(min_position, timeout_s)
        chart = self.reader.views.chart(
            run_id, metrics=tuple(metrics), from_step=from_step, to_step=to_step, width=width
        )
        if chart is None:
            raise NotFound(f"no run {run_id}", reason=Reason.RUN_NOT_FOUND, run_id=run_id)
        return chart

    @storage_read
    def checkpoints(
        self, run_id: str, *, limit: int = 1000, min_position: int = 0, timeout_s: float = 5.0
    ) -> tuple[models.Checkpoint, ...]:
        """Every checkpoint of a run in (step, attempt) order, superseded and expired ones included
        (at most `limit`). Raises NotFound."""
        check_reference(run_id, "run_id")
        check_int(limit, "limit", minimum=1, maximum=PAGE_SIZE_MAX)
        self.reader.wait(min_position, timeout_s)
        if self.reader.views.checkpoints(run_id, 1) is None:
            raise NotFound(f"no run {run_id}", reason=Reason.RUN_NOT_FOUND, run_id=run_id)
        return tuple(self.reader.views.run_checkpoints(run_id, self.reader.clock(), limit))

    @storage_read
    def best_checkpoint(
        self,
        run_id: str,
        *,
        metric: str = "",
        mode: str = "",
        include_superseded: bool = False,
        min_position: int = 0,
        timeout_s: float = 5.0,
    ) -> models.BestCheckpoint:
        """The usable checkpoint scoring best on `metric` ("min" or "max" is better; both empty:
        the run's objective), superseded ones too when asked (ledger.domain.retention.best).
        Raises NotFound (RUN_NOT_FOUND; NO_SCORED_CHECKPOINT when none has the score or the run
        has no objective and none was given) or Invalid."""
        check_reference(run_id, "run_id")
        if metric or mode:
            objective = check_objective((metric, mode))
        else:
            objective = None
        self.reader.wait(min_position, timeout_s)
        state = self.reader.views.run_plan(run_id)
        if state is None:
            raise NotFound(f"no run {run_id}", reason=Reason.RUN_NOT_FOUND, run_id=run_id)
        if objective is None and state[0]:
            objective = {"metric": state[0], "mode": state[1]}
        found = None
        if objective is not None:
            found = self.reader.views.best_checkpoint(
                run_id,
                metric=objective["metric"],
                mode=objective["mode"],
                include_superseded=include_superseded,
                now=self.reader.clock(),
            )
        if found is None:
            what = f"on {objective['metric']}" if objective else "(the run has no objective and none was given)"
            raise NotFound(
                f"no usable checkpoint of run {run_id} is scored {what}",
                reason=Reason.NO_SCORED_CHECKPOINT,
                run_id=run_id,
                metric=objective["metric"] if objective else "",
            )
        return found

    @storage_read
    def plan_prune(
        self,
        run_id: str,
        *,
        keep_last: int = 0,
        after: tuple[int, int] | None = None,
        limit: int = 1000,
        min_position: int = 0,
        timeout_s: float = 5.0,
    ) -> models.PrunePage:
        """A page of the run's retention plan (ledger.domain.retention.plan with the run's objective,
        the checkpoints registry versions were made from, and the server's now), in (step, attempt)
        order after `after`. Raises NotFound or Invalid."""
        check_reference(run_id, "run_id")
        check_int(keep_last, "keep_last", maximum=PAGE_SIZE_MAX)
        check_int(limit, "limit", minimum=1, maximum=PAGE_SIZE_MAX)
        if after is not None:
            check_int(after[0], "after step")
            check_int(after[1], "after attempt")
        self.reader.wait(min_position, timeout_s)
        state = self.reader.views.run_plan(run_id)
        if state is None:
            raise NotFound(f"no run {run_id}", reason=Reason.RUN_NOT_FOUND, run_id=run_id)
        objective = models.Objective(metric=state[0], mode=state[1]) if state[0] else None
        return self.reader.views.prune_page(
            run_id, objective=objective, keep_last=keep_last, after=after, limit=limit, now=self.reader.clock()
        )

    @storage_read
    def series(
        self,
        run_id: str,
        *,
        from_step: int = 0,
        limit: int = 1000,
        metrics: Sequence[str] = (),
        include_superseded: bool = False,
        min_position: int = 0,
        timeout_s: float = 5.0,
    ) -> models.SeriesPage:
        """A page of a run's series (one record per step unless superseded ones are asked for)."""
        check_int(from_step, "from_step")
        check_int(limit, "limit", minimum=1, maximum=PAGE_SIZE_MAX)
        self.run_state(run_id, min_position=min_position, timeout_s=timeout_s)
        return self.reader.views.series(
            run_id, from_step=from_step, limit=limit, metrics=tuple(metrics), include_superseded=include_superseded
        )

    @storage_read
    def list_runs(
        self,
        *,
        limit: int = 100,
        after: tuple[float, str] | None = None,
        status: str = "",
        name_contains: str = "",
        run_id_prefix: str = "",
        account: str = "",
        include_retracted: bool = False,
        min_position: int = 0,
        timeout_s: float = 5.0,
    ) -> models.RunPage:
        """Runs, newest first; `after` is the (opened_epoch, run_id) of the previous page's last.
        Filters (ViewReader.list_runs): status, a part of the name, an id prefix, an account;
        retracted runs are left out unless `include_retracted`."""
        check_int(limit, "limit", minimum=1, maximum=PAGE_SIZE_MAX + 1)
        _check_filters(name_contains, run_id_prefix, account)
        self.reader.wait(min_position, timeout_s)
        return self.reader.views.list_runs(
            limit=limit,
            after=after,
            status=status,
            name_contains=name_contains,
            run_id_prefix=run_id_prefix,
            account=account,
            include_retracted=include_retracted,
            now=self.reader.clock(),
        )

    @storage_read
    def search_runs(
        self,
        *,
        where: str,
        order_by: str = "",
        descending: bool = False,
        limit: int = 100,
        offset: int = 0,
        include_retracted: bool = False,
        min_position: int = 0,
        timeout_s: float = 5.0,
        status: str = "",
        name_contains: str = "",
        run_id_prefix: str = "",
        account: str = "",
    ) -> SearchPage:
        """The runs `where` selects (the search language: ledger.views.search), ordered by
        `order_by`, a page of `limit` from `offset`; INVALID_QUERY or QUERY_TOO_LARGE (with the
        position) for a query refused, checked before anything is read. `filters` are those of
        list_runs (status, name_contains, run_id_prefix, account), each ANDed with `where`."""
        check_int(limit, "limit", minimum=1, maximum=PAGE_SIZE_MAX)
        check_int(offset, "offset", minimum=0, maximum=SEARCH_OFFSET_MAX)
        _check_filters(name_contains, run_id_prefix, account)
        now = self.reader.clock()
        compile_search(where, order_by, descending=descending, include_retracted=include_retracted, now=now.timestamp())
        self.reader.wait(min_position, timeout_s)
        return self.reader.views.search_runs(
            where=where,
            order_by=order_by,
            descending=descending,
            limit=limit,
            offset=offset,
            include_retracted=include_retracted,
            now=now,
            status=status,
            name_contains=name_contains,
            run_id_prefix=run_id_prefix,
            account=account,
        )


def _check_filters(name_contains: str, run_id_prefix: str, account: str) -> None:
    """The filters of list_runs and search_runs: text within ID_LENGTH_MAX, an id prefix of hex digits."""
    check_text(name_contains, "name_contains", limit=ID_LENGTH_MAX)
    if run_id_prefix and not RUN_ID_PREFIX.fullmatch(run_id_prefix):
        raise Invalid(
            "a run id prefix is lowercase hex digits and dashes, at most 36 characters",
            reason=Reason.INVALID_FIELD,
            field="run_id_prefix",
        )
    check_text(account, "account", limit=ID_LENGTH_MAX)
