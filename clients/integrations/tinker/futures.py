"""How the Tinker integration holds spend across Tinker's asynchronous calls and settles them: the
spend a training client and its sampling clients share (Spend), a reservation held across one call
(OpenHold), the future that commits or releases it when the call settles (LedgeredFuture), and the
settling of futures one at a time, in submission order for a training client (Settler)."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Generator
from typing import Any, Generic, TypeVar, cast

from clients.errors import DeadlineExceeded, LedgerClientError, Unavailable
from clients.integrations.tinker.common import PriceSheets
from clients.recorder import RunRecorder
from clients.spend import release_reason

__all__ = ["Spend", "OpenHold", "LedgeredFuture", "Settler"]

log = logging.getLogger("trainledger.clients.tinker")
T = TypeVar("T")


class Spend:
    """What a training client and its sampling clients share: the recorder, the price sheets, the
    holds, and the spend committed since the last recorded step."""

    def __init__(
        self, recorder: RunRecorder, prices: PriceSheets, *, optim_step_usd_micro: int, hold_ttl_s: float | None
    ) -> None:
        self.recorder, self.prices = recorder, prices
        self.optim_step_usd_micro = int(optim_step_usd_micro)
        self.hold_ttl_s = hold_ttl_s
        self._lock = threading.Lock()
        self._usd_since_step = 0
        self._deferred: list[tuple[str, int, dict[str, Any]]] = []
        self.loose: set[LedgeredFuture[Any]] = set()  # sampling futures not yet settled

    def hold(self, amount: int, basis: dict[str, Any]) -> OpenHold:
        self.retry_deferred()
        return OpenHold(self, amount, basis)

    def add_spend(self, usd_micro: int) -> None:
        with self._lock:
            self._usd_since_step += usd_micro

    def take_spend(self) -> int:
        with self._lock:
            usd, self._usd_since_step = self._usd_since_step, 0
            return usd

    def defer(self, reservation_id: str, actual: int, basis: dict[str, Any], error: LedgerClientError) -> None:
        log.warning("could not commit reservation %s (%s); will retry", reservation_id, error.reason)
        with self._lock:
            self._deferred.append((reservation_id, actual, basis))

    def retry_deferred(self) -> None:
        """Commit what an earlier commit could not (the call was made: the money is spent)."""
        with self._lock:
            deferred, self._deferred = self._deferred, []
        for index, (reservation_id, actual, basis) in enumerate(deferred):
            try:
                self.recorder.client.commit(
                    account=self.recorder.account, reservation_id=reservation_id, actual_usd_micro=actual, basis=basis
                )
            except LedgerClientError as error:
                if not isinstance(error, Unavailable | DeadlineExceeded):
                    log.error("giving up on committing reservation %s: %s", reservation_id, error)
                    continue
                with self._lock:
                    self._deferred[:0] = deferred[index:]
                raise


class OpenHold:
    """A reservation held across an asynchronous Tinker call: the steps of clients.spend.hold_spend
    (which is a block, not a span), with no release when the hold is merely dropped: a hold
    whose call may have run is left to expire on the ledger."""

    def __init__(self, spend: Spend, amount: int, basis: dict[str, Any]) -> None:
        self._spend, self.account = spend, spend.recorder.account
        answer = spend.recorder.client.reserve(
            account=self.account,
            amount_usd_micro=amount,
            basis=basis,
            ttl_s=spend.hold_ttl_s,
            attempt=spend.recorder.attempt,
        )
        self.reservation_id, self.amount_usd_micro = answer.reservation_id, amount

    def commit(self, actual: int, basis: dict[str, Any]) -> None:
        try:
            self._spend.recorder.client.commit(
                account=self.account, reservation_id=self.reservation_id, actual_usd_micro=actual, basis=basis
            )
        except LedgerClientError as error:
            self._spend.defer(self.reservation_id, actual, basis, error)
        self._spend.add_spend(actual)

    def release(self, error: BaseException) -> None:
        try:
            self._spend.recorder.client.release(
                account=self.account, reservation_id=self.reservation_id, reason=release_reason(error)
            )
        except LedgerClientError as release_error:
            log.warning(
                "could not release reservation %s (%s); it expires on the ledger",
                self.reservation_id,
                release_error.reason,
            )


class LedgeredFuture(Generic[T]):
    """A Tinker call's future whose spend (and step or checkpoint) is settled when it completes:
    result() waits for it, commits or releases its hold, then answers or raises like Tinker's."""

    def __init__(
        self,
        kind: str,
        wait: Callable[[float | None], Any],
        settle: Callable[[Any], Any],
        fail: Callable[[BaseException], None],
        owner: Any,
    ) -> None:
        self.kind = kind
        self._wait, self._settle_ok, self._settle_error, self._owner = wait, settle, fail, owner
        self._settled = False
        self._value: Any = None
        self._error: BaseException | None = None
        self._observed = False

    def done(self) -> bool:
        """True once settled (its spend committed or released)."""
        return self._settled

    def result(self, timeout: float | None = None) -> T:
        self._owner._settle_through(self, timeout)
        self._observed = True
        if self._error is not None:
            raise self._error
        return cast(T, self._value)

    async def result_async(self, timeout: float | None = None) -> T:
        return await asyncio.to_thread(self.result, timeout)

    def __await__(self) -> Generator[Any, None, T]:
        return self.result_async().__await__()

    def _settle(self, timeout: float | None) -> None:
        """Wait for the call and settle it; a timeout leaves it pending (and raises TimeoutError)."""
        error: BaseException | None
        try:
            value = self._wait(timeout)
        except TimeoutError:
            if timeout is not None:
                raise
            value, error = None, TimeoutError()
        except Exception as failure:  # noqa: BLE001 - the call failed: its hold is released.
            value, error = None, failure
        else:
            error = None
        if error is None:
            try:
                value = self._settle_ok(value)
            except Exception as failure:  # noqa: BLE001 - e.g. a checkpoint the ledger refused.
                error = failure
        else:
            self._settle_error(error)
        self._value, self._error, self._settled = value, error, True


class Settler:
    """Settles futures one at a time; a training client settles its futures in submission order."""

    def __init__(self, ordered: bool) -> None:
        self._ordered = ordered
        self._lock = threading.RLock()
        self._pending: deque[LedgeredFuture[Any]] = deque()

    def add(self, future: LedgeredFuture[Any]) -> LedgeredFuture[Any]:
        with self._lock:
            self._pending.append(future)
        return future

    def _settle_through(self, target: LedgeredFuture[Any], timeout: float | None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while not target._settled:
                head = self._pending[0] if self._ordered else target
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                head._settle(left)
                self._pending.remove(head)
                self._after_settle(head)
                if head is not target and head._error is not None:
                    log.warning("%s failed before a later result was asked for: %r", head.kind, head._error)

    def _after_settle(self, future: LedgeredFuture[Any]) -> None:
        pass

    def settle_all(self, timeout: float | None = None) -> list[BaseException]:
        """Settle every pending future (TimeoutError past `timeout`); returns the errors of those
        whose result nobody asked for."""
        deadline = None if timeout is None else time.monotonic() + timeout
        errors: list[BaseException] = []
        while True:
            with self._lock:
                if not self._pending:
                    return errors
                future = self._pending[0]
            self._settle_through(future, None if deadline is None else max(0.0, deadline - time.monotonic()))
            if future._error is not None and not future._observed:
                errors.append(future._error)
