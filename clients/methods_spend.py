"""The Spend RPCs as client methods (see clients.methods): accounts and caps, holds and their
commits, charges, providers' bills and their reconciliation. Each takes `timeout_s`, the per-try
deadline (the client's default when None), and answers with a typed result of clients.models."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, TypeVar

from clients import codec
from clients.methods import Doc, Transport, field_of, new_id, reply
from clients.models import (
    Account,
    AdjustReceipt,
    BilledLine,
    BilledUsageReceipt,
    ChargeReceipt,
    CommitReceipt,
    OpenAccountReceipt,
    ReconcileReport,
    ReleaseReceipt,
    ReservationPage,
    ReservePlanReceipt,
    ReserveReceipt,
    SetCapReceipt,
)
from trainledger.v1 import spend_pb2

__all__ = ["SpendMethods", "billed_line"]


class SpendMethods(Transport):
    """The Spend RPCs: accounts, caps, reservations, charges, bills and reconciliation."""

    def open_account(
        self, *, account: str, parent: str = "", cap_usd_micro: int | None = None, timeout_s: float | None = None
    ) -> OpenAccountReceipt:
        request = spend_pb2.OpenAccountRequest(account=account, parent=parent, cap_usd_micro=cap_usd_micro)
        return self._ask("Spend", "OpenAccount", request, reply(OpenAccountReceipt), timeout_s=timeout_s)

    def set_cap(self, *, account: str, cap_usd_micro: int | None, timeout_s: float | None = None) -> SetCapReceipt:
        """Set (or with None remove) a cap. Not retried on a deadline: a late repeat could undo
        another caller's change made in between. A token scoped to `account` itself may only
        lower its cap (PermissionDenied CAP_RAISE_OUTSIDE_SCOPE otherwise)."""
        request = spend_pb2.SetCapRequest(account=account, cap_usd_micro=cap_usd_micro)
        return self._ask("Spend", "SetCap", request, reply(SetCapReceipt), idempotent=False, timeout_s=timeout_s)

    def reserve(
        self,
        *,
        account: str,
        amount_usd_micro: int,
        reservation_id: str | None = None,
        basis: Doc | None = None,
        ttl_s: float | None = None,
        attempt: int = 0,
        timeout_s: float | None = None,
    ) -> ReserveReceipt:
        """Hold an amount before spending it: reservation_id, position, duplicate, expires_at, account.
        Raises SpendCapExceeded when a cap would be crossed."""
        hold = _hold(spend_pb2.ReserveRequest, account, amount_usd_micro, reservation_id, basis, ttl_s, attempt)
        return self._ask(
            "Spend", "Reserve", hold, reply(ReserveReceipt, reservation_id=hold.reservation_id), timeout_s=timeout_s
        )

    def reserve_plan(
        self,
        *,
        account: str,
        amount_usd_micro: int,
        reservation_id: str | None = None,
        basis: Doc | None = None,
        ttl_s: float | None = None,
        attempt: int = 0,
        timeout_s: float | None = None,
    ) -> ReservePlanReceipt:
        """Hold a run's whole projected cost up front (the ledger's default TTL is a day): the
        attempt's reservations draw it down, and what is left is released when the run ends.
        Answers reservation_id, position, duplicate, expires_at and the account with its plan.
        Raises SpendCapExceeded (with the remaining amount) when the plan would cross a cap."""
        hold = _hold(spend_pb2.ReservePlanRequest, account, amount_usd_micro, reservation_id, basis, ttl_s, attempt)
        receipt = reply(ReservePlanReceipt, reservation_id=hold.reservation_id)
        return self._ask("Spend", "ReservePlan", hold, receipt, timeout_s=timeout_s)

    def commit(
        self,
        *,
        account: str,
        reservation_id: str,
        actual_usd_micro: int,
        basis: Doc | None = None,
        timeout_s: float | None = None,
    ) -> CommitReceipt:
        request = spend_pb2.CommitRequest(
            account=account, reservation_id=reservation_id, actual_usd_micro=actual_usd_micro, basis=codec.basis(basis)
        )
        return self._ask("Spend", "Commit", request, reply(CommitReceipt), timeout_s=timeout_s)

    def release(
        self, *, account: str, reservation_id: str, reason: str = "", timeout_s: float | None = None
    ) -> ReleaseReceipt:
        request = spend_pb2.ReleaseRequest(account=account, reservation_id=reservation_id, reason=reason)
        return self._ask("Spend", "Release", request, reply(ReleaseReceipt), timeout_s=timeout_s)

    def charge(
        self,
        *,
        account: str,
        amount_usd_micro: int,
        charge_id: str | None = None,
        basis: Doc | None = None,
        reason: str = "",
        timeout_s: float | None = None,
    ) -> ChargeReceipt:
        charge_id = charge_id or new_id()
        request = spend_pb2.ChargeRequest(
            account=account,
            charge_id=charge_id,
            amount_usd_micro=amount_usd_micro,
            basis=codec.basis(basis),
            reason=reason,
        )
        return self._ask("Spend", "Charge", request, reply(ChargeReceipt, charge_id=charge_id), timeout_s=timeout_s)

    def record_billed_usage(
        self,
        *,
        provider: str,
        lines: Iterable[BilledLine],
        cost_data_through: datetime | None = None,
        validate_only: bool = False,
        timeout_s: float | None = None,
    ) -> BilledUsageReceipt:
        """Record lines of a provider's bill (at most BILLED_LINES_MAX per call; clients.billing
        sends larger bills in several calls). A line already recorded with the same payload is
        unchanged, with another payload a restatement: sending a bill again changes nothing.
        `validate_only`: the ledger checks the lines as a recording would and records nothing."""
        request = spend_pb2.RecordBilledUsageRequest(
            provider=provider, cost_data_through=codec.timestamp(cost_data_through), validate_only=validate_only
        )
        _add_lines(request, lines)
        return self._ask("Spend", "RecordBilledUsage", request, reply(BilledUsageReceipt), timeout_s=timeout_s)

    def reconcile(
        self,
        *,
        run_id: str = "",
        account: str = "",
        threshold_percent: float = 0.0,
        page_size: int = 0,
        page_token: str = "",
        min_position: int = 0,
        timeout_s: float | None = None,
    ) -> ReconcileReport:
        """What the ledger estimated beside what the providers billed: per run (a page, largest
        drift first), per account rolled up, per provider, and the unattributed spend."""
        request = spend_pb2.ReconcileRequest(
            run_id=run_id,
            account=account,
            threshold_percent=threshold_percent,
            page_size=page_size,
            page_token=page_token,
            min_position=min_position,
        )
        return self._ask("Spend", "Reconcile", request, reply(ReconcileReport), timeout_s=timeout_s)

    def adjust_to_bill(self, *, run_id: str = "", account: str = "", timeout_s: float | None = None) -> AdjustReceipt:
        """Record each run's (or one run's or account's) unadjusted drift as an adjustment, so its
        committed spend, and the caps above it, reflect what was billed. Repeating it is a no-op."""
        request = spend_pb2.AdjustToBillRequest(run_id=run_id, account=account)
        return self._ask("Spend", "AdjustToBill", request, reply(AdjustReceipt), timeout_s=timeout_s)

    def get_account(self, *, account: str, min_position: int = 0, timeout_s: float | None = None) -> Account:
        request = spend_pb2.GetAccountRequest(account=account, min_position=min_position)
        return self._ask("Spend", "GetAccount", request, _account, timeout_s=timeout_s)

    def list_reservations(
        self,
        *,
        account: str,
        page_size: int = 0,
        page_token: str = "",
        min_position: int = 0,
        timeout_s: float | None = None,
    ) -> ReservationPage:
        request = spend_pb2.ListReservationsRequest(
            account=account, page_size=page_size, page_token=page_token, min_position=min_position
        )
        return self._ask("Spend", "ListReservations", request, reply(ReservationPage), timeout_s=timeout_s)


def _account(response: spend_pb2.GetAccountResponse) -> Account:
    account = field_of("account", Account)(response)
    return account if account is not None else Account()


def billed_line(line: BilledLine, stamps: dict[datetime, Any] | None = None) -> spend_pb2.BilledLine:
    """The message of one bill line; `stamps` keeps the Timestamps made so far, for lines that
    share their times (a bill's lines share few)."""
    message = spend_pb2.BilledLine(**_line_fields(line, {} if stamps is None else stamps))
    return _with_maps(message, line)


def _add_lines(request: spend_pb2.RecordBilledUsageRequest, lines: Iterable[BilledLine]) -> None:
    """The messages of `lines` made in place in the request (a message made apart and then put
    in would be copied in whole)."""
    stamps: dict[datetime, Any] = {}
    add = request.lines.add
    for line in lines:
        _with_maps(add(**_line_fields(line, stamps)), line)


def _line_fields(line: BilledLine, stamps: dict[datetime, Any]) -> dict[str, Any]:
    return {
        "line_id": line.line_id,
        "interval_start": _stamp(line.interval_start, stamps),
        "interval_end": _stamp(line.interval_end, stamps),
        "amount_usd_micro": line.amount_usd_micro,
        "amount_text": line.amount_text,
        "currency": line.currency,
        "run_id": line.run_id,
        "account": line.account,
        "session_id": line.session_id,
        "description": line.description,
    }


def _with_maps(message: spend_pb2.BilledLine, line: BilledLine) -> spend_pb2.BilledLine:
    # Maps are filled apart: given to the constructor they are copied item by item in Python.
    if line.quantities:
        message.quantities.update(line.quantities)
    if line.tags:
        message.tags.update(line.tags)
    return message


def _stamp(moment: datetime | None, stamps: dict[datetime, Any]) -> Any:
    if moment is None:
        return None
    found = stamps.get(moment)
    if found is None:
        found = stamps[moment] = codec.timestamp(moment)
    return found


Hold = TypeVar("Hold", spend_pb2.ReserveRequest, spend_pb2.ReservePlanRequest)


def _hold(
    message: type[Hold],
    account: str,
    amount_usd_micro: int,
    reservation_id: str | None,
    basis: Doc | None,
    ttl_s: float | None,
    attempt: int,
) -> Hold:
    """The request of a reservation or a plan's hold, its reservation_id made here when not given."""
    return message(
        account=account,
        reservation_id=reservation_id or new_id(),
        amount_usd_micro=amount_usd_micro,
        basis=codec.basis(basis),
        ttl=codec.duration(ttl_s),
        attempt=attempt,
    )
