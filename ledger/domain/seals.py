"""The seal book: a record of every time a log without seals was sealed, by whom and why.

Every event is sealed as it is written (ledger.storage.chain), so a log holds no seals only when it
was written before the chain existed, or its seals were deleted. Sealing such a log covers whatever
it holds now, edits included, so it is never done on the side: an admin asks for it (`trainledger
seal --reason TEXT`), and the book (one aggregate per ledger, id `ledger_id("seals", "book")`)
records it (LogSealed: how many events were sealed, up to which position, and why), with the
principal as on every event.
"""

from __future__ import annotations

from ledger.domain.base import Audit, LedgerAggregate, ledger_id

__all__ = ["SEALS_BOOK_ID", "SealBook"]

SEALS_BOOK_ID = ledger_id("seals", "book")


class SealBook(LedgerAggregate):
    """The seal book: how often, and why, a log without seals was sealed."""

    sealings: int

    def __init__(self) -> None:
        pass

    class Opened(LedgerAggregate.Created):
        def apply(self, book: SealBook) -> None:
            book.sealings = 0

    class LogSealed(LedgerAggregate.Event):
        reason: str
        events_sealed: int
        head_position: int

        def apply(self, book: SealBook) -> None:
            book.sealings += 1

    @classmethod
    def open(cls, audit: Audit) -> SealBook:
        return cls._create(cls.Opened, id=SEALS_BOOK_ID, **audit.fields())

    def sealed(self, audit: Audit, *, reason: str, events_sealed: int, head_position: int) -> None:
        """Record that `events_sealed` events, up to `head_position`, were sealed for `reason`."""
        self.record(self.LogSealed, audit, reason=reason, events_sealed=events_sealed, head_position=head_position)
