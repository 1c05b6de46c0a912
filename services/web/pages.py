"""The dashboard's pages: server-rendered HTML from string templates, every value through
html.escape. The tables work without JavaScript; charts are empty <figure> elements that
/static/dashboard.js (the page's module it starts: runpage.js, runspage.js, comparepage.js) fills
from the JSON API (the DOM contract: `main[data-page]`,
`figure.chart[data-run-id][data-metric][data-sparse]`, `table.runs tr[data-run-id]`,
`[data-field=...]` cells, `figure.spend-chart`, `figure.chart.compare[data-metric][data-runs]`).

Amounts are shown in dollars (services.render.tables.usd), times in UTC with their zone. Each page reads
through the same helpers as the API (services.web.api), so it is authorized as the same gRPC method;
without a valid token, when authentication is on, a page redirects to /login.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ledger.views import models
from services.render import status_text
from services.render.diff import COMPARE_RUNS_MAX, SHORT_ID, run_labels
from services.render.tables import usd
from services.web import api, documents, params
from services.web.access import Subject, WebError
from services.web.events import read_events
from services.web.markup import bar, e, layout, progress_cell, query, spend_text, table, when
from services.web.run_columns import chosen_columns, column_cells, columns_of, tags_cell

__all__ = [
    "runs",
    "accounts",
    "registry",
    "family",
    "events",
]

EVENT_DATA_SHOWN_MAX = 20_000  # Characters of an event's data the events page shows expanded.


# Runs.


def run_row(run: models.RunSummary, label: str = "", keys: Sequence[str] = (), fields: Any = None) -> str:
    """A row of the runs table; `label` names the run to compare (services.render.diff.run_labels),
    `keys` the columns chosen or differing (services.web.run_columns) and `fields` their values."""
    amount = spend_text(run.committed_usd_micro, run.pending_usd_micro, run.cap_usd_micro, run.presumed_usd_micro)
    spent = bar(run.committed_usd_micro + run.presumed_usd_micro, run.cap_usd_micro) + (
        f'<span class="amount">{amount}</span>'
    )
    retracted = ' <span class="tag retracted">retracted</span>' if run.retracted else ""
    marked = ' class="retracted"' if run.retracted else ""
    return (
        f'<tr data-run-id="{e(run.run_id)}"{marked}>'
        f'<td><input type="checkbox" name="run" value="{e(run.run_id)}" form="compare"'
        f' aria-label="compare {e(label or run.name or run.run_id[:SHORT_ID])}"'
        f' title="compare {e(label or run.name or run.run_id[:SHORT_ID])}"></td>'
        f'<td data-field="name"><a href="/runs/{e(run.run_id)}">{e(run.name or run.run_id)}</a>{retracted}</td>'
        f'<td data-field="status" data-status="{e(run.status)}">{e(status_text(run.status, run.current_attempt))}</td>'
        f'<td data-field="attempt">{e(run.current_attempt)}</td>'
        f'<td data-field="last_step">{e(run.last_step)}</td>'
        f'<td data-field="progress">{progress_cell(run.progress)}</td>'
        f'<td data-field="spend" data-committed-usd-micro="{run.committed_usd_micro}"'
        f' data-presumed-usd-micro="{run.presumed_usd_micro}"'
        f' data-cap-usd-micro="{e(run.cap_usd_micro if run.cap_usd_micro is not None else "")}">{spent}</td>'
        f'<td data-field="account">{e(run.parent_account or "-")}</td>'
        f'<td data-field="opened_at">{when(run.opened_at)}</td>'
        f"{tags_cell(run.tags)}{column_cells(run.run_id, keys, fields or {})}</tr>"
    )


async def runs(request: Request) -> Response:
    web = api.web_of(request)
    identity = await api.identify(request, "runs")
    chosen_keys = chosen_columns(request)
    refusal = ""
    try:
        page = await api.runs_page(web, request, identity)
    except WebError as error:
        if error.fields.get("field") not in ("where", "order_by"):
            raise
        # A search refused shows the form and why, never every run.
        page, refusal = api.RunsAnswer((), ""), f'<p class="error" id="search-error">{e(error.message)}</p>'
    chosen = request.query_params.get("status", "")
    options = "".join(
        f'<option value="{s}"{" selected" if s == chosen else ""}>{s or "any status"}</option>'
        for s in ("", *params.STATUSES)
    )
    name, account = request.query_params.get("name", ""), request.query_params.get("account", "")
    where = request.query_params.get("where", "")
    retracted = api.include_retracted(request)
    filters = (
        '<form class="filters" method="get" action="/">'
        f'<label class="search">search <input name="where" value="{e(where)}"'
        " placeholder=\"tags.team = 'vision' and summary.eval_loss < 0.5\"></label>"
        f'<label>columns <input name="columns" value="{e(",".join(chosen_keys))}" placeholder="spec.lr,spec.model">'
        "</label>"
        f'<label>status <select name="status">{options}</select></label>'
        f'<label>name <input name="name" value="{e(name)}"></label>'
        f'<label>account <input name="account" value="{e(account)}"></label>'
        '<label><input type="checkbox" name="include_retracted" value="1"'
        f"{' checked' if retracted else ''}> retracted runs too</label>"
        '<button type="submit">filter</button></form>'
    )
    compare_form = (
        f'<form id="compare" class="compare" method="get" action="/compare" data-max="{COMPARE_RUNS_MAX}">'
        f'<button type="submit">compare selected</button> <span class="hint">up to {COMPARE_RUNS_MAX} runs</span>'
        '<span class="error" id="compare-limit" role="alert" hidden></span></form>'
    )
    labels = run_labels([(r.run_id, r.name) for r in page.runs])
    keys, fields = await web.call(columns_of, web.ledger, page.runs, chosen_keys)
    rows = table(
        "runs",
        ["", "name", "status", "attempt", "last step", "progress", "spend", "account", "opened", "tags", *keys],
        (run_row(r, label, keys, fields) for r, label in zip(page.runs, labels, strict=True)),
        empty="No runs.",
    )
    following = ""
    token = page.next_page
    if token:
        limit = request.query_params.get("limit", "")
        href = "/?" + query(
            status=chosen,
            name=name,
            account=account,
            include_retracted="1" if retracted else "",
            where=where,
            order_by=request.query_params.get("order_by", ""),
            desc=request.query_params.get("desc", ""),
            limit=limit,
            columns=",".join(chosen_keys),
            page=token,
        )
        following = f'<p class="pager"><a rel="next" href="{e(href)}">older runs</a></p>'
    body = f"<h1>Runs</h1>{filters}{refusal}{compare_form}{'' if refusal else rows}{following}"
    return layout("runs", "runs", body, status=400 if refusal else 200)


# Accounts.


def _depths(accounts: Sequence[models.Account]) -> dict[str, int]:
    depth: dict[str, int] = {}
    for account in accounts:  # Parents come before children.
        depth[account.account] = depth.get(account.parent, -1) + 1 if account.parent else 0
    return depth


async def accounts(request: Request) -> Response:
    web = api.web_of(request)
    identity = await api.identify(request, "account")
    found = await api.visible_accounts(web, identity)
    depth = _depths(found)
    rows = (
        f'<tr data-account="{e(a.account)}" data-depth="{depth[a.account]}">'
        f'<td style="padding-left:{depth[a.account] * 1.5 + 0.5}em">{e(a.account)}</td>'
        f"<td>{e(usd(a.cap_usd_micro))}</td><td>{e(usd(a.committed_usd_micro))}</td>"
        f"<td>{e(usd(a.pending_usd_micro))}</td><td>{e(usd(a.remaining_usd_micro))}</td>"
        f"<td>{e(usd(a.overrun_usd_micro))}</td>"
        f'<td data-field="spend">{bar(a.committed_usd_micro + a.pending_usd_micro, a.cap_usd_micro)}</td>'
        f'<td><a href="/?{e(query(account=a.account))}">runs</a></td></tr>'
        for a in found
    )
    body = "<h1>Accounts</h1>" + table(
        "accounts",
        ["account", "cap", "committed", "pending", "remaining", "overrun", "", ""],
        rows,
        empty="No accounts with caps.",
    )
    page = await api.runs_page(web, request, identity)
    capped = [run for run in page.runs if run.cap_usd_micro is not None]
    body += (
        "<h2>Runs' accounts</h2><p>Each run spends from an account of its own; those with a cap, "
        f"among the {len(page.runs)} newest runs.</p>"
        + table(
            "run-accounts",
            ["run", "id", "cap", "committed", "pending", "remaining", "parent", ""],
            map(_run_account_row, capped),
            empty="No run has a cap.",
        )
    )
    return layout("accounts", "accounts", body)


def _run_account_row(run: models.RunSummary) -> str:
    cap = run.cap_usd_micro or 0
    remaining = cap - run.committed_usd_micro - run.pending_usd_micro
    return (
        f'<tr data-run-id="{e(run.run_id)}"><td><a href="/runs/{e(run.run_id)}">{e(run.name or run.run_id)}</a></td>'
        f"<td><code>{e(run.run_id)}</code></td><td>{e(usd(cap))}</td><td>{e(usd(run.committed_usd_micro))}</td>"
        f"<td>{e(usd(run.pending_usd_micro))}</td><td>{e(usd(remaining))}</td>"
        f"<td>{e(run.parent_account or None)}</td>"
        f'<td data-field="spend">{bar(run.committed_usd_micro + run.pending_usd_micro, cap)}</td></tr>'
    )


# Registry.


async def registry(request: Request) -> Response:
    web = api.web_of(request)
    identity = await api.identify(request, "registry")
    await web.access.authorize("registry", identity, Subject())
    families: list[models.FamilySummary] = await web.call(web.ledger.families)
    rows = (
        f'<tr data-family="{e(f.family)}"><td><a href="/registry/{e(f.family)}">{e(f.family)}</a></td>'
        f"<td>{e(f.current or None)}</td><td>{e(f.version_count)}</td><td>{'yes' if f.retired else '-'}</td></tr>"
        for f in families
    )
    body = "<h1>Registry</h1>" + table(
        "families", ["family", "current", "versions", "retired"], rows, empty="No families registered."
    )
    return layout("registry", "registry", body)


def _verdict(verdict: models.GateVerdict | None) -> str:
    """Whether the gate passed, and who said so: evaluated by the ledger, or asserted by the caller."""
    if verdict is None:
        return "-"
    word = "passed" if verdict.passed else "failed"
    mode = e(verdict.mode)
    return f'<span class="verdict {word}">{word}</span><span class="gate {mode}"> ({mode})</span>'


def _why(promotion: models.Promotion) -> str:
    """A history row's reason, and for an evaluated gate each score with where it was recorded."""
    verdict = promotion.verdict
    why = promotion.reason or (verdict.reason if verdict else "")
    if promotion.refusal:
        why = f"{promotion.refusal}: {why}" if why else promotion.refusal
    evidence = ", ".join(
        f"{x.name}={'none' if x.value is None else f'{x.value:g}'}"
        f" ({x.source or 'not recorded'}, position {x.position})"
        for x in (verdict.evidence if verdict else ())
    )
    scores = f'<br><span data-field="evidence">{e(evidence)}</span>' if evidence else ""
    return f'<td><span data-field="reason">{e(why or None)}</span>{scores}</td>'


def _family_marks(found: models.Family) -> str:
    """A family's aliases and retirement, under its current version."""
    aliases = ", ".join(f"{a.alias}={a.version}" for a in found.aliases)
    text = f'<p>aliases: <span data-field="aliases">{e(aliases or None)}</span></p>'
    if found.retired is not None:
        retired = found.retired
        text += f'<p class="retired">Retired {when(retired.at)} by {e(retired.principal)}: {e(retired.reason)}</p>'
    return text


async def family(request: Request) -> Response:
    web = api.web_of(request)
    found = await api.read_family(web, request)
    versions = (
        f'<tr data-version="{v.version}"{" class=current" if v.version == found.current else ""}>'
        f"<td>{e(v.version)}</td><td>{e(v.artifact_uri)}</td><td><code>{e(v.digest[:19])}</code></td>"
        f"<td>{_run_link(v.source_run_id)}{_retracted_tag(v.source_retracted)}</td>"
        f"<td>{_step_link(v.source_run_id, v.source_step)}</td>"
        f"<td>{when(v.registered_at)}</td></tr>"
        for v in found.versions
    )
    history = (
        f'<tr data-position="{p.position}"{" class=refused" if p.kind == "refused" else ""}><td>{when(p.at)}</td>'
        f"<td>{e(p.kind)}</td><td>{e(p.version)}</td>"
        f"<td>{e(p.previous or None)}</td><td>{_verdict(p.verdict)}</td>"
        f"{_why(p)}<td>{e(p.principal)}</td></tr>"
        for p in found.history
    )
    body = (
        f"<h1>{e(found.family)}</h1><p>current version: <strong data-field=current>{e(found.current or None)}"
        "</strong></p>"
        + _family_marks(found)
        + "<h2>Versions</h2>"
        + table("versions", ["version", "artifact", "digest", "source run", "step", "registered"], versions)
        + "<h2>Promotions</h2>"
        + table("history", ["at", "kind", "version", "from", "gate", "reason", "by"], history)
    )
    return layout("family", found.family, body, attributes=f' data-family="{e(found.family)}"')


def _retracted_tag(retracted: bool) -> str:
    """A version whose source run was retracted is flagged so beside its run."""
    return ' <span class="tag retracted" data-field="source_retracted">retracted</span>' if retracted else ""


def _run_link(run_id: str) -> str:
    return f'<a href="/runs/{e(run_id)}"><code>{e(run_id[:8])}</code></a>' if run_id else "-"


# Events.


async def events(request: Request) -> Response:
    web = api.web_of(request)
    found, following = await read_events(web, request)
    params = request.query_params
    form = (
        '<form class="filters" method="get" action="/events">'
        f'<label>from <input name="from" inputmode="numeric" value="{e(params.get("from", ""))}"></label>'
        f'<label>type <input name="type" value="{e(params.get("type", ""))}"></label>'
        f'<label>run <input name="run" value="{e(params.get("run", ""))}"></label>'
        f'<label>limit <input name="limit" inputmode="numeric" value="{e(params.get("limit", ""))}"></label>'
        '<button type="submit">show</button></form>'
    )
    rows = (
        f'<tr data-position="{ev["position"]}"><td>{e(ev["position"])}</td><td>{e(ev["at"])}</td>'
        f"<td>{e(ev['type'])}</td><td><code>{e(ev['originator_id'][:8])}</code></td><td>{e(ev['principal'])}</td>"
        f"<td>{_event_data(ev['data'])}</td></tr>"
        for ev in found
    )
    pager = ""
    if following is not None:
        href = "/events?" + query(
            **{"from": following, "type": params.get("type"), "run": params.get("run"), "limit": params.get("limit")}
        )
        pager = f'<p class="pager"><a rel="next" href="{e(href)}">later events</a></p>'
    body = (
        "<h1>Events</h1>"
        + form
        + table("events", ["position", "at (UTC)", "type", "originator", "principal", "data"], rows)
        + pager
    )
    return layout("events", "events", body)


def _short(data: Any, limit: int = 300) -> str:
    text = documents.encode(data).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _event_data(data: Any) -> str:
    """An event's data as one line (its start), expanding to the whole of it (indented, cut at
    EVENT_DATA_SHOWN_MAX characters)."""
    whole = json.dumps(data, indent=2, sort_keys=True, default=str)
    if len(whole) > EVENT_DATA_SHOWN_MAX:
        whole = whole[: EVENT_DATA_SHOWN_MAX - 1] + "…"
    return (
        f'<details class="data"><summary><code>{e(_short(data, 160))}</code></summary><pre>{e(whole)}</pre></details>'
    )


def _step_link(run_id: str, step: int) -> str:
    """A version's source step, linked to that checkpoint's row on its run's page."""
    if not run_id:
        return "-"  # Registered without a source run: no step to name (the field reads 0).
    return f'<a href="/runs/{e(run_id)}#checkpoint-{step}" data-field="source_step">{e(step)}</a>'
