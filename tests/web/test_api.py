"""The dashboard's JSON API over real HTTP against a real server, with runs recorded through the
real gRPC client (tests/web/conftest.py says what was recorded): each endpoint's shape and values,
runs named by id, prefix, name and key, paging, and bad input answered 4xx with a reason, never 500."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from clients import LedgerClient, run_key
from tests.web.conftest import Recorded


def ok(http: httpx.Client, path: str, **params: Any) -> Any:
    response = http.get(path, params=params)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    return response.json()


def series(metric: dict[str, Any]) -> list[tuple[int, bool, list[int], list[float]]]:
    return sorted((s["attempt"], s["superseded"], s["steps"], s["values"]) for s in metric["series"])


def test_runs_lists_every_run_newest_first_with_spend_and_cap(http: httpx.Client, recorded: Recorded) -> None:
    body = ok(http, "/api/runs")
    assert body["next_page"] is None
    runs = body["runs"]
    assert [r["name"] for r in runs] == ["web-other", "web-chart"]
    chart = runs[1]
    del chart["opened_at"]
    # No plan: the step it reached, no fraction and no ETA (its rate depends on the clock).
    progress = chart.pop("progress")
    assert (progress["max_steps"], progress["step"], progress["fraction"], progress["eta"]) == (None, 11, None, None)
    assert chart.pop("retracted") is False
    assert chart == {
        "run_id": recorded.run_id,
        "name": "web-chart",
        "status": "running",
        "current_attempt": 2,
        "last_step": 11,
        "committed_usd_micro": 1_500_000,
        "pending_usd_micro": 250_000,
        "cap_usd_micro": 10_000_000,
        "parent_account": "team",
        "presumed_usd_micro": 0,
        "tags": {},
    }
    assert runs[0]["cap_usd_micro"] is None
    assert runs[0]["status"] == "done"
    assert runs[0]["opened_at"].endswith("Z")


def test_runs_filters_by_status_name_and_account(http: httpx.Client, recorded: Recorded) -> None:
    assert [r["name"] for r in ok(http, "/api/runs", status="done")["runs"]] == ["web-other"]
    assert [r["name"] for r in ok(http, "/api/runs", status="running")["runs"]] == ["web-chart"]
    assert [r["name"] for r in ok(http, "/api/runs", name="CHART")["runs"]] == ["web-chart"]
    assert [r["name"] for r in ok(http, "/api/runs", account="team")["runs"]] == ["web-chart"]
    assert ok(http, "/api/runs", status="failed")["runs"] == []


def test_runs_pages(http: httpx.Client, recorded: Recorded) -> None:
    first = ok(http, "/api/runs", limit=1)
    assert [r["name"] for r in first["runs"]] == ["web-other"]
    assert first["next_page"]
    second = ok(http, "/api/runs", limit=1, page=first["next_page"])
    assert [r["name"] for r in second["runs"]] == ["web-chart"]


def test_run_has_its_state_metrics_and_checkpoints(http: httpx.Client, recorded: Recorded) -> None:
    body = ok(http, f"/api/runs/{recorded.run_id}")
    state = body["state"]
    assert state["run"]["name"] == "web-chart"
    assert state["run"]["spec"] == {"lr": 0.001, "model": "tiny"}
    assert state["run"]["status"] == "running"
    assert state["current_attempt"] == 2
    assert state["last_step"] == 11
    assert [(a["number"], a["label"], a["resumed_from_step"]) for a in state["attempts"]] == [
        (1, "first", None),
        (2, "second", 5),
    ]
    spend = dict(state["spend"])
    spend.pop("bill", None)
    assert spend == {
        "cap_usd_micro": 10_000_000,
        "committed_usd_micro": 1_500_000,
        "pending_usd_micro": 250_000,
        "remaining_usd_micro": 8_250_000,
        "overrun_usd_micro": 0,
        "plan": None,  # no plan was reserved up front
        "presumed_usd_micro": 0,
    }
    assert body["metrics"] == [
        {"name": "eval_loss", "count": 1, "first_step": 4, "last_step": 4, "last": 0.5, "min": 0.5, "max": 0.5},
        {"name": "loss", "count": 12, "first_step": 0, "last_step": 11, "last": 21.0, "min": 0.0, "max": 21.0},
    ]
    [checkpoint] = body["checkpoints"]
    assert (checkpoint["attempt"], checkpoint["step"], checkpoint["superseded"]) == (1, 5, False)
    assert checkpoint["handle"] == {"backend": "s3", "uri": "s3://ckpt/5", "fidelity": "weights"}


def test_a_run_is_named_by_id_prefix_name_or_key(http: httpx.Client, recorded: Recorded) -> None:
    for ref in (recorded.run_id, recorded.run_id[:8], "web-chart", run_key({"web": "chart"})):
        assert ok(http, f"/api/runs/{ref}")["state"]["run"]["run_id"] == recorded.run_id


def test_a_name_of_several_runs_is_ambiguous(http: httpx.Client, grpc_client: LedgerClient) -> None:
    ids = {grpc_client.open_run(run_key=run_key({"twin": n}), name="twin").state.run.run_id for n in range(2)}
    response = http.get("/api/runs/twin")
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["reason"] == "AMBIGUOUS_RUN"
    assert {c["run_id"] for c in error["candidates"]} == ids
    assert error["count"] == 2


def test_chart_has_every_metric_live_and_superseded(http: httpx.Client, recorded: Recorded) -> None:
    body = ok(http, f"/api/runs/{recorded.run_id}/chart")
    assert (body["run_id"], body["from_step"], body["to_step"], body["width"], body["resolution"]) == (
        recorded.run_id,
        0,
        11,
        800,
        1,
    )
    metrics = {m["name"]: m for m in body["metrics"]}
    assert sorted(metrics) == ["eval_loss", "loss"]
    assert metrics["eval_loss"]["sparse"] is True
    assert metrics["loss"]["sparse"] is False
    assert series(metrics["loss"]) == [
        (1, False, [0, 1, 2, 3, 4, 5], [0.0, 0.25, 0.5, 0.75, 1.0, 1.25]),
        (1, True, [6, 7, 8, 9], [1.5, 1.75, 2.0, 2.25]),
        (2, False, [6, 7, 8, 9, 10, 11], [16.0, 17.0, 18.0, 19.0, 20.0, 21.0]),
    ]
    assert series(metrics["eval_loss"]) == [(1, False, [4], [0.5]), (1, True, [9], [0.25])]


def test_chart_of_a_range_and_one_metric(http: httpx.Client, recorded: Recorded) -> None:
    body = ok(http, "/api/runs/web-chart/chart", metric="loss", **{"from": 2, "to": 7, "width": 16})
    assert (body["from_step"], body["to_step"], body["width"]) == (2, 7, 16)
    [loss] = body["metrics"]
    assert series(loss) == [
        (1, False, [2, 3, 4, 5], [0.5, 0.75, 1.0, 1.25]),
        (1, True, [6, 7], [1.5, 1.75]),
        (2, False, [6, 7], [16.0, 17.0]),
    ]


def test_spend_has_totals_hours_and_reservations_paged(http: httpx.Client, recorded: Recorded) -> None:
    body = ok(http, f"/api/runs/{recorded.run_id}/spend")
    totals = {k: body[k] for k in body if k.endswith("_usd_micro")}
    assert totals == {
        "cap_usd_micro": 10_000_000,
        "committed_usd_micro": 1_500_000,
        "pending_usd_micro": 250_000,
        "remaining_usd_micro": 8_250_000,
        "overrun_usd_micro": 0,
        "presumed_usd_micro": 0,
    }
    assert body["account"] == recorded.run_id
    [hour] = body["hours"]
    assert hour["committed_usd_micro"] == 1_500_000
    assert hour["hour"].endswith(":00:00Z")
    assert [
        (r["kind"], r["state"], r["amount_usd_micro"], r["actual_usd_micro"], r["attempt"])
        for r in body["reservations"]
    ] == [
        ("reservation", "committed", 2_000_000, 1_500_000, 2),
        ("reservation", "pending", 250_000, 0, 2),
    ]
    assert body["reservations"][0]["settled_at"].endswith("Z")
    assert body["reservations"][1]["settled_at"] is None
    assert body["next_page"] is None
    first = ok(http, f"/api/runs/{recorded.run_id}/spend", limit=1)
    assert [r["state"] for r in first["reservations"]] == ["committed"]
    second = ok(http, f"/api/runs/{recorded.run_id}/spend", limit=1, page=first["next_page"])
    assert [r["state"] for r in second["reservations"]] == ["pending"]


def test_compare_overlays_the_live_line_of_each_run(http: httpx.Client, recorded: Recorded) -> None:
    response = http.get("/api/compare", params=[("run", "web-chart"), ("run", "web-other"), ("metric", "loss")])
    assert response.status_code == 200
    body = response.json()
    assert body["metric"] == "loss"
    assert [(r["run_id"], r["name"]) for r in body["runs"]] == [
        (recorded.run_id, "web-chart"),
        (recorded.other_run_id, "web-other"),
    ]
    assert series(body["runs"][0]) == [
        (1, False, [0, 1, 2, 3, 4, 5], [0.0, 0.25, 0.5, 0.75, 1.0, 1.25]),
        (2, False, [6, 7, 8, 9, 10, 11], [16.0, 17.0, 18.0, 19.0, 20.0, 21.0]),
    ]
    assert series(body["runs"][1]) == [(1, False, [0, 1], [2.0, 1.0])]


def test_accounts_are_the_caps_people_set(http: httpx.Client, recorded: Recorded) -> None:
    assert ok(http, "/api/accounts")["accounts"] == [
        {
            "account": "team",
            "parent": "",
            "cap_usd_micro": 100_000_000,
            "committed_usd_micro": 1_500_000,
            "pending_usd_micro": 250_000,
            "remaining_usd_micro": 98_250_000,
            "overrun_usd_micro": 0,
            "presumed_usd_micro": 0,
        }
    ]


def test_registry_lists_families_and_a_family_history(http: httpx.Client, recorded: Recorded) -> None:
    assert ok(http, "/api/registry") == {
        "families": [{"family": "web-model", "current": 1, "version_count": 2, "retired": False}]
    }
    body = ok(http, "/api/registry/web-model")
    assert (body["family"], body["current"]) == ("web-model", 1)
    assert [(v["version"], v["artifact_uri"], v["source_run_id"], v["source_step"]) for v in body["versions"]] == [
        (1, "s3://m/1", recorded.run_id, 5),
        (2, "s3://m/2", "", 0),
    ]
    history = [
        (
            h["kind"],
            h["version"],
            h["from_version"],
            h["verdict"] and h["verdict"]["reason"],
            h["reason"],
            h["principal"],
        )
        for h in body["history"]
    ]
    assert history == [
        ("promote", 1, 0, "eval ok", "", "tests"),
        ("promote", 2, 1, "better", "", "tests"),
        ("rollback", 1, 2, None, "regression", "tests"),
    ]
    assert all(h["at"].endswith("Z") and h["position"] > 0 for h in body["history"])


def test_events_page_by_position_type_and_run(http: httpx.Client, recorded: Recorded) -> None:
    first = ok(http, "/api/events", limit=2)
    assert [e["position"] for e in first["events"]] == [1, 2]
    assert first["next_from"] == 3
    assert first["events"][0]["type"] == "Account.Opened"
    assert first["events"][0]["data"] == {"name": "team", "parent": "", "cap": 100_000_000}
    assert first["events"][0]["principal"] == "tests"
    assert set(first["events"][0]) == {"position", "type", "originator_id", "at", "principal", "data"}
    [saved] = ok(http, "/api/events", type="CheckpointSaved")["events"]
    assert (saved["type"], saved["data"]["step"], saved["data"]["uri"]) == ("Run.CheckpointSaved", 5, "s3://ckpt/5")
    other = ok(http, "/api/events", run="web-other")
    assert [e["type"] for e in other["events"]] == [
        "Account.Opened",
        "Run.Opened",
        "Run.AttemptStarted",
        "Run.StepsRecorded",
        "Run.Finished",
    ]
    assert other["next_from"] is None


BAD = [
    ("/api/runs?limit=abc", "limit"),
    ("/api/runs?limit=0", "limit"),
    ("/api/runs?limit=201", "limit"),
    ("/api/runs?status=sleeping", "status"),
    ("/api/runs?page=not-a-token", "page"),
    ("/api/runs?name=%1b[31m", "name"),
    ("/api/runs/web-chart/chart?width=15", "width"),
    ("/api/runs/web-chart/chart?width=4001", "width"),
    ("/api/runs/web-chart/chart?width=wide", "width"),
    ("/api/runs/web-chart/chart?from=9&to=3", "from"),
    ("/api/runs/web-chart/chart?from=-1", "from"),
    ("/api/runs/web-chart/chart?to=99999999999999999999", "to"),
    ("/api/runs/web-chart/chart?metric=", "metric"),
    ("/api/runs/web-chart/spend?limit=1001", "limit"),
    ("/api/runs/web-chart/spend?page=%%%", "page"),
    ("/api/events?limit=1001", "limit"),
    ("/api/events?from=0", "from"),
    ("/api/events?type=NoSuchEvent", "type"),
    ("/api/compare?metric=loss", "run"),
    ("/api/compare?run=web-chart", "metric"),
    ("/api/compare?run=web-chart&metric=loss&metric=eval_loss", "metric"),
    ("/api/compare?run=web-chart&metric=loss&width=1", "width"),
]


@pytest.mark.parametrize(("path", "field"), BAD)
def test_a_bad_parameter_is_400_naming_it(http: httpx.Client, recorded: Recorded, path: str, field: str) -> None:
    response = http.get(path)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["reason"], error["field"]) == ("INVALID_PARAMETER", field)
    assert error["message"]


NOT_FOUND = [
    ("/api/runs/no-such-run", "RUN_NOT_FOUND"),
    ("/api/runs/ffffffff-ffff-ffff-ffff-ffffffffffff", "RUN_NOT_FOUND"),
    ("/api/runs/%00", "RUN_NOT_FOUND"),
    ("/api/runs/" + "x" * 5000, "RUN_NOT_FOUND"),
    ("/api/runs/%E2%80%AEevil/chart", "RUN_NOT_FOUND"),
    ("/api/runs/no-such-run/spend", "RUN_NOT_FOUND"),
    ("/api/runs/no-such-run/live", "RUN_NOT_FOUND"),
    ("/api/compare?run=no-such-run&metric=loss", "RUN_NOT_FOUND"),
    ("/api/events?run=no-such-run", "RUN_NOT_FOUND"),
    ("/api/registry/no-such-family", "FAMILY_NOT_FOUND"),
    ("/api/registry/%00", "FAMILY_NOT_FOUND"),
    ("/api/nothing-here", "NOT_FOUND"),
]


@pytest.mark.parametrize(("path", "reason"), NOT_FOUND)
def test_what_does_not_exist_is_404(http: httpx.Client, recorded: Recorded, path: str, reason: str) -> None:
    response = http.get(path)
    assert response.status_code == 404, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"]["reason"] == reason


def test_a_method_the_api_does_not_take_is_405(http: httpx.Client) -> None:
    response = http.post("/api/runs")
    assert response.status_code == 405
    assert response.json()["error"]["reason"] == "METHOD_NOT_ALLOWED"


def test_responses_carry_the_security_headers(http: httpx.Client) -> None:
    headers = http.get("/api/runs").headers
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"


def test_events_pages_end_at_a_byte_budget_and_go_on(http: httpx.Client, grpc_client: LedgerClient) -> None:
    run_id = grpc_client.open_run(run_key=run_key({"web": "heavy"}), name="heavy").state.run.run_id
    attempt = grpc_client.start_attempt(run_id=run_id).attempt
    batches = 12
    for b in range(batches):  # About 160 KB stored each: values that do not compress.
        steps = list(range(b * 10_000, (b + 1) * 10_000))
        values = [((s * 2_654_435_761) % 1_000_003) / 7.0 for s in steps]
        grpc_client.append_steps(run_id=run_id, attempt=attempt, steps=steps, metrics={"a": values, "b": values[::-1]})
    seen: list[str] = []
    start, pages = 1, 0
    while True:
        body = ok(http, "/api/events", run=run_id, limit=1_000, **{"from": start})
        pages += 1
        seen += [e["type"] for e in body["events"]]
        if body["next_from"] is None:
            break
        assert body["next_from"] == body["events"][-1]["position"] + 1
        start = body["next_from"]
    assert pages > 1  # 1,000 events were allowed: the bytes ended the first page.
    assert seen == ["Account.Opened", "Run.Opened", "Run.AttemptStarted"] + ["Run.StepsRecorded"] * batches
