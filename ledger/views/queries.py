"""The reads of the views, as the application calls them: `ViewReader`, one object over every
view's reads.

Each view reads its own tables (ledger.views.runs.reads, spend.reads, bills.reads,
registry.reads, provenance.reads, series.pages and series.charts, runs.leases); each reader is
given the one `Query` runner (ledger.views.store) and the other readers it asks (a run's state
asks the provenance and bills readers). ViewReader builds them and names their methods. Every
answer is a read model of ledger.views.models; what can grow without end comes in pages bounded in
count and in bytes (PAGE_BYTES_MAX).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from ledger.views.bills.reads import BillReads
from ledger.views.provenance.reads import ProvenanceReads
from ledger.views.registry.reads import RegistryReads
from ledger.views.runs.leases import LeaseReads
from ledger.views.runs.reads import RunViewReads
from ledger.views.search.reads import SEARCH_READ_S, run_fields, search_runs
from ledger.views.series.charts import ChartReads
from ledger.views.series.pages import SeriesReads
from ledger.views.spend.reads import SpendReads
from ledger.views.store import Query, ReadConnection, tracking_position

__all__ = ["ViewReader"]


class ViewReader:
    """Every read of the views over `connect()` (this thread's connection). `events_table` and
    `events_position` name the log's table and its position column as that connection sees them
    (see Query); `byte_order` is its clause for comparing text in byte order (Storage.byte_order)."""

    def __init__(
        self,
        connect: Callable[[], ReadConnection],
        *,
        events_table: str = "stored_events",
        events_position: str = "rowid",
        byte_order: str = "",
    ) -> None:
        self.connect = connect
        self.query = query = Query(connect, events_table=events_table, events_position=events_position)
        self.together = query.together
        bills = BillReads(query)
        self.bill_totals = bills.bill_totals
        self.reconcile = bills.reconcile
        self.adjust_targets = bills.adjust_targets
        self.spend_hours = bills.spend_hours
        provenance = ProvenanceReads(query)
        self.run_plan = provenance.run_plan
        self.plan_parts = provenance.plan_parts
        self.datasets = provenance.datasets
        self.run_checkpoints = provenance.run_checkpoints
        self.registered_points = provenance.registered_points
        self.best_checkpoint = provenance.best_checkpoint
        self.prune_page = provenance.prune_page
        self.protected_page = provenance.protected_page
        runs = RunViewReads(query, provenance, bills)
        self.run_state = runs.run_state
        self.list_runs = runs.list_runs
        self.checkpoints = runs.checkpoints
        self.children_opened = runs.lineage.opened_since
        self.lapsed_leases = LeaseReads(query).lapsed_leases
        spend = SpendReads(query, bills)
        self.account = spend.account
        self.reservations = spend.reservations
        self.latest_holds = spend.latest_holds
        self.holds_pending = spend.holds_pending
        self.accounts_with_overdue_holds = spend.accounts_with_overdue_holds
        self.account_tree = spend.account_tree
        registry = RegistryReads(query)
        self.family = registry.family
        self.family_page = registry.family_page
        self.families = registry.families
        self.series = SeriesReads(query).series
        charts = ChartReads(query)
        self.chart = charts.chart
        self.metric_stats = charts.metric_stats
        bounded = functools.partial(query.bounded_rows, limit_s=SEARCH_READ_S)
        self.search_runs = functools.partial(search_runs, bounded, collate=byte_order)
        self.run_fields = functools.partial(run_fields, query.rows)

    def position(self, view: str) -> int:
        """The position `view` has projected up to, as committed."""
        return tracking_position(self.query, view)
