"""GPU time as a run's spend, held one interval at a time: the one GPU meter of the integrations
(the Transformers callback and Modal functions).

Before an interval of GPU time starts, a hold of price x interval is reserved on the run's
account with its cost basis (reservation ids made here, so a resend is idempotent); when the
interval ends, the milliseconds actually used are committed and the next hold is reserved at
once, so the GPU never runs without a hold. A refused hold raises SpendCapExceeded (the cap) or
the ledger's error from start() or tick(): the trainer stops. Time after a refusal is charged
without a hold when `charge_unheld` (the GPU is billed for it: the charge is recorded as an
overrun); a killed process's last hold is left to the ledger, which expires it after `ttl_s`.
A commit the ledger cannot take now is tried again at the next interval and at stop(); one it
refuses is logged and dropped. Pricing is clients.integrations.pricing's, the ledger's own rule.

With `lookahead`, an interval ends early rather than let the next step outrun its hold (the next
step is predicted at twice the slowest of the last 20, plus 50 ms), and a refused hold is tried
again for what remains under the cap when that still covers the next step.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from clients.errors import LedgerClientError, SpendCapExceeded
from clients.integrations.pricing import GpuPrice
from clients.recorder import RunRecorder
from clients.retry import REFUSAL_CODES
from trainledger.text import usd_text

__all__ = ["GpuMeter"]

log = logging.getLogger("trainledger.clients.meter")

_STEPS_REMEMBERED = 20
_FIRST_STEP_S = 1.0


@dataclass(frozen=True)
class _Hold:
    reservation_id: str
    amount_usd_micro: int
    milliseconds: int


class GpuMeter:
    """GPU wall-clock time x `price` as the run's spend (see the module docstring). `start()`
    reserves the first interval of `interval_s`; `tick()` (call it every step or so) ends the
    interval once it is due (`interval_s` passed, `interval_steps` steps run, or with
    `lookahead` the next step would outrun its hold), commits what it used and reserves the
    next; `stop()` commits the last, partial interval. `clock` gives seconds (time.monotonic).
    As a context manager the meter starts on the way in and stops on the way out."""

    def __init__(
        self,
        recorder: RunRecorder,
        price: GpuPrice,
        *,
        interval_s: float = 600.0,
        interval_steps: int | None = None,
        ttl_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        lookahead: bool = False,
        charge_unheld: bool = True,
    ) -> None:
        if interval_s <= 0 or (interval_steps is not None and interval_steps < 1):
            raise ValueError("interval_s must be positive and interval_steps at least 1")
        self.recorder, self.price = recorder, price
        self.interval_s, self.interval_steps = interval_s, interval_steps
        self.ttl_s = ttl_s if ttl_s is not None else 2 * interval_s + 60
        self.clock, self.lookahead, self.charge_unheld = clock, lookahead, charge_unheld
        self.intervals: list[dict[str, Any]] = []  # settled: reservation_id, reserved, used_ms, actual
        self._hold: _Hold | None = None
        self._started_at: float | None = None  # start of the interval being metered
        self._first_step = 0
        self._holds = 0
        self._step_seconds: deque[float] = deque(maxlen=_STEPS_REMEMBERED)
        self._last_tick = 0.0
        self._uncommitted: list[tuple[_Hold, int]] = []  # (hold, milliseconds used)

    @property
    def running(self) -> bool:
        return self._started_at is not None

    @property
    def committed_usd_micro(self) -> int:
        return sum(interval["actual_usd_micro"] for interval in self.intervals)

    @property
    def gpu_milliseconds(self) -> int:
        return sum(interval["gpu_milliseconds"] for interval in self.intervals)

    def start(self, step: int = 0) -> GpuMeter:
        """Reserve the first interval (at `step`) and start metering. Raises SpendCapExceeded or
        LedgerClientError when no hold can be had: then nothing is metered."""
        if self._started_at is None:
            now = self.clock()
            self._hold = self._reserve_next()
            self._started_at, self._last_tick, self._first_step = now, now, step
        return self

    def tick(self, step: int | None = None, *, last: bool = False) -> bool:
        """A step (`step`, when counted) has ended: end the interval when it is due, commit what it
        used and reserve the next; True when it did. `last`: training ends here (stop() settles).
        Raises SpendCapExceeded (the next interval refused) or LedgerClientError."""
        if self._started_at is None:
            return False
        now = self.clock()
        self._step_seconds.append(now - self._last_tick)
        self._last_tick = now
        if last or not self._due(now, step):
            return False
        self._settle(now)
        self._started_at, self._first_step = now, step if step is not None else self._first_step
        self._hold = None
        self._hold = self._reserve_next()
        return True

    def stop(self) -> None:
        """Commit the time used since the last settlement (and what could not be committed before);
        what the ledger cannot take now is logged and its hold left to expire."""
        if self._started_at is not None:
            self._settle(self.clock())
            self._started_at = None
        self._commit_left()
        for hold, _ in self._uncommitted:
            log.warning("could not commit GPU interval %s; its hold expires on the ledger", hold.reservation_id)
        self._uncommitted = []

    def __enter__(self) -> GpuMeter:
        return self.start()

    def __exit__(self, exc_type: Any, exc: BaseException | None, traceback: Any) -> None:
        try:
            self.stop()
        except LedgerClientError as error:
            if exc is None:
                raise
            log.warning("could not charge the last GPU interval (%s)", error)

    def predicted_step_s(self) -> float:
        """What the next step may take: twice the slowest of the last 20, plus 50 ms; a second
        before any step has run."""
        return 2.0 * max(self._step_seconds) + 0.05 if self._step_seconds else _FIRST_STEP_S

    def _due(self, now: float, step: int | None) -> bool:
        assert self._started_at is not None
        elapsed = now - self._started_at
        length_s = self._hold.milliseconds / 1000 if self._hold is not None else self.interval_s
        if (elapsed + self.predicted_step_s() > length_s) if self.lookahead else elapsed >= length_s:
            return True
        return self.interval_steps is not None and step is not None and step - self._first_step >= self.interval_steps

    def _reserve_next(self) -> _Hold:
        """A hold for the next interval: the whole interval, else (with lookahead) what remains
        under the cap if that still covers the next step."""
        milliseconds = max(1, round(self.interval_s * 1000))
        try:
            return self._reserve(milliseconds)
        except SpendCapExceeded as refused:
            affordable = self.price.milliseconds_for(refused.remaining_usd_micro or 0)
            if (
                not self.lookahead
                or affordable >= milliseconds
                or affordable < max(1.0, self.predicted_step_s() * 1000)
            ):
                raise
            return self._reserve(affordable)

    def _reserve(self, milliseconds: int) -> _Hold:
        recorder = self.recorder
        recorder.require_open()  # Fail closed: no hold for an attempt the ledger has not started.
        amount = self.price.amount(milliseconds)
        self._holds += 1
        reservation_id = f"{recorder.run_id}:a{recorder.attempt}:i{self._holds}:{os.urandom(4).hex()}"
        recorder.client.reserve(
            account=recorder.account,
            amount_usd_micro=amount,
            reservation_id=reservation_id,
            basis=self.price.basis(milliseconds),
            ttl_s=self.ttl_s,
            attempt=recorder.attempt,
        )
        return _Hold(reservation_id, amount, milliseconds)

    def _settle(self, now: float) -> None:
        assert self._started_at is not None
        used = max(0, math.ceil(round((now - self._started_at) * 1000, 6)))
        hold, self._hold = self._hold, None
        if hold is not None:
            self._uncommitted.append((hold, used))
            self._commit_left()
        elif self.charge_unheld and used > 0:
            actual = self.price.amount(used)
            answer = self.recorder.client.charge(
                account=self.recorder.account,
                amount_usd_micro=actual,
                basis=self.price.basis(used),
                reason="GPU time after a refused reservation",
            )
            self._record(answer.charge_id, 0, used, actual)

    def _commit_left(self) -> None:
        """Commit the used time of settled intervals; what cannot be committed now is tried again
        at the next interval and at stop(); what the ledger refuses is dropped."""
        left = []
        for hold, used in self._uncommitted:
            actual = self.price.amount(used)
            try:
                self.recorder.client.commit(
                    account=self.recorder.account,
                    reservation_id=hold.reservation_id,
                    actual_usd_micro=actual,
                    basis=self.price.basis(used),
                )
            except LedgerClientError as error:
                if error.code in REFUSAL_CODES:
                    log.warning("the ledger refused the commit of %s: %s", hold.reservation_id, error)
                else:
                    left.append((hold, used))
                continue
            if actual > hold.amount_usd_micro:
                log.info(
                    "interval %s ran over its hold: %s > %s",
                    hold.reservation_id,
                    usd_text(actual),
                    usd_text(hold.amount_usd_micro),
                )
            self._record(hold.reservation_id, hold.amount_usd_micro, used, actual)
        self._uncommitted = left

    def _record(self, reservation_id: str, reserved: int, used: int, actual: int) -> None:
        self.intervals.append(
            {
                "reservation_id": reservation_id,
                "reserved_usd_micro": reserved,
                "gpu_milliseconds": used,
                "actual_usd_micro": actual,
            }
        )
