"""What the CLI's commands and the dashboard print for people, whichever way they read.

A command reads through a server (services.cli.remote: clients.models) or a database file
(services.cli.local: ledger.views.models); both models carry the same field names, so each text here
takes either (typed `Any`) and prints the same thing. Amounts are dollars (tables.usd), times UTC
with their zone (tables.when), run statuses as people read them (runs.status_text).

One module a subject, each imported where it is used: runs (the runs list, `runs show`), spend
(accounts, caps, plan holds), checkpoints (a checkpoint's state, retention plans, prunes),
registry (families, versions, verdicts), verdict (a run's reports on whether training worked)
and tables (tables, fields, dollars, times, JSON). The dashboard's names are kept here too.
"""

from __future__ import annotations

from services.render.checkpoints import checkpoint_state, scores_text
from services.render.runs import progress_text, report_verdict, status_text
from services.render.spend import plan_hold_text

__all__ = ["checkpoint_state", "plan_hold_text", "progress_text", "report_verdict", "scores_text", "status_text"]
