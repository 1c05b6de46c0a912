"""The runs page tells apart runs of one name: a tags column, and columns of the spec keys whose
values differ among the runs listed (or of the keys `columns=` names, bounded)."""

from __future__ import annotations

import httpx

from clients import LedgerClient
from tests.web.conftest import fresh_key
from tests.web.test_pages import page


def _runs(grpc_client: LedgerClient, name: str) -> list[str]:
    specs = [
        {"lr": 0.1, "batch": 8, "model": "tiny"},
        {"lr": 0.2, "batch": 8, "model": "tiny"},
        {"lr": 0.3, "batch": 8, "model": "base"},
    ]
    ids = [grpc_client.open_run(run_key=fresh_key(), name=name, spec=spec).state.run.run_id for spec in specs]
    grpc_client.set_tags(run_id=ids[0], tags={"team": "vision", "stage": "sft", "seed": "1", "gpu": "h100"})
    last = grpc_client.set_tags(run_id=ids[2], tags={"team": "nlp"})
    grpc_client.get_run_state(run_id=ids[2], min_position=last.position)
    return ids


def _table(root):  # type: ignore[no-untyped-def]
    table = root.one("table", class_="runs")
    headers = [th.text for th in table.one("thead").all("th")]
    rows = {tr.attrs["data-run-id"]: tr for tr in table.one("tbody").all("tr")}
    return headers, rows


def test_runs_of_one_name_are_told_apart_by_their_tags_and_the_spec_keys_that_differ(
    http: httpx.Client, grpc_client: LedgerClient
) -> None:
    ids = _runs(grpc_client, "web-cols-differ")
    headers, rows = _table(page(http, "/", name="web-cols-differ"))
    assert headers[-3:] == ["tags", "spec.lr", "spec.model"]  # spec.batch is 8 for all three
    cells = {
        run_id: {td.attrs.get("data-key", td.attrs.get("data-field")): td for td in row.all("td")}
        for run_id, row in rows.items()
    }
    assert [cells[i]["spec.lr"].text for i in ids] == ["0.1", "0.2", "0.3"]
    assert [cells[i]["spec.model"].text for i in ids] == ["tiny", "tiny", "base"]
    # Three tags shown, the rest counted (all of them in the cell's title).
    tags = cells[ids[0]]["tags"]
    assert [span.text for span in tags.all("span", class_="tag")] == ["gpu=h100", "seed=1", "stage=sft", "+1"]
    assert "team=vision" in tags.attrs["title"]
    assert cells[ids[1]]["tags"].text == "-"
    assert [span.text for span in cells[ids[2]]["tags"].all("span", class_="tag")] == ["team=nlp"]


def test_the_columns_param_names_the_keys_shown(http: httpx.Client, grpc_client: LedgerClient) -> None:
    ids = _runs(grpc_client, "web-cols-named")
    root = page(http, "/", name="web-cols-named", columns="spec.batch,summary.score")
    headers, rows = _table(root)
    assert headers[-3:] == ["tags", "spec.batch", "summary.score"]
    batch = [row.one("td", data_key="spec.batch").text for row in (rows[i] for i in ids)]
    assert batch == ["8", "8", "8"]
    assert {row.one("td", data_key="summary.score").text for row in rows.values()} == {"-"}
    assert root.one("input", name="columns").attrs["value"] == "spec.batch,summary.score"


def test_a_columns_param_out_of_bounds_is_refused(http: httpx.Client) -> None:
    for columns, said in (
        ("lr", "spec., summary. or tags."),
        (",".join(f"spec.k{i}" for i in range(7)), "at most 6"),
        ("spec." + "x" * 300, "at most 256"),
    ):
        refused = http.get("/", params={"columns": columns})
        assert refused.status_code == 400, columns
        assert said in refused.text
