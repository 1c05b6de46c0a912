"""The Spend service: decode, call the ledger in a worker thread, encode.

Writes answer with the account's totals straight from its aggregate, as of the write itself
(Receipt.account, decided with it): no projection sits between a Reserve and its answer, and the
answer does not wait for the writes committed after it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import grpc

from ledger import Receipt
from ledger.application.bills import BillReceipt
from ledger.domain.entries import AccountTotals, PlanTotals
from ledger.domain.reasons import Reason
from ledger.views.models import Account, PlanHold
from services.grpc import codec
from services.grpc.codec import messages
from services.grpc.interceptors import SCOPE, audit
from services.runtime.edge import Edge
from trainledger.v1 import spend_pb2, spend_pb2_grpc

T = TypeVar("T")

__all__ = ["SpendServicer"]

Context = grpc.aio.ServicerContext[Any, Any]
RESERVATIONS_PAGE_DEFAULT = 1_000


def _totals(totals: AccountTotals) -> Account:
    """The totals an account's aggregate gives (Account.summary: Receipt.account, Ledger.account_now)
    as the Account read model."""
    return Account(
        account=totals.account,
        parent=totals.parent or "",
        cap_usd_micro=totals.cap_usd_micro,
        committed_usd_micro=totals.committed_usd_micro,
        pending_usd_micro=totals.pending_usd_micro,
        remaining_usd_micro=totals.remaining_usd_micro,
        overrun_usd_micro=totals.overrun_usd_micro,
        plan=None if totals.plan is None else _plan(totals.plan),
    )


def _plan(plan: PlanTotals) -> PlanHold:
    """The plan hold ledger.domain.plans.summary gives, as the PlanHold read model."""
    return PlanHold(
        reservation_id=plan.reservation_id,
        state=plan.state,
        planned_usd_micro=plan.planned_usd_micro,
        drawn_usd_micro=plan.drawn_usd_micro,
        held_usd_micro=plan.held_usd_micro,
    )


class SpendServicer(spend_pb2_grpc.SpendServicer):
    def __init__(self, edge: Edge) -> None:
        self.edge = edge
        self.ledger = edge.ledger

    async def _write(self, command: Callable[..., Receipt], account: str, **kwargs: Any) -> tuple[Receipt, Any]:
        """Run a command and read the account's totals after it, in one worker-thread call."""

        def run() -> tuple[Receipt, Any]:
            receipt = command(account=account, **kwargs, **who)
            # The totals as of this write, decided with it (every spend write answers them):
            # reading them now would wait for the group being committed after it.
            assert receipt.account is not None
            return receipt, messages.account(_totals(receipt.account))

        who = audit()
        return await self.edge.call(run)

    async def OpenAccount(
        self, request: spend_pb2.OpenAccountRequest, context: Context
    ) -> spend_pb2.OpenAccountResponse:
        receipt, account = await self._write(
            self.ledger.open_account,
            request.account,
            parent=request.parent,
            cap_usd_micro=codec.optional(request, "cap_usd_micro"),
        )
        return spend_pb2.OpenAccountResponse(position=receipt.position, created=receipt.created, account=account)

    async def SetCap(self, request: spend_pb2.SetCapRequest, context: Context) -> spend_pb2.SetCapResponse:
        receipt, account = await self._write(
            self.ledger.set_cap,
            request.account,
            cap_usd_micro=codec.optional(request, "cap_usd_micro"),
            scope=SCOPE.get(),
        )
        return spend_pb2.SetCapResponse(position=receipt.position, account=account)

    async def Reserve(self, request: spend_pb2.ReserveRequest, context: Context) -> spend_pb2.ReserveResponse:
        return await self._hold(self.ledger.reserve, request, spend_pb2.ReserveResponse)

    async def ReservePlan(
        self, request: spend_pb2.ReservePlanRequest, context: Context
    ) -> spend_pb2.ReservePlanResponse:
        return await self._hold(self.ledger.reserve_plan, request, spend_pb2.ReservePlanResponse)

    async def _hold(self, write: Callable[..., Any], request: Any, answer: Callable[..., T]) -> T:
        """Reserve and ReservePlan: the same request fields, held by `write`, answered as `answer`."""
        receipt, account = await self._write(
            write,
            request.account,
            reservation_id=request.reservation_id,
            amount_usd_micro=request.amount_usd_micro,
            basis=codec.basis(request.basis),
            ttl=codec.duration(request, "ttl", reason=Reason.INVALID_TTL),
            attempt=request.attempt,
        )
        return answer(
            position=receipt.position,
            duplicate=receipt.duplicate,
            expires_at=codec.timestamp(receipt.expires_at),
            account=account,
        )

    async def Commit(self, request: spend_pb2.CommitRequest, context: Context) -> spend_pb2.CommitResponse:
        receipt, account = await self._write(
            self.ledger.commit,
            request.account,
            reservation_id=request.reservation_id,
            actual_usd_micro=request.actual_usd_micro,
            basis=codec.basis(request.basis),
        )
        return spend_pb2.CommitResponse(
            position=receipt.position,
            duplicate=receipt.duplicate,
            overrun_usd_micro=receipt.overrun_usd_micro,
            account=account,
        )

    async def Release(self, request: spend_pb2.ReleaseRequest, context: Context) -> spend_pb2.ReleaseResponse:
        receipt, account = await self._write(
            self.ledger.release, request.account, reservation_id=request.reservation_id, reason=request.reason
        )
        return spend_pb2.ReleaseResponse(position=receipt.position, duplicate=receipt.duplicate, account=account)

    async def Charge(self, request: spend_pb2.ChargeRequest, context: Context) -> spend_pb2.ChargeResponse:
        receipt, account = await self._write(
            self.ledger.charge,
            request.account,
            charge_id=request.charge_id,
            amount_usd_micro=request.amount_usd_micro,
            basis=codec.basis(request.basis),
            reason=request.reason,
        )
        return spend_pb2.ChargeResponse(
            position=receipt.position,
            duplicate=receipt.duplicate,
            overrun_usd_micro=receipt.overrun_usd_micro,
            account=account,
        )

    async def GetAccount(self, request: spend_pb2.GetAccountRequest, context: Context) -> spend_pb2.GetAccountResponse:
        timeout_s = await self.edge.caught_up(request.min_position, self.edge.timeout_s(context))
        found = await self.edge.call(
            self.ledger.account, request.account, min_position=request.min_position, timeout_s=timeout_s
        )
        return spend_pb2.GetAccountResponse(account=messages.account(found))

    async def ListReservations(
        self, request: spend_pb2.ListReservationsRequest, context: Context
    ) -> spend_pb2.ListReservationsResponse:
        size = codec.page_size(request.page_size, RESERVATIONS_PAGE_DEFAULT)
        after = codec.position_after(request.page_token)
        timeout_s = await self.edge.caught_up(request.min_position, self.edge.timeout_s(context))
        page = await self.edge.call(
            self.ledger.reservations,
            request.account,
            limit=size,
            after_position=after,
            min_position=request.min_position,
            timeout_s=timeout_s,
        )
        # The ledger's page limit is the proto's.
        return spend_pb2.ListReservationsResponse(
            reservations=[messages.reservation(r) for r in page.reservations],
            next_page_token=codec.position_token(page.after_position),
        )

    async def RecordBilledUsage(
        self, request: spend_pb2.RecordBilledUsageRequest, context: Context
    ) -> spend_pb2.RecordBilledUsageResponse:
        who = audit()

        def run() -> BillReceipt:
            # Decoded in the worker thread: a request holds up to 10,000 lines.
            return self.ledger.record_billed_usage(
                provider=request.provider,
                lines=codec.billed_lines(request),
                cost_data_through=codec.moment(request, "cost_data_through"),
                validate_only=request.validate_only,
                **who,
            )

        receipt = await self.edge.call(run)
        return spend_pb2.RecordBilledUsageResponse(
            position=receipt.position,
            duplicate=receipt.duplicate,
            recorded=receipt.recorded,
            restated=receipt.restated,
            unchanged=receipt.unchanged,
        )

    async def Reconcile(self, request: spend_pb2.ReconcileRequest, context: Context) -> spend_pb2.ReconcileResponse:
        offset = codec.position_after(request.page_token)
        timeout_s = await self.edge.caught_up(request.min_position, self.edge.timeout_s(context))

        def run() -> spend_pb2.ReconcileResponse:
            report, more = self.ledger.reconcile(
                run_id=request.run_id,
                account=request.account,
                threshold_percent=request.threshold_percent,
                page_size=request.page_size,
                offset=offset,
                min_position=request.min_position,
                timeout_s=timeout_s,
            )
            return codec.messages.reconcile(report, codec.position_token(offset + len(report.runs) if more else None))

        return await self.edge.call(run)

    async def AdjustToBill(
        self, request: spend_pb2.AdjustToBillRequest, context: Context
    ) -> spend_pb2.AdjustToBillResponse:
        adjustments, position = await self.edge.call(
            self.ledger.adjust_to_bill, run_id=request.run_id, account=request.account, **audit()
        )
        return spend_pb2.AdjustToBillResponse(
            adjustments=[
                spend_pb2.Adjustment(
                    account=a.account,
                    run_id=a.run_id,
                    adjustment_id=a.adjustment_id,
                    amount_usd_micro=a.amount_usd_micro,
                    overrun_usd_micro=a.overrun_usd_micro,
                    position=a.position,
                    duplicate=a.duplicate,
                )
                for a in adjustments
            ],
            position=position,
        )
