"""The heartbeat of an attempt: what keeps its lease (StartAttempt's lease_s) while the trainer
writes nothing, so a run is read as lost only when its trainer is gone.

A daemon thread calls Heartbeat every heartbeat_period_s(lease_s) seconds whatever else is written
(the server records one only when nothing renewed the lease lately, so the log grows by at most
one event a period, and none while steps flow). It never raises into training: errors are
logged, and a refusal (the attempt superseded, the run finished) ends it.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from clients.errors import LedgerClientError
from clients.retry import REFUSAL_CODES
from trainledger.leases import LEASE_S_DEFAULT, heartbeat_period_s

__all__ = ["Heartbeat"]

log = logging.getLogger("trainledger.clients")


class Heartbeat:
    """Renews the lease of one attempt until `stop`."""

    def __init__(self, client: Any, lease_s: int | None) -> None:
        self.client = client
        self.period_s = heartbeat_period_s(lease_s or LEASE_S_DEFAULT)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, run_id: str, attempt: int) -> None:
        """Beat for `attempt` of `run_id` (once: a second start is ignored)."""
        if self._thread is None and not self._stopping.is_set():
            self._thread = threading.Thread(
                target=self._beat, args=(run_id, attempt), name="trainledger-heartbeat", daemon=True
            )
            self._thread.start()

    def _beat(self, run_id: str, attempt: int) -> None:
        while not self._stopping.wait(self.period_s):
            try:
                self.client.heartbeat(run_id=run_id, attempt=attempt, timeout_s=max(1.0, self.period_s * 4))
            except LedgerClientError as error:
                if error.code in REFUSAL_CODES:
                    log.info("the heartbeat of run %s attempt %d ends: %s", run_id, attempt, error.reason)
                    return
                log.debug("a heartbeat of run %s failed: %s", run_id, error)
            except Exception:  # Never into training.
                log.exception("a heartbeat of run %s failed", run_id)

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)
