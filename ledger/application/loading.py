"""Loading the aggregates commands decide on, from the application's repository and its cache.

`Aggregates` finds a run, an account (with the parents above it) or a family by the name a
request gives, NotFound when it is unknown or names another kind of aggregate; keeps the cache
in step with what a group commit saved or undid (`evict`, `cache_created`); and recalls the ids
that have left an aggregate's window from the keys index (ledger.storage.keys).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Repository
from eventsourcing.persistence import ApplicationRecorder, Mapper

from ledger.domain.accounts import Account, Recall
from ledger.domain.base import LedgerAggregate, ledger_id
from ledger.domain.entries import SpendEntry
from ledger.domain.errors import Invalid, NotFound
from ledger.domain.limits import PARENT_DEPTH_MAX, check_reference
from ledger.domain.reasons import Reason
from ledger.domain.registry import Family
from ledger.domain.run_steps import RecallBatch
from ledger.domain.runs import Run
from ledger.storage.base import Storage
from ledger.storage.keys import batch_key, spend_key

__all__ = ["Aggregates", "scratch_account"]

A = TypeVar("A", bound=LedgerAggregate)


class Aggregates:
    """The aggregates of the ledger, as commands load them."""

    def __init__(
        self, repository: Repository[UUID], recorder: ApplicationRecorder, mapper: Mapper[UUID], storage: Storage
    ) -> None:
        self.repository = repository
        self.recorder = recorder
        self.mapper = mapper
        self.storage = storage

    def get(self, aggregate_id: UUID) -> Any:
        """The aggregate `aggregate_id`, of whatever kind; raises AggregateNotFoundError."""
        return self.repository.get(aggregate_id)

    def load(self, aggregate_id: UUID, kind: type[A], what: str, reason: Reason, key: str) -> A:
        """The aggregate `aggregate_id` if it is a `kind`; an unknown id, or the id of another kind
        of aggregate (a run id that is really an account's uuid), is NotFound."""
        aggregate: object = None
        try:
            aggregate = self.repository.get(aggregate_id)
        except AggregateNotFoundError:
            pass
        if not isinstance(aggregate, kind):
            raise NotFound(f"no {what} {key}", reason=reason, **{what: key})
        return aggregate

    def run(self, run_id: str) -> tuple[UUID, Run]:
        check_reference(run_id, "run_id")
        try:
            uuid = UUID(run_id)
        except ValueError:
            raise NotFound(f"no run {run_id}", reason=Reason.RUN_NOT_FOUND, run_id=run_id) from None
        return uuid, self.load(uuid, Run, "run", Reason.RUN_NOT_FOUND, run_id)

    def account(self, name: str) -> Account:
        check_reference(name, "account")
        return self.load(ledger_id("account", name), Account, "account", Reason.ACCOUNT_NOT_FOUND, name)

    def family(self, name: str) -> Family:
        check_reference(name, "family")
        return self.load(ledger_id("family", name), Family, "family", Reason.FAMILY_NOT_FOUND, name)

    def parents(self, parent: str, touched: list[LedgerAggregate]) -> list[Account]:
        """The account `parent` and every account above it, nearest first (none for "")."""
        found: list[Account] = []
        while parent:
            if len(found) >= PARENT_DEPTH_MAX:
                raise Invalid("accounts nest too deeply", reason=Reason.PARENT_TOO_DEEP)
            account = self.account(parent)
            touched.append(account)
            found.append(account)
            parent = account.parent
        return found

    def with_parents(self, name: str, touched: list[LedgerAggregate]) -> tuple[Account, list[Account]]:
        """The account `name` and the accounts above it: what a command on spend decides on."""
        account = self.account(name)
        touched.append(account)
        return account, self.parents(account.parent, touched)

    # The cache, kept in step with the group commit.

    def evict(self, aggregates: Sequence[LedgerAggregate]) -> None:
        cache = self.repository.cache
        if cache is None:
            return
        for aggregate in aggregates:
            try:
                cache.get(aggregate.id, evict=True)
            except KeyError:
                pass

    def cache_created(self, touched: list[LedgerAggregate]) -> None:
        # An aggregate created in a group is found by the commands after it in the same group.
        cache = self.repository.cache
        if cache is not None:
            for aggregate in touched:
                if aggregate.version == len(aggregate.pending_events):
                    cache.put(aggregate.id, aggregate)

    # Recalling ids that have left an aggregate's window (ledger.storage.keys).

    def _recalled_events(self, aggregate_id: UUID, key: str) -> list[Any]:
        """The stored events of an aggregate that used `key`, oldest first."""
        events = []
        for version in self.storage.key_versions(aggregate_id, key):
            for stored in self.recorder.select_events(aggregate_id, gt=version - 1, lte=version):
                events.append(self.mapper.to_domain_event(stored))
        return events

    def recall_spend(self, account: Account) -> Recall:
        """Recalls the entry of a reservation or charge id that has left the account's window,
        by folding the events that used it into an empty account."""

        def recall(entry_id: str) -> SpendEntry | None:
            events = self._recalled_events(account.id, spend_key(entry_id))
            if not events:
                return None
            scratch = scratch_account()
            for event in events:
                event.apply(scratch)
            return scratch.entry(entry_id)

        return recall

    def recall_batch(self, run: Run) -> RecallBatch:
        def recall(attempt: int, first: int, last: int) -> tuple[str, int] | None:
            events = self._recalled_events(run.id, batch_key(attempt, first, last))
            return (events[0].digest, events[0].originator_version) if events else None

        return recall


def scratch_account() -> Account:
    """An empty account, to fold the recalled events of one id into (ledger.storage.keys): its
    settled window is unbounded, so the recalled entry stays in it."""
    account = Account.__new__(Account)
    account.__dict__.update(
        name="",
        parent="",
        cap=None,
        committed=0,
        pending=0,
        overrun=0,
        presumed=0,
        holds={},
        settled={},
        evicted=0,
        adjusted=0,
        window_max=float("inf"),
    )
    return account
