"""Where each event type is stored: its topics, the current one and those it was stored under.

Events are stored under the topic of their class ("module:Qualname"). The aggregates once lived
in ledger.runs, ledger.accounts and ledger.registry; LEGACY_MODULES keeps those stored topics
resolving to the classes where they live now, so a ledger written then stays readable, and
`event_topics` names both, so a filter by type finds old events and new ones.
"""

from __future__ import annotations

from types import ModuleType

from eventsourcing.utils import get_topic, register_topic

from ledger.domain import accounts, bills, registry, runs, seals, tokens
from ledger.domain.base import LedgerAggregate

__all__ = ["LEGACY_MODULES", "event_topics"]

LEGACY_MODULES: dict[str, ModuleType] = {"ledger.runs": runs, "ledger.accounts": accounts, "ledger.registry": registry}

for _old, _module in LEGACY_MODULES.items():
    register_topic(_old, _module)

_AGGREGATES = (runs.Run, accounts.Account, registry.Family, tokens.Tokens, bills.Bill, seals.SealBook)


def event_topics(name: str) -> list[str]:
    """Stored topics of the event type `name` ("StepsRecorded" or "Run.StepsRecorded"): the
    current topic of each matching class and its legacy ones."""
    found = []
    legacy = {module.__name__: old for old, module in LEGACY_MODULES.items()}
    for aggregate in _AGGREGATES:
        for attribute in vars(aggregate).values():
            if isinstance(attribute, type) and issubclass(attribute, LedgerAggregate.Event):
                qualname = attribute.__qualname__
                if name in (qualname, qualname.split(".")[-1]):
                    found.append(get_topic(attribute))
                    if attribute.__module__ in legacy:
                        found.append(f"{legacy[attribute.__module__]}:{qualname}")
    return found
