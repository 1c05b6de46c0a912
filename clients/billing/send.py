"""Sending a provider's bill to the ledger: `send_lines` cuts the lines into requests the server
takes, sends them one after the other with the sync LedgerClient's record_billed_usage, and sums
the receipts into one PullResult.

The server refuses a RecordBilledUsage request of more than 10,000 lines, or one larger than its
byte limit (REQUEST_TOO_LARGE); a request here holds at most LINES_PER_REQUEST (5,000) lines and
about BYTES_PER_REQUEST (2 MiB), measured on the wire messages themselves
(clients.methods_spend.billed_line(line).ByteSize() plus each field's tag and length), so a bill
with long tags or descriptions is cut sooner. The margins leave room for what the measure leaves
out (the request's other fields) and keep every request quick to write.

A bill is recorded whole or not at all: when it takes more than one request, every request is
first sent with validate_only (the ledger checks its lines as a recording would, and records
nothing), and only when all of them pass are they sent again to be recorded; a line stated again
in a later request with another payload is checked with its first statement in one request, so
the bill is refused (DUPLICATE_LINE) as it would be in one request. A line the ledger
refuses raises LineRefused with the line's index in the bill (not in its request), and nothing
of the bill is recorded. What can still stop a bill part way is the connection or the server
failing between two requests; every request is idempotent (a line the ledger already holds with
the same payload is counted `unchanged`, with another payload `restated`), so such a pull is
simply run again. A request is sent only when it holds lines; `cost_data_through` goes with
every request.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

from clients.client import LedgerClient
from clients.errors import LedgerClientError
from clients.methods_spend import billed_line
from clients.models import BilledLine, BilledUsageReceipt

__all__ = ["BYTES_PER_REQUEST", "LINES_PER_REQUEST", "LineRefused", "PullResult", "batches", "send_lines"]

LINES_PER_REQUEST = 5_000
BYTES_PER_REQUEST = 2 * 1024 * 1024


class LineRefused(ValueError):
    """The ledger refused line `index` (0-based, in the order the bill's lines were given):
    `error` is its refusal (clients.errors), `reason` what it says about the line, in words that
    name no request. Nothing of the bill was recorded."""

    def __init__(self, index: int, error: LedgerClientError, request_index: int) -> None:
        # The server names the line by its place in the request ("lines[7]"), which means nothing
        # to whoever holds the bill: the words are kept, the place is the bill's.
        where = f"lines[{request_index}]"
        words = error.message.replace(where + ".", "").replace(where, "the line")
        self.index = index
        self.error = error
        self.reason = f"refused by the ledger ({error.reason}): {words}"
        super().__init__(f"line {index + 1} of the bill: {self.reason}")


@dataclass(frozen=True)
class PullResult:
    """What sending a bill did: lines new to the ledger (`recorded`), lines that replaced an
    earlier amount or payload (`restated`), lines already held as sent (`unchanged`); `lines`
    sent in `requests` requests; `position` the highest event position the receipts named (0
    when nothing was sent)."""

    recorded: int = 0
    restated: int = 0
    unchanged: int = 0
    lines: int = 0
    requests: int = 0
    position: int = 0

    def __add__(self, other: PullResult) -> PullResult:
        return PullResult(
            recorded=self.recorded + other.recorded,
            restated=self.restated + other.restated,
            unchanged=self.unchanged + other.unchanged,
            lines=self.lines + other.lines,
            requests=self.requests + other.requests,
            position=max(self.position, other.position),
        )

    @classmethod
    def of(cls, receipt: BilledUsageReceipt, lines: int) -> PullResult:
        """The result of one request of `lines` lines."""
        return cls(
            recorded=receipt.recorded,
            restated=receipt.restated,
            unchanged=receipt.unchanged,
            lines=lines,
            requests=1,
            position=receipt.position,
        )


def _wire_size(line: BilledLine) -> int:
    """The bytes the line adds to a request: its message, its length prefix and the field tag."""
    size = billed_line(line).ByteSize()
    return size + 1 + max(1, (size.bit_length() + 6) // 7)


def batches(
    lines: Iterable[BilledLine],
    *,
    max_lines: int = LINES_PER_REQUEST,
    max_bytes: int = BYTES_PER_REQUEST,
) -> Iterator[list[BilledLine]]:
    """The lines in order, cut into lists of at most `max_lines` lines and `max_bytes` bytes on
    the wire (a single line larger than `max_bytes` goes alone; the server judges it)."""
    if max_lines < 1 or max_bytes < 1:
        raise ValueError("max_lines and max_bytes must be positive")
    batch: list[BilledLine] = []
    size = 0
    for line in lines:
        line_size = _wire_size(line)
        if batch and (len(batch) >= max_lines or size + line_size > max_bytes):
            yield batch
            batch, size = [], 0
        batch.append(line)
        size += line_size
    if batch:
        yield batch


def _repeats(requests: list[list[BilledLine]]) -> list[tuple[int, BilledLine, int, BilledLine]]:
    """The lines stated again in a later request with the same line id and interval and another
    payload: (bill index, first line, bill index, later line) each. One request never sees the
    other's line, so the ledger's DUPLICATE_LINE is asked of the two together."""
    first: dict[tuple[str, datetime | None, datetime | None], tuple[int, int, BilledLine]] = {}
    pairs: list[tuple[int, BilledLine, int, BilledLine]] = []
    index = 0
    for number, batch in enumerate(requests):
        for line in batch:
            key = (line.line_id, line.interval_start, line.interval_end)
            seen = first.setdefault(key, (number, index, line))
            if seen[0] != number and seen[2] != line:
                pairs.append((seen[1], seen[2], index, line))
            index += 1
    return pairs


def _pair_requests(
    pairs: list[tuple[int, BilledLine, int, BilledLine]], max_lines: int, max_bytes: int
) -> Iterator[tuple[list[BilledLine], list[int]]]:
    """The pairs of `_repeats` cut into requests (lines, their bill indexes), a pair never split."""
    batch: list[BilledLine] = []
    indexes: list[int] = []
    size = 0
    for first_index, first, later_index, later in pairs:
        pair_size = _wire_size(first) + _wire_size(later)
        if batch and (len(batch) + 2 > max(max_lines, 2) or size + pair_size > max_bytes):
            yield batch, indexes
            batch, indexes, size = [], [], 0
        batch += [first, later]
        indexes += [first_index, later_index]
        size += pair_size
    if batch:
        yield batch, indexes


def _send(
    ledger: LedgerClient,
    provider: str,
    batch: list[BilledLine],
    indexes: list[int],
    cost_data_through: datetime | None,
    *,
    validate_only: bool,
    timeout_s: float | None,
) -> BilledUsageReceipt:
    """One RecordBilledUsage request; a refused line raises LineRefused with its bill index."""
    try:
        return ledger.record_billed_usage(
            provider=provider,
            lines=batch,
            cost_data_through=cost_data_through,
            validate_only=validate_only,
            timeout_s=timeout_s,
        )
    except LedgerClientError as error:
        where = error.metadata.get("line", "")
        if where.isascii() and where.isdigit() and int(where) < len(batch):
            raise LineRefused(indexes[int(where)], error, int(where)) from None
        raise


def send_lines(
    ledger: LedgerClient,
    provider: str,
    lines: Iterable[BilledLine],
    *,
    cost_data_through: datetime | None = None,
    max_lines: int = LINES_PER_REQUEST,
    max_bytes: int = BYTES_PER_REQUEST,
    timeout_s: float | None = None,
) -> PullResult:
    """Record `lines` of `provider`'s bill on the ledger in as many requests as they need, whole
    or not at all (see the module docstring), and sum the receipts. Raises LineRefused for a line
    the ledger refuses, and the ledger's other errors (clients.errors) as they come."""
    requests = list(batches(lines, max_lines=max_lines, max_bytes=max_bytes))
    offsets = [sum(len(batch) for batch in requests[:number]) for number in range(len(requests))]
    if len(requests) > 1:
        for batch, offset in zip(requests, offsets, strict=True):
            indexes = list(range(offset, offset + len(batch)))
            _send(ledger, provider, batch, indexes, cost_data_through, validate_only=True, timeout_s=timeout_s)
        for batch, indexes in _pair_requests(_repeats(requests), max_lines, max_bytes):
            _send(ledger, provider, batch, indexes, cost_data_through, validate_only=True, timeout_s=timeout_s)
    result = PullResult()
    for batch, offset in zip(requests, offsets, strict=True):
        indexes = list(range(offset, offset + len(batch)))
        receipt = _send(ledger, provider, batch, indexes, cost_data_through, validate_only=False, timeout_s=timeout_s)
        result = result + PullResult.of(receipt, len(batch))
    return result
