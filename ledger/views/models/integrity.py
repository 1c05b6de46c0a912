"""The read models of a check of the log (ledger.storage.chain, ledger.application.integrity)."""

from __future__ import annotations

import msgspec

__all__ = ["ChainHead", "Verification"]


class ChainHead(msgspec.Struct, frozen=True, kw_only=True):
    """A point of the log's hash chain: the position of an event and the chain's digest there
    (64 lowercase hex characters). The head of an empty log is position 0 with 64 zeros."""

    position: int
    digest: str


class Verification(msgspec.Struct, frozen=True, kw_only=True):
    """What a check of the log found. `ok` when nothing broke; `head` is the last event whose digest
    was recomputed and found sealed (the log's head when ok); `checked` counts those events. Otherwise
    `broken_at` is the first position where it breaks (for a snapshot, its event's; for a view, the
    differing row's position where it has one, else the view's), `problem` one of
    ledger.storage.chain.PROBLEMS and `detail` says what was found."""

    ok: bool
    head: ChainHead
    checked: int
    broken_at: int = 0
    problem: str = ""
    detail: str = ""
