"""Reads of the runs view (its tables: ledger.views.runs.schema): RunState, a page of runs and a
run's checkpoints. RunState gathers what a resuming trainer needs from every view that knows the
run: its plan and datasets (provenance), its spend and bill (spend, bills), its lease and reports.

Each read runs a handful of indexed queries, so a RunState costs the same for a run of a thousand
steps or a million, or of a thousand checkpoints.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import msgspec

from ledger.domain.limits import EXPIRED_CHECKPOINTS_LISTED
from ledger.views.bills.reads import ANY_BILL, BillReads
from ledger.views.models import Attempt, Checkpoint, Resume, RunInfo, RunPage, RunState, RunSummary, SpendTotals
from ledger.views.provenance.lineage import CHILD_ROWS, CHILDREN_LISTED, SOURCE_ROW, LineageReads
from ledger.views.provenance.reads import DATASET_ROWS, PLAN_ROW, ProvenanceReads, progress, spec_max_steps
from ledger.views.reports import REPORT_ROWS, reports_of
from ledger.views.rows import decode, optional_utc_time, utc_time
from ledger.views.runs.checkpoints import CHECKPOINT_COLUMNS, CHECKPOINT_SELECT, to_checkpoint, to_scored_checkpoint
from ledger.views.runs.leases import LEASE_ROW
from ledger.views.spend.reads import PLAN_HOLD_ROW, PRESUMED, SPEND_ROW, to_plan_hold, to_spend_totals
from ledger.views.store import POSITION_ROW, Query, tracking_position

__all__ = ["RunViewReads", "run_filters", "with_tags"]

Rows = Callable[[str, tuple[Any, ...]], list[Any]]

RUN_ROW = (
    "SELECT run_id, run_key, name, status, spec, summary, error, opened_at, finished_at, current_attempt,"
    " last_step FROM view_runs WHERE run_id = ?"
)
ATTEMPT_ROWS = (
    "SELECT number, attempt_id, label, started_at, resumed_from_step, ended FROM view_attempts"
    " WHERE run_id = ? ORDER BY number"
)
# A run's scored checkpoints, whole, for its best one (RunViewReads._best_usable): read with the
# rest of a RunState, so the best one's row needs no read of its own.
SCORED_CHECKPOINTS = (
    f"{CHECKPOINT_SELECT} WHERE c.run_id = ? AND COALESCE(c.superseded, 0) = 0"
    " AND m.scores IS NOT NULL AND m.deleted_at IS NULL"
)
_LIVE = "FROM view_checkpoints WHERE run_id = ? AND superseded = 0"
LIVE_CHECKPOINT_EXISTS = (
    f"SELECT 1 {_LIVE} AND expires_at IS NULL UNION ALL SELECT 1 {_LIVE} AND expires_at > ? LIMIT 1"
)
LATEST_LIVE_CHECKPOINT = (
    f"{CHECKPOINT_SELECT} WHERE c.run_id = ? AND c.superseded = 0"
    " AND (c.expires_at IS NULL OR c.expires_at > ?) AND m.deleted_at IS NULL"
    " ORDER BY c.step DESC, c.attempt DESC LIMIT 1"
)
EXPIRED_CHECKPOINTS = (
    f"{CHECKPOINT_SELECT} WHERE c.run_id = ? AND c.superseded = 0 AND c.expires_at <= ?"
    " ORDER BY c.expires_at DESC, c.step DESC, c.attempt DESC LIMIT ?"
)


# A run's tags (Run.TagsChanged), by key.
TAG_ROWS = "SELECT key, value FROM view_run_tags WHERE run_id = ? ORDER BY key"


class RunViewReads:
    """Reads of the runs view, run by `query`; a run's plan and datasets are `provenance`'s, its
    bill `bills`'."""

    def __init__(self, query: Query, provenance: ProvenanceReads, bills: BillReads) -> None:
        self.query = query
        self.provenance = provenance
        self.bills = bills
        self.lineage = LineageReads(query)

    def run_state(self, run_id: str, now: datetime) -> RunState | None:
        """What a resuming trainer needs, or None for an unknown run. Its reads that depend on
        no other go together (one round trip on PostgreSQL: `together`)."""
        moment = now.timestamp()
        with self.query.together(
            [
                (RUN_ROW, (run_id,)),
                (ATTEMPT_ROWS, (run_id,)),
                (LIVE_CHECKPOINT_EXISTS, (run_id, run_id, moment)),
                (LATEST_LIVE_CHECKPOINT, (run_id, moment)),
                (EXPIRED_CHECKPOINTS, (run_id, moment, EXPIRED_CHECKPOINTS_LISTED)),
                (PLAN_ROW, (run_id,)),
                (SCORED_CHECKPOINTS, (run_id,)),
                (SPEND_ROW, (run_id,)),
                (PLAN_HOLD_ROW, (run_id,)),
                (ANY_BILL, ()),
                (POSITION_ROW, ("runs",)),
                (DATASET_ROWS, (run_id,)),
                (LEASE_ROW, (run_id,)),
                (REPORT_ROWS, (run_id,)),
                (SOURCE_ROW, (run_id,)),
                (CHILD_ROWS, (run_id, CHILDREN_LISTED)),
                (TAG_ROWS, (run_id,)),
            ]
        ):
            return self._run_state(run_id, now)

    def _run_state(self, run_id: str, now: datetime) -> RunState | None:
        row = self.query.row(RUN_ROW, (run_id,))
        if row is None:
            return None
        run_id, run_key, name, status, spec, summary, error, opened_at, finished_at, current, last_step = row
        attempts = self._attempts(run_id)
        checkpoint, expired, expired_count = self._checkpoints(run_id, now.timestamp())
        spec = decode(spec)
        objective, retraction, run_progress = self.provenance.plan_parts(
            self.provenance.run_plan(run_id), status=status, last_step=last_step, now=now, spec=spec
        )
        best = None if objective is None else self._best_usable(run_id, objective.metric, objective.mode, now)
        spend = self._spend(run_id)
        resume = Resume(
            available=checkpoint is not None,
            from_step=checkpoint.step if checkpoint else 0,
            handle=checkpoint.handle if checkpoint else None,
            sampler_uri=checkpoint.sampler_uri if checkpoint else "",
            spend_committed_usd_micro=spend.committed_usd_micro,
        )
        children, child_count = self.lineage.children(run_id)
        return RunState(
            run=RunInfo(
                run_id=run_id,
                run_key=run_key,
                name=name,
                status=status,
                spec=spec,
                summary=decode(summary),
                error=error or "",
                opened_at=utc_time(opened_at),
                finished_at=optional_utc_time(finished_at),
                objective=objective,
                retraction=retraction,
            ),
            attempts=attempts,
            current_attempt=current or 0,
            checkpoint=checkpoint,
            expired_checkpoints=expired,
            expired_checkpoint_count=expired_count,
            resume=resume,
            last_step=last_step,
            spend=spend,
            position=tracking_position(self.query, "runs"),
            best_checkpoint=best,
            progress=run_progress,
            datasets=self.provenance.datasets(run_id),
            reports=reports_of(self.query.rows(REPORT_ROWS, (run_id,))),
            tags=dict(self.query.rows(TAG_ROWS, (run_id,))),
            source=self.lineage.source(run_id),
            children=children,
            child_count=child_count,
        )

    def _attempts(self, run_id: str) -> tuple[Attempt, ...]:
        """The run's attempts, the current one with its lease."""
        lease = self.query.row(LEASE_ROW, (run_id,))
        leased, lease_s, last_seen_at, _, lost_at = lease if lease else (0, None, None, None, None)
        return tuple(
            Attempt(
                number=number,
                attempt_id=attempt_id or "",
                label=label or "",
                started_at=utc_time(started_at),
                resumed_from_step=resumed,
                ended=bool(ended),
                lease_s=lease_s if number == leased else None,
                # Shown once the attempt is lost (its last sign of life before the loss): a live
                # one's moves with every batch, which would make every watched update carry it.
                last_seen_at=optional_utc_time(last_seen_at) if number == leased and lost_at else None,
                lost_at=optional_utc_time(lost_at) if number == leased else None,
            )
            for number, attempt_id, label, started_at, resumed, ended in self.query.rows(ATTEMPT_ROWS, (run_id,))
        )

    def _spend(self, run_id: str) -> SpendTotals:
        """The run's spend, with its bill and its plan hold."""
        spend_row = self.query.row(SPEND_ROW, (run_id,)) or (None, 0, 0, 0, 0)
        return to_spend_totals(
            spend_row,
            self.bills.bill_totals(run_id, rolled_up=True),
            to_plan_hold(self.query.row(PLAN_HOLD_ROW, (run_id,))),
        )

    def _best_usable(self, run_id: str, metric: str, mode: str, now: datetime) -> Checkpoint | None:
        """The checkpoint ledger.domain.retention.best picks among the run's usable ones (the
        best score on `metric`, ties to the later step, then attempt), ranked from the few
        columns that decide it (scored, not superseded or deleted, then not expired); only the
        chosen one's read model is built. A run's checkpoints are still each looked at, but at a
        fraction of building each one's."""
        chosen: tuple[float, int, int] | None = None
        best: Any = None
        for row in self.query.rows(SCORED_CHECKPOINTS, (run_id,)):
            attempt, step, expires_at, scores = row[0], row[1], row[8], row[11]
            if not scores or (expires_at is not None and utc_time(expires_at) <= now):
                continue
            score = decode(scores).get(metric)
            if score is None or not math.isfinite(score):
                continue
            if (
                chosen is None
                or (score < chosen[0] if mode == "min" else score > chosen[0])
                or (score == chosen[0] and (step, attempt) > chosen[1:])
            ):
                chosen, best = (score, step, attempt), row
        return None if best is None else to_scored_checkpoint(best, now.timestamp())

    def _checkpoints(self, run_id: str, moment: float) -> tuple[Checkpoint | None, tuple[Checkpoint, ...], int]:
        """The most progressed usable checkpoint (not superseded, deleted or expired), the
        EXPIRED_CHECKPOINTS_LISTED that expired most recently (in step order), and how many expired
        in all; superseded checkpoints are neither. Indexed: the best is found walking down from
        the highest step (past only the expired and deleted ones above it), and only once an index
        seek has shown that a live one exists; the count is an index range."""
        checkpoint = None
        if self.query.row(LIVE_CHECKPOINT_EXISTS, (run_id, run_id, moment)):
            row = self.query.row(LATEST_LIVE_CHECKPOINT, (run_id, moment))
            checkpoint = to_scored_checkpoint(row, moment) if row else None
        expired = sorted(
            (
                to_scored_checkpoint(r, moment)
                for r in self.query.rows(EXPIRED_CHECKPOINTS, (run_id, moment, EXPIRED_CHECKPOINTS_LISTED))
            ),
            key=lambda c: (c.step, c.attempt),
        )
        count = len(expired)
        if count == EXPIRED_CHECKPOINTS_LISTED:
            count = int(self.query.row(f"SELECT COUNT(*) {_LIVE} AND expires_at <= ?", (run_id, moment))[0])
        return checkpoint, tuple(expired), count

    def list_runs(
        self,
        *,
        limit: int,
        after: tuple[float, str] | None = None,
        status: str = "",
        name_contains: str = "",
        run_id_prefix: str = "",
        account: str = "",
        include_retracted: bool = False,
        now: datetime | None = None,
    ) -> RunPage:
        """Up to `limit` runs, newest first, `after` the (opened_at, run_id) of the previous page's
        last one; the page's `after` continues it. Only runs with `status`, whose name contains
        `name_contains` (case-insensitive), whose id starts with `run_id_prefix`, and whose spend
        account lies under `account` at any depth, when given. Retracted runs only with
        `include_retracted`. Progress is as of `now` (the ETA)."""
        prefix, where, params = run_filters(
            after=after,
            status=status,
            name_contains=name_contains,
            run_id_prefix=run_id_prefix,
            account=account,
            include_retracted=include_retracted,
        )
        sql = prefix + RUN_SUMMARY_SELECT
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY r.opened_at DESC, r.run_id DESC LIMIT ?"
        # One more than the page, to know whether another follows.
        rows = self.query.rows(sql, (*params, limit + 1))
        moment = now if now is not None else datetime.now(UTC)
        runs = with_tags(self.query.rows, tuple(to_run_summary(row, moment) for row in rows[:limit]))
        last = rows[limit - 1] if len(rows) > limit else None
        return RunPage(runs=runs, after=None if last is None else (last[5], last[0]))

    def checkpoints(self, run_id: str, limit: int) -> tuple[Checkpoint, ...] | None:
        """Every checkpoint of the run in (step, attempt) order, superseded and expired ones
        included (at most `limit`); None for an unknown run."""
        if self.query.row("SELECT 1 FROM view_runs WHERE run_id = ?", (run_id,)) is None:
            return None
        return tuple(
            msgspec.structs.replace(to_checkpoint(row[:-1]), superseded=bool(row[-1]))
            for row in self.query.rows(
                f"SELECT {CHECKPOINT_COLUMNS}, superseded FROM view_checkpoints WHERE run_id = ?"
                " ORDER BY step, attempt LIMIT ?",
                (run_id, limit),
            )
        )


RUN_SUMMARY_SELECT = (
    "SELECT r.run_id, r.name, r.status, r.current_attempt, r.last_step, r.opened_at,"
    " COALESCE(a.committed, 0), COALESCE(a.parent, ''), a.cap, COALESCE(a.pending, 0),"
    " p.max_steps, p.anchor_time, p.anchor_step, p.last_time, p.last_step, p.retracted_at,"
    f" {PRESUMED},"
    " r.spec"
    " FROM view_runs r LEFT JOIN view_accounts a ON a.account = r.run_id"
    " LEFT JOIN view_run_plans p ON p.run_id = r.run_id"
)


def run_filters(
    *,
    after: tuple[float, str] | None,
    include_retracted: bool,
    status: str = "",
    name_contains: str = "",
    run_id_prefix: str = "",
    account: str = "",
) -> tuple[str, list[str], list[Any]]:
    """What list_runs' filters add to its query: a prefix (the accounts under `account`), the
    WHERE conditions and their parameters, in order."""
    where: list[str] = []
    params: list[Any] = []
    prefix = ""
    if account:
        # The accounts under `account`, at any depth (a run's account is named by its run id).
        prefix = (
            "WITH RECURSIVE under(account) AS (SELECT account FROM view_accounts WHERE parent = ?"
            " UNION SELECT c.account FROM view_accounts c JOIN under u ON c.parent = u.account) "
        )
        params.append(account)
        where.append("r.run_id IN (SELECT account FROM under)")
    if status:
        where.append("r.status = ?")
        params.append(status)
    if name_contains:
        where.append("LOWER(r.name) LIKE ? ESCAPE '!'")
        escaped = name_contains.lower().replace("!", "!!").replace("%", "!%").replace("_", "!_")
        params.append(f"%{escaped}%")
    if run_id_prefix:
        # Ids are lowercase canonical uuids: a range over the primary key, not a scan.
        where.append("r.run_id >= ? AND r.run_id < ?")
        params += [run_id_prefix, run_id_prefix + "~"]
    if not include_retracted:
        where.append("p.retracted_at IS NULL")
    if after is not None:
        # A row value: a seek into the (opened_at, run_id) index, not every run older than it.
        where.append("(r.opened_at, r.run_id) < (?, ?)")
        params += [after[0], after[1]]
    return prefix, where, params


def to_run_summary(row: Any, now: datetime) -> RunSummary:
    """A row of RUN_SUMMARY_SELECT as a RunSummary, its progress as of `now`."""
    (
        run_id,
        name,
        status,
        current,
        last_step,
        opened_at,
        committed,
        parent,
        cap,
        pending,
        max_steps,
        anchor_time,
        anchor_step,
        last_time,
        last_batch_step,
        retracted_at,
        presumed,
        spec,
    ) = row
    return RunSummary(
        run_id=run_id,
        name=name,
        status=status,
        current_attempt=current or 0,
        last_step=last_step,
        committed_usd_micro=committed,
        opened_at=utc_time(opened_at),
        parent_account=parent,
        cap_usd_micro=cap,
        pending_usd_micro=pending,
        progress=progress(
            max_steps=max_steps if max_steps is not None else spec_max_steps(decode(spec)),
            step=last_step,
            running=status == "running",
            done=status == "done",
            anchor=None if anchor_time is None else (anchor_time, anchor_step),
            last=None if last_time is None else (last_time, last_batch_step),
            now=now,
        ),
        retracted=retracted_at is not None,
        presumed_usd_micro=presumed,
    )


def with_tags(rows: Rows, runs: tuple[RunSummary, ...]) -> tuple[RunSummary, ...]:
    """The runs of a page, each with its tags (one query for the whole page)."""
    if not runs:
        return runs
    tags: dict[str, dict[str, str]] = {}
    marks = ", ".join("?" * len(runs))
    sql = f"SELECT run_id, key, value FROM view_run_tags WHERE run_id IN ({marks}) ORDER BY run_id, key"
    for run_id, key, value in rows(sql, tuple(run.run_id for run in runs)):
        tags.setdefault(run_id, {})[key] = value
    return tuple(msgspec.structs.replace(run, tags=tags[run.run_id]) if run.run_id in tags else run for run in runs)
