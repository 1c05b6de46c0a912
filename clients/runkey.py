"""Run keys: a stable fingerprint of what a run is, so a resumed or retried job finds its run again.

Put in the spec what defines the run (name, base model with pinned revision, method, LoRA shape,
hyperparameters, dataset identity by content); leave out what may change between attempts (resume
seeds, backend, hosts, the cap). The key is the sha256 of the spec as canonical JSON.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["run_key", "canonical_json", "file_digest", "dataset_digest"]

_CHUNK_BYTES = 1 << 20


def canonical_json(document: Any) -> str:
    """JSON with sorted keys, no whitespace, UTF-8 text; NaN and infinity are refused, tuples are
    lists, paths are strings. Raises TypeError for any other type, so a key never depends on repr()."""

    def default(value: Any) -> Any:
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        if isinstance(value, set | frozenset):
            return sorted(value)
        raise TypeError(f"a run spec cannot hold a {type(value).__name__}")

    return json.dumps(
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=default
    )


def run_key(spec: Mapping[str, Any], *, exclude: Iterable[str] = ()) -> str:
    """ "sha256:<hex>" of the canonical JSON of `spec` without the top-level keys in `exclude`."""
    excluded = set(exclude)
    document = {key: value for key, value in spec.items() if key not in excluded}
    return "sha256:" + hashlib.sha256(canonical_json(document).encode("utf-8")).hexdigest()


def file_digest(path: str | os.PathLike[str]) -> str:
    """ "sha256:<hex>" of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK_BYTES):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()


def dataset_digest(*paths: str | os.PathLike[str]) -> str:
    """ "sha256:<hex>" of a dataset's content: files, or directories walked recursively. Each file
    counts with its path relative to the argument it was found under and its content digest, in
    sorted order, so the digest does not depend on where the data sits or on listing order.
    Raises FileNotFoundError for a path that does not exist."""
    entries: list[tuple[str, str]] = []
    for index, root in enumerate(Path(path) for path in paths):
        if root.is_dir():
            files = sorted(item for item in root.rglob("*") if item.is_file())
            entries += [(f"{index}/{item.relative_to(root).as_posix()}", file_digest(item)) for item in files]
        elif root.is_file():
            entries.append((f"{index}/{root.name}", file_digest(root)))
        else:
            raise FileNotFoundError(root)
    digest = hashlib.sha256(canonical_json(entries).encode("utf-8"))
    return "sha256:" + digest.hexdigest()
