"""Every RPC of trainledger.v1 as a client method: the methods of the four services (Runs, Spend,
Registry, Events) on one Transport, the base of LedgerClient and AsyncLedgerClient."""

from __future__ import annotations

from clients.methods_events import EventsMethods
from clients.methods_registry import RegistryMethods
from clients.methods_runs import RunsMethods
from clients.methods_spend import SpendMethods
from clients.methods_tags import TagsMethods

__all__ = ["LedgerMethods"]


class LedgerMethods(RunsMethods, SpendMethods, RegistryMethods, EventsMethods, TagsMethods):
    """Every RPC of trainledger.v1 as a keyword-only method; see the .proto files for the fields."""
