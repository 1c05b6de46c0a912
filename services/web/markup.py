"""The dashboard's HTML: every value through html.escape (`e`), times in UTC with their zone, amounts
in dollars (services.render.tables.usd), the page layout and the pieces the pages share."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from starlette.responses import HTMLResponse

from ledger.views import models
from services.render.tables import usd
from services.web.access import WebError

__all__ = [
    "e",
    "when",
    "layout",
    "error_page",
    "table",
    "live_panels",
    "percent",
    "bar",
    "spend_text",
    "query",
    "progress_cell",
]

NAV = (
    ("runs", "/"),
    ("compare", "/compare"),
    ("accounts", "/accounts"),
    ("registry", "/registry"),
    ("events", "/events"),
)


def e(value: Any) -> str:
    """A value as escaped HTML text ("-" for None)."""
    return "-" if value is None else html.escape(str(value), quote=True)


def when(moment: datetime | None) -> str:
    """A time as <time>, in UTC with its zone."""
    if moment is None:
        return "-"
    return f'<time datetime="{e(moment.isoformat())}">{e(moment.strftime("%Y-%m-%d %H:%M:%S %Z"))}</time>'


def layout(page: str, title: str, body: str, *, attributes: str = "", status: int = 200) -> HTMLResponse:
    nav = "".join(f'<a href="{href}"{" aria-current=page" if name == page else ""}>{name}</a>' for name, href in NAV)
    document = (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)} · trainledger</title>"
        '<link rel="stylesheet" href="/static/style.css">'
        '<script type="module" src="/static/dashboard.js"></script>'
        "</head><body>"
        f'<header><a class="brand" href="/">trainledger</a><nav>{nav}</nav></header>'
        f'<main data-page="{e(page)}"{attributes}>{body}</main>'
        "</body></html>\n"
    )
    return HTMLResponse(document, status_code=status, headers={"cache-control": "no-store"})


def error_page(error: WebError) -> HTMLResponse:
    detail = ""
    candidates = error.fields.get("candidates")
    if candidates:
        items = "".join(
            f'<li><a href="/runs/{e(c["run_id"])}">{e(c["run_id"])}</a> {e(c["name"])} ({e(c["status"])})</li>'
            for c in candidates
        )
        detail = f"<ul class=candidates>{items}</ul>"
    body = (
        f'<h1>{e(error.status)} {e(error.reason)}</h1><p class="error" data-reason="{e(error.reason)}">'
        f"{e(error.message)}</p>{detail}"
    )
    return layout("error", error.reason, body, status=error.status)


def table(css: str, headers: Sequence[str], rows: Iterable[str], empty: str = "none yet") -> str:
    """A table; one without rows says so (`empty`) under its headers."""
    head = "".join(f"<th>{e(h)}</th>" for h in headers)
    body = "".join(rows) or f'<tr class="empty"><td colspan="{len(headers)}">{e(empty)}</td></tr>'
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def live_panels(*panels: tuple[str, str]) -> str:
    """Titled sections the run page renders again as its live feed reports changes (each is
    swapped for the server's fresh one by its `data-live` name: livepanels.js livePanels). One
    without content is an empty hidden section, there for the feed to fill."""
    return "".join(
        f'<section class="panel" data-live="{e(title.lower())}"><h2>{e(title)}</h2>{content}</section>'
        if content
        else f'<section class="panel" data-live="{e(title.lower())}" hidden></section>'
        for title, content in panels
    )


def percent(used: int, cap: int | None) -> int:
    """How much of a cap is used, 0..100 (0 without a cap)."""
    if not cap:
        return 100 if cap == 0 and used else 0
    return max(0, min(100, used * 100 // cap))


def bar(used: int, cap: int | None) -> str:
    return f'<div class="bar"><div class="fill" style="width:{percent(used, cap)}%"></div></div>'


def spend_text(committed: int, pending: int, cap: int | None, presumed: int = 0) -> str:
    """ "$1.50 + $0.40 presumed + $0.25 held of $10.00": the bar beside it is committed + presumed
    (what the cap counts as spent; presumed: charged by the ledger for abandoned holds)."""
    charged = f" + {usd(presumed)} presumed" if presumed else ""
    held = f" + {usd(pending)} held" if pending else ""
    return f"{e(usd(committed))}{e(charged)}{e(held)} of {e(usd(cap)) if cap is not None else 'no cap'}"


def query(**values: Any) -> str:
    pairs = [(k, v) for k, v in values.items() if v not in (None, "")]
    return urlencode(pairs, doseq=True)


def progress_cell(progress: models.Progress, *, amount: bool = True) -> str:
    """A run's progress against its plan as a bar and (with `amount`) "40%"; "-" without a plan."""
    if progress.fraction is None:
        return "-"
    width = int(progress.fraction * 100)
    return (
        f'<div class="bar" role="progressbar" aria-valuenow="{width}" aria-valuemin="0" aria-valuemax="100">'
        f'<div class="fill" style="width:{width}%"></div></div>'
        + (f'<span class="amount">{width}%</span>' if amount else "")
    )
