"""The schema of the views: every table, its columns, keys and indexes, and the view that owns it,
assembled from the tables each view declares beside its handlers.

The views, each with its own tracking position so each can be dropped and rebuilt alone:
- runs: runs, attempts and checkpoints (everything resume needs), and the lease of each run's
  current attempt (ledger.views.runs);
- series: one row per recorded batch of steps (its columns stay in its event, read by position),
  superseded ones marked (ledger.views.series);
- chart: the min/max rollup of every metric of a run over buckets of 64, 512, 4,096 and 32,768
  steps, per attempt, which charts and metric stats read at any length (ledger.views.series);
- spend: accounts and every reservation, refusal and charge (the audit trail), and what the
  ledger presumed spent for abandoned holds, per account (ledger.views.spend);
- registry: families, versions, the promotion history (refused promotions too), aliases and
  retirements (ledger.views.registry);
- bill: providers' bill lines, the sessions runs are linked to, and the spend the trainers
  committed by hour and token class, which a bill is compared with (ledger.views.bills);
- provenance: each run's objective, plan, retraction and progress anchors, its checkpoints'
  scores and deletions, its datasets, the registry versions made from its checkpoints
  (ledger.views.provenance);
- reports: each run's latest holdout, delta and notes (ledger.views.reports);
- search: what a run search compares, indexed: spec, summary and tag values and each metric's
  last, least and greatest value (its tables: ledger.views.search.tables);
- lineage: which run started from which run's checkpoint, indexed both ways
  (ledger.views.provenance.lineage).
A view added later is built from the log when a ledger written before it is opened.
The schema is declared once; each storage backend makes its CREATE statements from it (column
types from the Python types), and adds the indexes declared after a database was made when it
opens one. The order of TABLES is the order a check of the views compares them in.
"""

from __future__ import annotations

from ledger.views.bills.schema import BILL_TABLES
from ledger.views.handling import NAMES_TABLES
from ledger.views.provenance.lineage import LINEAGE_TABLES
from ledger.views.provenance.schema import PROVENANCE_TABLES
from ledger.views.registry.schema import REGISTRY_TABLES
from ledger.views.reports import REPORTS_TABLES
from ledger.views.runs.schema import RUNS_TABLES
from ledger.views.search.tables import SEARCH_TABLES
from ledger.views.series.schema import CHART_TABLES, SERIES_TABLES
from ledger.views.spend.schema import SPEND_TABLES
from ledger.views.store import Table

__all__ = ["TABLES", "VIEWS", "Table"]

VIEWS = ("runs", "series", "spend", "registry", "bill", "chart", "provenance", "reports", "search", "lineage")

TABLES: dict[str, Table] = {
    **RUNS_TABLES,
    **SERIES_TABLES,
    **CHART_TABLES,
    **SPEND_TABLES,
    **BILL_TABLES,
    **NAMES_TABLES,
    **REGISTRY_TABLES,
    **PROVENANCE_TABLES,
    **REPORTS_TABLES,
    **SEARCH_TABLES,
    **LINEAGE_TABLES,
}
