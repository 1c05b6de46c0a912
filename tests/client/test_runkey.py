"""Run keys and content digests: stable across key order, processes and file locations."""

from __future__ import annotations

import subprocess
import sys

import pytest

from clients import dataset_digest, file_digest, run_key


def test_run_key_ignores_key_order_and_excluded_keys() -> None:
    spec = {"model": {"name": "llama", "revision": "abc"}, "lr": 1e-4, "lora": {"r": 8, "alpha": 16}}
    reordered = {"lora": {"alpha": 16, "r": 8}, "lr": 1e-4, "model": {"revision": "abc", "name": "llama"}}
    assert run_key(spec) == run_key(reordered)
    assert run_key({**spec, "seed": 7}, exclude=["seed"]) == run_key(spec)
    assert run_key({**spec, "lr": 2e-4}) != run_key(spec)
    assert run_key(spec).startswith("sha256:") and len(run_key(spec)) == 71
    with pytest.raises(ValueError):
        run_key({"lr": float("nan")})
    with pytest.raises(TypeError):
        run_key({"model": object()})


@pytest.mark.subprocess
def test_run_key_is_the_same_in_another_process() -> None:
    code = "from clients import run_key; print(run_key({'b': [1, 2.5, 'x'], 'a': {'z': None, 'y': True}}))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert other == run_key({"a": {"y": True, "z": None}, "b": [1, 2.5, "x"]})


def test_digests_follow_content_not_location(tmp_path) -> None:
    for root in ("one", "two"):
        (tmp_path / root / "shards").mkdir(parents=True)
        (tmp_path / root / "train.jsonl").write_text('{"text": "hello"}\n')
        (tmp_path / root / "shards" / "0.bin").write_bytes(b"\x00\x01")
    assert file_digest(tmp_path / "one" / "train.jsonl") == file_digest(tmp_path / "two" / "train.jsonl")
    assert dataset_digest(tmp_path / "one") == dataset_digest(tmp_path / "two")
    (tmp_path / "two" / "shards" / "0.bin").write_bytes(b"\x00\x02")
    assert dataset_digest(tmp_path / "one") != dataset_digest(tmp_path / "two")
    with pytest.raises(FileNotFoundError):
        dataset_digest(tmp_path / "missing")


@pytest.mark.subprocess
def test_the_client_never_imports_the_server_or_the_domain() -> None:
    code = (
        "import sys, clients, clients.recorder, clients.aio; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('ledger', 'services')))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"
