"""The states no prune may delete, across every run and the registry (Ledger.protected_states),
read page by page on each backend: each run's live resume and best checkpoints (with their sampler
uris), a checkpoint a version was made from, and every version's artifact; never a checkpoint that
is only old, deleted or superseded."""

from __future__ import annotations

from typing import Any

from ledger import Ledger

WHO = {"principal": "test", "request_id": ""}


def _run(ledger: Ledger, key: str, uris: dict[int, tuple[str, float]]) -> str:
    run_id = ledger.open_run(
        run_key=key, name=key, spec={}, cap_usd_micro=None, objective=("eval_loss", "min"), **WHO
    ).run_id
    ledger.start_attempt(run_id=run_id, attempt_id=f"attempt-{key}", label="", **WHO)
    for step, (uri, score) in sorted(uris.items()):
        ledger.save_checkpoint(
            run_id=run_id,
            attempt=1,
            step=step,
            backend="hf",
            uri=uri,
            sampler_uri=f"{uri}-sampler" if step == max(uris) else "",
            scores={"eval_loss": score},
            **WHO,
        )
    return run_id


def _all(ledger: Ledger, limit: int) -> list[tuple[str, tuple[str, ...]]]:
    found: list[Any] = []
    after = None
    while True:
        page = ledger.protected_states(after=after, limit=limit, min_position=ledger.head())
        found += [(state.uri, state.why) for state in page.states]
        after = page.after
        if after is None:
            return found


def test_every_run_and_every_artifact_page_by_page(ledger: Ledger) -> None:
    first = _run(ledger, "run-a", {1: ("/c/a-1", 0.9), 2: ("/c/a-2", 0.1), 3: ("/c/a-3", 0.5)})
    _run(ledger, "run-b", {1: ("/c/b-1", 0.5), 2: ("/c/b-2", 0.6)})
    _run(ledger, "run-c", {4: ("/c/c-4", 0.5)})
    ledger.register(
        family="fam",
        artifact_uri="/models/fam-1",
        digest="sha256:" + "ab" * 32,
        source_checkpoint={"run_id": first, "step": 1, "attempt": 1, "checkpoint_digest": ""},
        **WHO,
    )
    ledger.register(family="fam", artifact_uri="/models/fam-2", digest="sha256:" + "cd" * 32, **WHO)
    ledger.register(family="other", artifact_uri="/models/other-1", digest="sha256:" + "ef" * 32, **WHO)

    expected = {
        ("/c/a-1", ("registered",)),
        ("/c/a-2", ("best",)),
        ("/c/a-3", ("resume",)),
        ("/c/a-3-sampler", ("resume",)),
        ("/c/b-1", ("best",)),
        ("/c/b-2", ("resume",)),
        ("/c/b-2-sampler", ("resume",)),
        ("/c/c-4", ("resume", "best")),
        ("/c/c-4-sampler", ("resume", "best")),
        ("/models/fam-1", ("artifact",)),
        ("/models/fam-2", ("artifact",)),
        ("/models/other-1", ("artifact",)),
    }
    for limit in (1, 2, 1000):
        found = _all(ledger, limit)
        assert sorted(found) == sorted(expected), limit
