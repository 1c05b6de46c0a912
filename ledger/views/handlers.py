"""The views' handlers, assembled: for each view, the handler of each event class it projects.

Each view keeps its tables and its handlers together (ledger.views.runs, series, spend, bills,
registry, provenance, reports, search); this module only gathers them, in ledger.views.schema.VIEWS'
names. How handlers are typed and applied (gathered ones included) is ledger.views.handling.
"""

from __future__ import annotations

from ledger.views.bills.handlers import bill_handlers
from ledger.views.handling import Names, ViewHandlers
from ledger.views.provenance.handlers import provenance_handlers
from ledger.views.provenance.lineage import lineage_handlers
from ledger.views.registry.handlers import registry_handlers
from ledger.views.reports import reports_handlers
from ledger.views.runs.handlers import runs_handlers
from ledger.views.search.tables import search_handlers
from ledger.views.series.handlers import chart_handlers, series_handlers
from ledger.views.spend.handlers import spend_handlers

__all__ = ["handlers"]


def handlers(names: Names) -> dict[str, ViewHandlers]:
    """view -> event class -> handler(cursor, event, position); account, family and provider names
    are recorded in and looked up through `names`."""
    return {
        "runs": runs_handlers(),
        "series": series_handlers(),
        "chart": chart_handlers(),
        "spend": spend_handlers(names),
        "bill": bill_handlers(names),
        "registry": registry_handlers(names),
        "provenance": provenance_handlers(names),
        "reports": reports_handlers(),
        "search": search_handlers(),
        "lineage": lineage_handlers(),
    }
