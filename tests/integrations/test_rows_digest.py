"""Dataset identity by content: rows_digest over rows in memory (a datasets.Dataset or a list of
dicts give the same digest for the same rows), guess_format from a dataset's columns, and the run
key helpers taking a recorded digest in place of files. The expected digests are sha256 of the
canonical lines written out here (computed with sha256sum on those bytes)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clients.runkey import dataset_digest, guess_format, is_digest, rows_digest, run_key

ROWS: list[dict[str, Any]] = [
    {"n": 16, "messages": [{"role": "user", "content": "hi"}]},
    {"messages": [], "n": 2.5},
]
# printf '{"messages":[{"content":"hi","role":"user"}],"n":16}\n{"messages":[],"n":2.5}\n' | sha256sum
ROWS_DIGEST = "sha256:be4f2c0098723807ed7c04816822f61417fc3677c7106f01de2bc19225c9f849"
# The same two lines the other way round.
REVERSED_DIGEST = "sha256:9cfe531a5d60bce1ff704aa315652b633fab6c5c2479c4d6615bab0563d04ecf"
EMPTY_DIGEST = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_the_digest_of_rows_is_the_sha256_of_their_canonical_lines() -> None:
    assert rows_digest(ROWS) == ROWS_DIGEST
    assert rows_digest(list(reversed(ROWS))) == REVERSED_DIGEST
    assert rows_digest([]) == EMPTY_DIGEST


def test_the_digest_streams_and_reads_values_as_json_does() -> None:
    def generated() -> Iterator[dict[str, Any]]:
        yield {"messages": [{"content": "hi", "role": "user"}], "n": 16.0}  # 16.0 is 16
        yield {"n": 2.5, "messages": ()}  # a tuple is a list; column order does not count

    assert rows_digest(generated()) == ROWS_DIGEST
    # printf '{"x":{"$float":"nan"}}\n' | sha256sum
    assert rows_digest([{"x": float("nan")}]) == (
        "sha256:1740a3724849d8cbc759f2f5fc2653df7ffd17e79fa07269060ef1907e941418"
    )
    # printf '{"a":null,"b":"\xc3\xa9t\xc3\xa9"}\n' | sha256sum: UTF-8, not \u escapes
    assert rows_digest([{"b": "été", "a": None}]) == (
        "sha256:4dfc79b59c6fbcfb77adbf20c9ee2873f5f7ab716ddfcceaedf1c461d5d0ffb4"
    )
    with pytest.raises(TypeError):
        rows_digest([["not", "a", "mapping"]])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        rows_digest([{"x": object()}])


def test_a_datasets_dataset_and_a_list_of_its_rows_have_one_digest() -> None:
    datasets = pytest.importorskip("datasets")
    numpy = pytest.importorskip("numpy")
    dataset = datasets.Dataset.from_list(ROWS)
    assert rows_digest(dataset) == ROWS_DIGEST
    assert rows_digest(dataset.with_format("numpy").select_columns(["n"])) == rows_digest([{"n": 16}, {"n": 2.5}])
    assert rows_digest([{"n": numpy.int64(16)}]) == rows_digest([{"n": 16}])


@pytest.mark.parametrize(
    ("columns", "expected"),
    [
        (["messages"], "chat"),
        (["messages", "tools"], "chat"),
        (["prompt", "completion"], "prompt_completion"),
        (["prompt", "chosen", "rejected"], "preference"),
        (["chosen", "rejected"], "preference"),
        (["prompt", "completion", "label"], "unpaired_preference"),
        (["prompt"], "prompt_only"),
        (["text"], "text"),
        (["input_ids", "attention_mask"], "unknown"),
        ([], "unknown"),
    ],
)
def test_the_format_is_guessed_from_the_columns(columns: list[str], expected: str) -> None:
    assert guess_format(columns) == expected


def test_a_recorded_digest_stands_for_its_files(tmp_path: Path) -> None:
    (tmp_path / "train.jsonl").write_text('{"text": "hello"}\n')
    from_files = dataset_digest(tmp_path / "train.jsonl")
    assert is_digest(from_files) and is_digest(ROWS_DIGEST)
    assert not is_digest("sha256:XYZ") and not is_digest(str(tmp_path))
    assert dataset_digest(from_files) == from_files  # the digest a run recorded, as it was recorded
    assert dataset_digest(ROWS_DIGEST) == ROWS_DIGEST
    assert dataset_digest(ROWS_DIGEST, tmp_path / "train.jsonl") != dataset_digest(tmp_path / "train.jsonl")
    spec = {"name": "sft", "dataset": dataset_digest(tmp_path / "train.jsonl")}
    assert run_key(spec) == run_key({"name": "sft", "dataset": from_files})


def test_a_spec_of_rows_and_one_of_their_recorded_digest_have_one_run_key() -> None:
    pytest.importorskip("transformers")
    from clients.integrations.transformers import spec_for, training_run_key

    of_rows = spec_for(name="sft", base_model="m", dataset=ROWS)
    of_digest = spec_for(name="sft", base_model="m", dataset=ROWS_DIGEST)
    assert of_rows["dataset"] == ROWS_DIGEST
    assert training_run_key(of_rows) == training_run_key(of_digest)
