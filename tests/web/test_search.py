"""The run search on the dashboard over real HTTP against a real server: /api/runs with where,
order_by and desc, its refusals (400 INVALID_PARAMETER naming the parameter, with the position),
an unknown parameter refused, and the run page's tags line. A module of its own: it tags the
recorded runs (tests/web/conftest.py)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from clients import LedgerClient
from tests.web.conftest import Recorded


@pytest.fixture(scope="module")
def tagged(grpc_client: LedgerClient, recorded: Recorded) -> Recorded:
    grpc_client.set_tags(recorded.run_id, {"team": "vision", "stage": "a"})
    grpc_client.set_tags(recorded.other_run_id, {"team": "audio"})
    receipt = grpc_client.remove_tags(recorded.run_id, ["stage"])
    grpc_client.get_run_state(run_id=recorded.run_id, min_position=receipt.position)
    return recorded


def names(http: httpx.Client, **params: Any) -> list[str]:
    response = http.get("/api/runs", params=params)
    assert response.status_code == 200, response.text
    return [run["name"] for run in response.json()["runs"]]


def refusal(http: httpx.Client, path: str, **params: Any) -> dict[str, Any]:
    response = http.get(path, params=params)
    assert response.status_code == 400, response.text
    error: dict[str, Any] = response.json()["error"]
    return error


def test_runs_carry_their_tags_and_a_search_finds_them(http: httpx.Client, tagged: Recorded) -> None:
    runs = {run["name"]: run["tags"] for run in http.get("/api/runs").json()["runs"]}
    assert runs == {"web-chart": {"team": "vision"}, "web-other": {"team": "audio"}}
    assert names(http, where="tags.team = 'vision'") == ["web-chart"]
    assert names(http, where="tags.stage = 'a'") == []
    assert names(http, order_by="tags.team") == ["web-other", "web-chart"]
    assert names(http, order_by="tags.team", desc="1") == ["web-chart", "web-other"]
    assert names(http, where="metrics.loss.last < 5", status="done") == ["web-other"]
    assert names(http, where="tags.team like '%o%'", name="chart") == ["web-chart"]


def test_a_search_pages_with_its_own_token(http: httpx.Client, tagged: Recorded) -> None:
    first = http.get("/api/runs", params={"order_by": "name", "limit": 1}).json()
    assert [run["name"] for run in first["runs"]] == ["web-chart"] and first["next_page"]
    second = http.get("/api/runs", params={"order_by": "name", "limit": 1, "page": first["next_page"]}).json()
    assert [run["name"] for run in second["runs"]] == ["web-other"] and second["next_page"] is None
    assert refusal(http, "/api/runs", page=first["next_page"])["field"] == "page"


def test_a_refused_search_names_its_parameter_and_position(http: httpx.Client, tagged: Recorded) -> None:
    error = refusal(http, "/api/runs", where="name = 'a' and colour = 1")
    assert (error["reason"], error["field"], error["detail"], error["position"]) == (
        "INVALID_PARAMETER",
        "where",
        "INVALID_QUERY",
        16,
    )
    error = refusal(http, "/api/runs", order_by="colour")
    assert (error["field"], error["detail"], error["position"]) == ("order_by", "INVALID_QUERY", 1)
    assert refusal(http, "/api/runs", where="x" * 5000)["field"] == "where"
    assert refusal(http, "/api/runs", order_by="name", desc="maybe")["field"] == "desc"


def test_an_unknown_parameter_is_refused_not_ignored(http: httpx.Client, tagged: Recorded) -> None:
    error = refusal(http, "/api/runs", state="done")
    assert (error["reason"], error["field"]) == ("INVALID_PARAMETER", "state")
    assert "where" in error["message"]


def test_the_run_page_shows_its_tags(http: httpx.Client, tagged: Recorded) -> None:
    shown = http.get(f"/runs/{tagged.run_id}").text
    assert '<p class="tags" data-field="tags">tags: <span class="tag" data-tag="team">team=vision</span></p>' in shown
