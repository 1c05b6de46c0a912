"""Where each event type is stored: its topics, the current one and those it was stored under.

Events are stored under the topic of their class ("module:Qualname"). The aggregates once lived
in ledger.runs, ledger.accounts and ledger.registry; LEGACY_MODULES keeps those stored topics
resolving to the classes where they live now, so a ledger written then stays readable, and
`event_topics` names both, so a filter by type finds old events and new ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

from eventsourcing.utils import get_topic, register_topic

from ledger.domain import accounts, bills, registry, runs, seals, tokens
from ledger.domain.base import LedgerAggregate
from ledger.domain.errors import Invalid
from ledger.domain.reasons import Reason

__all__ = ["LEGACY_MODULES", "event_topics", "event_type_names", "check_event_types", "unknown_types_text"]

LEGACY_MODULES: dict[str, ModuleType] = {"ledger.runs": runs, "ledger.accounts": accounts, "ledger.registry": registry}

for _old, _module in LEGACY_MODULES.items():
    register_topic(_old, _module)

_AGGREGATES = (runs.Run, accounts.Account, registry.Family, tokens.Tokens, bills.Bill, seals.SealBook)


def event_type_names() -> list[str]:
    """Every event type's name ("Run.Opened", ...), sorted: what a type filter may name (also
    by its part after the dot)."""
    return sorted(
        attribute.__qualname__
        for aggregate in _AGGREGATES
        for attribute in vars(aggregate).values()
        if isinstance(attribute, type)
        and issubclass(attribute, LedgerAggregate.Event)
        and attribute.__qualname__.split(".")[-1] != "Event"
    )


def check_event_types(names: Sequence[str]) -> None:
    """Raises Invalid (UNKNOWN_EVENT_TYPE, naming the types there are) when a name of a type
    filter is no event type: a misspelt filter is an error, not an empty answer."""
    unknown = [name for name in names if not event_topics(name)]
    if unknown:
        raise Invalid(unknown_types_text(unknown), reason=Reason.UNKNOWN_EVENT_TYPE, field="types")


def unknown_types_text(unknown: Sequence[str]) -> str:
    """ "no event type RunOpened (did you mean Run.Opened?); the types are Account.CapSet, ...":
    the nearest names first, since a refusal's message is cut to a few hundred bytes on the wire."""
    import difflib

    known = event_type_names()
    shorts = {name.split(".")[-1]: name for name in known}
    near: list[str] = []
    for name in unknown[:5]:
        near += difflib.get_close_matches(name, known, n=2, cutoff=0.75)
        near += [shorts[short] for short in difflib.get_close_matches(name, shorts, n=2, cutoff=0.75)]
    hint = f" (did you mean {', '.join(dict.fromkeys(near))}?)" if near else ""
    return f"no event type {', '.join(unknown)[:120]}{hint}; the types are {', '.join(known)}"


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
