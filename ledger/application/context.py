"""What every bounded context of the application is given: the writer its commands decide through
(ledger.application.writer), which loads the aggregates they decide on (`aggregates`:
ledger.application.loading), and the reader (ledger.application.reads). `Ledger`
(ledger.application.ledger) composes the contexts over the seams of one kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

from ledger.application.outcomes import Receipt
from ledger.application.reads import Reads
from ledger.application.writer import Writer
from ledger.domain.base import LedgerAggregate
from ledger.domain.runs import Run

__all__ = ["Context"]


class Context:
    """A bounded context: runs, spend, registry, bills, tokens, ..."""

    def __init__(self, writer: Writer, reader: Reads) -> None:
        self.writer = writer
        self.reader = reader
        self.aggregates = writer.aggregates
        # What storage_read turns outages of into Unavailable.
        self.storage = writer.storage

    def write_on_run(self, run_id: str, act: Callable[[Run], int | None]) -> Receipt:
        """Write what `act` decides on the run `run_id` (the version of the event it repeats, or
        None when it recorded a new one) and answer its receipt: the commands whose decision is
        one call of the domain on the run alone."""

        def decide(touched: list[LedgerAggregate]) -> int | None:
            _, run = self.aggregates.run(run_id)
            touched.append(run)
            return act(run)

        version, position = self.writer.write(decide)
        return self.writer.receipt(UUID(run_id), version, position)
