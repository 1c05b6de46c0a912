"""The dashboard's pages over real HTTP: every page carries the stylesheet, the script, the nav and
`main[data-page]`; the runs and run pages hold the DOM the charts and the browser tests rely on,
with the values recorded (tests/web/conftest.py); stored text is escaped; filters are a GET form;
a missing run is a 404 page; and `trainledger serve --http` serves it beside gRPC."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest

from clients import LedgerClient
from services.server import StartupError, create_server
from tests.web.conftest import Recorded, WebServer, fresh_key

VOID = {"meta", "link", "input", "br", "hr", "img", "col", "source"}


class Element:
    def __init__(self, tag: str, attrs: dict[str, str], parent: Element | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Element] = []
        self.texts: list[str] = []

    @property
    def text(self) -> str:
        return "".join(self.texts) + "".join(child.text for child in self.children)

    def all(self, tag: str = "", **attrs: str) -> list[Element]:
        """Every element under this one with the tag and attribute values (class: one of its classes)."""
        found = []
        for child in self.children:
            if _matches(child, tag, attrs):
                found.append(child)
            found += child.all(tag, **attrs)
        return found

    def one(self, tag: str = "", **attrs: str) -> Element:
        found = self.all(tag, **attrs)
        assert len(found) == 1, f"{len(found)} <{tag} {attrs}>"
        return found[0]


def _matches(element: Element, tag: str, attrs: dict[str, str]) -> bool:
    if tag and element.tag != tag:
        return False
    for name, value in attrs.items():
        name = name.rstrip("_").replace("_", "-")
        if name == "class":
            if value not in element.attrs.get("class", "").split():
                return False
        elif element.attrs.get(name) != value:
            return False
    return True


class Tree(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.root = self.at = Element("#root", {}, None)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs}, self.at)
        self.at.children.append(element)
        if tag not in VOID:
            self.at = element

    def handle_endtag(self, tag: str) -> None:
        at: Element | None = self.at
        while at is not None and at.tag != tag:
            at = at.parent
        if at is not None and at.parent is not None:
            self.at = at.parent

    def handle_data(self, data: str) -> None:
        self.at.texts.append(data)


def page(http: httpx.Client, path: str, expect: int = 200, **params: Any) -> Element:
    response = http.get(path, params=params) if params else http.get(path)
    assert response.status_code == expect, response.text
    assert response.headers["content-type"].startswith("text/html")
    tree = Tree()
    tree.feed(response.text)
    root = tree.root
    assert root.one("link", rel="stylesheet").attrs["href"] == "/static/style.css"
    script = root.one("script")
    assert (script.attrs["type"], script.attrs["src"]) == ("module", "/static/dashboard.js")
    assert [a.text for a in root.one("nav").all("a")] == ["runs", "compare", "accounts", "registry", "events"]
    return root


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/", "runs"),
        ("/compare", "compare"),
        ("/accounts", "accounts"),
        ("/registry", "registry"),
        ("/registry/web-model", "family"),
        ("/events", "events"),
        ("/login", "login"),
    ],
)
def test_every_page_has_the_layout(http: httpx.Client, recorded: Recorded, path: str, name: str) -> None:
    assert page(http, path).one("main").attrs["data-page"] == name


def presumed_run(client: LedgerClient) -> str:
    """A run capped at $10 whose first attempt left a $4 hold of tokens: the ledger presumed it
    spent as reserved when a second attempt started."""
    run_id = client.open_run(run_key=fresh_key(), name="presumed-spend", cap_usd_micro=10_000_000).state.run.run_id
    client.start_attempt(run_id=run_id, attempt_id="a1", lease_s=60)
    line = {"token_class": "train", "tokens": 4_000_000, "usd_micro_per_million_tokens": 1_000_000}
    basis = {"price_sheet": "test-tokens", "price_source": "https://example.com/t", "tokens": [line]}
    client.reserve(account=run_id, amount_usd_micro=4_000_000, reservation_id="t-1", basis=basis, attempt=1)
    second = client.start_attempt(run_id=run_id, attempt_id="a2")
    client.get_run_state(run_id=run_id, min_position=second.position)  # The views have read it.
    return run_id


def test_spend_bars_and_totals_count_what_the_ledger_presumed_spent(
    http: httpx.Client, grpc_client: LedgerClient
) -> None:
    run_id = presumed_run(grpc_client)
    assert grpc_client.get_run_state(run_id=run_id).spend.presumed_usd_micro == 4_000_000
    row = page(http, "/").one("table", class_="runs").one("tr", data_run_id=run_id)
    spend = row.one("td", data_field="spend")
    assert spend.one("div", class_="fill").attrs["style"] == "width:40%"
    assert spend.text == "$0.00 + $4.00 presumed of $10.00"
    facts = page(http, f"/runs/{run_id}").one("dd", data_field="spend")
    assert facts.one("div", class_="fill").attrs["style"] == "width:40%"
    assert facts.text == "$0.00 + $4.00 presumed of $10.00"
    [listed] = [r for r in http.get("/api/runs").json()["runs"] if r["run_id"] == run_id]
    assert (listed["committed_usd_micro"], listed["presumed_usd_micro"]) == (0, 4_000_000)
    [hour] = http.get(f"/api/runs/{run_id}/spend").json()["hours"]
    assert (hour["committed_usd_micro"], hour["presumed_usd_micro"]) == (0, 4_000_000)


def test_runs_page_lists_runs_with_status_attempt_step_and_spend(http: httpx.Client, recorded: Recorded) -> None:
    root = page(http, "/")
    table = root.one("table", class_="runs")
    rows = table.all("tr", data_run_id=recorded.run_id)
    assert len(rows) == 1
    row = rows[0]
    assert row.one("td", data_field="status").text == "running"
    assert row.one("td", data_field="attempt").text == "2"
    assert row.one("td", data_field="last_step").text == "11"
    spend = row.one("td", data_field="spend")
    assert spend.one("div", class_="bar").one("div", class_="fill").attrs["style"] == "width:15%"
    assert spend.text == "$1.50 + $0.25 held of $10.00"
    assert row.one("a").attrs["href"] == f"/runs/{recorded.run_id}"
    checkbox = row.one("input", type="checkbox")
    assert (checkbox.attrs["name"], checkbox.attrs["value"], checkbox.attrs["form"]) == (
        "run",
        recorded.run_id,
        "compare",
    )
    other = table.one("tr", data_run_id=recorded.other_run_id)
    assert other.one("td", data_field="status").text == "done"
    assert other.one("td", data_field="spend").one("div", class_="fill").attrs["style"] == "width:0%"
    compare = root.one("form", id="compare")
    assert (compare.attrs["action"], compare.attrs["method"]) == ("/compare", "get")


def test_runs_page_filters_with_a_get_form(http: httpx.Client, recorded: Recorded) -> None:
    root = page(http, "/")
    form = root.one("form", class_="filters")
    assert form.attrs["method"] == "get"
    assert [o.attrs["value"] for o in form.one("select", name="status").all("option")] == [
        "",
        "running",
        "lost",
        "done",
        "failed",
        "stopped",
    ]
    assert {i.attrs["name"] for i in form.all("input")} == {"where", "name", "account", "include_retracted", "columns"}
    done = page(http, "/", status="done")
    assert [
        r.attrs["data-run-id"] for r in done.one("table", class_="runs").all("tr", data_run_id=recorded.other_run_id)
    ]
    assert done.one("table", class_="runs").all("tr", data_run_id=recorded.run_id) == []
    assert done.one("option", value="done").attrs.get("selected") == ""
    by_account = page(http, "/", account="team").one("table", class_="runs")
    assert [r.attrs["data-run-id"] for r in by_account.all("tr") if "data-run-id" in r.attrs] == [recorded.run_id]


def test_runs_page_searches_with_the_where_field(http: httpx.Client, recorded: Recorded) -> None:
    found = page(http, "/", where="spec.model = 'tiny'")
    assert found.one("input", name="where").attrs["value"] == "spec.model = 'tiny'"
    rows = found.one("table", class_="runs").all("tr")
    assert [r.attrs["data-run-id"] for r in rows if "data-run-id" in r.attrs] == [recorded.run_id]
    refused = http.get("/", params={"where": "spec.model = "})
    assert refused.status_code == 400
    assert 'id="search-error"' in refused.text and "at position 14" in refused.text
    assert 'class="runs"' not in refused.text  # Never every run.


def test_runs_page_pages_with_a_link(http: httpx.Client, recorded: Recorded) -> None:
    root = page(http, "/", limit=1, name="web-")
    link = root.one("a", rel="next")
    following = page(http, link.attrs["href"])
    rows = following.one("table", class_="runs").all("tr")
    assert [r.attrs["data-run-id"] for r in rows if "data-run-id" in r.attrs] == [recorded.run_id]


def test_run_page_holds_the_charts_tables_spec_and_summary(http: httpx.Client, recorded: Recorded) -> None:
    root = page(http, f"/runs/{recorded.run_id}")
    main = root.one("main")
    assert (main.attrs["data-page"], main.attrs["data-run-id"]) == ("run", recorded.run_id)
    charts = main.all("figure", class_="chart")
    assert [(f.attrs["data-metric"], f.attrs["data-sparse"], f.attrs["data-run-id"]) for f in charts] == [
        ("eval_loss", "true", recorded.run_id),
        ("loss", "false", recorded.run_id),
    ]
    assert [f.one("figcaption").text for f in charts] == ["eval_loss", "loss"]
    assert main.one("figure", class_="spend-chart").attrs["data-run-id"] == recorded.run_id
    assert main.one(data_field="status").text == "running"
    assert main.one(data_field="last_step").text == "11"
    attempts = main.one("table", class_="attempts").all("tr", data_attempt="1") + main.one(
        "table", class_="attempts"
    ).all("tr", data_attempt="2")
    assert [[td.text for td in row.all("td")][1] for row in attempts] == ["first", "second"]
    [checkpoint] = main.one("table", class_="checkpoints").all("tr", data_step="5")
    assert "s3://ckpt/5" in checkpoint.text
    assert main.one("pre", class_="spec").text == '{\n  "lr": 0.001,\n  "model": "tiny"\n}'
    assert main.one("pre", class_="summary").text == "{}"
    assert all(t.text.endswith(" UTC") for t in main.all("time"))


def test_a_run_page_names_the_run_by_name(http: httpx.Client, recorded: Recorded) -> None:
    assert page(http, "/runs/web-chart").one("main").attrs["data-run-id"] == recorded.run_id


def test_a_run_with_no_attempt_yet_reads_as_opened_not_running(http: httpx.Client, grpc_client: LedgerClient) -> None:
    run_id = grpc_client.open_run(run_key=fresh_key(), name="web-not-started").state.run.run_id
    cell = page(http, "/runs/" + run_id).one(data_field="status")
    assert (cell.text, cell.attrs["data-status"]) == ("opened (no attempt yet)", "running")
    row = page(http, "/", name="web-not-started").one("tr", data_run_id=run_id)
    assert row.one(data_field="status").text == "opened (no attempt yet)"


def test_run_page_shows_progress_best_scores_datasets_and_retraction(tmp_path: Path) -> None:
    """A run planned for 40 steps with eval_loss (lower is better) as its objective: 10 steps
    recorded, checkpoints at steps 4 (eval_loss 0.5) and 8 (0.25, the best and the live one),
    a train dataset whose export report's gate passed. Retracted, it leaves the runs list (unless
    retracted runs are asked for) and its page says so. On a server of its own: the module's
    holds the values the other tests count."""
    server = WebServer(str(tmp_path / "ledger.db")).start()
    try:
        with (
            LedgerClient(server.address, principal="tests", timeout_s=10.0) as grpc_client,
            httpx.Client(base_url=server.url, timeout=10.0) as http,
        ):
            planned_run_page(http, grpc_client)
    finally:
        server.stop()


def planned_run_page(http: httpx.Client, grpc_client: LedgerClient) -> None:
    opened = grpc_client.open_run(run_key=fresh_key(), name="web-planned", max_steps=40, objective=("eval_loss", "min"))
    run_id = opened.state.run.run_id
    attempt = grpc_client.start_attempt(run_id=run_id).attempt
    grpc_client.append_steps(run_id=run_id, attempt=attempt, steps=list(range(10)), metrics={"loss": [1.0] * 10})
    for step, score in ((4, 0.5), (8, 0.25)):
        grpc_client.save_checkpoint(
            run_id=run_id,
            attempt=attempt,
            step=step,
            uri=f"s3://ckpt/p{step}",
            backend="s3",
            scores={"eval_loss": score},
        )
    recorded = grpc_client.record_dataset(
        run_id=run_id,
        role="train",
        digest="sha256:" + "5e" * 32,
        format="chat",
        rows=1_200,
        tokens=48_000,
        source_uri="s3://data/train.jsonl",
        report={"rows_dropped": {"empty": 2}, "gate": "passed"},
    )
    grpc_client.get_run_state(run_id=run_id, min_position=recorded.position)  # projected
    main = page(http, f"/runs/{run_id}").one("main")
    facts = dict(zip([dt.text for dt in main.all("dt")], [dd.text for dd in main.all("dd")], strict=True))
    assert facts["objective"] == "eval_loss (lower is better)"
    assert facts["progress"].startswith("step 9 of 40 (22.5%)")
    assert main.one(data_field="progress").one("div", class_="fill").attrs["style"] == "width:22%"
    assert facts["best"] == "step 8, attempt 1 (eval_loss=0.25)"
    rows = {int(row.attrs["data-step"]): row for row in main.one("table", class_="checkpoints").all("tr")[1:]}
    assert rows[4].one(data_field="scores").text == "eval_loss=0.5"
    assert rows[4].one(data_field="checkpoint_state").text == "live"
    assert rows[8].one(data_field="checkpoint_state").text == "live (resume), best"
    [dataset] = main.one("table", class_="datasets").all("tr", data_role="train")
    assert [td.text for td in dataset.all("td")][:7] == [
        "train",
        "chat",
        "1,200",
        "48,000",
        "5e5e5e5e5e5e",
        "s3://data/train.jsonl",
        "passed",
    ]
    assert main.all("p", class_="retracted") == []
    row = page(http, "/", name="web-planned").one("tr", data_run_id=run_id)
    assert row.one(data_field="progress").text == "22%"

    registered = grpc_client.register(
        family="web-planned", artifact_uri="s3://m/p8", digest="sha256:" + "8a" * 32, source_run_id=run_id
    )
    grpc_client.list_versions(family="web-planned", min_position=registered.position)  # projected
    versions = page(http, "/registry/web-planned").one("table", class_="versions")
    assert versions.all(data_field="source_retracted") == []

    retracted = grpc_client.retract_run(run_id=run_id, reason="trained on leaked eval rows")
    grpc_client.get_run_state(run_id=run_id, min_position=retracted.position)  # projected
    [flag] = page(http, "/registry/web-planned").one("table", class_="versions").all(data_field="source_retracted")
    assert flag.text == "retracted"
    banner = page(http, f"/runs/{run_id}").one("p", class_="retracted").text
    assert banner.startswith("Retracted ") and " by tests: trained on leaked eval rows." in banner
    assert page(http, "/", name="web-planned").all("tr", data_run_id=run_id) == []
    listed = page(http, "/", name="web-planned", include_retracted="1").one("tr", data_run_id=run_id)
    assert listed.attrs["class"] == "retracted" and "retracted" in listed.one(data_field="name").text


def test_stored_text_is_escaped(http: httpx.Client, grpc_client: LedgerClient) -> None:
    name = '<script>alert("x")</script>'
    run_id = grpc_client.open_run(run_key=fresh_key(), name=name, spec={"note": "</pre><b>bold</b>"}).state.run.run_id
    response = http.get(f"/runs/{run_id}")
    assert response.status_code == 200
    assert "<script>alert" not in response.text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in response.text
    assert "<b>bold</b>" not in response.text
    tree = Tree()
    tree.feed(response.text)
    assert tree.root.one("h1").text == name
    assert "</pre><b>bold</b>" in tree.root.one("pre", class_="spec").text
    assert "<script>alert" not in http.get("/").text


def test_compare_page_holds_the_overlay_figure_and_a_form(http: httpx.Client, recorded: Recorded) -> None:
    # The form's empty "add run" field comes along; a run named twice is drawn once.
    root = page(http, "/compare", run=["web-chart", recorded.other_run_id, "", recorded.run_id], metric="loss")
    figure = root.one("figure", class_="compare")
    assert "chart" in figure.attrs["class"].split()
    assert (figure.attrs["data-metric"], figure.attrs["data-runs"]) == (
        "loss",
        f"{recorded.run_id},{recorded.other_run_id}",
    )
    form = root.one("form", class_="compare")
    assert form.attrs["method"] == "get"
    assert [i.attrs["value"] for i in form.all("input", name="run") if i.attrs.get("checked") == ""] == [
        recorded.run_id,
        recorded.other_run_id,
    ]
    # The metrics offered are those the runs have; the one asked for is ticked.
    picked = {i.attrs["value"]: "checked" in i.attrs for i in form.all("input", name="metric")}
    assert picked == {"eval_loss": False, "loss": True}


def test_compare_page_draws_every_metric_asked_and_names_the_runs(http: httpx.Client, recorded: Recorded) -> None:
    # Several metrics draw one chart each, in order; each run is named (runs of different names
    # by their names alone).
    root = page(http, "/compare", run=[recorded.run_id, recorded.other_run_id], metric=["loss", "eval_loss"])
    figures = root.all("figure", class_="compare")
    assert [f.attrs["data-metric"] for f in figures] == ["loss", "eval_loss"]
    assert {f.attrs["data-runs"] for f in figures} == {f"{recorded.run_id},{recorded.other_run_id}"}
    form = root.one("form", class_="compare")
    assert [i.attrs["value"] for i in form.all("input", name="metric") if "checked" in i.attrs] == [
        "eval_loss",
        "loss",
    ]
    assert [label.text.strip() for label in form.all("label", class_="run")] == ["web-chart", "web-other"]


def test_accounts_page_shows_the_tree_in_dollars(http: httpx.Client, recorded: Recorded) -> None:
    row = page(http, "/accounts").one("tr", data_account="team")
    assert [td.text for td in row.all("td")][:6] == [
        "team",
        "$100.00",
        "$1.50",
        "$0.25",
        "$98.25",
        "$0.00",
    ]


def test_registry_pages_show_families_versions_and_promotions(http: httpx.Client, recorded: Recorded) -> None:
    row = page(http, "/registry").one("tr", data_family="web-model")
    assert [td.text for td in row.all("td")] == ["web-model", "1", "2", "-"]
    family = page(http, "/registry/web-model")
    history = family.one("table", class_="history").all("tr")[1:]
    assert [[td.text for td in row.all("td")][1:] for row in history] == [
        ["promote", "1", "-", "passed (asserted)", "eval ok", "tests"],
        ["promote", "2", "1", "passed (asserted)", "better", "tests"],
        ["rollback", "1", "2", "-", "regression", "tests"],
    ]


def test_a_version_without_a_source_run_shows_no_step(http: httpx.Client, recorded: Recorded) -> None:
    # web-model's version 2 was registered without a source: its step reads "-", not 0.
    rows = page(http, "/registry/web-model").one("table", class_="versions").all("tr")[1:]
    cells = {row.all("td")[0].text: [td.text for td in row.all("td")] for row in rows}
    assert cells["1"][3:5] == [recorded.run_id[:8], "5"]
    assert cells["2"][3:5] == ["-", "-"]


def test_the_family_page_shows_evaluated_and_asserted_gates_refusals_aliases_and_retirement(
    http: httpx.Client, grpc_client: LedgerClient
) -> None:
    from clients import GateNotPassed

    for label in ("g1", "g2"):
        grpc_client.register(family="web-gated", artifact_uri=f"s3://m/{label}", digest="sha256:" + label[1] * 64)
    evaluation = grpc_client.open_run(run_key=fresh_key(), name="web-eval").state.run.run_id
    noted = grpc_client.note_summary(run_id=evaluation, summary={"accuracy": 0.93})
    with pytest.raises(GateNotPassed):
        failed = {"passed": False, "reason": "worse"}
        grpc_client.promote(family="web-gated", version=2, expected_current=0, verdict=failed)
    grpc_client.promote(
        family="web-gated", version=1, expected_current=0, gate_rule="accuracy >= 0.9", evaluation_run_id=evaluation
    )
    grpc_client.move_alias(family="web-gated", alias="production", version=1, expected_version=0)
    retired = grpc_client.retire_family(family="web-gated", reason="superseded by <web-next>")
    grpc_client.list_versions(family="web-gated", min_position=retired.position)  # projected
    main = page(http, "/registry/web-gated").one("main")
    assert main.one(data_field="aliases").text == "production=1"
    assert "by tests: superseded by <web-next>" in main.one("p", class_="retired").text
    rows = main.one("table", class_="history").all("tr")[1:]
    assert [row.attrs.get("class", "") for row in rows] == ["refused", ""]
    assert [[td.text for td in row.all("td")][1:5] for row in rows] == [
        ["refused", "2", "-", "failed (asserted)"],
        ["promote", "1", "-", "passed (evaluated)"],
    ]
    assert rows[0].one(data_field="reason").text == "GATE_NOT_PASSED: the gate did not pass: worse"
    assert rows[1].one(data_field="evidence").text == f"accuracy=0.93 (summary, position {noted.position})"
    document = http.get("/api/registry/web-gated").json()
    assert [(h["kind"], h["refusal"], h["verdict"]["mode"]) for h in document["history"]] == [
        ("refused", "GATE_NOT_PASSED", "asserted"),
        ("promote", "", "evaluated"),
    ]
    assert document["aliases"] == [{"alias": "production", "version": 1}]
    assert document["retired"]["reason"] == "superseded by <web-next>"


def test_events_page_filters_and_pages(http: httpx.Client, recorded: Recorded) -> None:
    root = page(http, "/events", limit=2)
    rows = root.one("table", class_="events").all("tr")[1:]
    assert [row.attrs["data-position"] for row in rows] == ["1", "2"]
    assert root.one("a", rel="next").attrs["href"] == "/events?from=3&limit=2"
    saved = page(http, "/events", type="CheckpointSaved").one("table", class_="events").all("tr")[1:]
    assert [[td.text for td in row.all("td")][2] for row in saved] == ["Run.CheckpointSaved"]


def test_a_missing_run_is_a_404_page(http: httpx.Client) -> None:
    root = page(http, "/runs/no-such-run", expect=404)
    assert root.one("p", class_="error").attrs["data-reason"] == "RUN_NOT_FOUND"


def test_a_bad_filter_is_a_400_page(http: httpx.Client) -> None:
    root = page(http, "/?status=sleeping", expect=400)
    assert root.one("p", class_="error").attrs["data-reason"] == "INVALID_PARAMETER"


def test_static_files_are_served(http: httpx.Client) -> None:
    response = http.get("/static/dashboard.js")
    assert response.status_code == 200
    assert "javascript" in response.headers["content-type"]
    assert http.get("/static/../app.py").status_code == 404


# Serving.


@pytest.mark.subprocess
def test_serve_prints_the_dashboard_address_and_serves_it(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "services.cli", "serve", "--db", str(tmp_path / "l.db")]
    command += ["--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"]
    root = Path(__file__).resolve().parents[2]
    process = subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        serving = process.stdout.readline()
        dashboard = process.stdout.readline()
        assert serving.startswith("trainledger: serving on 127.0.0.1:"), serving
        match = re.fullmatch(r"trainledger: dashboard on http://127\.0\.0\.1:(\d+)/\n", dashboard)
        assert match, dashboard
        response = httpx.get(f"http://127.0.0.1:{match.group(1)}/api/runs", timeout=10)
        assert response.json() == {"runs": [], "next_page": None}
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_dashboard_port_in_use_is_refused_before_serving(tmp_path: Path) -> None:
    import asyncio
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        async def attempt() -> None:
            create_server("127.0.0.1:0", database=str(tmp_path / "l.db"), http=f"127.0.0.1:{port}")

        with pytest.raises(
            StartupError, match=f"cannot serve the dashboard on 127.0.0.1:{port}: the address is already in use"
        ):
            asyncio.run(attempt())


def test_a_dashboard_off_loopback_needs_authentication(tmp_path: Path) -> None:
    import asyncio

    async def attempt(**options: Any) -> None:
        server, _ = create_server(
            "127.0.0.1:0", database=str(tmp_path / "l.db"), http="0.0.0.0:0", **{"insecure": False, **options}
        )
        await server.stop(0)

    with pytest.raises(StartupError, match="refusing to serve the dashboard on 0.0.0.0:0 without authentication"):
        asyncio.run(attempt())
    asyncio.run(attempt(insecure=True))
    asyncio.run(attempt(auth=True))


def test_serve_without_http_serves_no_dashboard(tmp_path: Path) -> None:
    import asyncio

    async def attempt() -> str:
        server, _ = create_server("127.0.0.1:0", database=str(tmp_path / "l.db"))
        address: str = server.http_address
        await server.stop(0)
        return address

    assert asyncio.run(attempt()) == ""
    assert os.path.exists(tmp_path / "l.db")


def test_a_run_page_asked_at_a_position_waits_for_the_views_to_reach_it(tmp_path: Path) -> None:
    """The live page swaps its panels with the page as of the last event it was sent
    (`?min_position=`): a page read while the views lag would take back the step the live events
    already showed. Here nothing projects but the test: asked at the head, the page waits for the
    views, and shows the steps they reach; asked at a position they never reach, it is a 503
    VIEW_NOT_CAUGHT_UP, not an older page."""
    from ledger import Ledger

    ledger = Ledger.open(str(tmp_path / "ledger.db"))
    server = WebServer(ledger=ledger).start()
    try:
        with (
            LedgerClient(server.address, principal="tests", timeout_s=10.0) as grpc_client,
            httpx.Client(base_url=server.url, timeout=30.0) as http,
        ):
            run_id = grpc_client.open_run(run_key=fresh_key(), name="lagging").state.run.run_id
            grpc_client.start_attempt(run_id=run_id)
            grpc_client.append_steps(run_id=run_id, attempt=1, steps=[0, 1, 2, 3, 4], metrics={"loss": [1.0] * 5})
            ledger.wait(ledger.head())
            ledger.projector.stop()  # From here on, only the test projects.
            grpc_client.append_steps(run_id=run_id, attempt=1, steps=[5, 6, 7], metrics={"loss": [1.0] * 3})
            head = ledger.head()

            def last_step(**params: Any) -> str:
                return page(http, f"/runs/{run_id}", **params).one("dd", **{"data-field": "last_step"}).text

            assert last_step() == "4"  # No position asked: the views as they are.
            timer = threading.Timer(0.5, ledger.projector.catch_up)
            timer.start()
            assert last_step(min_position=head) == "7"
            timer.join()
            ahead = http.get(f"/runs/{run_id}", params={"min_position": head + 1})
            assert ahead.status_code == 503 and "VIEW_NOT_CAUGHT_UP" in ahead.text
            bad = http.get(f"/runs/{run_id}", params={"min_position": "soon"})
            assert bad.status_code == 400 and "min_position" in bad.text
    finally:
        server.stop()
        ledger.close()
