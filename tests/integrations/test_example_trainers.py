"""examples/trl_sft.py, examples/mlx_lora.py and examples/retrain.py as a user runs them: a process
of its own, from a directory that is not the repository and without PYTHONPATH, so what they
need comes from the installed package (never from tests/), each on a ledger it serves itself."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any depth (inside functions too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names.add(node.module)
    return names


def test_no_example_imports_tests_or_edits_the_import_path() -> None:
    examples = sorted(EXAMPLES.glob("*.py"))
    assert {path.name for path in examples} >= {"trl_sft.py", "mlx_lora.py", "tinker_lora.py", "retrain.py"}
    for path in examples:
        reached = {name for name in imported_modules(path) if name == "tests" or name.startswith("tests.")}
        assert not reached, f"{path.name} imports {sorted(reached)}"
        assert "sys.path" not in path.read_text(), f"{path.name} edits sys.path"


@pytest.mark.subprocess
def test_retrain_registers_and_promotes_the_best_checkpoint_of_its_demo_run(tmp_path: Path) -> None:
    done = run_example("retrain.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    # The demo run's checkpoints score eval_loss 1.92, 1.31 and 1.47 at steps 10, 20 and 30.
    assert re.search(
        r"best checkpoint of run \S+: step 20 \(attempt 1\), eval_loss 1\.31 \(min is better\)", done.stdout
    )
    assert "registered retrain-demo v1 from s3://bucket/retrain-demo/step-20" in done.stdout
    assert "gate: passed" in done.stdout and "promoted retrain-demo v1" in done.stdout


@pytest.mark.subprocess
def test_the_trl_example_records_its_plan_datasets_and_best_checkpoint(tmp_path: Path) -> None:
    pytest.importorskip("trl")
    done = run_example("trl_sft.py", "--max-steps", "4", "--save-steps", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "progress: step 4 of 4" in done.stdout
    assert re.search(r"train dataset: 64 rows, chat, sha256:[0-9a-f]{12}", done.stdout), done.stdout
    assert re.search(r"eval dataset: 16 rows, chat, sha256:[0-9a-f]{12}", done.stdout), done.stdout
    assert re.search(r"best checkpoint: step [24] \(eval_loss \d+\.\d{4}\)", done.stdout), done.stdout


@pytest.mark.subprocess
def test_the_mlx_example_scores_its_checkpoints_by_validation_loss(tmp_path: Path) -> None:
    pytest.importorskip("mlx.core", reason="mlx needs the CPU backend on Linux: pip install 'mlx[cpu]'")
    pytest.importorskip("mlx_lm")
    done = run_example(
        "mlx_lora.py",
        "--embedded",
        str(tmp_path / "ledger.db"),
        "--iters",
        "6",
        "--eval-every",
        "3",
        "--adapters",
        str(tmp_path / "adapters"),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"checkpoint at step 3: 0000003_adapters\.safetensors \(val_loss \d+\.\d{4}\)", done.stdout)
    assert re.search(r"checkpoint at step 6: 0000006_adapters\.safetensors \(val_loss \d+\.\d{4}\)", done.stdout)
    assert re.search(r"run done: last step 6, checkpoint at 6", done.stdout), done.stdout
    assert re.search(r"best checkpoint: step [36], val_loss \d+\.\d{4}", done.stdout), done.stdout
