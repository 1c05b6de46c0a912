"""What recording a dataset costs a trainer: the row digest (clients.runkey.rows_digest, read by
the trainer integrations on a background thread) of chat rows, from a list of dicts and from a
datasets.Dataset, in rows per second.

    .venv/bin/python bench/dataset_digest.py [--rows 50000] [--repeats 5]

The rows are the tiny offline conversations (clients.integrations.tiny), repeated. On a commit
from before rows_digest, the same digest was clients.integrations.transformers.spec's
dataset_content_digest, which this falls back to, so the figure compares across commits. Each
repeat digests the list and then the Dataset; the figures are the medians. The last line is one
JSON object: rows, list_rows_per_s, dataset_rows_per_s, digest.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

try:
    from clients.runkey import rows_digest as digest_rows
except ImportError:  # a commit from before rows_digest
    from clients.integrations.transformers.spec import dataset_content_digest as digest_rows

Digest = Callable[[Iterable[Mapping[str, Any]]], str]


def rows(count: int) -> list[dict[str, Any]]:
    try:
        from clients.integrations.tiny import build_rows
    except ImportError:  # a commit from before the package's tiny model
        from tests.trainers.tiny import build_dataset

        def build_rows(n_rows: int, seed: int = 0) -> list[dict[str, Any]]:
            return list(build_dataset(n_rows, seed))

    base = build_rows(1_000, 0)
    return [base[index % len(base)] for index in range(count)]


def timed(digest: Digest, data: Any) -> tuple[float, str]:
    start = time.perf_counter()
    value = digest(data)
    return time.perf_counter() - start, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=5)
    opts = parser.parse_args()
    from datasets import Dataset

    listed = rows(opts.rows)
    dataset = Dataset.from_list(listed)
    timed(digest_rows, listed[:1_000])  # warm-up
    list_s, dataset_s, digests = [], [], set()
    for _ in range(opts.repeats):
        seconds, value = timed(digest_rows, listed)
        list_s.append(seconds)
        digests.add(value)
        seconds, value = timed(digest_rows, dataset)
        dataset_s.append(seconds)
        digests.add(value)
        print(f"list {opts.rows / list_s[-1]:,.0f} rows/s, Dataset {opts.rows / dataset_s[-1]:,.0f} rows/s")
    assert len(digests) == 1, digests
    print(
        json.dumps(
            {
                "rows": opts.rows,
                "list_rows_per_s": round(opts.rows / statistics.median(list_s)),
                "dataset_rows_per_s": round(opts.rows / statistics.median(dataset_s)),
                "digest": digests.pop(),
            }
        )
    )


if __name__ == "__main__":
    main()
