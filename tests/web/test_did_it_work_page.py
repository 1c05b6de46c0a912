"""The run page opens with "Did it work?": the holdout before → after with its direction, the
delta table (target, markers, proxy: n, interval, verdict), the per-group table, the
over-optimization flag and the notes; and `runs show` prints the same, also for a finished run."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from clients import LedgerClient, RunRecorder
from ledger import Ledger
from services.cli import main
from tests.web.conftest import fresh_key
from tests.web.test_pages import page

BEFORE = [
    {"task": "math", "pass": 1, "safe": 1, "reward": 0.1},
    {"task": "math", "pass": 0, "safe": 1, "reward": 0.2},
    {"task": "code", "pass": 1, "safe": 1, "reward": 0.1},
    {"task": "code", "pass": 0, "safe": 1, "reward": 0.2},
]
AFTER = [
    {"task": "math", "pass": 1, "safe": 0, "reward": 0.9},
    {"task": "math", "pass": 1, "safe": 0, "reward": 1.0},
    {"task": "code", "pass": 1, "safe": 0, "reward": 0.9},
    {"task": "code", "pass": 0, "safe": 0, "reward": 1.0},
]


def _recorded(client: LedgerClient) -> tuple[str, int]:
    recorder = RunRecorder.open(client, run_key=fresh_key(), name="web-verdict")
    recorder.finish("done")
    recorder.holdout(0.31, 0.47, "pass_rate")
    recorder.delta(BEFORE, AFTER, target="pass", must_not_regress=["safe"], by="task", proxy="reward")
    last = recorder.note(judge="gpt-judge-v2", seed=7)
    return recorder.run_id, last.position


def test_the_run_page_opens_with_did_it_work(http: httpx.Client, grpc_client: LedgerClient) -> None:
    run_id, position = _recorded(grpc_client)
    grpc_client.get_run_state(run_id=run_id, min_position=position)
    main_ = page(http, f"/runs/{run_id}").one("main")
    opening = main_.all("section", class_="panel")[0]
    assert opening.attrs["data-live"] == "did it work?"
    holdout = opening.one(data_field="holdout")
    assert holdout.attrs["data-direction"] == "better"
    assert holdout.one("strong").text == "pass rate 0.31 → 0.47 (+0.16)"
    assert holdout.one("span", class_="direction").text == "better"
    rows = [[td.text for td in tr.all("td")] for tr in opening.one("table", class_="delta").all("tr")[1:]]
    assert rows == [
        # pass 0.5 -> 0.75 over 4 and 4: 0.25 ± 1.96 sqrt(.25/4 + .1875/4) = [-0.3982, 0.8982].
        ["pass", "target", "4 / 4", "0.5", "0.75", "+0.25", "[-0.3982, 0.8982]", "no clear change"],
        ["safe", "must not regress", "4 / 4", "1", "0", "-1", "[-1, -1]", "regressed"],
        # reward 0.15 -> 0.95: 0.8 ± 1.96 sqrt(2 (0.01/3) / 4) = [0.72, 0.88].
        ["reward", "proxy", "4 / 4", "0.15", "0.95", "+0.8", "[0.72, 0.88]", "better"],
    ]
    groups = [[td.text for td in tr.all("td")] for tr in opening.one("table", class_="delta-groups").all("tr")[1:]]
    assert groups == [["code", "2 / 2", "0.5", "0.5", "+0"], ["math", "2 / 2", "0.5", "1", "+0.5"]]
    assert "the proxy moved and the target did not" in opening.one(data_field="over_optimized").text
    notes = opening.one("dl", class_="notes")
    assert [dt.text for dt in notes.all("dt")] == ["judge", "seed"]
    assert [dd.text for dd in notes.all("dd")] == ["gpt-judge-v2", "7"]
    assert main_.one(data_field="status").text == "done"


def test_a_run_without_reports_says_so(http: httpx.Client, grpc_client: LedgerClient) -> None:
    run_id = grpc_client.open_run(run_key=fresh_key(), name="web-no-verdict").state.run.run_id
    opening = page(http, f"/runs/{run_id}").one("main").all("section", class_="panel")[0]
    assert opening.one("p", class_="empty").text == "No holdout or delta report recorded yet."


def test_runs_show_prints_did_it_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    database = str(tmp_path / "ledger.db")
    ledger = Ledger.open(database)
    run_id = ledger.open_run(run_key="verdict-key", name="verdict").run_id
    ledger.record_report(run_id=run_id, kind="holdout", report={"metric": "loss", "before": 2.5, "after": 1.75})
    ledger.record_report(run_id=run_id, kind="notes", report={"seed": 7})
    ledger.close()
    assert main(["runs", "show", "verdict", "--db", database]) == 0
    shown = capsys.readouterr().out
    assert "did it work?\n  holdout: held-out loss 2.5 → 1.75 (-0.75), better\n  note seed: 7\n" in shown


def test_compare_shows_did_it_work_per_run(http: httpx.Client, grpc_client: LedgerClient) -> None:
    reported, position = _recorded(grpc_client)
    grpc_client.get_run_state(run_id=reported, min_position=position)
    bare = grpc_client.open_run(run_key=fresh_key(), name="web-bare").state.run.run_id
    root = page(http, "/compare", run=[reported, bare])
    rows = root.one("table", class_="did-it-work").all("tr")[1:]
    assert [row.attrs["data-run-id"] for row in rows] == [reported, bare]
    assert [td.text for td in rows[0].all("td")] == [
        "web-verdict", "pass rate 0.31 → 0.47 (+0.16)", "better", "+0.25", "[-0.3982, 0.8982]", "no clear change",
        "safe", "over-optimized",
    ]  # fmt: skip
    assert [td.text for td in rows[1].all("td")] == ["web-bare", "-", "-", "-", "-", "-", "-", ""]
