"""The docs stay true: the generated pages match their sources, every command of the CLI has its
section, the architecture page's walks name files and methods that exist, and the README's
trainer runs as pasted against a real ledger."""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from clients import LedgerClient
from services.cli import parser
from services.embedded import ServerThread
from services.web.search import RUNS_PARAMETERS

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
README_LINES_MAX = 250


def _check(script: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(REPO / "scripts" / script), "--check"]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)


@pytest.mark.subprocess
def test_the_api_reference_is_generated_from_the_current_protos() -> None:
    result = _check("generate_api_docs.py")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.subprocess
def test_the_cli_reference_is_generated_from_the_current_parser() -> None:
    result = _check("generate_cli_docs.py")
    assert result.returncode == 0, result.stdout + result.stderr


def _command_paths(command: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for action in command._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += [(*words, name), *_command_paths(sub, (*words, name))]
    return found


def test_every_subcommand_has_a_section_in_the_cli_page() -> None:
    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^### trainledger (.+)$", page, flags=re.MULTILINE))
    paths = {" ".join(words) for words in _command_paths(parser())}
    assert {"serve", "runs list", "spend reconcile", "tokens create", "checkpoints prune"} <= paths
    assert sorted(paths - headings) == []
    assert sorted(headings - paths) == []


def test_every_api_method_is_in_the_api_page() -> None:
    page = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    for module in ("runs", "spend", "registry", "events"):
        source = (REPO / "proto" / "trainledger" / "v1" / f"{module}.proto").read_text(encoding="utf-8")
        for method in re.findall(r"^\s*rpc (\w+)\(", source, flags=re.MULTILINE):
            assert f"| `{method}` |" in page, method


def _walk_rows() -> list[tuple[str, str, list[str], str]]:
    """The rows of the architecture page's walks: (walk, row, the files it names, what happens).
    A bare name in the file column lies beside the file named before it, or beside its folder."""
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = []
    for section in re.split(r"^## ", page, flags=re.MULTILINE):
        if not section.startswith("Walk"):
            continue
        for number, cell, what in re.findall(r"^\| (\d+) \| (.+?) \| (.+) \|$", section, flags=re.MULTILINE):
            files, folder = [], REPO
            for name in re.findall(r"`([^`]+)`", cell):
                if name.split("/")[0] in ("clients", "ledger", "services", "trainledger"):
                    path = REPO / name
                    folder = path.parent
                else:
                    path = next((f / name for f in (folder, folder.parent) if (f / name).exists()), folder / name)
                files.append(str(path.relative_to(REPO)))
            rows.append((section.split("\n")[0], number, files, what))
    return rows


def _class_sources() -> dict[str, list[str]]:
    """Each class of the code (Python and the dashboard's modules) with the text of its module
    and of the modules of the classes it derives from."""
    texts = {}
    for top in ("clients", "ledger", "services", "trainledger"):
        for path in (REPO / top).rglob("*"):
            if path.suffix in (".py", ".js") and "vendor" not in path.parts:
                texts[path] = path.read_text(encoding="utf-8")
    bases: dict[str, list[str]] = {}
    sources: dict[str, list[str]] = {}
    for text in texts.values():
        for name, parents in re.findall(r"^\s*(?:export )?class (\w+)(?:\(([^)]*)\))?", text, flags=re.MULTILINE):
            sources.setdefault(name, []).append(text)
            bases.setdefault(name, []).extend(re.findall(r"\w+", parents))
    return {name: found + [t for base in bases[name] for t in sources.get(base, [])] for name, found in sources.items()}


def _defines(text: str, member: str) -> bool:
    """Whether a class's text defines `member`: a function, a class, an attribute or a JS method."""
    forms = (
        rf"(?:async )?def {member}\b",
        rf"class {member}\b",
        rf"self\.{member}\s*=",
        rf"{member}\s*[:=]",
        rf"(?:async )?{member}\([^)]*\)\s*\{{",
    )
    return re.search(rf"^\s*(?:{'|'.join(forms)})", text, flags=re.MULTILINE) is not None


def test_the_architecture_walks_name_files_and_methods_that_exist() -> None:
    rows = _walk_rows()
    assert len(rows) > 80
    missing = [(walk, number, path) for walk, number, files, _ in rows for path in files if not (REPO / path).exists()]
    assert missing == []
    classes = _class_sources()
    unknown = []
    for walk, number, _, what in rows:
        for owner, member in re.findall(r"`([A-Z]\w*)\.(\w+)`", what):
            if not any(_defines(text, member) for text in classes.get(owner, [])):
                unknown.append((walk[:6], number, f"{owner}.{member}"))
    assert unknown == []


def test_every_json_endpoint_of_the_dashboard_is_in_its_page() -> None:
    source = (REPO / "services" / "web" / "app.py").read_text(encoding="utf-8")
    paths = re.findall(r'Route\("(/api/[^"]*)"', source)
    assert "/api/runs/{run}/chart" in paths
    page = (REPO / "docs" / "dashboard.md").read_text(encoding="utf-8")
    named = [path.replace("{run}", "RUN").replace("{family}", "FAMILY") for path in paths]
    assert [path for path in named if not re.search(rf"`GET {re.escape(path)}[?`]", page)] == []


def test_the_architecture_walks_count_the_files_they_name() -> None:
    """Each walk's "N files in M rows" counts its rows and the files they name, in either column
    (PostgreSQL's modules, named beside SQLite's, stand in for them and are not counted); the
    step's trainer's share is the files of the trainer's process (the client and generated code)."""
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = _walk_rows()
    for walk in dict.fromkeys(walk for walk, *_ in rows):
        named: set[str] = set()
        for _, _, files, what in (row for row in rows if row[0] == walk):
            named |= {*files, *re.findall(r"`((?:clients|ledger|services|trainledger)/[\w/.]+)`", what)}
        named = {path for path in named if not path.startswith("ledger/storage/postgres/")}
        section = page[page.index(f"## {walk}") :]
        stated = re.search(r"(\d+)\s+files\s+in\s+(\d+)\s+rows", section)
        assert stated is not None, walk
        assert (int(stated[1]), int(stated[2])) == (len(named), sum(row[0] == walk for row in rows)), walk
    step = [path for walk, _, files, _ in rows if walk.startswith("Walk 1") for path in files]
    trainer = {path for path in step if path.startswith(("clients/", "trainledger/v1/"))}
    shares = re.findall(r"(\d+)\s+of\s+the\s+(\d+)\s+files\s+are\s+the\s+trainer.s\s+client", page)
    assert [(int(share), int(total)) for share, total in shares] == [(len(trainer), len(set(step)))]


def test_the_readme_is_a_guide_of_at_most_250_lines_with_two_setup_commands() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_LINES_MAX
    setup = lines[lines.index("## Set up on a fresh machine") :]
    block = setup[setup.index("```bash") + 1 : setup.index("```", setup.index("```bash") + 1)]
    assert [line.split("#")[0].strip() for line in block] == ["bash scripts/test", ".venv/bin/trainledger serve"]


def test_the_readme_links_resolve() -> None:
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)", text)
    assert "docs/architecture.md" in targets
    missing = [target for target in targets if "://" not in target and not (REPO / target).exists()]
    assert missing == []


def _readme_trainer() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## A trainer in twenty lines") :]
    start = section.index("```python\n") + len("```python\n")
    code = section[start : section.index("\n```", start)]
    assert "RunRecorder.open" in ast.unparse(ast.parse(code))
    return code


@pytest.mark.subprocess
@pytest.mark.slow
def test_the_readme_trainer_runs_as_pasted(tmp_path: Path) -> None:
    code = _readme_trainer()
    assert len(code.splitlines()) <= 25
    with ServerThread(str(tmp_path / "ledger.db")) as server:
        script = tmp_path / "trainer.py"
        script.write_text(code.replace("127.0.0.1:50051", server.address), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        result = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stdout + result.stderr
        run_id = result.stdout.split()[0]
        with LedgerClient(server.address) as client:
            head = client.get_head()  # The trainer's last write: the views are read once they reach it.
            state = client.get_run_state(run_id=run_id, min_position=head.position)
    assert state.run.name == "demo-sft"
    assert state.run.status == "done"
    assert state.last_step == 199
    assert state.spend.committed_usd_micro == 200 * 15_000
    assert state.resume.available and state.resume.from_step == 199
    assert "'acked': 200" in result.stdout


def test_the_dashboard_page_names_every_parameter_of_the_runs_api() -> None:
    page = (REPO / "docs" / "dashboard.md").read_text(encoding="utf-8")
    [row] = [line for line in page.splitlines() if line.startswith("| `GET /api/runs?")]
    named = re.findall(r"[?&](\w+)=", row.split("`")[1])
    assert sorted(named) == sorted(RUNS_PARAMETERS)


def test_the_performance_goal_table_names_every_goal_the_benchmarks_judge() -> None:
    goals = (REPO / "bench" / "goals.py").read_text(encoding="utf-8")
    judged = set(re.findall(r'Goal\("(\w+)"', goals))
    page = (REPO / "docs" / "performance.md").read_text(encoding="utf-8")
    table = page.split("## The goals", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`(\w+)`", table))
    assert len(judged) > 15
    assert sorted(judged - named) == []
