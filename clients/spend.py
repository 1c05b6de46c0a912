"""Spend held around a billable call: reserve before, commit the actual amount after, release on
failure. Fails closed: when the ledger cannot be reached no hold is made up, the call is refused."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from clients.errors import LedgerClientError
from clients.models import CommitReceipt
from trainledger.pricing import cost_usd_micro

__all__ = ["Hold", "hold_spend", "release_reason"]

log = logging.getLogger("trainledger.clients")
REASON_LENGTH_MAX = 1_000


def release_reason(error: BaseException) -> str:
    """The reason a hold is released for, from the error that ended its call: one line of
    printable text (the ledger refuses control characters, line breaks included), cut short."""
    text = f"{type(error).__name__}: {error}"
    return "".join(character if character.isprintable() else " " for character in text)[:REASON_LENGTH_MAX]


@dataclass
class Hold:
    """A granted reservation. Before the block ends, say what the call really used with
    `use(basis)` (the actual amount is that basis's, by trainledger.pricing), or set
    `actual_usd_micro` alone when only the cost is known; it defaults to the reserved amount. The
    commit carries `actual_basis` or no basis: never the reservation's estimate."""

    account: str
    reservation_id: str
    amount_usd_micro: int
    actual_usd_micro: int
    expires_at: datetime | None = None
    actual_basis: Mapping[str, Any] | None = None
    committed: CommitReceipt | None = field(default=None, repr=False)

    def use(self, basis: Mapping[str, Any]) -> None:
        """The usage the call really had (tokens or GPU time, with its prices): commit it, and
        the amount it works out to."""
        self.actual_basis = basis
        self.actual_usd_micro = cost_usd_micro(basis)


@contextmanager
def hold_spend(
    client: Any,
    *,
    account: str,
    amount_usd_micro: int,
    basis: Mapping[str, Any] | None = None,
    ttl_s: float | None = None,
    attempt: int = 0,
    reservation_id: str | None = None,
) -> Iterator[Hold]:
    """Reserve `amount_usd_micro` on `account` (blocking, with the client's retries), yield the Hold,
    commit its actual amount when the block ends, release it when the block raises (and re-raise).
    Raises SpendCapExceeded when refused, Unavailable when the ledger stays unreachable past the
    client's outage budget (the reserve, commit and release each ride out a shorter outage). When
    a release cannot be recorded the ledger expires the hold at its TTL. An interrupt (KeyboardInterrupt, a
    generator closed mid-block) neither commits nor releases: whether the call ran is unknown, so
    the hold stays until its TTL and the ledger expires it."""
    answer = client.reserve(
        account=account,
        amount_usd_micro=amount_usd_micro,
        reservation_id=reservation_id,
        basis=basis,
        ttl_s=ttl_s,
        attempt=attempt,
    )
    hold = Hold(
        account=account,
        reservation_id=answer.reservation_id,
        amount_usd_micro=amount_usd_micro,
        actual_usd_micro=amount_usd_micro,
        expires_at=answer.expires_at,
    )
    try:
        yield hold
    except Exception as error:
        try:
            client.release(account=account, reservation_id=hold.reservation_id, reason=release_reason(error))
        except LedgerClientError as release_error:
            log.warning(
                "could not release reservation %s (%s); it expires at %s",
                hold.reservation_id,
                release_error.reason,
                hold.expires_at,
            )
        raise
    hold.committed = client.commit(
        account=account,
        reservation_id=hold.reservation_id,
        actual_usd_micro=hold.actual_usd_micro,
        basis=hold.actual_basis,
    )
