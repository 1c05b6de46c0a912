"""Where a prune may delete (clients.retention_guard), on real folders and links: inside the roots
after resolving links, never a root itself, never what is, contains or lies inside a protected
state, and uri roots for other schemes. Every expected answer is written out here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clients.retention import delete_real
from clients.retention_guard import Guard, roots_from


def test_roots_come_from_the_options_else_the_environment() -> None:
    environment = {"TRAINLEDGER_PRUNE_ROOTS": os.pathsep.join(["/data/a", "s3://bucket/ckpt", "", "/data/b"])}
    assert roots_from(["/x"], environment) == ["/x"]
    assert roots_from([], environment) == ["/data/a", "s3://bucket/ckpt", "/data/b"]
    assert roots_from([], {}) == []
    with pytest.raises(ValueError, match="at most 64"):
        roots_from([f"/r{i}" for i in range(65)], {})


def test_a_root_must_be_a_folder_here(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is not a directory"):
        Guard([str(tmp_path / "missing")], [])


def test_local_paths(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "kept" / "inner").mkdir(parents=True)
    (root / "old").mkdir()
    (root / "old" / "w.bin").write_bytes(b"1" * 10)
    outside.mkdir()
    (root / "out").symlink_to(outside)
    guard = Guard([str(root)], [f"file://{root}/kept/inner", "s3://b/x"])

    allowed = guard.check(str(root / "old"))
    assert (allowed.allowed, allowed.path, allowed.size_bytes) == (True, str(root / "old"), 10)
    assert guard.check(str(root / "never-written")).allowed
    assert "is a prune root itself" in guard.check(str(root)).refusal
    assert "outside the prune roots" in guard.check(str(root / "out" / "x")).refusal
    assert "outside the prune roots" in guard.check(str(root / ".." / "outside")).refusal
    assert "still needs" in guard.check(str(root / "kept")).refusal  # Holds a protected state.
    assert "still needs" in guard.check(str(root / "kept" / "inner" / "part")).refusal  # Inside one.
    assert "still needs" in guard.check(f"file://{root}/kept/inner").refusal
    # A provider's handle and another host's file name nothing to delete here: the deleter says so.
    assert guard.check("tinker://session/weights/3", "tinker").allowed
    assert guard.check("file://other-host/ckpt").allowed
    assert "no prune root is set" in Guard([], []).check(str(root / "old")).refusal


def test_uris_of_other_schemes(tmp_path: Path) -> None:
    guard = Guard(["s3://bucket/ckpt"], ["s3://bucket/ckpt/run-b/10", "s3://bucket/models/1"])
    allowed = guard.check("s3://bucket/ckpt/run-a/5")
    assert (allowed.allowed, allowed.path, allowed.local) == (True, "s3://bucket/ckpt/run-a/5", False)
    assert "outside the prune roots" in guard.check("s3://bucket/ckpt/../models/1").refusal
    assert "is a prune root itself" in guard.check("s3://bucket/ckpt").refusal
    assert "outside the prune roots" in guard.check("gs://bucket/ckpt/run-a/5").refusal
    assert "still needs" in guard.check("s3://bucket/ckpt/run-b").refusal
    assert "still needs" in guard.check("s3://bucket/ckpt/run-b/10/shard-0").refusal


def test_a_link_swapped_in_above_an_allowed_path_deletes_nothing(tmp_path: Path) -> None:
    # A trainer that can write under the root replaces a folder above a checkpoint the guard
    # allowed with a link out of the root, between the guard's check and the deletion.
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "run" / "ckpt").mkdir(parents=True)
    (root / "run" / "ckpt" / "w.bin").write_bytes(b"1" * 10)
    (outside / "ckpt").mkdir(parents=True)
    (outside / "ckpt" / "victim.bin").write_bytes(b"v" * 10)
    target = Guard([str(root)], []).check(str(root / "run" / "ckpt"))
    assert (target.allowed, target.path) == (True, str(root / "run" / "ckpt"))
    (root / "run").rename(root / "moved")
    (root / "run").symlink_to(outside)

    done = delete_real(target.path)
    assert (done.outcome, done.ok) == ("failed", False)
    assert "symbolic link" in done.detail
    assert (outside / "ckpt" / "victim.bin").read_bytes() == b"v" * 10
    assert (root / "moved" / "ckpt" / "w.bin").read_bytes() == b"1" * 10
