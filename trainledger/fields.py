"""How a document key (a spec, summary or tag key) is spelled as one segment of a field name, the
same in the run search's fields and view (ledger.views.search), the diff of runs
(services.render.diff) and the columns of a runs frame (clients.frames): as it is when letters,
digits and `_`, else in backticks, so `spec.a.b` (nested) and ``spec.`a.b` `` (a key holding a
dot) are two fields. Standard library only: the ledger, the server and the client import it."""

from __future__ import annotations

import re

__all__ = ["key_segment", "shown_segment"]

_PLAIN = re.compile(r"\w+", re.ASCII)


def key_segment(key: str) -> str | None:
    """`key` as a segment a query can name; None for a key holding a backtick (no query can name
    it, so the search view does not store it)."""
    if _PLAIN.fullmatch(key):
        return key
    return None if "`" in key else f"`{key}`"


def shown_segment(key: str) -> str:
    """`key` as a segment shown to people (a diff row, a frame's column): as key_segment spells
    it, and a key holding a backtick in backticks all the same."""
    return key_segment(key) or f"`{key}`"
