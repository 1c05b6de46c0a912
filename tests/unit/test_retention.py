"""clients.retention: deleting a checkpoint's state on real files (and fsspec's memory://
filesystem when fsspec is installed), never through a symbolic link, never a provider's handle."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from clients.retention import Deletion, delete_state


def checkpoint_dir(root: Path, name: str) -> Path:
    directory = root / name
    (directory / "optimizer").mkdir(parents=True)
    (directory / "adapter.safetensors").write_bytes(b"weights")
    (directory / "optimizer" / "state.pt").write_bytes(b"state")
    return directory


def test_a_directory_tree_is_deleted_and_a_link_inside_it_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not part of the checkpoint")
    directory = checkpoint_dir(tmp_path, "checkpoint-100")
    (directory / "link-out").symlink_to(outside, target_is_directory=True)
    sibling = checkpoint_dir(tmp_path, "checkpoint-200")

    done = delete_state(str(directory), "hf")

    assert (done.outcome, done.ok) == ("deleted", True)
    assert not directory.exists()
    assert (outside / "keep.txt").read_text() == "not part of the checkpoint"
    assert (sibling / "adapter.safetensors").read_bytes() == b"weights"


def test_a_file_uri_and_a_plain_file(tmp_path: Path) -> None:
    directory = checkpoint_dir(tmp_path, "checkpoint-7")
    single = tmp_path / "adapters.safetensors"
    single.write_bytes(b"x")

    assert delete_state(directory.as_uri(), "local").outcome == "deleted"
    assert delete_state(str(single), "mlx").outcome == "deleted"
    assert not directory.exists() and not single.exists()


def test_nothing_there_is_absent_and_counts_as_done(tmp_path: Path) -> None:
    done = delete_state(str(tmp_path / "never-written"), "hf")
    assert (done.outcome, done.ok) == ("absent", True)


def test_a_path_that_is_a_symbolic_link_is_refused_and_its_target_kept(tmp_path: Path) -> None:
    target = checkpoint_dir(tmp_path, "elsewhere")
    link = tmp_path / "checkpoint-9"
    link.symlink_to(target, target_is_directory=True)

    done = delete_state(str(link), "hf")

    assert (done.outcome, done.ok) == ("failed", False)
    assert "symbolic link" in done.detail
    assert link.is_symlink() and (target / "adapter.safetensors").exists()


def test_provider_handles_are_not_deletable_here(tmp_path: Path) -> None:
    same_name = checkpoint_dir(tmp_path, "vol")
    tinker = delete_state("tinker://run-1/weights/000100", "tinker")
    volume = delete_state(str(same_name), "modal-volume")  # A path inside the provider's container.
    schemed = delete_state("modal-volume://vol/ckpt/100", "")

    assert [d.outcome for d in (tinker, volume, schemed)] == ["unsupported"] * 3
    assert "tinker" in tinker.detail and "provider" in tinker.detail
    assert (same_name / "adapter.safetensors").exists()


def test_another_hosts_file_is_not_deleted_here() -> None:
    done = delete_state("file://gpu-box-7/data/ckpt/100", "local")
    assert done.outcome == "unsupported"


def test_a_deleter_given_by_backend_or_scheme_is_used() -> None:
    calls: list[str] = []

    def deleter(uri: str) -> Deletion:
        calls.append(uri)
        return Deletion(uri, "deleted", "deleted by the store's own client")

    assert delete_state("tinker://a/b", "tinker", deleters={"tinker": deleter}).outcome == "deleted"
    assert delete_state("blob://bucket/ckpt", "", deleters={"blob": deleter}).outcome == "deleted"
    assert calls == ["tinker://a/b", "blob://bucket/ckpt"]


def test_without_fsspec_another_scheme_says_it_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fsspec", None)
    monkeypatch.setitem(sys.modules, "fsspec.core", None)
    done = delete_state("s3://bucket/run/checkpoint-100", "s3")
    assert done.outcome == "unsupported"
    assert "fsspec" in done.detail and "not installed" in done.detail


def test_memory_filesystem_through_fsspec() -> None:
    fsspec = pytest.importorskip("fsspec")
    memory = fsspec.filesystem("memory")
    memory.pipe({"/ckpt-test/run-a/checkpoint-1/weights.bin": b"w", "/ckpt-test/run-a/checkpoint-2/weights.bin": b"v"})
    try:
        done = delete_state("memory://ckpt-test/run-a/checkpoint-1", "s3")
        again = delete_state("memory://ckpt-test/run-a/checkpoint-1", "s3")

        assert (done.outcome, again.outcome) == ("deleted", "absent")
        assert not memory.exists("/ckpt-test/run-a/checkpoint-1/weights.bin")
        assert memory.cat("/ckpt-test/run-a/checkpoint-2/weights.bin") == b"v"
    finally:
        memory.rm("/ckpt-test", recursive=True)


def test_an_unknown_scheme_is_unsupported() -> None:
    pytest.importorskip("fsspec")
    done = delete_state("nosuchstore://bucket/key", "")
    assert done.outcome == "unsupported" and "nosuchstore" in done.detail


@pytest.mark.skipif(os.geteuid() == 0, reason="root deletes whatever the permissions say")
def test_a_delete_the_filesystem_refuses_is_a_failure(tmp_path: Path) -> None:
    parent = tmp_path / "locked"
    directory = checkpoint_dir(parent, "checkpoint-3")
    parent.chmod(0o500)
    try:
        done = delete_state(str(directory), "hf")
    finally:
        parent.chmod(0o700)
    assert (done.outcome, done.ok) == ("failed", False)
    assert directory.exists()


def test_a_path_through_a_file_is_a_failure(tmp_path: Path) -> None:
    (tmp_path / "weights.bin").write_bytes(b"w")
    done = delete_state(str(tmp_path / "weights.bin" / "inner"), "hf")
    assert (done.outcome, done.ok) == ("failed", False)
    assert (tmp_path / "weights.bin").read_bytes() == b"w"
