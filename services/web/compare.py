"""The compare page (GET /compare) and what the runs differ in (GET /api/compare/diff): up to
COMPARE_RUNS_MAX runs (`run=`: an id, a unique prefix, a name or a run key, as services.web.api's
`resolve_run` takes them) on several metrics at once (`metric=`, at most COMPARE_METRICS_MAX).

Runs are named by their labels (services.render.diff.run_labels: the name, with the first characters
of the id where compared runs share it), never by their ids alone. The metrics offered are those the
compared runs have; none asked draws "loss" when a run has it, else the first. A run no one can
find and a metric no compared run has are said on the page above the rest, never an empty chart;
too many runs or metrics, or a name too long, is 400 INVALID_PARAMETER.

The page holds one `figure.chart.compare[data-metric][data-runs]` per metric (drawn by
/static/comparepage.js from /api/compare), the diff table (`section[data-live=diff]`: the keys that
differ, those the same folded in a <details> with their count, then the spend and best checkpoint
of each run, services.render.diff.run_diff) and each run's "Did it work?" reports
(`section[data-live=verdicts]`); while the page is open the runs feed (/api/live) redraws the
charts and swaps those sections when a compared run changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.requests import HTTPConnection, Request
from starlette.responses import Response

from ledger.domain.limits import ID_LENGTH_MAX
from ledger.domain.reasons import Reason
from services.render.diff import COMPARE_RUNS_MAX, DiffRow, RunDiff, run_diff
from services.web import api, params
from services.web.access import WebError, invalid
from services.web.did_it_work import compare_table
from services.web.documents import json_response
from services.web.markup import e, layout

__all__ = ["page", "diff", "COMPARE_METRICS_MAX", "COMPARE_RUNS_MAX"]

COMPARE_METRICS_MAX = 16
DEFAULT_METRIC = "loss"
VALUE_SHOWN_MAX = 500  # Characters of a spec or summary value a cell shows (a longer one ends in "…").


def compared_refs(request: HTTPConnection) -> list[str]:
    """The runs asked for, each once, empty ones dropped; bounded in count and length."""
    refs = list(dict.fromkeys(r.strip() for r in request.query_params.getlist("run") if r.strip()))
    if len(refs) > COMPARE_RUNS_MAX:
        raise invalid("run", f"compare at most {COMPARE_RUNS_MAX} runs at once, not {len(refs)}")
    for ref in refs:
        if len(ref) > ID_LENGTH_MAX:
            raise invalid("run", f"a run is named in at most {ID_LENGTH_MAX} characters")
    return refs


def asked_metrics(request: HTTPConnection) -> list[str]:
    names = params.metric_names(request)
    if len(names) > COMPARE_METRICS_MAX:
        raise invalid("metric", f"compare at most {COMPARE_METRICS_MAX} metrics at once, not {len(names)}")
    return names


async def _resolved(web: api.Web, identity: Any, refs: Sequence[str]) -> tuple[list[str], list[str]]:
    """The run ids the refs name, each once, and what was said of those that name no one run."""
    run_ids: list[str] = []
    unknown: list[str] = []
    for ref in refs:
        try:
            run_id = await api.resolve_run(web, identity, ref)
        except WebError as error:
            # Outside a scoped token's scope reads the same whether the run exists or not.
            if error.status not in (404, 409) and error.reason != Reason.OUTSIDE_SCOPE:
                raise
            unknown.append(f"{ref}: {error.message}{_candidates(error)}")
            continue
        if run_id not in run_ids:
            run_ids.append(run_id)
    return run_ids, unknown


def _candidates(error: WebError) -> str:
    """The runs an ambiguous name names, by their ids' first characters and status, to pick from."""
    shown = error.fields.get("candidates") or []
    return " (" + ", ".join(f"{run['run_id'][:8]} {run['status']}" for run in shown) + ")" if shown else ""


def _read(ledger: Any, run_ids: Sequence[str]) -> tuple[list[Any], list[str]]:
    """The runs' states and the names of the metrics any of them has, sorted."""
    states = [ledger.run_state(run_id) for run_id in run_ids]
    names = {stats.name for run_id in run_ids for stats in ledger.metric_stats(run_id)}
    return states, sorted(names)


def _chosen(asked: Sequence[str], offered: Sequence[str]) -> tuple[list[str], list[str]]:
    """The metrics to draw and those asked that no compared run has."""
    if not asked:
        default = DEFAULT_METRIC if DEFAULT_METRIC in offered else (offered[0] if offered else "")
        return ([default] if default else []), []
    return [m for m in asked if m in offered], [m for m in asked if m not in offered]


def _shown(value: str) -> str:
    return value if len(value) <= VALUE_SHOWN_MAX else value[: VALUE_SHOWN_MAX - 1] + "…"


def _cells(row: DiffRow) -> str:
    return "".join(f'<td class="{"missing" if v == "-" else "value"}">{e(_shown(v))}</td>' for v in row.values)


def diff_table(compared: RunDiff) -> str:
    """The rows that differ, then the spend and best checkpoint of each run; the identical keys in
    a <details> that says how many."""
    head = "<th>key</th>" + "".join(
        f'<th><a href="/runs/{e(run_id)}">{e(label)}</a></th>'
        for run_id, label in zip(compared.run_ids, compared.labels, strict=True)
    )
    shown = "".join(
        f'<tr data-key="{e(row.key)}"{" class=fact" if row.fact else ""}><th scope="row">{e(row.key)}</th>'
        f"{_cells(row)}</tr>"
        for row in compared.shown()
    )
    table = f'<table class="diff"><thead><tr>{head}</tr></thead><tbody>{shown}</tbody></table>'
    same = [row for row in compared.rows if not row.differs and not row.fact]
    if not same:
        return table
    rows = "".join(f'<tr data-key="{e(row.key)}"><th scope="row">{e(row.key)}</th>{_cells(row)}</tr>' for row in same)
    plural = "s" if len(same) != 1 else ""
    opened = " open" if len(compared.run_ids) == 1 else ""  # one run: nothing to tell apart, all shown
    return (
        f'{table}<details class="identical"{opened}><summary>{len(same)} identical key{plural}</summary>'
        f'<table class="same"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></details>'
    )


def _form(compared: RunDiff, offered: Sequence[str], drawn: Sequence[str]) -> str:
    runs = "".join(
        f'<label class="run"><input type="checkbox" name="run" value="{e(run_id)}" checked> {e(label)}</label>'
        for run_id, label in zip(compared.run_ids, compared.labels, strict=True)
    )
    metrics = "".join(
        f'<label class="metric"><input type="checkbox" name="metric" value="{e(m)}"'
        f"{' checked' if m in drawn else ''}> {e(m)}</label>"
        for m in offered
    )
    return (
        f'<form class="compare" method="get" action="/compare" data-runs="{e(",".join(compared.run_ids))}">'
        f'<fieldset class="runs"><legend>runs</legend>{runs}'
        '<label>add run <input name="run" placeholder="run name or id"></label></fieldset>'
        f'<fieldset class="metrics"><legend>metrics</legend>{metrics or _no_metrics(compared)}</fieldset>'
        '<button type="submit">compare</button></form>'
    )


def _no_metrics(compared: RunDiff) -> str:
    """What the metric picker says when it offers none: runs to pick first, or none recorded."""
    return "none recorded yet" if compared.run_ids else "pick runs first: their metrics are offered here"


async def page(request: Request) -> Response:
    web = api.web_of(request)
    identity = await api.identify(request, "run")
    refs, asked = compared_refs(request), asked_metrics(request)
    run_ids, refusals = await _resolved(web, identity, refs)
    states, offered = await web.call(_read, web.ledger, run_ids)
    drawn, missing = _chosen(asked, offered)
    refusals += [f"no compared run has the metric {m!r}" for m in missing]
    said = "".join(f"<li>{e(text)}</li>" for text in refusals)
    body = ["<h1>Compare</h1>", f'<ul class="error" id="compare-refused">{said}</ul>' if said else ""]
    if not states:
        body.append('<p class="empty">Pick runs to compare on the runs page, or add them here.</p>')
        body.append(_form(run_diff([]), [], []))
        return layout("compare", "compare", "".join(body))
    compared = run_diff(states)
    body.append(_form(compared, offered, drawn))
    body += [
        f'<figure class="chart compare" data-metric="{e(m)}" data-runs="{e(",".join(run_ids))}">'
        f"<figcaption>{e(m)}</figcaption></figure>"
        for m in drawn
    ]
    body.append(f'<section class="diff" data-live="diff"><h2>What differs</h2>{diff_table(compared)}</section>')
    reports = [(s.run.run_id, label, s.reports) for s, label in zip(states, compared.labels, strict=True)]
    body.append(f'<section data-live="verdicts"><h2>Did it work?</h2>{compare_table(reports)}</section>')
    return layout("compare", "compare", "".join(body))


async def diff(request: Request) -> Response:
    """GET /api/compare/diff?run=A&run=B: the runs, labelled, and every row with whether it differs."""
    web = api.web_of(request)
    identity = await api.identify(request, "run")
    refs = compared_refs(request)
    if not refs:
        raise invalid("run", "name at least one run to compare")
    run_ids = list(dict.fromkeys([await api.resolve_run(web, identity, ref) for ref in refs]))
    states = await web.call(lambda: [web.ledger.run_state(run_id) for run_id in run_ids])
    compared = run_diff(states)
    return json_response(
        {
            "runs": [
                {"run_id": run_id, "label": label}
                for run_id, label in zip(compared.run_ids, compared.labels, strict=True)
            ],
            "rows": [vars(row) for row in compared.rows],
            "identical": compared.identical,
        }
    )
