"""The arguments of the commands on spend: accounts and their caps, a call's hold (Reserve) and a
run's plan (ReservePlan), commits, releases and charges. See ledger.application.commands for how
they are validated.
"""

from __future__ import annotations

from datetime import timedelta

import msgspec

from ledger.application.commands import INT32_MAX, Command, Document, check_cap, is_uuid
from ledger.domain.basis import check_basis, check_basis_amount
from ledger.domain.errors import Invalid
from ledger.domain.limits import check_id, check_int, check_reference, check_text, check_usd_micro
from ledger.domain.reasons import Reason

__all__ = [
    "PLAN_TTL_DEFAULT",
    "RESERVATION_TTL_DEFAULT",
    "RESERVATION_TTL_MAX",
    "Charge",
    "Commit",
    "OpenAccount",
    "Release",
    "Reserve",
    "ReservePlan",
    "SetCap",
]

RESERVATION_TTL_DEFAULT = timedelta(minutes=15)
RESERVATION_TTL_MAX = timedelta(days=7)
# A plan lasts a run, not a call: a day unless asked otherwise, at most a reservation's longest.
PLAN_TTL_DEFAULT = timedelta(days=1)


class OpenAccount(Command, frozen=True, kw_only=True):
    account: str
    parent: str = ""
    cap_usd_micro: int | None = None

    def __post_init__(self) -> None:
        check_reference(self.account, "account")
        check_reference(self.parent, "parent", required=False)
        if is_uuid(self.account):
            raise Invalid(
                "account names in the form of a uuid are reserved for the accounts of runs",
                reason=Reason.ACCOUNT_NAME_RESERVED,
                account=self.account,
            )
        check_cap(self.cap_usd_micro)


class SetCap(Command, frozen=True, kw_only=True):
    account: str
    cap_usd_micro: int | None

    def __post_init__(self) -> None:
        check_cap(self.cap_usd_micro)


class Reserve(Command, frozen=True, kw_only=True):
    account: str
    reservation_id: str
    amount_usd_micro: int
    basis: Document = msgspec.field(default_factory=dict)
    ttl: timedelta = RESERVATION_TTL_DEFAULT
    attempt: int = 0

    def __post_init__(self) -> None:
        _check_hold(self, RESERVATION_TTL_DEFAULT)


class Commit(Command, frozen=True, kw_only=True):
    account: str
    reservation_id: str
    actual_usd_micro: int
    basis: Document = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        check_reference(self.reservation_id, "reservation_id")
        check_usd_micro(self.actual_usd_micro, "actual_usd_micro")
        self._normal("basis", check_basis(self.basis))
        check_basis_amount(self.basis, self.actual_usd_micro, "actual_usd_micro")


class Release(Command, frozen=True, kw_only=True):
    account: str
    reservation_id: str
    reason: str = ""

    def __post_init__(self) -> None:
        check_reference(self.reservation_id, "reservation_id")
        check_text(self.reason, "reason")


class Charge(Command, frozen=True, kw_only=True):
    account: str
    charge_id: str
    amount_usd_micro: int
    basis: Document = msgspec.field(default_factory=dict)
    reason: str = ""

    def __post_init__(self) -> None:
        check_id(self.charge_id, "charge_id")
        check_usd_micro(self.amount_usd_micro, "amount_usd_micro")
        self._normal("basis", check_basis(self.basis))
        check_basis_amount(self.basis, self.amount_usd_micro, "amount_usd_micro")
        check_text(self.reason, "reason")


class ReservePlan(Reserve, frozen=True, kw_only=True):
    """A run's plan: a hold of its own kind (ledger.domain.plans), of a positive amount, for a day
    unless asked otherwise."""

    ttl: timedelta = PLAN_TTL_DEFAULT

    def __post_init__(self) -> None:
        _check_hold(self, PLAN_TTL_DEFAULT, positive=True)


def _check_hold(command: Reserve, ttl_default: timedelta, *, positive: bool = False) -> None:
    """The arguments of a hold, a call's or a plan's (a plan holds a positive amount): its id,
    amount and basis (which must say the same amount), its attempt, and its ttl (0: `ttl_default`),
    positive and at most RESERVATION_TTL_MAX."""
    check_id(command.reservation_id, "reservation_id")
    check_usd_micro(command.amount_usd_micro, "amount_usd_micro")
    if positive and command.amount_usd_micro == 0:
        raise Invalid("a plan holds a positive amount", reason=Reason.OUT_OF_RANGE, field="amount_usd_micro")
    command._normal("basis", check_basis(command.basis))
    check_basis_amount(command.basis, command.amount_usd_micro, "amount_usd_micro")
    check_int(command.attempt, "attempt", maximum=INT32_MAX)
    if command.ttl == timedelta(0):
        command._normal("ttl", ttl_default)
    if not timedelta(0) < command.ttl <= RESERVATION_TTL_MAX:
        raise Invalid("ttl must be positive and at most 7 days", reason=Reason.INVALID_TTL)
