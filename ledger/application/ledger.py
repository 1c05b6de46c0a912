"""The ledger application: commands in, events and log positions out; reads from the views.

`Ledger` is an eventsourcing Application over one of two backends that ledger.backend chooses:
SQLite (the embedded default: one file holds events and views) or PostgreSQL. It composes the
bounded contexts of the application, each given the writer and the reader of its kernel
(ledger.application.kernel): runs, spend, plans, leases, registry, tokens, bills, integrity and
the reads. Every command validates its arguments (ledger.application.commands), loads the
aggregates it touches from the in-process cache, lets them decide, and saves their new events
atomically. It answers with the global position of what it recorded, or of what an identical
earlier request recorded (a retry is a no-op).

Its methods are the contexts' own, reached through `ledger.open_run(...)` as before: each is a
`Delegated` attribute that hands the call to the context that holds it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, overload

from ledger.application.bills import BillCommands
from ledger.application.integrity import Integrity
from ledger.application.kernel import Kernel
from ledger.application.leases import LeaseCommands
from ledger.application.outcomes import Receipt, utc_now
from ledger.application.plans import PlanCommands
from ledger.application.reads import Reads
from ledger.application.registry import RegistryCommands
from ledger.application.run_reads import RunReads
from ledger.application.run_records import RunRecords
from ledger.application.runs import RunCommands
from ledger.application.spend import SpendCommands
from ledger.application.tokens import TokenCommands

__all__ = ["Delegated", "Ledger", "Receipt", "utc_now"]

C = TypeVar("C")
P = ParamSpec("P")
T = TypeVar("T")


class Delegated(Generic[C, P, T]):
    """A method of the ledger that is the method of one of its contexts: `context` names the
    ledger's attribute that holds the context, `method` is the context's method (its signature
    and docstring are the ledger's)."""

    def __init__(self, context: str, method: Callable[Concatenate[C, P], T]) -> None:
        self.context = context
        self.method = method
        self.__doc__ = method.__doc__
        self.__name__ = method.__name__

    @overload
    def __get__(self, ledger: None, owner: type[Any]) -> Self: ...

    @overload
    def __get__(self, ledger: object, owner: type[Any]) -> Callable[P, T]: ...

    def __get__(self, ledger: object | None, owner: type[Any]) -> Self | Callable[P, T]:
        if ledger is None:
            return self
        bound: Callable[P, T] = getattr(getattr(ledger, self.context), self.method.__name__)
        return bound


class Ledger(Kernel):
    """The training ledger. Use `Ledger.open(path_or_url)`; close it when done."""

    # The application's name prefixes its settings in the environment (TRAINLEDGER_...); every
    # subclass of an eventsourcing Application would otherwise be named after its class.
    name = "trainledger"

    def __init__(
        self, env: dict[str, str] | None = None, *, clock: Callable[[], datetime] = utc_now, project: bool = True
    ) -> None:
        super().__init__(env, clock=clock, project=project)
        writer, reader = self.writer, self.reader
        self.runs = RunCommands(writer, reader)
        self.records = RunRecords(writer, reader)
        self.spend = SpendCommands(writer, reader)
        self.plans = PlanCommands(writer, reader)
        self.leases = LeaseCommands(writer, reader)
        self.registry = RegistryCommands(writer, reader)
        self.tokens = TokenCommands(writer, reader)
        self.bills = BillCommands(writer, reader)
        self.integrity = Integrity(writer, reader, events=self.events, snapshots=self.snapshots)
        self.run_reads = RunReads(reader)

    # Runs.
    open_run = Delegated("runs", RunCommands.open_run)
    start_attempt = Delegated("runs", RunCommands.start_attempt)
    finish_run = Delegated("runs", RunCommands.finish_run)
    retract_run = Delegated("runs", RunCommands.retract_run)
    append_steps = Delegated("records", RunRecords.append_steps)
    append_steps_all = Delegated("records", RunRecords.append_steps_all)
    save_checkpoint = Delegated("records", RunRecords.save_checkpoint)
    delete_checkpoint = Delegated("records", RunRecords.delete_checkpoint)
    note_summary = Delegated("records", RunRecords.note_summary)
    set_tags = Delegated("records", RunRecords.set_tags)
    record_report = Delegated("records", RunRecords.record_report)
    record_dataset = Delegated("records", RunRecords.record_dataset)
    # Leases.
    heartbeat = Delegated("leases", LeaseCommands.heartbeat)
    sweep_leases = Delegated("leases", LeaseCommands.sweep_leases)
    # Spend and plans.
    open_account = Delegated("spend", SpendCommands.open_account)
    set_cap = Delegated("spend", SpendCommands.set_cap)
    reserve = Delegated("spend", SpendCommands.reserve)
    commit = Delegated("spend", SpendCommands.commit)
    release = Delegated("spend", SpendCommands.release)
    charge = Delegated("spend", SpendCommands.charge)
    expire_reservations = Delegated("spend", SpendCommands.expire_reservations)
    account_now = Delegated("spend", SpendCommands.account_now)
    reserve_plan = Delegated("plans", PlanCommands.reserve_plan)
    # Registry.
    protected_states = Delegated("registry", RegistryCommands.protected_states)
    register = Delegated("registry", RegistryCommands.register)
    promote = Delegated("registry", RegistryCommands.promote)
    rollback = Delegated("registry", RegistryCommands.rollback)
    move_alias = Delegated("registry", RegistryCommands.move_alias)
    retire_family = Delegated("registry", RegistryCommands.retire_family)
    # Tokens.
    issue_token = Delegated("tokens", TokenCommands.issue_token)
    revoke_token = Delegated("tokens", TokenCommands.revoke_token)
    token_book = Delegated("tokens", TokenCommands.token_book)
    account_within = Delegated("tokens", TokenCommands.account_within)
    run_within = Delegated("tokens", TokenCommands.run_within)
    opening_within = Delegated("tokens", TokenCommands.opening_within)
    # Bills.
    record_billed_usage = Delegated("bills", BillCommands.record_billed_usage)
    link_session = Delegated("bills", BillCommands.link_session)
    reconcile = Delegated("bills", BillCommands.reconcile)
    adjust_to_bill = Delegated("bills", BillCommands.adjust_to_bill)
    # Integrity.
    chain_head = Delegated("integrity", Integrity.chain_head)
    verify = Delegated("integrity", Integrity.verify)
    chain_tail_break = Delegated("integrity", Integrity.chain_tail_break)
    seal_log = Delegated("integrity", Integrity.seal_log)
    read_events = Delegated("integrity", Integrity.read_events)
    # Reads.
    wait = Delegated("reader", Reads.wait)
    head = Delegated("reader", Reads.head)
    check = Delegated("reader", Reads.check)
    spend_hours = Delegated("reader", Reads.spend_hours)
    account_tree = Delegated("reader", Reads.account_tree)
    account = Delegated("reader", Reads.account)
    reservations = Delegated("reader", Reads.reservations)
    latest_holds = Delegated("reader", Reads.latest_holds)
    family = Delegated("reader", Reads.family)
    families = Delegated("reader", Reads.families)
    run_state = Delegated("run_reads", RunReads.run_state)
    children_opened = Delegated("run_reads", RunReads.children_opened)
    run_fields = Delegated("run_reads", RunReads.run_fields)
    metric_stats = Delegated("run_reads", RunReads.metric_stats)
    chart = Delegated("run_reads", RunReads.chart)
    checkpoints = Delegated("run_reads", RunReads.checkpoints)
    best_checkpoint = Delegated("run_reads", RunReads.best_checkpoint)
    plan_prune = Delegated("run_reads", RunReads.plan_prune)
    series = Delegated("run_reads", RunReads.series)
    list_runs = Delegated("run_reads", RunReads.list_runs)
    search_runs = Delegated("run_reads", RunReads.search_runs)
