"""Refusals that name a run's spend account by the run's name as well as its id.

A run's account is named by the run's id, which is all the domain's decisions see, so their
messages say "account <run id>" (trainledger.text.account_text). On the way out of the
application a refusal whose `account` is a run's says "run sft-demo (<run id>)" instead; its
metadata keeps the id, for programs.
"""

from __future__ import annotations

from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from ledger.domain.errors import LedgerError
from ledger.domain.runs import Run
from trainledger.text import account_text

__all__ = ["named"]

E = TypeVar("E", bound=BaseException)


def named(error: E, repository: Any, outage_errors: tuple[type[BaseException], ...]) -> E:
    """`error` with the run's name in its message when its `account` is a run's account (one
    read of the run, on refusals only). A run that cannot be read leaves the message as it is:
    the refusal is what matters."""
    if not isinstance(error, LedgerError):
        return error
    account = error.metadata.get("account", "")
    plain = account_text(account)
    if not account or plain not in error.message:
        return error
    unreadable: tuple[type[BaseException], ...] = (ValueError, AggregateNotFoundError, *outage_errors)
    try:
        run = repository.get(UUID(account))
    except unreadable:
        return error
    if isinstance(run, Run):
        error.message = error.message.replace(plain, account_text(account, run.name))
        error.args = (error.message,)
    return error
