"""The run page (/runs/RUN): its facts, charts, spend, holds and panels, which runpage.js renders
again as the run's live feed reports changes (services.web.live)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ledger.views import models
from services.render import checkpoint_state, plan_hold_text, progress_text, report_verdict, scores_text, status_text
from services.render.tables import metric_value, usd
from services.runtime import paging as tokens
from services.runtime.scopes import lineage_within
from services.web import api, params
from services.web.did_it_work import did_it_work
from services.web.holds import holds_section
from services.web.markup import bar, e, layout, live_panels, progress_cell, query, spend_text, table, when

__all__ = ["run", "PAGE_WAIT_S"]


def _document(value: Any) -> str:
    return e(json.dumps(value, indent=2, sort_keys=True, default=str))


def _sparse_names(stats: Sequence[models.MetricStats]) -> set[str]:
    """Metrics with fewer values than the densest one (eval_* logged now and then)."""
    densest = max((s.count for s in stats), default=0)
    return {s.name for s in stats if s.count < densest}


def _checkpoint_row(checkpoint: models.Checkpoint, state: models.RunState, anchor: bool = False) -> str:
    """A checkpoint's row; the first row of each step is its anchor (#checkpoint-STEP), which the
    registry's family page links a version's source step to."""
    marks = checkpoint_state(checkpoint, state.checkpoint, state.best_checkpoint)
    anchored = f' id="checkpoint-{checkpoint.step}"' if anchor else ""
    return (
        f'<tr{anchored} data-step="{checkpoint.step}" data-attempt="{checkpoint.attempt}">'
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
    as steps arrive (common.js advanceProgress)."""
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
    ledger: Any, run_id: str, min_position: int, timeout_s: float, scope: str = ""
) -> tuple[models.RunState, tuple[models.MetricStats, ...], Any]:
    state = ledger.run_state(run_id, min_position=min_position, timeout_s=timeout_s)
    return (
        lineage_within(ledger, state, scope),
        ledger.metric_stats(run_id),
        ledger.checkpoints(run_id, limit=api.CHECKPOINTS_MAX),
    )


async def run(request: Request) -> Response:
    web = api.web_of(request)
    identity = await api.identify(request, "run")
    run_id = await api.run_of(request, identity)
    at = params.required_integer(request, "min_position", 0, maximum=tokens.POSITION_MAX)
    timeout_s = await web.edge.caught_up(at, PAGE_WAIT_S)
    scope = identity.token.account if identity.token is not None else ""
    state, stats, checkpoints = await web.call(_run_data, web.ledger, run_id, at, timeout_s, scope or "")
    holds = await holds_section(request, identity, run_id)
    info = state.run
    rid = e(run_id)
    metric_rows = "".join(
        f'<tr data-metric="{e(s.name)}"><td>{e(s.name)}</td><td>{e(s.count)}</td><td>{e(s.first_step)}</td>'
        f"<td>{e(s.last_step)}</td><td>{e(metric_value(s.name, s.last))}</td>"
        f"<td>{e(metric_value(s.name, s.min))}</td><td>{e(metric_value(s.name, s.max))}</td></tr>"
        for s in stats
    )
    body = (
        f"<h1>{e(info.name or run_id)}</h1>{_lineage(state.source)}{_banner(info.retraction)}{_tags(state.tags)}"
        + live_panels(("Did it work?", did_it_work(state.reports)))
        + f"{_facts(state, rid)}{_charts(stats, rid)}"
        f'<h2>Spend</h2><figure class="spend-chart" data-run-id="{rid}"'
        f' data-opened-at="{e(_iso(info.opened_at))}" data-finished-at="{e(_iso(info.finished_at))}">'
        "<figcaption>spend over the run's life</figcaption></figure>"
        f"<h3>Holds</h3>{holds}"
        f'<p><a href="/events?{e(query(run=run_id))}">events</a></p>'
        + live_panels(
            ("Metrics", table("metrics", METRIC_HEADERS, [metric_rows])),
            ("Attempts", table("attempts", ATTEMPT_HEADERS, map(_attempt_row, state.attempts))),
            ("Checkpoints", table("checkpoints", CHECKPOINT_HEADERS, _checkpoint_rows(checkpoints, state))),
            ("Datasets", table("datasets", DATASET_HEADERS, map(_dataset_row, state.datasets))),
            *_children_panel(state),
            ("Spec", f'<pre class="spec">{_document(info.spec)}</pre>'),
            ("Summary", f'<pre class="summary">{_document(info.summary)}</pre>'),
        )
    )
    return layout("run", info.name or run_id, body, attributes=f' data-run-id="{rid}"')


def _tags(tags: dict[str, str]) -> str:
    """A run's tags as one small line (nothing when it has none)."""
    if not tags:
        return ""
    items = "".join(
        f'<span class="tag" data-tag="{e(key)}">{e(key)}={e(value)}</span> ' for key, value in sorted(tags.items())
    )
    return f'<p class="tags" data-field="tags">tags: {items.strip()}</p>'


def _banner(retraction: models.Retraction | None) -> str:
    """What a retracted run's page says first."""
    if retraction is None:
        return ""
    return (
        '<p class="retracted" data-field="retraction">Retracted '
        f"{when(retraction.retracted_at)} by {e(retraction.principal)}: {e(retraction.reason)}. "
        "Hidden from run lists; its history and spend are kept, new writes are refused.</p>"
    )


def _facts(state: models.RunState, rid: str) -> str:
    """The run's facts (runpage.js renders them again from each `state` event)."""
    info, spend = state.run, state.spend
    presumed = spend.presumed_usd_micro
    spend_amount = spend_text(spend.committed_usd_micro, spend.pending_usd_micro, spend.cap_usd_micro, presumed)
    return (
        '<dl class="facts" data-live="facts">'
        f'<dt>status</dt><dd data-field="status" data-status="{e(info.status)}">'
        f"{e(status_text(info.status, state.current_attempt))}</dd>"
        f'<dt>attempt</dt><dd data-field="attempt">{e(state.current_attempt)}</dd>'
        f'<dt>last step</dt><dd data-field="last_step">{e(state.last_step)}</dd>'
        f"{_facts_of_plan(state)}"
        f'<dt>spend</dt><dd data-field="spend">{_spend_bar(spend.committed_usd_micro + presumed, spend.cap_usd_micro)}'
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


# Metrics the trainer's process records about its machine (clients.system): charted in their own
# section, below the training charts.
SYSTEM_PREFIX = "system/"
CHILD_HEADERS = ("run", "from step", "opened")


def _chart_figures(stats: Sequence[models.MetricStats], rid: str) -> str:
    sparse = _sparse_names(stats)
    return "".join(
        f'<figure class="chart" data-run-id="{rid}" data-metric="{e(s.name)}"'
        f' data-sparse="{"true" if s.name in sparse else "false"}"><figcaption>{e(s.name)}</figcaption></figure>'
        for s in stats
    )


def _charts(stats: Sequence[models.MetricStats], rid: str) -> str:
    """The training charts, then the system/ metrics' charts under "System" (none without any);
    each group is held to its own densest metric for which ones are sparse."""
    training = [s for s in stats if not s.name.startswith(SYSTEM_PREFIX)]
    system = [s for s in stats if s.name.startswith(SYSTEM_PREFIX)]
    empty = "<p class=empty>No training metrics recorded.</p>" if system else "<p class=empty>No metrics recorded.</p>"
    html = f'<section class="charts" data-section="training">{_chart_figures(training, rid) or empty}</section>'
    if system:
        html += (
            '<div class="system-charts"><h2>System</h2>'
            f'<section class="charts" data-section="system">{_chart_figures(system, rid)}</section></div>'
        )
    return html


# A retracted run in a lineage, as the runs page marks it.
RETRACTED_TAG = ' <span class="tag retracted">retracted</span>'


def _lineage(source: models.LineageRun | None) -> str:
    """Where a run started from: "from NAME at step N", linked to the source run (marked when
    that run was retracted)."""
    if source is None:
        return ""
    marked, flag = (RETRACTED_TAG, ' data-retracted="true"') if source.retracted else ("", "")
    return (
        f'<p class="lineage" data-field="source"{flag}>from <a href="/runs/{e(source.run_id)}">'
        f"{e(source.name or source.run_id[:8])}</a>{marked} at step {e(source.step)}</p>"
    )


def _child_row(child: models.LineageRun) -> str:
    marked, css = (RETRACTED_TAG, ' class="retracted"') if child.retracted else ("", "")
    return (
        f'<tr data-run-id="{e(child.run_id)}"{css}><td><a href="/runs/{e(child.run_id)}">'
        f"{e(child.name or child.run_id[:8])}</a>{marked}</td><td>{e(child.step)}</td>"
        f"<td>{when(child.opened_at)}</td></tr>"
    )


def _children_panel(state: models.RunState) -> list[tuple[str, str]]:
    """The runs started from this run's checkpoints (the latest few, with how many in all); for
    a run none started from, an empty hidden panel that the live feed fills when one is."""
    if not state.children:
        return [("Children", "")]
    more = state.child_count - len(state.children)
    note = f'<p class="more">and {e(f"{more:,}")} more</p>' if more > 0 else ""
    return [("Children", table("children", CHILD_HEADERS, map(_child_row, state.children)) + note)]


def _checkpoint_rows(checkpoints: Sequence[models.Checkpoint], state: models.RunState) -> list[str]:
    """The checkpoints' rows in (step, attempt) order, the first of each step anchored."""
    steps: set[int] = set()
    rows = []
    for checkpoint in checkpoints:
        rows.append(_checkpoint_row(checkpoint, state, anchor=checkpoint.step not in steps))
        steps.add(checkpoint.step)
    return rows


def _spend_bar(used: int, cap: int | None) -> str:
    """The spend bar, marked as the runs page marks it ("warn" from 80% of the cap, "over" past
    it) in the HTML itself: the page's live panels are replaced from the server as they change."""
    html = bar(used, cap)
    if cap is None:
        return html
    mark = "over" if used > cap else "warn" if used >= cap * 0.8 else ""
    return html.replace('<div class="bar">', f'<div class="bar {mark}">', 1) if mark else html
