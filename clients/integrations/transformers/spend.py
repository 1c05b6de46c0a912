"""The GPU spend of a Transformers callback's train(): every interval of GPU time under a hold (by
clients.integrations.meter.GpuMeter), training refused (SpendHoldRefused) when the first interval
can have no hold, and stopped cleanly when a later one cannot. Kept apart from the callback so that
the rule "no GPU time without a hold" reads in one place."""

from __future__ import annotations

import logging
from typing import Any, NoReturn

from clients.errors import LedgerClientError, SpendCapExceeded
from clients.integrations.meter import GpuMeter
from clients.integrations.pricing import GpuPrice
from clients.integrations.transformers.jobs import Jobs
from clients.recorder import RunRecorder
from trainledger.text import account_text, usd_text

__all__ = ["SpendHoldRefused", "Spend"]

log = logging.getLogger("trainledger.clients.transformers")


class SpendHoldRefused(RuntimeError):
    """No hold could be had for the first interval of GPU time, so training did not start.
    `reason`: SPEND_CAP_EXCEEDED or LEDGER_UNAVAILABLE; the ledger's error is the __cause__."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason, self.message = reason, message


class Spend:
    """The holds of one train() of run `run_key`: `meter` while intervals are held (None after a
    spend stop), and `stop_reason` once a refused hold has stopped training."""

    def __init__(
        self,
        recorder: RunRecorder,
        price: GpuPrice,
        *,
        interval_s: float,
        interval_steps: int | None,
        run_key: str,
    ) -> None:
        self.recorder, self.price, self.run_key = recorder, price, run_key
        self.interval_s, self.interval_steps = interval_s, interval_steps
        self.meter: GpuMeter | None = None
        self.stop_reason: str | None = None

    def start(self, state: Any, jobs: Jobs) -> None:
        """Hold the first interval. Raises SpendHoldRefused, after closing `jobs` and finishing the
        attempt "stopped" (when the ledger can be reached), when no hold can be had."""
        recorder = self.recorder
        # Training stops when a hold is refused: the time after it (the stop's save) runs unheld.
        meter = GpuMeter(
            recorder,
            self.price,
            interval_s=self.interval_s,
            interval_steps=self.interval_steps,
            lookahead=True,
            charge_unheld=False,
        )
        try:
            self.meter = meter.start(state.global_step)
        except SpendCapExceeded as refused:
            reason = (
                f"spend cap reached before training: {usd_text(refused.remaining_usd_micro or 0)} left on "
                f"{_capped_account(recorder, refused.account)}"
            )
            self._refuse_start("SPEND_CAP_EXCEEDED", reason, refused, state, jobs)
        except LedgerClientError as error:
            self._refuse_start(
                "LEDGER_UNAVAILABLE",
                f"no spend hold: the ledger cannot be reached ({error.reason})",
                error,
                state,
                jobs,
            )

    def _refuse_start(self, reason: str, message: str, error: LedgerClientError, state: Any, jobs: Jobs) -> NoReturn:
        recorder = self.recorder
        jobs.close(0)
        try:
            if recorder.opened:
                recorder.finish("stopped", summary={"steps": state.global_step, "stop_reason": message})
            else:
                recorder.close(flush_timeout_s=0)
        except LedgerClientError as finish_error:
            log.warning("could not record the stop of run %s: %s", self.run_key, finish_error)
            recorder.close(flush_timeout_s=0)
        raise SpendHoldRefused(reason, message + "; nothing was trained") from error

    def next_interval(self, state: Any, control: Any) -> None:
        """At a step's end: the meter ends the interval if the next step might outrun its hold (or
        it has run interval_steps steps), commits what it used and holds the next one; training
        stops cleanly when no hold can be had."""
        meter = self.meter
        assert meter is not None
        ending = state.global_step >= state.max_steps or control.should_training_stop  # on_train_end commits
        try:
            meter.tick(state.global_step, last=ending)
        except SpendCapExceeded as refused:
            left = usd_text(refused.remaining_usd_micro or 0)
            where = _capped_account(self.recorder, refused.account)
            self._spend_stop(control, f"spend cap reached at step {state.global_step}: {left} left on {where}")
        except LedgerClientError as error:
            self._spend_stop(
                control, f"no spend hold at step {state.global_step}: the ledger cannot be reached ({error.reason})"
            )

    def stop(self) -> None:
        """Commit what the interval held now has used, and hold no more."""
        if self.meter is not None:
            self.meter.stop()

    def _spend_stop(self, control: Any, reason: str) -> None:
        log.warning("stopping training: %s", reason)
        self.stop_reason = reason
        control.should_save = True
        control.should_training_stop = True
        if self.meter is not None:
            self.meter.stop()  # What it used is committed; the rest of this attempt runs without a hold.
            self.meter = None


def _capped_account(recorder: RunRecorder, account: str | None) -> str:
    """The account whose cap refused a hold, for people: the run's own by its name and id, a
    parent by its name (trainledger.text.account_text)."""
    if account and account != recorder.run_id:
        return account_text(account)
    state = recorder.state
    return account_text(recorder.run_id, state.run.name if state is not None else "")
