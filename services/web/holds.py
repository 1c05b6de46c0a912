"""The run page's holds: the run account's reservations and charges (pending, committed,
released, expired, refused, charged, and any state the ledger adds) as a server-rendered table,
"none yet" when there are none. A run holds one reservation a step, so the table lists the
pending holds first, then the newest HOLDS_NEWEST others, newest first; the older ones are folded
under a count (`details.holds-more`), and a line says how many there are (`p.holds-count`).
/static/spendchart.js (holdsInto) rebuilds them from the spend document (/api/runs/{run}/spend)
when the run's `spend` event arrives, in the same layout (`table.holds tr[data-state]`,
`p.holds-empty`). A run with more holds than that document's page (HOLDS_SHOWN_MAX) has its
pending and newest holds read newest first (`latest_table`), rendered again by the server."""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from services.render.tables import usd
from services.web import api
from services.web.access import Subject, WebError

if TYPE_CHECKING:
    from starlette.requests import Request

    from ledger.views import models
    from services.runtime.auth import Identity

__all__ = ["HOLDS_NEWEST", "HOLDS_SHOWN_MAX", "holds_section", "holds_table", "latest_table"]

# As many as the spend figure reads (/api/runs/{run}/spend?limit=200): both show the same page.
HOLDS_SHOWN_MAX = api.RESERVATIONS_LIMIT_DEFAULT
# How many holds other than the pending the table shows unfolded.
HOLDS_NEWEST = 20
HEADERS = ("state", "kind", "amount", "actual", "attempt", "reserved", "settled", "reason")
# The states with an amount spent: committed or charged, or settled by the ledger (what it charged).
SETTLED_STATES = frozenset({"committed", "charged", "settled"})


def _text(value: Any) -> str:
    return "-" if value is None else html.escape(str(value), quote=True)


def _time(moment: datetime | None) -> str:
    return "-" if moment is None else _text(moment.strftime("%Y-%m-%d %H:%M:%S UTC"))


def _row(r: models.Reservation) -> str:
    actual = usd(r.actual_usd_micro) if r.state in SETTLED_STATES else None
    cells = (r.state, r.kind, usd(r.amount_usd_micro), actual, r.attempt)
    return (
        f'<tr data-state="{_text(r.state)}">'
        + "".join(f"<td>{_text(c)}</td>" for c in cells)
        + f"<td>{_time(r.reserved_at)}</td><td>{_time(r.settled_at)}</td><td>{_text(r.reason or None)}</td></tr>"
    )


def _count(held: Sequence[models.Reservation], pending: int) -> str:
    if len(held) <= HOLDS_NEWEST + pending:
        return ""
    return (
        f'<p class="holds-count">{len(held)} holds, {pending} pending: the pending and the newest '
        f"{HOLDS_NEWEST} shown</p>"
    )


def holds_table(page: models.ReservationPage, run_id: str) -> str:
    """The table (hidden when empty) and its "none yet" line: the pending holds first, then the
    newest others, the older ones folded; a note when the page holds not all of them."""
    head = "".join(f"<th>{h}</th>" for h in HEADERS)
    newest = page.reservations[::-1]
    pending = [r for r in newest if r.state == "pending"]
    others = [r for r in newest if r.state != "pending"]
    rows = "".join(map(_row, pending + others[:HOLDS_NEWEST]))
    older = others[HOLDS_NEWEST:]
    folded = (
        f'<details class="holds-more"><summary>{len(older)} older holds</summary>'
        f'<table class="holds-older"><thead><tr>{head}</tr></thead><tbody>{"".join(map(_row, older))}</tbody>'
        "</table></details>"
        if older
        else ""
    )
    hidden = "" if page.reservations else " hidden"
    more = (
        f'<p class="note">The first {HOLDS_SHOWN_MAX}; all of them: '
        f'<a href="/api/runs/{_text(run_id)}/spend?limit={api.RESERVATIONS_LIMIT_MAX}">JSON</a>.</p>'
        if page.after_position is not None
        else ""
    )
    return (
        f"{_count(page.reservations, len(pending))}"
        f'<table class="holds"{hidden}><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{folded}'
        f'<p class="empty holds-empty"{"" if hidden else " hidden"}>none yet</p>{more}'
    )


def latest_table(held: Sequence[models.Reservation], total: int, pending: int, run_id: str) -> str:
    """A run with more holds than a page: its pending holds and newest HOLDS_NEWEST others (read
    newest first), the rest through the JSON. The feed's spend document is the first page only,
    so the run page's live panels render it again (`data-live`) rather than the page's script."""
    head = "".join(f"<th>{h}</th>" for h in HEADERS)
    link = f"/api/runs/{_text(run_id)}/spend?limit={api.RESERVATIONS_LIMIT_MAX}"
    pending_shown = sum(r.state == "pending" for r in held)
    shown = f"the newest {pending_shown} pending" if pending_shown < pending else "the pending"
    return (
        f'<div class="holds-list" data-live="holds"><p class="holds-count">{total} holds, {pending} pending: {shown}'
        f' and the newest {HOLDS_NEWEST} shown; all of them page by page: <a href="{link}">JSON</a></p>'
        f'<table class="holds" data-partial="true"><thead><tr>{head}</tr></thead>'
        f'<tbody>{"".join(map(_row, held))}</tbody></table><p class="empty holds-empty" hidden>none yet</p></div>'
    )


async def holds_section(request: Request, identity: Identity, run_id: str) -> str:
    """The holds table of a run, or why the caller's token may not read them."""
    web = api.web_of(request)
    try:
        await web.access.authorize("spend", identity, Subject(account=run_id))
    except WebError as error:
        return f'<p class="note" data-reason="{_text(error.reason)}">{_text(error.message)}</p>'
    page = await web.call(web.ledger.reservations, run_id, limit=HOLDS_SHOWN_MAX)
    if page.after_position is None:
        return holds_table(page, run_id)
    latest = await web.call(web.ledger.latest_holds, run_id, newest=HOLDS_NEWEST, pending_max=HOLDS_SHOWN_MAX)
    return latest_table(*latest, run_id)
