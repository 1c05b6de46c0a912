"""`runs show` prints a run's lineage: the run and step it started from, and the runs started
from its checkpoints, on the database file."""

from __future__ import annotations

import pytest

from ledger import Ledger
from services.cli import main


def test_runs_show_prints_the_source_and_the_children(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "data.db")
    ledger = Ledger.open(path)
    base = ledger.open_run(run_key="base-key", name="base").run_id
    ledger.start_attempt(run_id=base, attempt_id="a1")
    ledger.append_steps(run_id=base, attempt=1, steps=list(range(30)), metrics={"loss": [1.0] * 30})
    ledger.save_checkpoint(run_id=base, attempt=1, step=29, backend="local", uri="file:///ck/29")
    for name in ("child-one", "child-two"):
        source = {"run_id": base, "step": 29, "uri": "file:///ck/29"}
        ledger.open_run(run_key=f"{name}-key", name=name, source_checkpoint=source)
    ledger.close()

    assert main(["runs", "show", "child-one-key", "--db", path]) == 0
    shown = capsys.readouterr().out
    assert f"source:    base ({base}) at step 29" in shown
    assert main(["runs", "show", "base-key", "--db", path]) == 0
    lines = capsys.readouterr().out.splitlines()
    section = lines[lines.index("children (2)") :]
    assert section[1].split() == ["RUN", "NAME", "FROM", "STEP", "OPENED"]
    assert [line.split()[1:3] for line in section[3:5]] == [["child-two", "29"], ["child-one", "29"]]
    assert not any(line.startswith("source:") for line in lines)


def test_runs_show_marks_a_retracted_source_and_child(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run started from a run retracted since does not read as a plain source; nor does a
    retracted child in its source's children."""
    path = str(tmp_path / "data.db")
    ledger = Ledger.open(path)
    base = ledger.open_run(run_key="base-key", name="base").run_id
    ledger.start_attempt(run_id=base, attempt_id="a1")
    ledger.save_checkpoint(run_id=base, attempt=1, step=4, backend="local", uri="file:///ck/4")
    source = {"run_id": base, "step": 4, "uri": "file:///ck/4"}
    child = ledger.open_run(run_key="child-key", name="child", source_checkpoint=source).run_id
    ledger.open_run(run_key="kept-key", name="kept", source_checkpoint=source)
    ledger.retract_run(run_id=base, reason="leaked eval set")
    ledger.retract_run(run_id=child, reason="bad data")
    ledger.close()

    assert main(["runs", "show", "child-key", "--db", path]) == 0
    assert f"source:    base ({base}) at step 4 (retracted)" in capsys.readouterr().out
    assert main(["runs", "show", "base-key", "--db", path]) == 0
    lines = capsys.readouterr().out.splitlines()
    section = lines[lines.index("children (2)") :]
    rows = {line.split()[1]: line for line in section[3:5]}
    assert rows["child"].split()[1:4] == ["child", "(retracted)", "4"]
    assert "retracted" not in rows["kept"]
