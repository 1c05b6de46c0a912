"""RunRecorder's records beside its steps: the checkpoints it saves (after the steps logged
before them) and the datasets it trains and evaluates on."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from clients.models import CheckpointReceipt, DatasetReceipt

if TYPE_CHECKING:
    from clients.client import LedgerClient

__all__ = ["RecorderRecords"]


class RecorderRecords:
    """The checkpoint and dataset methods of RunRecorder (which supplies client, run_id, attempt,
    flush_timeout_s, require_open and flush)."""

    if TYPE_CHECKING:
        client: LedgerClient
        flush_timeout_s: float

        @property
        def run_id(self) -> str: ...

        @property
        def attempt(self) -> int: ...

        def require_open(self, timeout_s: float = 0.0) -> None: ...

        def flush(self, timeout_s: float | None = None) -> bool: ...

    def checkpoint(
        self,
        step: int,
        uri: str,
        backend: str,
        fidelity: str = "weights",
        *,
        sampler_uri: str = "",
        final: bool = False,
        expires_at: datetime | None = None,
        digest: str = "",
        scores: Mapping[str, float] | None = None,
    ) -> CheckpointReceipt:
        """Record a durable checkpoint, with the evaluation `scores` measured at it, after
        flushing the steps logged before it. Raises LedgerClientError when it cannot be recorded
        (Unavailable while a deferred open still waits for the ledger after `flush_timeout_s`)."""
        self.require_open(self.flush_timeout_s)
        self.flush()
        return self.client.save_checkpoint(
            run_id=self.run_id,
            attempt=self.attempt,
            step=step,
            uri=uri,
            backend=backend,
            fidelity=fidelity,
            sampler_uri=sampler_uri,
            final=final,
            expires_at=expires_at,
            digest=digest,
            scores=scores,
        )

    def record_dataset(
        self,
        *,
        role: str,
        digest: str,
        format: str,
        rows: int,
        tokens: int | None = None,
        source_uri: str = "",
        report: Mapping[str, Any] | None = None,
    ) -> DatasetReceipt:
        """Record a dataset this run trains ("train") or evaluates ("eval") on (see
        LedgerClient.record_dataset). Raises LedgerClientError when it cannot be recorded
        (Unavailable while a deferred open still waits for the ledger after `flush_timeout_s`)."""
        self.require_open(self.flush_timeout_s)
        return self.client.record_dataset(
            run_id=self.run_id,
            role=role,
            digest=digest,
            format=format,
            rows=rows,
            tokens=tokens,
            source_uri=source_uri,
            report=report,
        )
