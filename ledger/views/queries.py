"""Reads of the views: RunState, runs, accounts and their audit trail, the registry (series
pages: ledger.views.series).

Every answer is a read model of ledger.views.models, built straight from the rows (the decoders
are in ledger.views.rows). Each method runs a handful of indexed queries, so a RunState costs the
same for a run of a thousand steps or a million, or of a thousand checkpoints. What can grow
without end comes in pages bounded in count and in bytes (PAGE_BYTES_MAX).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

import msgspec

from ledger.domain.limits import EXPIRED_CHECKPOINTS_LISTED, PAGE_BYTES_MAX
from ledger.views.bills import ANY_BILL, BillReads
from ledger.views.charts import ChartReads
from ledger.views.leases import LEASE_ROW, LeaseReads
from ledger.views.models import (
    Account,
    Alias,
    Attempt,
    Checkpoint,
    Family,
    FamilyPage,
    FamilySummary,
    ModelVersion,
    ReservationPage,
    Resume,
    Retirement,
    RunInfo,
    RunPage,
    RunState,
)
from ledger.views.provenance import (
    CHECKPOINT_SELECT,
    DATASET_ROWS,
    PLAN_ROW,
    VERSION_SELECT,
    ProvenanceReads,
    to_version,
)
from ledger.views.provenance import to_checkpoint as to_scored_checkpoint
from ledger.views.reports import REPORT_ROWS, reports_of
from ledger.views.rows import (
    ALIAS_COLUMNS,
    PROMOTION_SELECT,
    RETIREMENT_COLUMNS,
    decode,
    optional_utc_time,
    remaining,
    to_alias,
    to_plan_hold,
    to_promotion,
    to_reservation,
    to_retirement,
    to_spend_totals,
    utc_time,
)
from ledger.views.run_summaries import PRESUMED, RUN_SUMMARY_SELECT, run_summaries
from ledger.views.search.reads import SearchPage, search_runs
from ledger.views.series import SeriesReads

__all__ = ["ViewReader"]


RUN_ROW = (
    "SELECT run_id, run_key, name, status, spec, summary, error, opened_at, finished_at, current_attempt,"
    " last_step FROM view_runs WHERE run_id = ?"
)
ATTEMPT_ROWS = (
    "SELECT number, attempt_id, label, started_at, resumed_from_step, ended FROM view_attempts"
    " WHERE run_id = ? ORDER BY number"
)
SPEND_ROW = f"SELECT a.cap, a.committed, a.pending, a.overrun, {PRESUMED} FROM view_accounts a WHERE a.account = ?"
# An account's latest plan hold (ledger.domain.plans): its row's `actual` counts what was drawn.
PLAN_HOLD_ROW = (
    "SELECT reservation_id, state, amount, actual FROM view_reservations WHERE account = ? AND kind = 'plan'"
    " ORDER BY position DESC LIMIT 1"
)
POSITION_ROW = "SELECT position FROM view_tracking WHERE view = ?"
# A run's checkpoints by the columns that rank them for its best one (ViewReader._best_usable).
SCORED_CHECKPOINTS = (
    "SELECT c.step, c.attempt, m.scores, c.expires_at FROM view_checkpoints c JOIN view_checkpoint_marks m"
    " ON m.run_id = c.run_id AND m.attempt = c.attempt AND m.step = c.step"
    " WHERE c.run_id = ? AND COALESCE(c.superseded, 0) = 0 AND m.deleted_at IS NULL"
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


class ViewReader(SeriesReads, BillReads, ChartReads, ProvenanceReads, LeaseReads):
    """Queries over the view tables; `connect()` gives this thread's connection."""

    def position(self, view: str) -> int:
        row = self._row(POSITION_ROW, (view,))
        return int(row[0]) if row else 0

    # Runs.

    def run_state(self, run_id: str, now: datetime) -> RunState | None:
        """What a resuming trainer needs, or None for an unknown run. Its reads that depend on
        no other go together (one round trip on PostgreSQL: `together`)."""
        moment = now.timestamp()
        with self.together(
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
            ]
        ):
            return self._run_state(run_id, now)

    def _run_state(self, run_id: str, now: datetime) -> RunState | None:
        row = self._row(RUN_ROW, (run_id,))
        if row is None:
            return None
        run_id, run_key, name, status, spec, summary, error, opened_at, finished_at, current, last_step = row
        lease = self._row(LEASE_ROW, (run_id,))
        leased, lease_s, last_seen_at, _, lost_at = lease if lease else (0, None, None, None, None)
        attempts = tuple(
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
            for number, attempt_id, label, started_at, resumed, ended in self._rows(ATTEMPT_ROWS, (run_id,))
        )
        checkpoint, expired, expired_count = self._checkpoints(run_id, now.timestamp())
        objective, retraction, progress = self.plan_parts(
            self.run_plan(run_id), status=status, last_step=last_step, now=now
        )
        best = None if objective is None else self._best_usable(run_id, objective.metric, objective.mode, now)
        spend_row = self._row(SPEND_ROW, (run_id,)) or (None, 0, 0, 0, 0)
        spend = to_spend_totals(
            spend_row, self.bill_totals(run_id, rolled_up=True), to_plan_hold(self._row(PLAN_HOLD_ROW, (run_id,)))
        )
        resume = Resume(
            available=checkpoint is not None,
            from_step=checkpoint.step if checkpoint else 0,
            handle=checkpoint.handle if checkpoint else None,
            sampler_uri=checkpoint.sampler_uri if checkpoint else "",
            spend_committed_usd_micro=spend.committed_usd_micro,
        )
        return RunState(
            run=RunInfo(
                run_id=run_id,
                run_key=run_key,
                name=name,
                status=status,
                spec=decode(spec),
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
            position=self.position("runs"),
            best_checkpoint=best,
            progress=progress,
            datasets=self.datasets(run_id),
            reports=reports_of(self._rows(REPORT_ROWS, (run_id,))),
        )

    def _best_usable(self, run_id: str, metric: str, mode: str, now: datetime) -> Checkpoint | None:
        """The checkpoint ledger.domain.retention.best picks among the run's usable ones (the
        best score on `metric`, ties to the later step, then attempt), ranked from the few
        columns that decide it (scored, not superseded or deleted, then not expired); only the
        chosen one is read whole. A run's checkpoints are still each looked at, but at a fraction
        of building each one's read model."""
        chosen: tuple[float, int, int] | None = None
        for step, attempt, scores, expires_at in self._rows(SCORED_CHECKPOINTS, (run_id,)):
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
                chosen = (score, step, attempt)
        if chosen is None:
            return None
        row = self._row(
            f"{CHECKPOINT_SELECT} WHERE c.run_id = ? AND c.attempt = ? AND c.step = ?", (run_id, chosen[2], chosen[1])
        )
        return to_scored_checkpoint(row, now.timestamp())

    def _checkpoints(self, run_id: str, moment: float) -> tuple[Checkpoint | None, tuple[Checkpoint, ...], int]:
        """The most progressed usable checkpoint (not superseded, deleted or expired), the
        EXPIRED_CHECKPOINTS_LISTED that expired most recently (in step order), and how many expired
        in all; superseded checkpoints are neither. Indexed: the best is found walking down from
        the highest step (past only the expired and deleted ones above it), and only once an index
        seek has shown that a live one exists; the count is an index range."""
        checkpoint = None
        if self._row(LIVE_CHECKPOINT_EXISTS, (run_id, run_id, moment)):
            row = self._row(LATEST_LIVE_CHECKPOINT, (run_id, moment))
            checkpoint = to_scored_checkpoint(row, moment) if row else None
        expired = sorted(
            (
                to_scored_checkpoint(r, moment)
                for r in self._rows(EXPIRED_CHECKPOINTS, (run_id, moment, EXPIRED_CHECKPOINTS_LISTED))
            ),
            key=lambda c: (c.step, c.attempt),
        )
        count = len(expired)
        if count == EXPIRED_CHECKPOINTS_LISTED:
            count = int(self._row(f"SELECT COUNT(*) {_LIVE} AND expires_at <= ?", (run_id, moment))[0])
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
        sql = prefix + RUN_SUMMARY_SELECT
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY r.opened_at DESC, r.run_id DESC LIMIT ?"
        # One more than the page, to know whether another follows.
        rows = self._rows(sql, (*params, limit + 1))
        runs = run_summaries(rows[:limit], now if now is not None else datetime.now(UTC))
        last = rows[limit - 1] if len(rows) > limit else None
        return RunPage(runs=runs, after=None if last is None else (last[5], last[0]))

    def search_runs(self, **search: Any) -> SearchPage:
        """A page of a run search (ledger.views.search.reads.search_runs, its arguments)."""
        return search_runs(self._rows, **search)

    def account(self, name: str) -> Account | None:
        row = self._row(
            f"SELECT a.account, a.parent, a.cap, a.committed, a.pending, a.overrun, {PRESUMED}"
            " FROM view_accounts a WHERE a.account = ?",
            (name,),
        )
        if row is None:
            return None
        account, parent, cap, committed, pending, overrun, presumed = row
        return Account(
            account=account,
            parent=parent or "",
            cap_usd_micro=cap,
            committed_usd_micro=committed,
            pending_usd_micro=pending,
            remaining_usd_micro=remaining(cap, committed + presumed, pending),
            overrun_usd_micro=overrun,
            bill=self.bill_totals(account, rolled_up=True),
            plan=to_plan_hold(self._row(PLAN_HOLD_ROW, (account,))),
            presumed_usd_micro=presumed,
        )

    def reservations(self, account: str, *, limit: int, after_position: int = 0) -> ReservationPage:
        """Up to `limit` entries of the account's audit trail in log order (reservations, refusals
        and charges) after `after_position`."""
        rows = self._rows(
            "SELECT reservation_id, kind, state, amount, actual, overrun, basis, actual_basis, reason, attempt,"
            " reserved_at, settled_at, expires_at, position FROM view_reservations WHERE account = ?"
            " AND position > ? ORDER BY position LIMIT ?",
            (account, after_position, limit),
        )
        reservations = tuple(to_reservation(row) for row in rows)
        # A full page may be followed by an empty one.
        return ReservationPage(
            reservations=reservations, after_position=reservations[-1].position if len(rows) == limit else None
        )

    def holds_pending(self) -> tuple[int, int]:
        """How many holds are pending and their amount in micro-dollars."""
        row = self._row("SELECT COUNT(*), COALESCE(SUM(amount), 0) FROM view_reservations WHERE state = 'pending'")
        return (int(row[0]), int(row[1])) if row is not None else (0, 0)

    def accounts_with_overdue_holds(self, now: datetime) -> list[str]:
        return [
            r[0]
            for r in self._rows(
                "SELECT DISTINCT account FROM view_reservations WHERE state = 'pending' AND expires_at <= ?",
                (now.timestamp(),),
            )
        ]

    # Registry.

    def family(self, family: str) -> Family | None:
        """A family with all its versions and its whole history, or None if unknown."""
        row = self._row("SELECT current FROM view_families WHERE family = ?", (family,))
        if row is None:
            return None
        aliases, retired = self._family_marks(family)
        versions = _aliased(
            (to_version(r) for r in self._rows(f"{VERSION_SELECT} WHERE v.family = ? ORDER BY v.version", (family,))),
            aliases,
        )
        history = tuple(
            to_promotion(r) for r in self._rows(f"{PROMOTION_SELECT} WHERE p.family = ? ORDER BY p.position", (family,))
        )
        return Family(
            family=family, current=row[0] or 0, versions=versions, history=history, aliases=aliases, retired=retired
        )

    def _family_marks(self, family: str) -> tuple[tuple[Alias, ...], Retirement | None]:
        """A family's aliases (by name) and its retirement, if any."""
        aliases = tuple(
            to_alias(r)
            for r in self._rows(f"SELECT {ALIAS_COLUMNS} FROM view_aliases WHERE family = ? ORDER BY alias", (family,))
        )
        retired = self._row(f"SELECT {RETIREMENT_COLUMNS} FROM view_retirements WHERE family = ?", (family,))
        return aliases, None if retired is None else to_retirement(retired)

    def family_page(
        self, family: str, *, after_version: int = 0, after_position: int = 0, limit: int
    ) -> FamilyPage | None:
        """A page of a family: versions after `after_version` and history (promotions) after
        `after_position`, each list at most `limit` long and the page within about
        PAGE_BYTES_MAX on the wire (documents counted at six times their JSON, what a Struct of
        small numbers takes at most), holding at least one item while any is left. None if the
        family is unknown."""
        row = self._row("SELECT current FROM view_families WHERE family = ?", (family,))
        if row is None:
            return None
        versions, more_versions, used = self._bounded(
            f"{VERSION_SELECT} WHERE v.family = ? AND v.version > ? ORDER BY v.version LIMIT ?",
            (family, after_version, limit + 1),
            limit,
            0,
            lambda r: 64 + len(r[2]) + len(r[3]) + len(r[4] or "") + 6 * len(r[6]),
        )
        history, more_history, _ = self._bounded(
            f"{PROMOTION_SELECT} WHERE p.family = ? AND p.position > ? ORDER BY p.position LIMIT ?",
            (family, after_position, limit + 1),
            limit,
            used,
            lambda r: 64 + 6 * len(r[3]) + len(r[4] or "") + len(r[6] or ""),
        )
        aliases, retired = self._family_marks(family)
        return FamilyPage(
            family=family,
            current=row[0] or 0,
            versions=_aliased((to_version(r) for r in versions), aliases),
            history=tuple(to_promotion(r) for r in history),
            more=more_versions or more_history,
            aliases=aliases,
            retired=retired,
        )

    def _bounded(
        self, sql: str, params: tuple[Any, ...], limit: int, used: int, size_of: Callable[[Any], int]
    ) -> tuple[list[Any], bool, int]:
        """Rows of `sql` (which selects limit + 1) while they fit in PAGE_BYTES_MAX after `used`
        bytes (the first row always, when nothing was used): (rows, whether more are left, bytes
        used). Rows are streamed, so a page of large rows reads no more of them than it holds."""
        rows: list[Any] = []
        cursor = self.connect().cursor()
        try:
            for row in cursor.execute(sql, params):
                size = size_of(row)
                if len(rows) == limit or (used + size > PAGE_BYTES_MAX and (rows or used)):
                    return rows, True, used
                rows.append(row)
                used += size
        finally:
            cursor.close()
        return rows, False, used

    def families(self, *, after: str = "", limit: int | None = None) -> list[FamilySummary]:
        """Families by name after `after`, at most `limit` of them (all when None)."""
        sql = (
            "SELECT f.family, f.current, (SELECT COUNT(*) FROM view_versions v WHERE v.family = f.family),"
            " (SELECT COUNT(*) FROM view_retirements r WHERE r.family = f.family)"
            " FROM view_families f WHERE f.family > ? ORDER BY f.family"
        )
        params: tuple[Any, ...] = (after,)
        if limit is not None:
            sql += " LIMIT ?"
            params = (after, limit)
        return [
            FamilySummary(family=family, current=current or 0, version_count=count, retired=bool(retired))
            for family, current, count, retired in self._rows(sql, params)
        ]


def _aliased(versions: Iterable[ModelVersion], aliases: tuple[Alias, ...]) -> tuple[ModelVersion, ...]:
    """The versions, each with the names of the aliases that name it."""
    return tuple(
        msgspec.structs.replace(v, aliases=tuple(a.alias for a in aliases if a.version == v.version)) for v in versions
    )
