"""`runs list --format csv|json|parquet`: the runs a search selects as rows for scripts, the same
through a server as on the database file, parsed back and compared with what was recorded."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pandas
import pytest

from clients import LedgerClient
from ledger import Ledger
from services.cli import main
from tests.client.server_thread import ServerThread

ROOT = Path(__file__).resolve().parents[1]

COLUMNS = [
    "run_id",
    "name",
    "status",
    "account",
    "attempts",
    "last_step",
    "started",
    "finished",
    "spend_committed_usd_micro",
    "spend_presumed_usd_micro",
    "cap_usd_micro",
    "tags.sweep",
    "spec.lora.r",
    "spec.lr",
    "spec.optimizer",
    "summary.eval.`exact-match`",
]


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    """Two runs of sweep "s1" (one done with a summary and spend, one still running) and one of
    another sweep; their ids by name."""
    path = str(tmp_path_factory.mktemp("frames") / "data.db")
    ledger = Ledger.open(path)
    done = ledger.open_run(
        run_key="done-key", name="done", spec={"lr": 0.25, "lora": {"r": 8}}, cap_usd_micro=2_000_000
    ).run_id
    ledger.start_attempt(run_id=done, attempt_id="a1")
    ledger.append_steps(run_id=done, attempt=1, steps=[0, 1, 2], metrics={"loss": [3.0, 2.0, 1.0]})
    ledger.reserve(account=done, reservation_id="call-1", amount_usd_micro=5_000)
    ledger.commit(account=done, reservation_id="call-1", actual_usd_micro=4_321)
    ledger.finish_run(run_id=done, attempt=1, status="done", summary={"eval": {"exact-match": 0.5}})
    running = ledger.open_run(run_key="running-key", name="running", spec={"lr": 0.5, "optimizer": "sgd"}).run_id
    other = ledger.open_run(run_key="other-key", name="other", spec={"lr": 0.75}).run_id
    for run_id, sweep in ((done, "s1"), (running, "s1"), (other, "s2")):
        ledger.set_tags(run_id=run_id, tags={"sweep": sweep})
    ledger.close()
    return path, {"done": done, "running": running}


def expected_rows(ids: dict[str, str]) -> list[dict[str, object]]:
    """The rows of `runs list --where "tags.sweep = 's1'" --order-by spec.lr`, less started and
    finished (times of the recording), as JSON gives them."""
    return [
        {
            "run_id": ids["done"],
            "name": "done",
            "status": "done",
            "account": None,
            "attempts": 1,
            "last_step": 2,
            "spend_committed_usd_micro": 4_321,
            "spend_presumed_usd_micro": 0,
            "cap_usd_micro": 2_000_000,
            "tags.sweep": "s1",
            "spec.lora.r": 8,
            "spec.lr": 0.25,
            "spec.optimizer": None,
            "summary.eval.`exact-match`": 0.5,
        },
        {
            "run_id": ids["running"],
            "name": "running",
            "status": "running",
            "account": None,
            "attempts": 0,
            "last_step": None,
            "spend_committed_usd_micro": 0,
            "spend_presumed_usd_micro": 0,
            "cap_usd_micro": None,
            "tags.sweep": "s1",
            "spec.lora.r": None,
            "spec.lr": 0.5,
            "spec.optimizer": "sgd",
            "summary.eval.`exact-match`": None,
        },
    ]


SEARCH = ("--where", "tags.sweep = 's1'", "--order-by", "spec.lr")


def listed(capsys: pytest.CaptureFixture[str], where: list[str], *options: str) -> str:
    assert main(["runs", "list", *where, *SEARCH, *options]) == 0
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def server(database: tuple[str, dict[str, str]]):
    served = ServerThread(database[0]).start()
    yield served
    served.stop()


@pytest.fixture(params=["file", "server"])
def where(request: pytest.FixtureRequest, database: tuple[str, dict[str, str]]) -> list[str]:
    if request.param == "file":
        return ["--db", database[0]]
    return ["--address", request.getfixturevalue("server").address]


def test_json_rows_have_every_column_with_null_for_no_value(database, where, capsys) -> None:
    rows = json.loads(listed(capsys, where, "--format", "json"))
    assert [list(row) for row in rows] == [COLUMNS, COLUMNS]
    assert [{k: v for k, v in row.items() if k not in ("started", "finished")} for row in rows] == expected_rows(
        database[1]
    )
    started = [datetime.fromisoformat(row["started"]) for row in rows]
    assert all(moment.utcoffset() is not None and moment.utcoffset().total_seconds() == 0 for moment in started)
    assert datetime.fromisoformat(rows[0]["finished"]) >= started[0] and rows[1]["finished"] is None


def test_csv_rows_have_a_header_and_empty_fields_for_no_value(database, where, capsys) -> None:
    ids = database[1]
    reader = csv.reader(io.StringIO(listed(capsys, where, "--format", "csv")))
    header, *rows = list(reader)
    assert header == COLUMNS
    found = [{name: value for name, value in zip(header, row, strict=True)} for row in rows]
    assert [row.pop("finished") != "" for row in found] == [True, False]
    assert all(datetime.fromisoformat(row.pop("started")).utcoffset() is not None for row in found)
    text = [{name: "" if value is None else str(value) for name, value in row.items()} for row in expected_rows(ids)]
    assert found == text


def test_parquet_rows_read_back_as_the_frame_of_the_client(database, where, capsys, tmp_path) -> None:
    out = tmp_path / "runs.parquet"
    assert listed(capsys, where, "--format", "parquet", "--output", str(out)) == ""
    frame = pandas.read_parquet(out)
    assert list(frame.columns) == COLUMNS
    assert str(frame["started"].dtype).startswith("datetime64[") and str(frame["started"].dtype).endswith(", UTC]")
    assert (frame["spend_committed_usd_micro"].dtype, frame["cap_usd_micro"].dtype) == ("int64", "Int64")
    rows = frame.drop(columns=["started", "finished"]).astype(object).where(frame.notna(), None)
    assert rows.to_dict("records") == expected_rows(database[1])


def test_the_client_frame_and_the_parquet_rows_agree(database, server, capsys, tmp_path) -> None:
    out = tmp_path / "runs.parquet"
    listed(capsys, ["--address", server.address], "--format", "parquet", "--output", str(out))
    with LedgerClient(server.address) as client:
        frame = client.runs_frame("tags.sweep = 's1'", order_by="spec.lr")
    pandas.testing.assert_frame_equal(pandas.read_parquet(out), frame, check_dtype=False)


def test_parquet_needs_a_file_and_rows_take_no_json(database, capsys) -> None:
    path = database[0]
    assert main(["runs", "list", "--db", path, "--format", "parquet"]) == 2
    assert capsys.readouterr().err == "trainledger: --format parquet is binary: give --output FILE\n"
    assert main(["runs", "list", "--db", path, "--format", "csv", "--json"]) == 2
    assert capsys.readouterr().err == "trainledger: --json and --format csv: choose one\n"


def test_more_runs_than_the_limit_is_said_on_stderr(database, capsys) -> None:
    assert main(["runs", "list", "--db", database[0], "--format", "json", "--limit", "2"]) == 0
    captured = capsys.readouterr()
    assert [row["name"] for row in json.loads(captured.out)] == ["other", "running"]
    assert captured.err == "trainledger: more runs matched than --limit 2; raise --limit for all\n"


WITHOUT_PANDAS = """
import sys
sys.modules["pandas"] = None
from services.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.subprocess
@pytest.mark.parametrize(("format", "status"), [("csv", 0), ("json", 0), ("parquet", 2)])
def test_only_parquet_needs_the_frames_extra(database, tmp_path, format: str, status: int) -> None:
    argv = ["runs", "list", "--db", database[0], "--format", format, "--output", str(tmp_path / f"runs.{format}")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_PANDAS, *argv], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )
    assert done.returncode == status, done.stderr[-2000:]
    if status:
        assert done.stderr == (
            "trainledger: this needs the 'frames' extra (pandas is not installed):"
            " pip install -e '.[frames]' (from a checkout) or pip install 'trainledger[frames]'\n"
        )
    else:
        assert done.stderr == "" and (tmp_path / f"runs.{format}").read_text().startswith(("run_id,", "[\n"))


@pytest.mark.parametrize("format", ["csv", "json", "parquet"])
def test_rows_to_a_folder_are_refused_in_one_line(database, capsys, tmp_path, format: str) -> None:
    assert main(["runs", "list", "--db", database[0], "--format", format, "--output", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"trainledger: --output {tmp_path} is a folder: name a file\n"
    assert captured.out == ""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("format", ["csv", "json", "parquet"])
def test_rows_to_a_full_device_fail_in_one_line(database, capsys, format: str) -> None:
    assert main(["runs", "list", "--db", database[0], "--format", format, "--output", "/dev/full"]) == 1
    assert capsys.readouterr().err == "trainledger: cannot write the rows to /dev/full: No space left on device\n"


def test_a_file_that_exists_is_replaced_whole(database, capsys, tmp_path) -> None:
    out = tmp_path / "runs.json"
    out.write_text("x" * 100_000)
    assert main(["runs", "list", "--db", database[0], "--format", "json", "--output", str(out)]) == 0
    assert [row["name"] for row in json.loads(out.read_text())] == ["other", "running", "done"]
