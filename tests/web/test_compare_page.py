"""The compare page and /api/compare/diff over real HTTP, on the runs tests/web/conftest.py records
("web-chart": spec lr 0.001 and model "tiny", $1.50 committed; "web-other": no spec, summary
best 1, nothing spent) and on runs each test opens. Every expected value is written out here."""

from __future__ import annotations

import httpx

from clients import LedgerClient
from tests.web.conftest import Recorded, fresh_key
from tests.web.test_pages import Element, page


def _rows(table: Element) -> list[list[str]]:
    return [[cell.text.strip() for cell in row.children] for row in table.one("tbody").all("tr")]


def test_the_diff_table_shows_what_differs_the_spend_and_the_best_checkpoint(
    http: httpx.Client, recorded: Recorded
) -> None:
    root = page(http, "/compare", run=["web-chart", "web-other"], metric="loss")
    section = root.one("section", data_live="diff")
    table = section.one("table", class_="diff")
    assert [th.text for th in table.one("thead").all("th")] == ["key", "web-chart", "web-other"]
    assert _rows(table) == [
        ["spec.lr", "0.001", "-"],
        ["spec.model", "tiny", "-"],
        ["summary.best", "-", "1"],  # 1.0 travels as a JSON number: 1
        ["spend", "$1.50", "$0.00"],
        ["best checkpoint", "-", "-"],
    ]
    assert "identical" not in section.text  # nothing is the same, so nothing is folded


def test_identical_keys_are_folded_with_their_count(http: httpx.Client, grpc_client: LedgerClient) -> None:
    spec = {"lr": 0.01, "seed": 3, "data": {"name": "mix", "rows": 1000}}
    first = grpc_client.open_run(run_key=fresh_key(), name="fold-a", spec=spec).state.run.run_id
    second = grpc_client.open_run(
        run_key=fresh_key(), name="fold-b", spec={**spec, "lr": 0.02, "data": {"name": "mix", "rows": 2000}}
    ).state.run.run_id
    section = page(http, "/compare", run=[first, second]).one("section", data_live="diff")
    assert _rows(section.one("table", class_="diff")) == [
        ["spec.data.rows", "1000", "2000"],
        ["spec.lr", "0.01", "0.02"],
        ["spend", "$0.00", "$0.00"],
        ["best checkpoint", "-", "-"],
    ]
    folded = section.one("details", class_="identical")
    assert folded.one("summary").text == "2 identical keys"
    assert _rows(folded.one("table")) == [["spec.data.name", "mix", "mix"], ["spec.seed", "3", "3"]]


def test_runs_of_one_name_are_told_apart_and_never_shown_as_bare_ids(
    http: httpx.Client, grpc_client: LedgerClient
) -> None:
    twins = [grpc_client.open_run(run_key=fresh_key(), name="twin-web").state.run.run_id for _ in range(2)]
    root = page(http, "/compare", run=[*twins, "web-other"])
    labels = [label.text.strip() for label in root.one("form", class_="compare").all("label", class_="run")]
    assert labels == [f"twin-web {twins[0][:8]}", f"twin-web {twins[1][:8]}", "web-other"]
    head = root.one("table", class_="diff").one("thead").all("th")
    assert [th.text for th in head] == ["key", *labels]
    verdicts = root.one("section", data_live="verdicts").one("table", class_="did-it-work")
    assert [row[0] for row in _rows(verdicts)] == labels


def test_the_metrics_offered_are_those_the_runs_have(http: httpx.Client, recorded: Recorded) -> None:
    # None asked: "loss", which both have; the picker offers eval_loss too (web-chart has it).
    root = page(http, "/compare", run=["web-chart", "web-other"])
    picker = root.one("fieldset", class_="metrics")
    assert {i.attrs["value"]: "checked" in i.attrs for i in picker.all("input")} == {"eval_loss": False, "loss": True}
    assert [f.attrs["data-metric"] for f in root.all("figure", class_="compare")] == ["loss"]


def test_an_unknown_run_and_a_metric_no_run_has_are_said_not_drawn(http: httpx.Client, recorded: Recorded) -> None:
    root = page(http, "/compare", run=["web-chart", "no-such-run"], metric=["loss", "lsos"])
    said = [item.text for item in root.one("ul", id="compare-refused").all("li")]
    assert said == ["no-such-run: no run no-such-run", "no compared run has the metric 'lsos'"]
    assert [f.attrs["data-metric"] for f in root.all("figure", class_="compare")] == ["loss"]
    assert [label.text.strip() for label in root.all("label", class_="run")] == ["web-chart"]


def test_too_many_runs_or_metrics_or_a_name_too_long_is_a_clear_400(http: httpx.Client, recorded: Recorded) -> None:
    eleven = [("run", f"run-{n}") for n in range(11)]
    response = http.get("/compare", params=eleven)
    assert response.status_code == 400
    assert "compare at most 10 runs at once, not 11" in response.text
    metrics = [("run", "web-chart"), *[("metric", f"m{n}") for n in range(17)]]
    response = http.get("/compare", params=metrics)
    assert response.status_code == 400
    assert "compare at most 16 metrics at once, not 17" in response.text
    response = http.get("/api/compare/diff", params={"run": "x" * 257})
    assert response.status_code == 400
    assert response.json()["error"]["reason"] == "INVALID_PARAMETER"
    assert response.json()["error"]["message"] == "a run is named in at most 256 characters"


def test_the_diff_api_answers_every_row_with_whether_it_differs(http: httpx.Client, recorded: Recorded) -> None:
    response = http.get("/api/compare/diff", params=[("run", "web-chart"), ("run", recorded.other_run_id)])
    assert response.status_code == 200
    document = response.json()
    assert document["runs"] == [
        {"run_id": recorded.run_id, "label": "web-chart"},
        {"run_id": recorded.other_run_id, "label": "web-other"},
    ]
    assert document["rows"][0] == {"key": "spec.lr", "values": ["0.001", "-"], "differs": True, "fact": False}
    assert document["rows"][-2] == {"key": "spend", "values": ["$1.50", "$0.00"], "differs": True, "fact": True}
    assert document["identical"] == 0
    missing = http.get("/api/compare/diff", params={"run": "no-such-run"})
    assert (missing.status_code, missing.json()["error"]["reason"]) == (404, "RUN_NOT_FOUND")


def test_the_runs_page_labels_each_compare_box_by_name(http: httpx.Client, grpc_client: LedgerClient) -> None:
    twins = [grpc_client.open_run(run_key=fresh_key(), name="twin-list").state.run.run_id for _ in range(2)]
    root = page(http, "/", name="twin-list")
    boxes = [root.one("tr", data_run_id=run_id).one("input", type="checkbox") for run_id in twins]
    assert sorted(box.attrs["aria-label"] for box in boxes) == sorted(
        f"compare twin-list {run_id[:8]}" for run_id in twins
    )
    form = root.one("form", id="compare")
    assert form.attrs["data-max"] == "10"
    assert form.one("span", id="compare-limit").attrs.get("role") == "alert"


def test_a_long_value_is_cut_in_its_cell(http: httpx.Client, grpc_client: LedgerClient) -> None:
    long = grpc_client.open_run(run_key=fresh_key(), name="long-a", spec={"prompt": "ab" * 400}).state.run.run_id
    short = grpc_client.open_run(run_key=fresh_key(), name="long-b", spec={"prompt": "ab"}).state.run.run_id
    table = page(http, "/compare", run=[long, short]).one("table", class_="diff")
    assert _rows(table)[0] == ["spec.prompt", "ab" * 249 + "a…", "ab"]


def test_runs_without_reports_say_so_and_claim_nothing_regressed(http: httpx.Client, grpc_client: LedgerClient) -> None:
    bare = [grpc_client.open_run(run_key=fresh_key(), name=f"bare-{n}").state.run.run_id for n in range(2)]
    section = page(http, "/compare", run=bare).one("section", data_live="verdicts")
    assert section.one("p", class_="empty").text == "No compared run recorded a holdout or delta report yet."
    assert _rows(section.one("table", class_="did-it-work")) == [
        ["bare-0", "-", "-", "-", "-", "-", "-", ""],
        ["bare-1", "-", "-", "-", "-", "-", "-", ""],
    ]


def test_the_compare_page_without_runs_asks_for_runs_not_metrics(http: httpx.Client, recorded: Recorded) -> None:
    root = page(http, "/compare")
    assert root.one("p", class_="empty").text == "Pick runs to compare on the runs page, or add them here."
    picker = root.one("fieldset", class_="metrics")
    assert picker.one("legend").text == "metrics"
    assert "pick runs first: their metrics are offered here" in picker.text
    assert "none recorded" not in picker.text


def test_a_name_of_several_runs_lists_their_ids(http: httpx.Client, grpc_client: LedgerClient) -> None:
    twins = [grpc_client.open_run(run_key=fresh_key(), name="twin-said").state.run.run_id for _ in range(2)]
    said = [item.text for item in page(http, "/compare", run="twin-said").one("ul", id="compare-refused").all("li")]
    newest, oldest = twins[1][:8], twins[0][:8]
    assert said == [f"twin-said: twin-said names 2 runs: give more of the id ({newest} running, {oldest} running)"]


def test_a_dotted_key_and_a_nested_one_are_two_rows(http: httpx.Client, grpc_client: LedgerClient) -> None:
    # {"a": {"b": 1}} and a key literally named "a.b": named as a search names them, never one row.
    first = grpc_client.open_run(run_key=fresh_key(), name="dot-a", spec={"a": {"b": 1}, "a.b": 2}).state.run.run_id
    second = grpc_client.open_run(run_key=fresh_key(), name="dot-b", spec={"a.b": 3, "a": {"b": 1}}).state.run.run_id
    answer = http.get("/api/compare/diff", params={"run": [first, second]})
    assert answer.status_code == 200
    rows = {row["key"]: (row["values"], row["differs"]) for row in answer.json()["rows"]}
    assert rows["spec.`a.b`"] == (["2", "3"], True)
    assert rows["spec.a.b"] == (["1", "1"], False)
