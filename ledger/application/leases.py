"""Leases: the heartbeat of an idle attempt, and the sweep that records lapsed leases.

The sweep finds the runs whose current attempt's lease has lapsed in the runs view, then decides
on each run's aggregate (the view only nominates): it records the attempt and the run lost
(Run.AttemptLost) and settles the attempt's pending holds (ledger.domain.abandoned, ATTEMPT_LOST)
in one transaction. Several server processes over one PostgreSQL database each sweep: a second
process's write of the same loss clashes on the run's version, decides again on the fresh run,
finds it lost already and records nothing, so exactly one AttemptLost is appended.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from ledger.application.commands import Heartbeat
from ledger.application.context import Context
from ledger.application.outcomes import Receipt
from ledger.domain import abandoned, leases, plans
from ledger.domain.base import Audit, LedgerAggregate
from ledger.domain.errors import Refused
from ledger.domain.reasons import Reason
from ledger.domain.runs import Run

__all__ = ["LeaseCommands", "SWEEP_RUNS_MAX", "check_hold_attempt", "last_seen_of", "run_of"]

# The most runs one sweep records lost (the next sweep takes the rest).
SWEEP_RUNS_MAX = 1_000


class LeaseCommands(Context):
    """The heartbeat and the lease sweep."""

    def heartbeat(self, *, run_id: str, attempt: int, principal: str = "", request_id: str = "") -> Receipt:
        """Renew the lease of the run's current attempt (recorded only when nothing renewed it in
        the last heartbeat period, trainledger.leases); a lost attempt is running again. Refused
        as a write of the attempt would be (ATTEMPT_SUPERSEDED, RUN_FINISHED, RUN_RETRACTED)."""
        Heartbeat(run_id=run_id, attempt=attempt)
        audit = self.writer.audit(principal, request_id)

        return self.write_on_run(run_id, lambda run: leases.heartbeat(run, audit, attempt=attempt))

    def sweep_leases(self, *, principal: str = "ledger", request_id: str = "") -> int:
        """Record lost every run whose current attempt's lease has lapsed, settling that attempt's
        pending holds. Returns how many runs this call recorded lost."""
        now = self.writer.clock()
        # The lapsed leases are found in the runs view: let it reflect every write first.
        self.reader.wait(self.reader.head())
        audit = Audit(principal, request_id, now)
        lost = 0
        for run_id in self.reader.views.lapsed_leases(now, SWEEP_RUNS_MAX):

            def decide(touched: list[LedgerAggregate], run_id: str = run_id) -> int | None:
                uuid, run = self.aggregates.run(run_id)
                touched.append(run)
                number = leases.lapse(run, audit)
                if number is None:
                    return None  # Renewed meanwhile, or another process recorded it.
                spend_account, parents = self.aggregates.with_parents(str(uuid), touched)
                abandoned.settle_attempts(
                    spend_account,
                    parents,
                    audit,
                    below=number + 1,
                    reason=abandoned.LOST,
                    last_seen=lambda n: leases.last_seen(run, n),
                )
                # The plan left undrawn holds the cap for nobody: released, as a fenced-off one is.
                plans.release_plan(spend_account, parents, audit, reason=plans.LOST, before_attempt=number + 1)
                return number

            number, _ = self.writer.write(decide)
            lost += number is not None
        return lost


def run_of(repository: Any, account: str) -> Run | None:
    """The run whose account is `account` (None for an account of no run)."""
    try:
        found = repository.get(UUID(account))
    except (ValueError, AggregateNotFoundError):
        return None
    return found if isinstance(found, Run) else None


def last_seen_of(repository: Any, account: str) -> abandoned.LastSeen | None:
    """The last signs of life of the attempts of the run whose account is `account` (None for an
    account of no run): what settles its expired GPU-time holds pro rata."""
    run = run_of(repository, account)
    if run is None:
        return None
    return lambda number: leases.last_seen(run, number)


def check_hold_attempt(repository: Any, account: str, attempt: int) -> None:
    """A new hold or plan on a run's account for an attempt that a later one fenced off is
    refused (ATTEMPT_SUPERSEDED), as its other writes are: its heartbeats are refused, so the
    hold would be settled against a sign of life it can no longer leave."""
    run = run_of(repository, account) if attempt > 0 else None
    if run is not None and attempt < run.current_attempt:
        raise Refused(
            f"attempt {attempt} is superseded by attempt {run.current_attempt}",
            reason=Reason.ATTEMPT_SUPERSEDED,
            attempt=attempt,
            current_attempt=run.current_attempt,
        )
