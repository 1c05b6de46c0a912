"""The dashboard's pages: server-rendered HTML from string templates, every value through
html.escape. The tables work without JavaScript; charts are empty <figure> elements that
/static/dashboard.js fills from the JSON API (the DOM contract: `main[data-page]`,
`figure.chart[data-run-id][data-metric][data-sparse]`, `table.runs tr[data-run-id]`,
`[data-field=...]` cells, `figure.spend-chart`, `figure.chart.compare[data-metric][data-runs]`).

Amounts are shown in dollars (services.render.tables.usd), times in UTC with their zone. Each page reads
through the same helpers as the API (services.web.api), so it is authorized as the same gRPC method;
without a valid token, when authentication is on, a page redirects to /login.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from ledger.domain.errors import LedgerError
from ledger.domain.reasons import Reason
from ledger.views import models
from services.render import checkpoint_state, plan_hold_text, progress_text, report_verdict, scores_text, status_text
from services.render.tables import usd
from services.runtime import paging as tokens
from services.web import api, documents, params
from services.web.access import METHODS, TOKEN_COOKIE, Subject, WebError
from services.web.did_it_work import compare_table, did_it_work
from services.web.holds import holds_section

__all__ = [
    "layout",
    "error_page",
    "runs",
    "run",
    "compare",
    "accounts",
    "registry",
    "family",
    "events",
    "login",
    "login_post",
    "logout",
]

NAV = (
    ("runs", "/"),
    ("compare", "/compare"),
    ("accounts", "/accounts"),
    ("registry", "/registry"),
    ("events", "/events"),
)
TOKEN_LENGTH_MAX = 512
EVENT_DATA_SHOWN_MAX = 20_000  # Characters of an event's data the events page shows expanded.
FORM_BYTES_MAX = 4_096


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
    swapped for the server's fresh one by its `data-live` name: dashboard.js livePanels)."""
    return "".join(
        f'<section class="panel" data-live="{e(title.lower())}"><h2>{e(title)}</h2>{content}</section>'
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


# Runs.


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


def run_row(run: models.RunSummary) -> str:
    amount = spend_text(run.committed_usd_micro, run.pending_usd_micro, run.cap_usd_micro, run.presumed_usd_micro)
    spent = bar(run.committed_usd_micro + run.presumed_usd_micro, run.cap_usd_micro) + (
        f'<span class="amount">{amount}</span>'
    )
    retracted = ' <span class="tag retracted">retracted</span>' if run.retracted else ""
    marked = ' class="retracted"' if run.retracted else ""
    return (
        f'<tr data-run-id="{e(run.run_id)}"{marked}>'
        f'<td><input type="checkbox" name="run" value="{e(run.run_id)}" form="compare" aria-label="compare"></td>'
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
        "</tr>"
    )


async def runs(request: Request) -> Response:
    web = api.web_of(request)
    identity = await api.identify(request, "runs")
    page = await api.runs_page(web, request, identity)
    chosen = request.query_params.get("status", "")
    options = "".join(
        f'<option value="{s}"{" selected" if s == chosen else ""}>{s or "any status"}</option>'
        for s in ("", *params.STATUSES)
    )
    name, account = request.query_params.get("name", ""), request.query_params.get("account", "")
    retracted = api.include_retracted(request)
    filters = (
        '<form class="filters" method="get" action="/">'
        f'<label>status <select name="status">{options}</select></label>'
        f'<label>name <input name="name" value="{e(name)}"></label>'
        f'<label>account <input name="account" value="{e(account)}"></label>'
        '<label><input type="checkbox" name="include_retracted" value="1"'
        f"{' checked' if retracted else ''}> retracted runs too</label>"
        '<button type="submit">filter</button></form>'
    )
    compare_form = (
        '<form id="compare" class="compare" method="get" action="/compare">'
        '<label>metric <input name="metric" value="loss"></label>'
        '<button type="submit">compare selected</button></form>'
    )
    rows = table(
        "runs",
        ["", "name", "status", "attempt", "last step", "progress", "spend", "account", "opened"],
        (run_row(r) for r in page.runs),
        empty="No runs.",
    )
    following = ""
    token = tokens.runs_token(page.after)
    if token:
        limit = request.query_params.get("limit", "")
        href = "/?" + query(
            status=chosen,
            name=name,
            account=account,
            include_retracted="1" if retracted else "",
            limit=limit,
            page=token,
        )
        following = f'<p class="pager"><a rel="next" href="{e(href)}">older runs</a></p>'
    body = f"<h1>Runs</h1>{filters}{compare_form}{rows}{following}"
    return layout("runs", "runs", body)


# A run.


def _document(value: Any) -> str:
    return e(json.dumps(value, indent=2, sort_keys=True, default=str))


def _sparse_names(stats: Sequence[models.MetricStats]) -> set[str]:
    """Metrics with fewer values than the densest one (eval_* logged now and then)."""
    densest = max((s.count for s in stats), default=0)
    return {s.name for s in stats if s.count < densest}


def _checkpoint_row(checkpoint: models.Checkpoint, state: models.RunState) -> str:
    marks = checkpoint_state(checkpoint, state.checkpoint, state.best_checkpoint)
    return (
        f'<tr data-step="{checkpoint.step}" data-attempt="{checkpoint.attempt}">'
        f"<td>{e(checkpoint.step)}</td><td>{e(checkpoint.attempt)}</td><td>{e(checkpoint.handle.uri)}</td>"
        f"<td>{e(checkpoint.handle.fidelity)}</td><td>{when(checkpoint.saved_at)}</td>"
        f"<td>{when(checkpoint.expires_at)}</td>"
        f'<td data-field="scores">{e(scores_text(checkpoint.scores))}</td>'
        f'<td data-field="checkpoint_state">{e(marks)}</td></tr>'
    )


def _dataset_row(dataset: models.Dataset) -> str:
    digest = dataset.digest.partition(":")[2][:12] or dataset.digest[:12]
    return (
        f'<tr data-role="{e(dataset.role)}"><td>{e(dataset.role)}</td><td>{e(dataset.format)}</td>'
        f"<td>{e(f'{dataset.rows:,}')}</td><td>{e(f'{dataset.tokens:,}' if dataset.tokens is not None else None)}</td>"
        f'<td><code title="{e(dataset.digest)}">{e(digest)}</code></td><td>{e(dataset.source_uri or None)}</td>'
        f'<td data-field="verdict">{e(report_verdict(dataset.report))}</td><td>{when(dataset.recorded_at)}</td></tr>'
    )


def _progress_attributes(progress: models.Progress) -> str:
    """The progress fact's attributes: its plan, rate and ETA, from which the page moves the bar
    as steps arrive (dashboard.js)."""
    attributes = {
        "data-field": "progress",
        "data-max-steps": progress.max_steps,
        "data-rate": progress.steps_per_second,
        "data-eta": progress.eta.isoformat() if progress.eta is not None else None,
    }
    return "".join(f' {name}="{e(value)}"' for name, value in attributes.items() if value is not None)


def _plan_bar(progress: models.Progress) -> str:
    """The progress fact's bar: none without a plan (the text says the step)."""
    return progress_cell(progress, amount=False) if progress.fraction is not None else ""


def _facts_of_plan(state: models.RunState) -> str:
    """The run's objective, progress (with its ETA) and best checkpoint, each when it has one."""
    info, parts = state.run, []
    if info.objective is not None and info.objective.metric:
        better = "lower" if info.objective.mode == "min" else "higher"
        parts.append(f"<dt>objective</dt><dd>{e(info.objective.metric)} ({better} is better)</dd>")
    progress = progress_text(state.progress, info.status == "running")
    if progress is not None:
        parts.append(
            f"<dt>progress</dt><dd{_progress_attributes(state.progress)}>{_plan_bar(state.progress)}"
            f'<span class="progress-text">{e(progress)}</span></dd>'
        )
    best = state.best_checkpoint
    if best is not None:
        metric = info.objective.metric if info.objective is not None else ""
        score = best.scores.get(metric)
        scored = f" ({metric}={score:.6g})" if score is not None else ""
        parts.append(f'<dt>best</dt><dd data-field="best">step {best.step}, attempt {best.attempt}{e(scored)}</dd>')
    return "".join(parts)


def _attempt_row(attempt: models.Attempt) -> str:
    return (
        f'<tr data-attempt="{attempt.number}"><td>{e(attempt.number)}</td><td>{e(attempt.label)}</td>'
        f"<td>{when(attempt.started_at)}</td><td>{e(attempt.resumed_from_step)}</td>"
        f"<td>{'yes' if attempt.ended else 'no'}</td>"
        f"<td>{when(attempt.last_seen_at)}</td><td>{when(attempt.lost_at)}</td></tr>"
    )


def _iso(moment: datetime | None) -> str:
    return "" if moment is None else moment.isoformat()


METRIC_HEADERS = ("metric", "values", "first step", "last step", "last", "min", "max")
ATTEMPT_HEADERS = ("attempt", "label", "started", "resumed from", "ended", "last seen", "lost")
CHECKPOINT_HEADERS = ("step", "attempt", "uri", "fidelity", "saved", "expires", "scores", "state")
DATASET_HEADERS = ("role", "format", "rows", "tokens", "digest", "source", "verdict", "recorded")


# How long a page asked at a position (`?min_position=`, the last live event a run page was sent)
# waits for the views to reach it; then it is a 503 VIEW_NOT_CAUGHT_UP, never an older page.
PAGE_WAIT_S = 5.0


def _run_data(
    ledger: Any, run_id: str, min_position: int, timeout_s: float
) -> tuple[models.RunState, tuple[models.MetricStats, ...], Any]:
    return (
        ledger.run_state(run_id, min_position=min_position, timeout_s=timeout_s),
        ledger.metric_stats(run_id),
        ledger.checkpoints(run_id, limit=api.CHECKPOINTS_MAX),
    )


async def run(request: Request) -> Response:
    web = api.web_of(request)
    identity = await api.identify(request, "run")
    run_id = await api.run_of(request, identity)
    at = params.required_integer(request, "min_position", 0, maximum=tokens.POSITION_MAX)
    timeout_s = await web.edge.caught_up(at, PAGE_WAIT_S)
    state, stats, checkpoints = await web.call(_run_data, web.ledger, run_id, at, timeout_s)
    holds = await holds_section(request, identity, run_id)
    info, spend = state.run, state.spend
    presumed = spend.presumed_usd_micro
    spend_amount = spend_text(spend.committed_usd_micro, spend.pending_usd_micro, spend.cap_usd_micro, presumed)
    rid = e(run_id)
    retraction = info.retraction
    banner = (
        '<p class="retracted" data-field="retraction">Retracted '
        f"{when(retraction.retracted_at)} by {e(retraction.principal)}: {e(retraction.reason)}. "
        "Hidden from run lists; its history and spend are kept, new writes are refused.</p>"
        if retraction is not None
        else ""
    )
    sparse = _sparse_names(stats)
    charts = "".join(
        f'<figure class="chart" data-run-id="{rid}" data-metric="{e(s.name)}"'
        f' data-sparse="{"true" if s.name in sparse else "false"}"><figcaption>{e(s.name)}</figcaption></figure>'
        for s in stats
    )
    metric_rows = "".join(
        f'<tr data-metric="{e(s.name)}"><td>{e(s.name)}</td><td>{e(s.count)}</td><td>{e(s.first_step)}</td>'
        f"<td>{e(s.last_step)}</td><td>{e(f'{s.last:.6g}')}</td><td>{e(f'{s.min:.6g}')}</td>"
        f"<td>{e(f'{s.max:.6g}')}</td></tr>"
        for s in stats
    )
    facts = (
        '<dl class="facts" data-live="facts">'
        f'<dt>status</dt><dd data-field="status" data-status="{e(info.status)}">'
        f"{e(status_text(info.status, state.current_attempt))}</dd>"
        f'<dt>attempt</dt><dd data-field="attempt">{e(state.current_attempt)}</dd>'
        f'<dt>last step</dt><dd data-field="last_step">{e(state.last_step)}</dd>'
        f"{_facts_of_plan(state)}"
        f'<dt>spend</dt><dd data-field="spend">{bar(spend.committed_usd_micro + presumed, spend.cap_usd_micro)}'
        f'<span class="amount">{spend_amount}'
        "</span></dd>"
        + (
            f'<dt>presumed</dt><dd data-field="presumed">{e(usd(spend.presumed_usd_micro))}'
            " (charged by the ledger for abandoned holds)</dd>"
            if spend.presumed_usd_micro
            else ""
        )
        + f"<dt>remaining</dt><dd>{e(usd(spend.remaining_usd_micro))}</dd>"
        + (f'<dt>plan hold</dt><dd data-field="plan_hold">{e(plan_hold_text(spend.plan))}</dd>' if spend.plan else "")
        + f"<dt>opened</dt><dd>{when(info.opened_at)}</dd>"
        f"<dt>finished</dt><dd>{when(info.finished_at)}</dd>"
        f"<dt>run id</dt><dd><code>{rid}</code></dd>"
        + (f'<dt>error</dt><dd class="error">{e(info.error)}</dd>' if info.error else "")
        + "</dl>"
    )
    body = (
        f"<h1>{e(info.name or run_id)}</h1>{banner}"
        + live_panels(("Did it work?", did_it_work(state.reports)))
        + f"{facts}"
        f'<section class="charts">{charts or "<p class=empty>No metrics recorded.</p>"}</section>'
        f'<h2>Spend</h2><figure class="spend-chart" data-run-id="{rid}"'
        f' data-opened-at="{e(_iso(info.opened_at))}" data-finished-at="{e(_iso(info.finished_at))}">'
        "<figcaption>spend over the run's life</figcaption></figure>"
        f"<h3>Holds</h3>{holds}"
        f'<p><a href="/events?{e(query(run=run_id))}">events</a></p>'
        + live_panels(
            ("Metrics", table("metrics", METRIC_HEADERS, [metric_rows])),
            ("Attempts", table("attempts", ATTEMPT_HEADERS, map(_attempt_row, state.attempts))),
            ("Checkpoints", table("checkpoints", CHECKPOINT_HEADERS, (_checkpoint_row(c, state) for c in checkpoints))),
            ("Datasets", table("datasets", DATASET_HEADERS, map(_dataset_row, state.datasets))),
            ("Spec", f'<pre class="spec">{_document(info.spec)}</pre>'),
            ("Summary", f'<pre class="summary">{_document(info.summary)}</pre>'),
        )
    )
    return layout("run", info.name or run_id, body, attributes=f' data-run-id="{rid}"')


# Compare.


async def compare(request: Request) -> Response:
    web = api.web_of(request)
    identity = await api.identify(request, "run")
    refs = list(dict.fromkeys(r.strip() for r in request.query_params.getlist("run") if r.strip()))
    refs = refs[: api.COMPARE_RUNS_MAX]
    names = params.metric_names(request)
    metric = names[0] if names else "loss"
    run_ids = list(dict.fromkeys([await api.resolve_run(web, identity, ref) for ref in refs]))
    inputs = "".join(
        f'<label><input type="checkbox" name="run" value="{e(r)}" checked> <code>{e(r)}</code></label>' for r in run_ids
    )
    form = (
        '<form class="compare" method="get" action="/compare">'
        f"{inputs}"
        '<label>add run <input name="run" placeholder="run id or name"></label>'
        f'<label>metric <input name="metric" value="{e(metric)}"></label>'
        '<button type="submit">compare</button></form>'
    )
    figure = (
        f'<figure class="chart compare" data-metric="{e(metric)}" data-runs="{e(",".join(run_ids))}">'
        f"<figcaption>{e(metric)}</figcaption></figure>"
        if run_ids
        else '<p class="empty">Pick runs to compare on the runs page, or add them here.</p>'
    )
    states = [await web.call(web.ledger.run_state, run_id) for run_id in run_ids]
    reports = [(s.run.run_id, s.run.name, s.reports) for s in states]
    verdicts = f"<h2>Did it work?</h2>{compare_table(reports)}" if states else ""
    return layout("compare", "compare", f"<h1>Compare</h1>{form}{figure}{verdicts}")


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
        f"<td>{_run_link(v.source_run_id)}{_retracted_tag(v.source_retracted)}</td><td>{e(v.source_step)}</td>"
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
    found, following = await api.read_events(web, request)
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


# Login.


def _next_path(value: str) -> str:
    """Where to go after logging in: a path of this site only."""
    if not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value


def login_form(next_path: str, message: str = "", status: int = 200) -> HTMLResponse:
    problem = f'<p class="error" role="alert">{e(message)}</p>' if message else ""
    body = (
        "<h1>Log in</h1><p>Authentication is on: paste a token (<code>tl_…</code>, from "
        "<code>trainledger tokens create</code>).</p>"
        f"{problem}"
        '<form class="login" method="post" action="/login">'
        f'<input type="hidden" name="next" value="{e(next_path)}">'
        '<label>token <input type="password" name="token" autocomplete="current-password" required></label>'
        '<button type="submit">log in</button></form>'
    )
    return layout("login", "log in", body, status=status)


async def login(request: Request) -> Response:
    return login_form(_next_path(request.query_params.get("next", "/")))


async def _form(request: Request) -> dict[str, str]:
    """The fields of a small urlencoded form (the login form), the first value of each."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/x-www-form-urlencoded":
        return {}
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > FORM_BYTES_MAX:
            raise WebError(413, Reason.REQUEST_TOO_LARGE, f"a form is at most {FORM_BYTES_MAX} bytes")
    try:
        pairs = parse_qsl(body.decode(), keep_blank_values=True, max_num_fields=8)
    except (UnicodeDecodeError, ValueError):
        return {}
    form: dict[str, str] = {}
    for key, value in pairs:
        form.setdefault(key, value)
    return form


async def login_post(request: Request) -> Response:
    web = api.web_of(request)
    form = await _form(request)
    token = form.get("token", "").strip()
    next_path = _next_path(form.get("next", "/"))
    if not token or len(token) > TOKEN_LENGTH_MAX:
        return login_form(next_path, "give a token", 400)
    try:
        await web.access.gate.authenticate(METHODS["run"], {"authorization": f"Bearer {token}"})
    except LedgerError as error:
        return login_form(next_path, f"{error.reason}: {error.message}", 401)
    response = RedirectResponse(next_path, status_code=303)
    response.set_cookie(
        TOKEN_COOKIE, token, httponly=True, samesite="strict", secure=request.url.scheme == "https", path="/"
    )
    return response


async def logout(request: Request) -> Response:
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(TOKEN_COOKIE, path="/")
    return response
