"""ReadEvents in pages bounded by bytes as well as by count: the server holds a page, never the
log, and an event larger than a page still goes out alone."""

from __future__ import annotations

import tracemalloc

from ledger import Ledger
from tests.service.support import Served, Stubs, key
from trainledger.v1 import events_pb2

MB = 1024 * 1024


def append_wide_batches(ledger: Ledger, count: int) -> list[int]:
    """Step batches of about 1.1 MB stored each, on a run of their own; their positions."""
    run_id = ledger.open_run(run_key=key(), name="wide").run_id
    ledger.start_attempt(run_id=run_id, attempt_id="a1")
    return [
        ledger.append_steps(
            run_id=run_id,
            attempt=1,
            steps=list(range(n * 10_000, (n + 1) * 10_000)),
            metrics={f"m{m}": [m + 0.5] * 10_000 for m in range(12)},
        ).position
        for n in range(count)
    ]


def test_a_page_is_bounded_by_bytes_and_one_larger_event_goes_out_alone(served: Served, stubs: Stubs) -> None:
    first = append_wide_batches(served.ledger, 3)[0]
    head = served.ledger.head()
    whole = served.ledger.read_events(from_position=first, limit=100)
    assert [e["position"] for e in whole] == list(range(first, head + 1))
    # A budget below one event: each page holds one event, and the reader still gets past it.
    pages, position = [], first
    while position <= head:
        page = served.ledger.read_events(from_position=position, limit=100, bytes_max=1)
        assert len(page) == 1
        pages.append(page[0]["position"])
        position = page[0]["position"] + 1
    assert pages == list(range(first, head + 1))
    # A budget of two wide events holds two of them, whatever the count allows.
    two = served.ledger.read_events(from_position=first, limit=100, bytes_max=2 * MB + MB // 2)
    assert [e["position"] for e in two] == [first, first + 1]


def test_read_events_holds_a_page_in_memory_not_the_log(served: Served, stubs: Stubs) -> None:
    count = 12
    first = append_wide_batches(served.ledger, count)[0]
    # What the projector allocates for these batches is not the read's: let it finish first.
    served.ledger.wait(served.ledger.head(), 60)
    tracemalloc.start()
    try:
        seen = [
            e.position for e in stubs.events.ReadEvents(events_pb2.ReadEventsRequest(from_position=first), timeout=60)
        ]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seen == list(range(first, seen[-1] + 1)) and len(seen) >= count
    # The events read here hold over 12 MB stored, 60 MB decoded; a page holds about
    # EVENTS_PAGE_BYTES of them stored.
    assert peak < 24 * MB, f"peak {peak / MB:.0f} MB"
