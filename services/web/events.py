"""The events endpoint (/api/events) and what the events page reads: a page of the log, bounded in
count (EVENTS_LIMIT_MAX) and in stored bytes (EVENTS_BYTES_MAX), of one type and one run (with its
spend account) when asked, authorized as the Events service's methods."""

from __future__ import annotations

from typing import Any

from starlette.requests import HTTPConnection, Request
from starlette.responses import Response

from ledger.domain.base import ledger_id
from ledger.domain.topics import event_topics
from services.web.access import Subject, invalid
from services.web.api import Web, identify, resolve_run, web_of
from services.web.documents import event_document, json_response
from services.web.params import STEP_MAX, required_integer, text

__all__ = ["events", "read_events", "EVENTS_LIMIT_MAX", "EVENTS_BYTES_MAX"]

EVENTS_LIMIT_DEFAULT, EVENTS_LIMIT_MAX = 100, 1_000
# The stored bytes of one page of events (a step batch can hold megabytes): past it the page ends.
EVENTS_BYTES_MAX = 256 * 1024


async def read_events(web: Web, request: HTTPConnection) -> tuple[list[dict[str, Any]], int | None]:
    """The page of events an events request asks for, and the position the next one starts at."""
    identity = await identify(request, "events")
    await web.access.authorize("events", identity, Subject())
    start = required_integer(request, "from", 1, minimum=1, maximum=STEP_MAX)
    limit = required_integer(request, "limit", EVENTS_LIMIT_DEFAULT, minimum=1, maximum=EVENTS_LIMIT_MAX)
    kind = text(request, "type")
    if kind and not event_topics(kind):
        raise invalid("type", f"no event type {kind}")
    ref = request.query_params.get("run", "")
    originators: list[str] = []
    if ref:
        run_id = await resolve_run(web, identity, ref)
        originators = [run_id, str(ledger_id("account", run_id))]
    events, following = await web.call(_events_page, web.ledger, start, limit, [kind] if kind else [], originators)
    return [event_document(e) for e in events], following


def _events_page(
    ledger: Any, start: int, limit: int, types: list[str], originators: list[str]
) -> tuple[list[dict[str, Any]], int | None]:
    """A page of events bounded in count and stored bytes (a step batch can hold megabytes), and
    the position the next page starts at (None when no matching event follows)."""
    events: list[dict[str, Any]] = ledger.read_events(
        from_position=start, limit=limit, types=types, originator_ids=originators, bytes_max=EVENTS_BYTES_MAX
    )
    if not events:
        return events, None
    following = events[-1]["position"] + 1
    if len(events) < limit:  # The log ended, or the page reached its bytes: is there more?
        more = ledger.read_events(
            from_position=following, limit=1, types=types, originator_ids=originators, bytes_max=1
        )
        if not more:
            return events, None
    return events, following


async def events(request: Request) -> Response:
    found, following = await read_events(web_of(request), request)
    return json_response({"events": found, "next_from": following})
