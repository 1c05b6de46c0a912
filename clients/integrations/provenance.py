"""What the trainer integrations record besides steps and checkpoints: the datasets a run trains
and evaluates on (RecordDataset) and the evaluation scores of each checkpoint (SaveCheckpoint's
scores), shared by the Transformers, mlx-lm and Tinker integrations so that each records them the
same way.

A dataset is recorded by its content: describe_dataset reads its rows once, in order, and answers
the row digest (clients.runkey.rows_digest: the same digest for a datasets.Dataset and a list of
the same dicts), the row count, the format guessed from the columns (clients.runkey.guess_format),
the tokens when the rows carry them ("input_ids": counted in the same pass; else absent, never
estimated) and a small report (columns, rows). Datasets that wrap their rows (mlx-lm's
ChatDataset and CacheDataset keep them in `_data`) are read through to the rows they were made
from, so the digest is that of the rows the user handed over, not of a tokenized cache.

Provenance never stops training: record_dataset logs a failure (the ledger away or refusing,
rows that cannot be read) and answers None. A duplicate (the same role and digest again, as a
resumed attempt records them) is the ledger's idempotent answer, not an error.

Scores are what an evaluation measured, name -> finite float: finite_scores keeps the finite
numbers of a metrics dict and drops the rest with a log line (NaN, infinities, strings), and
drops what describes the evaluation rather than the model (runtime, throughput, epoch).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from clients.runkey import guess_format, rows_digest

__all__ = ["DatasetRecord", "describe_dataset", "record_dataset", "finite_scores", "rows_of", "ROLES"]

log = logging.getLogger("trainledger.clients.provenance")

ROLES = ("train", "eval")
TOKENS_COLUMN = "input_ids"
_REPORT_COLUMNS_MAX = 64  # the report stays small whatever the width of the rows
_NOT_SCORES = frozenset({"epoch", "step", "total_flos"})
_NOT_SCORE_SUFFIXES = ("_runtime", "_per_second", "_flos", "_time", "_seconds")


@dataclass(frozen=True)
class DatasetRecord:
    """A dataset as RecordDataset takes it (see LedgerClient.record_dataset)."""

    role: str
    digest: str
    format: str
    rows: int
    tokens: int | None = None
    source_uri: str = ""
    report: dict[str, Any] = field(default_factory=dict)

    def arguments(self) -> dict[str, Any]:
        """The keyword arguments of RunRecorder.record_dataset / LedgerClient.record_dataset."""
        return {
            "role": self.role,
            "digest": self.digest,
            "format": self.format,
            "rows": self.rows,
            "tokens": self.tokens,
            "source_uri": self.source_uri,
            "report": self.report,
        }


def rows_of(dataset: Any) -> Any:
    """The rows a dataset was made from: mlx-lm's dataset wrappers (ChatDataset, CacheDataset,
    TextDataset ...) keep them in `_data`; anything else is its own rows."""
    seen = 0
    while hasattr(dataset, "_data") and not hasattr(dataset, "column_names") and seen < 8:
        dataset, seen = dataset._data, seen + 1
    return dataset


def describe_dataset(
    dataset: Iterable[Mapping[str, Any]],
    *,
    role: str,
    source_uri: str = "",
    format: str | None = None,
    report: Mapping[str, Any] | None = None,
) -> DatasetRecord:
    """Read `dataset`'s rows once (see the module docstring): its digest, rows, format (`format`
    when given, else guessed from the columns), tokens (the lengths of "input_ids" when the rows
    have it) and a report {"columns", "rows"} with `report` over it. Raises ValueError for a role
    other than "train" or "eval", TypeError for rows rows_digest cannot read."""
    if role not in ROLES:
        raise ValueError(f"a dataset's role is one of {ROLES}, not {role!r}")
    rows = rows_of(dataset)
    declared = getattr(rows, "column_names", None)
    columns: list[str] = [str(name) for name in declared] if isinstance(declared, list | tuple) else []
    counted = {"rows": 0, "tokens": 0, "token_rows": 0}

    def reading() -> Iterator[Mapping[str, Any]]:
        for row in rows:
            if not counted["rows"] and not columns and isinstance(row, Mapping):
                columns.extend(str(name) for name in row)
            counted["rows"] += 1
            ids = row.get(TOKENS_COLUMN) if isinstance(row, Mapping) else None
            if ids is not None and hasattr(ids, "__len__"):
                counted["tokens"] += len(ids)
                counted["token_rows"] += 1
            yield row

    digest = rows_digest(reading())
    total = counted["rows"]
    # Tokens only when every row carried them: a partial count would be a wrong number.
    tokens = counted["tokens"] if total and counted["token_rows"] == total else None
    document: dict[str, Any] = {"columns": sorted(columns)[:_REPORT_COLUMNS_MAX], "rows": total}
    document.update(dict(report or {}))
    return DatasetRecord(
        role=role,
        digest=digest,
        format=format or guess_format(columns),
        rows=total,
        tokens=tokens,
        source_uri=source_uri,
        report=document,
    )


def record_dataset(
    recorder: Any,
    dataset: Iterable[Mapping[str, Any]] | DatasetRecord,
    *,
    role: str = "train",
    source_uri: str = "",
    format: str | None = None,
) -> DatasetRecord | None:
    """Describe `dataset` (unless it is a DatasetRecord already) and record it on `recorder`
    (a RunRecorder: its record_dataset). Never raises: a failure is logged and answered None."""
    try:
        described = (
            dataset
            if isinstance(dataset, DatasetRecord)
            else describe_dataset(dataset, role=role, source_uri=source_uri, format=format)
        )
    except Exception as error:  # noqa: BLE001 - provenance never stops training.
        log.warning("could not read the %s dataset to record it: %s", role, error)
        return None
    try:
        recorder.record_dataset(**described.arguments())
    except Exception as error:  # noqa: BLE001 - provenance never stops training.
        log.warning("could not record the %s dataset %s: %s", described.role, described.digest, error)
        return None
    return described


def finite_scores(metrics: Mapping[str, Any] | None, *, what: str = "a checkpoint") -> dict[str, float]:
    """The scores in an evaluation's `metrics`: the finite numbers, by name, leaving out what
    describes the evaluation rather than the model (runtime, throughput, epoch). A non-finite or
    non-numeric value is dropped with a log line."""
    scores: dict[str, float] = {}
    for name, value in (metrics or {}).items():
        if name in _NOT_SCORES or name.endswith(_NOT_SCORE_SUFFIXES):
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            log.info("score %s of %s is not a number (%r): not recorded", name, what, value)
            continue
        if not math.isfinite(value):
            log.warning("score %s of %s is %r: not recorded", name, what, value)
            continue
        scores[name] = float(value)
    return scores
