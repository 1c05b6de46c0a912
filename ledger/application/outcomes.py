"""What a command of the ledger answers (`Receipt`), and the refusals the write seam makes of
failures: a refusal recorded for audit (`Recorded`), a storage outage (`outage`, `storage_read`),
a write of a sequence after a refused one (`unrecorded`).
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from ledger.domain.entries import AccountTotals
from ledger.domain.errors import LedgerError, Refused, Unavailable
from ledger.domain.reasons import Reason
from ledger.storage.base import Storage

__all__ = ["Receipt", "Recorded", "outage", "storage_read", "unrecorded", "utc_now"]

T = TypeVar("T")
P = ParamSpec("P")


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Receipt:
    """What a command answers: the log position and whether it was a retry of an earlier
    identical request, plus what the command decided."""

    position: int
    duplicate: bool = False
    attempt: int = 0
    version: int = 0
    previous: int = 0
    overrun_usd_micro: int = 0
    created: bool = False
    run_id: str = ""
    expires_at: datetime | None = None
    last_step: int | None = None
    #: A spend write's account totals as of its own write (Account.summary): later writes of its
    #: group are not in them, and nothing is in them before it is durable.
    account: AccountTotals | None = None


class Recorded(Exception):
    """Raised by a decision that refuses its command but records the refusal itself (for audit):
    the events it triggered are saved with its group, and the caller gets `error` once they are
    durable."""

    def __init__(self, error: LedgerError) -> None:
        super().__init__(str(error))
        self.error = error


class ReadsStorage(Protocol):
    storage: Storage


S = TypeVar("S", bound=ReadsStorage)


def storage_read(method: Callable[Concatenate[S, P], T]) -> Callable[Concatenate[S, P], T]:
    """A read of the log or the views: storage outages become Unavailable."""

    @functools.wraps(method)
    def read(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return method(self, *args, **kwargs)
        except self.storage.outage_errors as error:
            raise Unavailable(f"storage is unavailable: {error}") from error

    return read


def outage(error: BaseException) -> Unavailable:
    """The refusal of a write that storage failed: reason STORAGE_FULL when the disk (or the
    database's size limit) is full, so that whoever runs the ledger sees what to fix; otherwise
    storage is unavailable. Either is UNAVAILABLE on the wire: the same request may be sent again."""
    cause: BaseException | None = error
    for _ in range(8):  # The library wraps the driver's error: look a few causes deep.
        if cause is None:
            break
        # SQLite says SQLITE_FULL; PostgreSQL says SQLSTATE 53100 (disk_full).
        if getattr(cause, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or getattr(cause, "sqlstate", "") == "53100":
            return Unavailable(
                f"storage is full ({error}): free space, then send the write again", reason=Reason.STORAGE_FULL
            )
        cause = cause.__cause__ or cause.__context__
    return Unavailable(f"storage is unavailable: {error}")


def unrecorded(refusal: BaseException) -> Refused:
    """The refusal of a write of a sequence (Writer.write_all) after one that was refused:
    nothing of it was recorded. Its reason is the first refusal's (INTERNAL after a failure that
    is no refusal of the ledger's)."""
    reason = refusal.reason if isinstance(refusal, LedgerError) else Reason.INTERNAL
    return Refused(f"not recorded: a write before it in the same sequence was refused ({refusal})", reason=reason)
