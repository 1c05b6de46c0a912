"""After the minimal install (no optional extra), importing an integration or running an example
that needs an extra fails naming the extra and the command that installs it, not with a bare
ModuleNotFoundError. The extra's packages are installed here, so each case runs in a fresh Python
whose import system refuses the extra's modules, as a machine without them would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess

ROOT = Path(__file__).resolve().parents[2]

# Runs argv[2:] (a module to import, or a script to run) with the modules named in argv[1] missing.
WITHOUT = """
import runpy, sys
missing = set(sys.argv[1].split(","))

class Missing:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in missing:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Missing())
target, sys.argv = sys.argv[2], sys.argv[2:]
if target.endswith(".py"):
    runpy.run_path(target, run_name="__main__")
else:
    __import__(target)
"""


def without(missing: str, target: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", WITHOUT, missing, target], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )


@pytest.mark.parametrize(
    ("missing", "target", "extra"),
    [
        ("transformers", "clients.integrations.transformers", "trl"),
        ("tinker", "clients.integrations.tinker", "tinker"),
        ("mlx_lm", "clients.integrations.mlx", "mlx"),
        ("transformers,trl,peft", "examples/trl_sft.py", "trl"),
        ("tinker", "examples/tinker_lora.py", "tinker"),
        ("mlx,mlx_lm", "examples/mlx_lora.py", "mlx"),
        ("modal", "examples/modal_train.py", "modal"),
    ],
)
def test_a_missing_extra_is_named_with_its_install_command(missing: str, target: str, extra: str) -> None:
    done = without(missing, target)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("clients.integrations.extras.MissingExtra: this needs the "), done.stderr[-2000:]
    assert f"'{extra}' extra" in last
    assert f"pip install -e '.[{extra}]'" in last


def test_the_integration_imports_with_its_extra_installed() -> None:
    done = without("nothing-missing", "clients.integrations.transformers")
    assert (done.returncode, done.stderr) == (0, "")
