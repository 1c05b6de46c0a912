"""RunRecorder's reports on whether training worked: holdout, delta and note (clients.reports
makes the documents from the caller's rows; the ledger checks their shape and records them, also
after the run finished: sending again is a correction and the run's status stays)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from clients.models import SummaryReceipt
from clients.reports import delta_report, holdout_report

if TYPE_CHECKING:
    from clients.client import LedgerClient

__all__ = ["RecorderReports"]


class RecorderReports:
    """The report methods of RunRecorder (which supplies client, run_id and require_open)."""

    if TYPE_CHECKING:
        client: LedgerClient
        flush_timeout_s: float

        @property
        def run_id(self) -> str: ...

        def require_open(self, timeout_s: float = 0.0) -> None: ...

    def holdout(self, before: float, after: float, metric: str) -> SummaryReceipt:
        """Record the held-out score before and after training: metric "pass_rate" (0 to 1,
        higher is better) or "loss" (lower is better). Raises ValueError on a bad value."""
        return self._report("holdout", holdout_report(before, after, metric))

    def delta(
        self,
        before: Iterable[Mapping[str, Any]],
        after: Iterable[Mapping[str, Any]],
        *,
        target: str,
        must_not_regress: Sequence[str] = (),
        by: str | None = None,
        proxy: str | None = None,
    ) -> SummaryReceipt:
        """Record the delta report over rollout rows before and after training (see
        clients.reports.delta_report): the target's change with n and a 95% interval, the
        must-not-regress markers, a per-group table by `by`, the over-optimization flag."""
        report = delta_report(before, after, target=target, must_not_regress=must_not_regress, by=by, proxy=proxy)
        return self._report("delta", report)

    def note(self, **fields: Any) -> SummaryReceipt:
        """Merge free-form fields into the run's notes."""
        return self._report("notes", fields)

    def _report(self, kind: str, report: Mapping[str, Any]) -> SummaryReceipt:
        self.require_open(self.flush_timeout_s)
        return self.client.record_report(run_id=self.run_id, kind=kind, report=report)
