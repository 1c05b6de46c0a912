"""Run keys: a stable fingerprint of what a run is, so a resumed or retried job finds its run again.

Put in the spec what defines the run (name, base model with pinned revision, method, LoRA shape,
hyperparameters, dataset identity by content); leave out what may change between attempts (resume
seeds, backend, hosts, the cap). The key is the sha256 of the spec as canonical JSON.

A dataset's identity by content is one "sha256:<64 hex>" string, whichever way it was taken:
file_digest / dataset_digest for files and directories, rows_digest for rows in memory (a
datasets.Dataset, a list of dicts, any iterable of row mappings). The digest a run recorded
(RecordDataset, RunState.datasets) is such a string, and every helper that takes a dataset takes
it in place of the files: dataset_digest("sha256:...") answers it unchanged (is_digest tells
one), so a spec built from a recorded digest has the run key of one built from the files.

guess_format names a dataset's format from its columns, with TRL's dataset types in mind; it is
what the trainer integrations record as RecordDataset's format when they are handed rows.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import math
import os
import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from enum import Enum
from pathlib import Path
from typing import Any

__all__ = [
    "run_key",
    "canonical_json",
    "file_digest",
    "dataset_digest",
    "rows_digest",
    "row_value",
    "is_digest",
    "guess_format",
    "FORMAT_CHAT",
    "FORMAT_PROMPT_COMPLETION",
    "FORMAT_PREFERENCE",
    "FORMAT_UNPAIRED_PREFERENCE",
    "FORMAT_PROMPT_ONLY",
    "FORMAT_TEXT",
    "FORMAT_UNKNOWN",
]

_CHUNK_BYTES = 1 << 20
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_ROWS_PER_BATCH = 1_000

FORMAT_CHAT = "chat"
FORMAT_PROMPT_COMPLETION = "prompt_completion"
FORMAT_PREFERENCE = "preference"
FORMAT_UNPAIRED_PREFERENCE = "unpaired_preference"
FORMAT_PROMPT_ONLY = "prompt_only"
FORMAT_TEXT = "text"
FORMAT_UNKNOWN = "unknown"


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


def is_digest(value: object) -> bool:
    """True for a content digest as the ledger records it: "sha256:" and 64 lowercase hex digits."""
    return isinstance(value, str) and _DIGEST.fullmatch(value) is not None


def dataset_digest(*paths: str | os.PathLike[str]) -> str:
    """ "sha256:<hex>" of a dataset's content: files, or directories walked recursively. Each file
    counts with its path relative to the argument it was found under and its content digest, in
    sorted order, so the digest does not depend on where the data sits or on listing order.
    A recorded digest ("sha256:<64 hex>", see is_digest) stands for its dataset: alone, it is the
    answer; among paths, it counts as that argument's content. Raises FileNotFoundError for a
    path that does not exist."""
    if len(paths) == 1 and is_digest(paths[0]):
        return str(paths[0])
    entries: list[tuple[str, str]] = []
    for index, root in enumerate(Path(path) for path in paths):
        if is_digest(paths[index]):
            entries.append((f"{index}", str(paths[index])))
        elif root.is_dir():
            files = sorted(item for item in root.rglob("*") if item.is_file())
            entries += [(f"{index}/{item.relative_to(root).as_posix()}", file_digest(item)) for item in files]
        elif root.is_file():
            entries.append((f"{index}/{root.name}", file_digest(root)))
        else:
            raise FileNotFoundError(root)
    digest = hashlib.sha256(canonical_json(entries).encode("utf-8"))
    return "sha256:" + digest.hexdigest()


def row_value(value: Any) -> Any:
    """A row's value as rows_digest reads it: JSON's types only. Enums by value; integral numbers
    as ints (16 and 16.0 are the same value, as a column read through numpy or pandas may hold
    either); non-finite floats as {"$float": "nan" | "inf" | "-inf"}; numpy scalars and arrays
    through .item() / .tolist(); bytes as {"$bytes": base64}; dates and times in ISO 8601;
    mappings with string keys, sets sorted, sequences item by item. Raises TypeError for
    anything else (a digest never depends on repr())."""
    kind = type(value)
    # The plain types first, by exact type: a dataset's rows are mostly these, and an exact check
    # costs less than isinstance against the abstract Mapping.
    if kind is str or value is None or kind is bool:
        return value
    if kind is dict:
        return {str(key): row_value(item) for key, item in value.items()}
    if kind is list:
        return [row_value(item) for item in value]
    if kind is int:
        return value
    if isinstance(value, Enum):
        return row_value(value.value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
        return int(value) if value.is_integer() else float(value)
    if isinstance(value, Mapping):
        return {str(key): row_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [row_value(item) for item in value]
    if isinstance(value, set | frozenset):
        return sorted(row_value(item) for item in value)
    if isinstance(value, bytes | bytearray):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if hasattr(value, "dtype") and hasattr(value, "tolist"):  # numpy (and torch) scalars and arrays
        return row_value(value.tolist())
    raise TypeError(f"a dataset row cannot hold a {type(value).__name__}")


def rows_digest(rows: Iterable[Mapping[str, Any]]) -> str:
    """ "sha256:<hex>" of a dataset's rows in order: each row as the canonical JSON of its
    row_value, then a newline. Streaming (one row in memory at a time) and order-sensitive, so the
    same rows give the same digest from a datasets.Dataset, a list of dicts or a generator, and
    the same rows in another order another one. Column order within a row does not count.
    Raises TypeError for a row that is not a mapping or holds a value row_value cannot read."""
    digest = hashlib.sha256()
    for row in _rows_in_batches(rows):
        if not isinstance(row, Mapping):
            raise TypeError(f"a dataset row must be a mapping, not a {type(row).__name__}")
        digest.update(canonical_json(row_value(row)).encode("utf-8"))
        digest.update(b"\n")
    return "sha256:" + digest.hexdigest()


def _rows_in_batches(rows: Iterable[Mapping[str, Any]]) -> Iterable[Mapping[str, Any]]:
    """A datasets.Dataset's rows read a batch of columns at a time (Arrow converts a batch to
    Python much faster than it does one row at a time); anything else as it iterates."""
    columns = getattr(rows, "column_names", None)
    batches = getattr(rows, "iter", None)
    if not isinstance(columns, list) or not callable(batches) or getattr(rows, "format", {}).get("type") is not None:
        return rows

    def batched() -> Iterator[Mapping[str, Any]]:
        for batch in batches(batch_size=_ROWS_PER_BATCH):
            values = [batch[name] for name in columns]
            for row in zip(*values, strict=True):
                yield dict(zip(columns, row, strict=True))

    return batched()


def guess_format(columns: Collection[str]) -> str:
    """The format of a dataset by its columns, named after TRL's dataset types (the first rule
    that matches wins):

    - "chat": a "messages" column (conversational language modelling, SFT on chats);
    - "preference": "chosen" and "rejected" (with or without "prompt": DPO, ORPO, reward models);
    - "unpaired_preference": "prompt", "completion" and "label" (KTO);
    - "prompt_completion": "prompt" and "completion";
    - "prompt_only": "prompt" alone (GRPO, online methods);
    - "text": a "text" column (plain language modelling / completion);
    - "unknown" otherwise.

    Every answer is an identifier the ledger accepts as RecordDataset's format."""
    names = set(columns)
    if "messages" in names:
        return FORMAT_CHAT
    if {"chosen", "rejected"} <= names:
        return FORMAT_PREFERENCE
    if {"prompt", "completion", "label"} <= names:
        return FORMAT_UNPAIRED_PREFERENCE
    if {"prompt", "completion"} <= names:
        return FORMAT_PROMPT_COMPLETION
    if "prompt" in names:
        return FORMAT_PROMPT_ONLY
    if "text" in names:
        return FORMAT_TEXT
    return FORMAT_UNKNOWN
