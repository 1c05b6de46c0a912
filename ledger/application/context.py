"""What every bounded context of the application is given: the writer its commands decide through
(ledger.application.writer), which loads the aggregates they decide on (`aggregates`:
ledger.application.loading), and the reader (ledger.application.reads). `Ledger`
(ledger.application.ledger) composes the contexts over the seams of one kernel.
"""

from __future__ import annotations

from ledger.application.reads import Reads
from ledger.application.writer import Writer

__all__ = ["Context"]


class Context:
    """A bounded context: runs, spend, registry, bills, tokens, ..."""

    def __init__(self, writer: Writer, reader: Reads) -> None:
        self.writer = writer
        self.reader = reader
        self.aggregates = writer.aggregates
        # What storage_read turns outages of into Unavailable.
        self.storage = writer.storage
