"""The ledger application: commands in, events and log positions out; reads from the views.

`Ledger` is an eventsourcing Application over one of two backends that ledger.backend chooses:
SQLite (the embedded default: one file holds events and views) or PostgreSQL. It is composed of
the bounded contexts, each written over the write kernel (ledger.application.kernel): runs,
spend, registry, bills and reads. Every command validates its arguments (ledger.application.commands),
loads the aggregates it touches from the in-process cache, lets them decide, and saves their new
events atomically. It answers with the global position of what it recorded, or of what an
identical earlier request recorded (a retry is a no-op).
"""

from __future__ import annotations

from ledger.application.bills import BillCommands
from ledger.application.integrity import Integrity
from ledger.application.kernel import Receipt, utc_now
from ledger.application.leases import LeaseCommands
from ledger.application.plans import PlanCommands
from ledger.application.registry import RegistryCommands
from ledger.application.runs import RunCommands
from ledger.application.spend import SpendCommands
from ledger.application.tokens import TokenCommands

__all__ = ["Ledger", "Receipt", "utc_now"]


class Ledger(
    RunCommands, SpendCommands, PlanCommands, LeaseCommands, RegistryCommands, TokenCommands, BillCommands, Integrity
):
    """The training ledger. Use `Ledger.open(path_or_url)`; close it when done."""

    # The application's name prefixes its settings in the environment (TRAINLEDGER_...); every
    # subclass of an eventsourcing Application would otherwise be named after its class.
    name = "trainledger"
