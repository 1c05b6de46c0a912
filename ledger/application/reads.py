"""Reads: answers from the views (ledger.views.queries, as the read models of ledger.views.models)
and from the log itself. Each read of a view may first wait for a position (read-your-writes);
`check` is what health follows. Storage outages become Unavailable.

The best checkpoint and the retention plan are read from the views and decided by
ledger.domain.retention (the rule DeleteCheckpoint applies on the Run aggregate), with the server's
clock as `now`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from eventsourcing.persistence import Notification

from ledger.application.commands import check_objective
from ledger.application.kernel import Kernel, storage_read
from ledger.domain.errors import Invalid, NotFound, Unavailable
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
from ledger.domain.topics import check_event_types, event_topics
from ledger.views import models
from ledger.views.search.reads import SEARCH_OFFSET_MAX, SearchPage, compile_search
from ledger.views.series.charts import METRICS_LISTED_MAX

__all__ = ["Reads"]

RUN_ID_PREFIX = re.compile(r"[0-9a-f-]{1,36}")
#: The widths in points a chart may be asked for.
CHART_WIDTH_MIN, CHART_WIDTH_MAX = 16, 4000


class Reads(Kernel):
    """The reads of the ledger."""

    def wait(self, position: int, timeout_s: float = 5.0) -> None:
        """Block until every view reflects `position`, else raise Unavailable."""
        if position > 0 and not self.projector.wait(position, timeout_s):
            self._check_projection()
            raise Unavailable(
                f"the views did not reach position {position} in {timeout_s} s",
                reason=Reason.VIEW_NOT_CAUGHT_UP,
                position=position,
            )

    @storage_read
    def head(self) -> int:
        """The position of the newest event in the log (0 when empty)."""
        return self.storage.head()

    def check(self) -> int:
        """What health follows: the head of the log, read from storage, while the views are
        projected. Raises Unavailable when storage cannot be read or projection stopped."""
        self._check_projection()
        return self.head()

    def _check_projection(self) -> None:
        failure = self.projector.failure
        if failure is not None:
            raise Unavailable(
                f"the views are stopped: {failure}", reason=Reason.PROJECTION_FAILED, position=failure.position
            )

    @storage_read
    def run_state(self, run_id: str, *, min_position: int = 0, timeout_s: float = 5.0) -> models.RunState:
        """The RunState of ledger.views.queries.ViewReader.run_state. Raises NotFound."""
        check_reference(run_id, "run_id")
        self.wait(min_position, timeout_s)
        state = self.views.run_state(run_id, self.clock())
        if state is None:
            raise NotFound(f"no run {run_id}", reason=Reason.RUN_NOT_FOUND, run_id=run_id)
        return state

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
        self.wait(min_position, timeout_s)
        stats = self.views.metric_stats(run_id, after=after, limit=limit)
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
        self.wait(min_position, timeout_s)
        chart = self.views.chart(run_id, metrics=tuple(metrics), from_step=from_step, to_step=to_step, width=width)
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
        self.wait(min_position, timeout_s)
        if self.views.checkpoints(run_id, 1) is None:
            raise NotFound(f"no run {run_id}", reason=Reason.RUN_NOT_FOUND, run_id=run_id)
        return tuple(self.views.run_checkpoints(run_id, self.clock(), limit))

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
        self.wait(min_position, timeout_s)
        state = self.views.run_plan(run_id)
        if state is None:
            raise NotFound(f"no run {run_id}", reason=Reason.RUN_NOT_FOUND, run_id=run_id)
        if objective is None and state[0]:
            objective = {"metric": state[0], "mode": state[1]}
        found = None
        if objective is not None:
            found = self.views.best_checkpoint(
                run_id,
                metric=objective["metric"],
                mode=objective["mode"],
                include_superseded=include_superseded,
                now=self.clock(),
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
        self.wait(min_position, timeout_s)
        state = self.views.run_plan(run_id)
        if state is None:
            raise NotFound(f"no run {run_id}", reason=Reason.RUN_NOT_FOUND, run_id=run_id)
        objective = models.Objective(metric=state[0], mode=state[1]) if state[0] else None
        return self.views.prune_page(
            run_id, objective=objective, keep_last=keep_last, after=after, limit=limit, now=self.clock()
        )

    @storage_read
    def spend_hours(
        self, account: str, *, min_position: int = 0, timeout_s: float = 5.0
    ) -> tuple[models.SpendHour, ...]:
        """What an account (a run's: its run id) committed in each UTC hour, oldest first.
        Raises NotFound."""
        check_reference(account, "account")
        self.wait(min_position, timeout_s)
        found = self.views.spend_hours(account)
        if found is None:
            raise NotFound(f"no account {account}", reason=Reason.ACCOUNT_NOT_FOUND, account=account)
        return found

    @storage_read
    def account_tree(
        self, *, limit: int = 1000, min_position: int = 0, timeout_s: float = 5.0
    ) -> tuple[models.Account, ...]:
        """Every account that is not a run's own (the caps people set), with its totals, parents
        before children (at most `limit`)."""
        check_int(limit, "limit", minimum=1, maximum=PAGE_SIZE_MAX)
        self.wait(min_position, timeout_s)
        return self.views.account_tree(limit)

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
        return self.views.series(
            run_id, from_step=from_step, limit=limit, metrics=tuple(metrics), include_superseded=include_superseded
        )

    @storage_read
    def account(self, account: str, *, min_position: int = 0, timeout_s: float = 5.0) -> models.Account:
        check_reference(account, "account")
        self.wait(min_position, timeout_s)
        found = self.views.account(account)
        if found is None:
            raise NotFound(f"no account {account}", reason=Reason.ACCOUNT_NOT_FOUND, account=account)
        return found

    @storage_read
    def reservations(
        self, account: str, *, limit: int = 1000, after_position: int = 0, min_position: int = 0, timeout_s: float = 5.0
    ) -> models.ReservationPage:
        self.account(account, min_position=min_position, timeout_s=timeout_s)
        check_int(limit, "limit", minimum=1, maximum=PAGE_SIZE_MAX)
        return self.views.reservations(account, limit=limit, after_position=after_position)

    @storage_read
    def family(self, family: str, *, min_position: int = 0, timeout_s: float = 5.0) -> models.Family:
        check_reference(family, "family")
        self.wait(min_position, timeout_s)
        found = self.views.family(family)
        if found is None:
            raise NotFound(f"no family {family}", reason=Reason.FAMILY_NOT_FOUND, family=family)
        return found

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
        check_text(name_contains, "name_contains", limit=ID_LENGTH_MAX)
        if run_id_prefix and not RUN_ID_PREFIX.fullmatch(run_id_prefix):
            raise Invalid(
                "a run id prefix is lowercase hex digits and dashes, at most 36 characters",
                reason=Reason.INVALID_FIELD,
                field="run_id_prefix",
            )
        check_text(account, "account", limit=ID_LENGTH_MAX)
        self.wait(min_position, timeout_s)
        return self.views.list_runs(
            limit=limit,
            after=after,
            status=status,
            name_contains=name_contains,
            run_id_prefix=run_id_prefix,
            account=account,
            include_retracted=include_retracted,
            now=self.clock(),
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
    ) -> SearchPage:
        """The runs `where` selects (the search language: ledger.views.search), ordered by
        `order_by`, a page of `limit` from `offset`; INVALID_QUERY or QUERY_TOO_LARGE (with the
        position) for a query refused, checked before anything is read."""
        check_int(limit, "limit", minimum=1, maximum=PAGE_SIZE_MAX)
        check_int(offset, "offset", minimum=0, maximum=SEARCH_OFFSET_MAX)
        now = self.clock()
        compile_search(where, order_by, descending=descending, include_retracted=include_retracted, now=now.timestamp())
        self.wait(min_position, timeout_s)
        return self.views.search_runs(
            where=where,
            order_by=order_by,
            descending=descending,
            limit=limit,
            offset=offset,
            include_retracted=include_retracted,
            now=now,
        )

    @storage_read
    def families(
        self, *, after: str = "", limit: int | None = None, min_position: int = 0, timeout_s: float = 5.0
    ) -> list[models.FamilySummary]:
        """Registry families by name after `after` (at most `limit`; all when None), each with its
        current version and number of versions."""
        if limit is not None:
            check_int(limit, "limit", minimum=1, maximum=PAGE_SIZE_MAX + 1)
        self.wait(min_position, timeout_s)
        return self.views.families(after=after, limit=limit)

    @storage_read
    def read_events(
        self,
        *,
        from_position: int = 1,
        limit: int = 1000,
        types: Sequence[str] = (),
        originator_ids: Sequence[str] = (),
        bytes_max: int | None = None,
    ) -> list[dict[str, Any]]:
        """Events of the log from a position, decoded: {position, type, originator_id,
        originator_version, timestamp, principal, request_id, data}. With `bytes_max` the page
        also ends before the event that would take its stored bytes past that budget; its first
        event is in it however large, so a reader that pages on always gets past every event."""
        check_int(from_position, "from_position")
        check_int(limit, "limit", minimum=1, maximum=PAGE_SIZE_MAX)
        if bytes_max is not None:
            check_int(bytes_max, "bytes_max", minimum=1)
        check_event_types(types)
        topics = [topic for name in types for topic in event_topics(name)]
        ids = [UUID(originator_id) for originator_id in originator_ids]
        out: list[dict[str, Any]] = []
        start, stored_bytes, largest = max(1, from_position), 0, 1
        # Without a budget the page is read at once; with one, in windows that the budget left
        # would hold at the largest size seen so far (the first window is one event), so no more
        # than about a page of stored events is ever held.
        window = limit if bytes_max is None else 1
        while len(out) < limit:
            asked = min(window, limit - len(out))
            notifications: Sequence[Notification]
            if ids:
                notifications = self.storage.select_notifications_of(ids, start, asked, topics)
            else:
                notifications = self.recorder.select_notifications(start, asked, topics=topics)
            for notification in notifications:
                size = len(notification.state)
                if bytes_max is not None and out and stored_bytes + size > bytes_max:
                    return out
                stored_bytes, largest = stored_bytes + size, max(largest, size)
                out.append(self._event(notification))
            if len(notifications) < asked or bytes_max is None:
                return out
            start = notifications[-1].id + 1
            window = max(1, (bytes_max - stored_bytes) // largest)
        return out

    def _event(self, notification: Notification) -> dict[str, Any]:
        data: dict[str, Any] = self.mapper.transcoder.decode(notification.state)
        data.pop("originator_topic", None)
        return {
            "position": notification.id,
            "type": notification.topic.rsplit(":", 1)[-1],
            "originator_id": str(notification.originator_id),
            "originator_version": notification.originator_version,
            "timestamp": data.pop("timestamp", None),
            "principal": data.pop("principal", ""),
            "request_id": data.pop("request_id", ""),
            "data": data,
        }
