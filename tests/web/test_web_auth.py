"""The dashboard with authentication on (serve --auth, tokens issued): every API call needs a bearer
token (header or cookie), checked as the gRPC method it mirrors: 401 without a valid one, 403 for a
role or scope that may not, 200 for one that may; a scoped token sees only its subtree; pages
redirect to /login, whose form sets an HttpOnly, SameSite=Strict cookie."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from clients import LedgerClient
from ledger import Ledger
from tests.web.conftest import Recorded, WebServer, fresh_key, record


@dataclass
class Setup:
    server: WebServer
    recorded: Recorded
    admin: str
    trainer: str
    auditor: str
    team_operator: str


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    ledger = Ledger.open(str(tmp_path_factory.mktemp("web-auth") / "ledger.db"))
    server = WebServer(ledger=ledger, auth=True).start()
    try:
        admin = ledger.issue_token(holder="root", role="admin").bearer
        with LedgerClient(server.address, token=admin, timeout_s=10.0) as client:
            recorded = record(client)
            client.open_account(account="lab", cap_usd_micro=1_000_000)
        yield Setup(
            server=server,
            recorded=recorded,
            admin=admin,
            trainer=ledger.issue_token(holder="trainer-1", role="trainer").bearer,
            auditor=ledger.issue_token(holder="audit-1", role="auditor").bearer,
            team_operator=ledger.issue_token(holder="ops-team", role="operator", account="team").bearer,
        )
    finally:
        server.stop()
        ledger.close()


@pytest.fixture
def http(setup: Setup) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=setup.server.url, timeout=10.0) as client:
        yield client


def get(http: httpx.Client, path: str, token: str = "") -> httpx.Response:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return http.get(path, headers=headers)


def refused(response: httpx.Response, status: int, reason: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"]["reason"] == reason


API = [
    "/api/runs",
    "/api/runs/web-chart",
    "/api/runs/web-chart/chart",
    "/api/runs/web-chart/spend",
    "/api/runs/web-chart/live",
    "/api/compare?run=web-chart&metric=loss",
    "/api/compare/diff?run=web-chart",
    "/api/accounts",
    "/api/registry",
    "/api/registry/web-model",
    "/api/events",
    "/api/live",
]


def test_the_list_holds_every_json_endpoint_of_the_dashboard() -> None:
    from services.web import app

    source = Path(app.__file__).read_text(encoding="utf-8")
    routes = re.findall(r'Route\("(/api/[^"]*)"', source)
    assert "/api/runs/{run}/chart" in routes
    patterns = [re.sub(r"\{[^}]+\}", "[^/]+", route) for route in routes]
    assert [
        r for r, p in zip(routes, patterns, strict=True) if not any(re.fullmatch(p, a.split("?")[0]) for a in API)
    ] == []


@pytest.mark.parametrize("path", API)
def test_every_endpoint_needs_a_token(http: httpx.Client, path: str) -> None:
    refused(get(http, path), 401, "TOKEN_MISSING")
    refused(get(http, path, "tl_nothing_here"), 401, "TOKEN_INVALID")
    response = http.get(path, headers={"authorization": "Basic cm9vdDpyb290"})
    refused(response, 401, "TOKEN_INVALID")


@pytest.mark.parametrize("path", [p for p in API if not p.endswith("live")])
def test_an_admin_reads_everything(http: httpx.Client, setup: Setup, path: str) -> None:
    assert get(http, path, setup.admin).status_code == 200


def test_a_trainer_reads_runs_but_not_the_ledger_wide_lists(http: httpx.Client, setup: Setup) -> None:
    run = get(http, f"/api/runs/{setup.recorded.run_id}", setup.trainer)
    assert run.status_code == 200
    assert run.json()["state"]["run"]["name"] == "web-chart"
    assert get(http, "/api/runs/web-chart/chart", setup.trainer).status_code == 200
    assert get(http, "/api/runs/web-chart/spend", setup.trainer).status_code == 200
    refused(get(http, "/api/runs", setup.trainer), 403, "ROLE_NOT_ALLOWED")
    refused(get(http, "/api/registry", setup.trainer), 403, "ROLE_NOT_ALLOWED")
    refused(get(http, "/api/events", setup.trainer), 403, "ROLE_NOT_ALLOWED")
    refused(get(http, "/api/live", setup.trainer), 403, "ROLE_NOT_ALLOWED")


def test_an_auditor_reads_the_event_log(http: httpx.Client, setup: Setup) -> None:
    events = get(http, "/api/events?type=Account.Opened&limit=1", setup.auditor)
    assert events.status_code == 200
    [opened] = events.json()["events"]
    assert (opened["type"], opened["data"]["name"], opened["principal"]) == ("Account.Opened", "team", "root")
    assert get(http, "/api/runs", setup.auditor).status_code == 200


def test_a_scoped_token_sees_only_its_subtree(http: httpx.Client, setup: Setup) -> None:
    token, recorded = setup.team_operator, setup.recorded
    runs = get(http, "/api/runs", token)
    assert runs.status_code == 200
    assert [r["name"] for r in runs.json()["runs"]] == ["web-chart"]
    assert get(http, f"/api/runs/{recorded.run_id}", token).status_code == 200
    assert get(http, "/api/runs/web-chart/chart", token).status_code == 200
    assert get(http, "/api/runs/web-chart/spend", token).status_code == 200
    assert [a["account"] for a in get(http, "/api/accounts", token).json()["accounts"]] == ["team"]
    assert [a["account"] for a in get(http, "/api/accounts", setup.admin).json()["accounts"]] == ["lab", "team"]
    refused(get(http, f"/api/runs/{recorded.other_run_id}", token), 403, "OUTSIDE_SCOPE")
    refused(get(http, "/api/runs/web-other/live", token), 403, "OUTSIDE_SCOPE")
    refused(get(http, "/api/runs/no-such-run", token), 403, "OUTSIDE_SCOPE")  # Not told it does not exist.
    refused(get(http, "/api/runs?account=lab", token), 403, "OUTSIDE_SCOPE")
    refused(get(http, "/api/compare?run=web-chart&run=web-other&metric=loss", token), 403, "OUTSIDE_SCOPE")
    refused(get(http, "/api/compare/diff?run=web-chart&run=web-other", token), 403, "OUTSIDE_SCOPE")
    refused(get(http, "/api/registry", token), 403, "OUTSIDE_SCOPE")
    refused(get(http, "/api/events", token), 403, "ROLE_NOT_ALLOWED")


def test_a_page_without_a_token_redirects_to_login(http: httpx.Client) -> None:
    response = http.get("/runs/web-chart?x=1")
    assert response.status_code == 303
    assert response.headers["location"] == "/login?next=%2Fruns%2Fweb-chart%3Fx%3D1"
    login = http.get("/login")
    assert login.status_code == 200
    assert '<main data-page="login">' in login.text
    assert 'type="password" name="token"' in login.text


def test_logging_in_sets_the_cookie_that_pages_and_the_api_take(setup: Setup) -> None:
    with httpx.Client(base_url=setup.server.url, timeout=10.0) as browser:
        response = browser.post("/login", data={"token": setup.admin, "next": "/runs/web-chart"})
        assert response.status_code == 303
        assert response.headers["location"] == "/runs/web-chart"
        cookie = response.headers["set-cookie"]
        assert cookie.startswith(f"trainledger_token={setup.admin};")
        attributes = {part.strip().lower() for part in cookie.split(";")[1:]}
        assert {"httponly", "samesite=strict", "path=/"} <= attributes
        page = browser.get("/runs/web-chart")
        assert page.status_code == 200
        assert f'data-run-id="{setup.recorded.run_id}"' in page.text
        assert browser.get("/api/runs").status_code == 200
        assert browser.get("/logout").status_code == 303
        assert browser.get("/api/runs").status_code == 401


def test_a_scoped_cookie_shows_a_forbidden_page(setup: Setup) -> None:
    with httpx.Client(base_url=setup.server.url, timeout=10.0) as browser:
        assert browser.post("/login", data={"token": setup.team_operator}).status_code == 303
        page = browser.get(f"/runs/{setup.recorded.other_run_id}")
        assert page.status_code == 403
        assert 'data-reason="OUTSIDE_SCOPE"' in page.text
        runs = browser.get("/")
        assert runs.status_code == 200
        assert setup.recorded.run_id in runs.text
        assert setup.recorded.other_run_id not in runs.text


def test_a_bad_token_is_refused_at_login(http: httpx.Client) -> None:
    response = http.post("/login", data={"token": "tl_nothing_here", "next": "/"})
    assert response.status_code == 401
    assert "set-cookie" not in response.headers
    assert "TOKEN_INVALID" in response.text
    assert http.post("/login", data={}).status_code == 400


def test_login_goes_back_only_to_this_site(http: httpx.Client, setup: Setup) -> None:
    for target in ("//evil.example/", "https://evil.example/", "/\\evil.example"):
        response = http.post("/login", data={"token": setup.admin, "next": target})
        assert response.status_code == 303
        assert response.headers["location"] == "/"


def test_a_scoped_token_follows_only_the_runs_in_its_scope(setup: Setup) -> None:
    from tests.web.test_live import events

    recorded = setup.recorded
    headers = {"authorization": f"Bearer {setup.team_operator}"}
    with (
        httpx.Client(base_url=setup.server.url, timeout=10.0) as http,
        LedgerClient(setup.server.address, token=setup.admin, timeout_s=10.0) as client,
        http.stream("GET", "/api/live", headers=headers) as response,
    ):
        assert response.status_code == 200
        stream = events(response)
        assert next(stream) == ("comment", "", "live")
        elsewhere = client.open_run(run_key=fresh_key(), name="elsewhere", parent_account="lab").state.run.run_id
        outside = client.start_attempt(run_id=elsewhere).attempt
        client.append_steps(run_id=elsewhere, attempt=outside, steps=[50], metrics={"loss": [0.1]})
        inside = client.get_run_state(run_id=recorded.run_id).current_attempt
        client.append_steps(run_id=recorded.run_id, attempt=inside, steps=[50], metrics={"loss": [0.1]})
        for kind, _, data in stream:
            if kind == "run":
                assert (data["run_id"], data["last_step"]) == (recorded.run_id, 50)
                break


def test_a_scoped_token_sees_no_other_scopes_run_in_a_runs_lineage(http: httpx.Client, setup: Setup) -> None:
    """An admin starts a run under lab from team's run, and one under team from lab's run: a token
    scoped to team reads neither lab run (id, name, checkpoint uri) on the run page or in /api."""
    with LedgerClient(setup.server.address, token=setup.admin, timeout_s=10.0) as client:
        lab_child = client.open_run(
            run_key=fresh_key(),
            name="lab-child-secret",
            parent_account="lab",
            source_checkpoint={"run_id": setup.recorded.run_id, "step": 5},
        ).state.run.run_id
        lab_source = client.open_run(run_key=fresh_key(), name="lab-source-secret", parent_account="lab")
        source_id = lab_source.state.run.run_id
        client.start_attempt(run_id=source_id)
        client.save_checkpoint(run_id=source_id, attempt=1, step=1, uri="file:///lab/secret", backend="local")
        team_child = client.open_run(
            run_key=fresh_key(),
            name="team-child",
            parent_account="team",
            source_checkpoint={"run_id": source_id, "step": 1, "uri": "file:///lab/secret"},
        )
        team_child_id = team_child.state.run.run_id
        client.get_run_state(run_id=team_child_id, min_position=team_child.position)
    secrets = (lab_child, "lab-child-secret", source_id, "lab-source-secret", "file:///lab/secret")
    for path in (
        f"/runs/{setup.recorded.run_id}",
        f"/api/runs/{setup.recorded.run_id}",
        f"/runs/{team_child_id}",
        f"/api/runs/{team_child_id}",
    ):
        response = get(http, path, setup.team_operator)
        assert response.status_code == 200, response.text
        for secret in secrets:
            assert secret not in response.text, (path, secret)
    # An unscoped token still sees the whole lineage.
    assert "lab-child-secret" in get(http, f"/runs/{setup.recorded.run_id}", setup.admin).text
    for run_id in (setup.recorded.run_id, team_child_id):
        headers = {"authorization": f"Bearer {setup.team_operator}"}
        with http.stream("GET", f"/api/runs/{run_id}/live", headers=headers) as response:
            assert response.status_code == 200
            first = b""
            for piece in response.iter_bytes():
                first += piece
                if b"\n\n" in first:
                    break
        assert first.startswith(b"event: state"), first[:80]
        for secret in secrets:
            assert secret.encode() not in first, (run_id, secret)


def test_a_scoped_token_compares_only_runs_in_its_scope(http: httpx.Client, setup: Setup) -> None:
    # A run outside the scope is said on the page as a run that does not exist would be: the same words.
    response = get(http, "/compare?run=web-chart&run=web-other&run=no-such-run", setup.team_operator)
    assert response.status_code == 200
    said = re.findall(r"<li>([^<]*)</li>", response.text.split('id="compare-refused"')[1].split("</ul>")[0])
    assert said == [
        "web-other: outside the token&#x27;s scope (account team)",
        "no-such-run: outside the token&#x27;s scope (account team)",
    ]
    assert re.findall(r'<label class="run"><input [^>]*> ([^<]*)</label>', response.text) == ["web-chart"]


def test_another_scopes_run_id_never_shadows_a_scoped_runs_name(http: httpx.Client, setup: Setup) -> None:
    # A run of team named by the first characters of a lab run's id resolves to itself, as one
    # named by characters no run id starts with does: what another scope holds changes nothing.
    with LedgerClient(setup.server.address, token=setup.admin, timeout_s=10.0) as client:
        lab = client.open_run(run_key=fresh_key(), name="lab-run", parent_account="lab").state.run.run_id
        shadowed = client.open_run(run_key=fresh_key(), name=lab[:8], parent_account="team").state.run.run_id
        listed = [run.run_id for run in client.list_runs(page_size=1_000).runs]
        free = next(f"{n:08x}" for n in range(1, 1_000) if not any(i.startswith(f"{n:08x}") for i in listed))
        clear = client.open_run(run_key=fresh_key(), name=free, parent_account="team").state.run.run_id
    for name, run_id in ((free, clear), (lab[:8], shadowed)):
        answer = get(http, f"/api/compare/diff?run={name}", setup.team_operator)
        assert answer.status_code == 200, answer.text
        assert answer.json()["runs"] == [{"run_id": run_id, "label": name}]
