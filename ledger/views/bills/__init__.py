"""The bill view: providers' bill lines (schema, handlers) and the reconciliation of what the
trainers committed with what the providers billed (figures, reads).

Attribution. A bill line belongs to the run its run id names, when the ledger knows that run; else
to the run linked to its session (Runs.LinkSession); else to the account its account names, when
the ledger knows it; else to no one: unattributed, billed spend no run accounted for. Attribution
is decided when the views are read, so a run opened or linked after its bill was recorded takes
its lines from then on, and every replica answers alike.

Figures, per account a line or a commit belongs to directly (a run's own account is named by its
run id), all integer micro-dollars:

- estimated: what the trainers committed there (commits and charges; adjustments excluded);
- billed: the current amounts of its lines (a restatement replaces the amount it restates);
- the time a bill covers: up to its provider's cost_data_through, or, without one, the end of the
  provider's last billed interval (the earliest of these over the providers billing the account);
- pending bill: the estimate after that time (hours whose end is past it): the bill is to come;
- provisional: billed amounts of lines that end after it (rate-card estimates that may change);
- drift: billed minus estimated over the covered time (billed - provisional - (estimated -
  pending)), and as a percentage of that estimate; flagged when its magnitude is above the
  threshold (5% by default), or when there is billed spend against no estimate at all;
- adjusted: the adjustments recorded (spend reconcile --adjust); unadjusted: drift - adjusted,
  what an adjustment would record now (with no line left, -adjusted: the adjustment of lines that
  went to a run opened or linked since is taken back).

An account's row rolls up its own figures and those of every account under it. Tokens are
compared by class (train, prefill, sample) where the lines give quantities of that class: the
tokens in the commits' cost bases over the covered time against the tokens of the lines that are
not provisional. The commits
are counted by the hour they were recorded in (view_spend_hours), so a bill that covers a time
within an hour counts that hour as not covered yet.
"""

from __future__ import annotations

from ledger.views.bills.figures import DEFAULT_THRESHOLD_PERCENT, Figures, totals

__all__ = ["DEFAULT_THRESHOLD_PERCENT", "Figures", "totals"]
