"""Checkpoint retention over random histories: a hypothesis state machine saves scored checkpoints
(some with a TTL), resumes from them or restarts, registers versions from them and promotes those,
lets time pass so handles expire, and deletes what the retention plan offers. A small model of its
own (written here, not read from ledger.domain.retention) says which checkpoints are protected:
the live resume point (the most progressed checkpoint neither superseded, deleted nor expired),
the best of those on the run's objective (ties to the later step, then attempt) and every
checkpoint a registry version was made from.

After every step the plan (read page by page) must list each checkpoint once and never offer a
protected one for deletion; everything it offers must be deletable (DeleteCheckpoint accepts it),
a protected checkpoint is refused (CHECKPOINT_PROTECTED, nothing recorded), and a deleted
checkpoint is never the resume point nor accepted as one (CHECKPOINT_DELETED).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ledger import Ledger, Refused
from ledger.views.models import PruneEntry
from tests.ledger.conftest import FakeClock

METRIC = "eval_loss"
# A few values, so that ties happen; None: saved unscored; "other": scored on another metric only.
SCORES = st.sampled_from([None, "other", 0.1, 0.2, 0.2, 0.3, 0.5])
TTLS = st.sampled_from([None, None, timedelta(minutes=30), timedelta(hours=2)])


@dataclass
class Saved:
    attempt: int
    step: int
    score: float | None
    expires_at: datetime | None
    superseded: bool = False
    deleted: bool = False

    @property
    def point(self) -> tuple[int, int]:
        return (self.attempt, self.step)

    @property
    def digest(self) -> str:
        return f"sha256:{self.attempt:032x}{self.step:032x}"

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def usable(self, now: datetime) -> bool:
        return not self.superseded and not self.deleted and not self.expired(now)


class RetentionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="ledger-retention-"))
        self.clock = FakeClock()
        self.ledger = Ledger.open(str(self.directory / "ledger.db"), clock=self.clock)
        self.run_id = ""
        self.attempt = 0
        self.floor = 0  # the step the current attempt saves after
        self.saved: list[Saved] = []
        self.registered: set[tuple[int, int]] = set()
        self.versions = 0
        self.current = 0  # the family's current version

    def teardown(self) -> None:
        try:
            self.ledger.close()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    # The model.

    @property
    def now(self) -> datetime:
        return self.clock.now

    def usable(self) -> list[Saved]:
        return [saved for saved in self.saved if saved.usable(self.now)]

    def protected(self) -> dict[tuple[int, int], set[str]]:
        kept: dict[tuple[int, int], set[str]] = {}
        live = self.usable()
        if live:
            resume = max(live, key=lambda saved: (saved.step, saved.attempt))
            kept.setdefault(resume.point, set()).add("resume")
        scored = [saved for saved in live if saved.score is not None]
        if scored:
            best = min(scored, key=lambda saved: (saved.score, -saved.step, -saved.attempt))
            kept.setdefault(best.point, set()).add("best")
        for point in self.registered:
            kept.setdefault(point, set()).add("registered")
        return kept

    def plan(self, keep_last: int, limit: int) -> list[PruneEntry]:
        entries: list[PruneEntry] = []
        after = None
        head = self.ledger.head()
        while True:
            page = self.ledger.plan_prune(self.run_id, keep_last=keep_last, after=after, limit=limit, min_position=head)
            entries.extend(page.entries)
            if page.after is None:
                return entries
            assert page.after == (page.entries[-1].checkpoint.step, page.entries[-1].checkpoint.attempt)
            after = page.after

    # The history.

    @initialize()
    def open_run(self) -> None:
        receipt = self.ledger.open_run(run_key="run", objective=(METRIC, "min"), max_steps=10_000)
        self.run_id = receipt.run_id
        self.ledger.start_attempt(run_id=self.run_id)
        self.attempt = 1

    @rule(gap=st.integers(min_value=1, max_value=3), score=SCORES, ttl=TTLS)
    def save(self, gap: int, score: Any, ttl: timedelta | None) -> None:
        steps = [saved.step for saved in self.saved if saved.attempt == self.attempt]
        step = max([self.floor, *steps]) + gap
        scores = None if score is None else {"accuracy": 0.9} if score == "other" else {METRIC: score, "acc": 0.5}
        expires_at = None if ttl is None else self.now + ttl
        saved = Saved(self.attempt, step, score if isinstance(score, float) else None, expires_at)
        self.ledger.save_checkpoint(
            run_id=self.run_id,
            attempt=self.attempt,
            step=step,
            backend="local",
            uri=f"file:///c/{self.attempt}/{step}",
            expires_at=expires_at,
            digest=saved.digest,
            scores=scores,
        )
        self.saved.append(saved)

    @precondition(lambda self: bool(self.usable()))
    @rule(data=st.data())
    def resume(self, data: st.DataObject) -> None:
        point = data.draw(st.sampled_from(self.usable()))
        self.ledger.start_attempt(run_id=self.run_id, resume_from_step=point.step)
        self.attempt += 1
        self.floor = point.step
        for saved in self.saved:
            if saved.step > point.step:
                saved.superseded = True

    @rule()
    def restart(self) -> None:
        """A new attempt from scratch: every earlier checkpoint is superseded."""
        self.ledger.start_attempt(run_id=self.run_id)
        self.attempt += 1
        self.floor = 0
        for saved in self.saved:
            saved.superseded = True

    @precondition(lambda self: any(not saved.deleted for saved in self.saved))
    @rule(data=st.data(), promote=st.booleans())
    def register(self, data: st.DataObject, promote: bool) -> None:
        """A version made from a checkpoint (superseded or expired ones too), promoted or not."""
        point = data.draw(st.sampled_from([saved for saved in self.saved if not saved.deleted]))
        self.versions += 1
        self.ledger.register(
            family="model",
            artifact_uri=f"s3://m/{self.versions}",
            digest=f"{self.versions:064x}",
            source_checkpoint={
                "run_id": self.run_id,
                "step": point.step,
                "attempt": point.attempt,
                "checkpoint_digest": point.digest,
            },
        )
        self.registered.add(point.point)
        if promote:
            self.ledger.promote(
                family="model",
                version=self.versions,
                expected_current=self.current,
                verdict={"passed": True, "reason": "checked"},
            )
            self.current = self.versions

    @rule(minutes=st.integers(min_value=1, max_value=150))
    def time_passes(self, minutes: int) -> None:
        self.clock.advance(minutes=minutes)

    @rule(keep_last=st.integers(min_value=0, max_value=2), limit=st.integers(min_value=1, max_value=4), data=st.data())
    def prune(self, keep_last: int, limit: int, data: st.DataObject) -> None:
        """Read the plan, check it against the model, and delete some of what it offers."""
        entries = self.plan(keep_last, limit)
        kept = self.protected()
        by_point = {saved.point: saved for saved in self.saved}
        listed = [(entry.checkpoint.attempt, entry.checkpoint.step) for entry in entries]
        assert sorted(listed) == sorted(by_point), "each checkpoint is listed once"
        assert listed == sorted(listed, key=lambda point: (point[1], point[0])), "in (step, attempt) order"
        live = sorted(self.usable(), key=lambda saved: (saved.step, saved.attempt))
        recent = {saved.point for saved in live[len(live) - keep_last :]} if keep_last else set()
        for entry in entries:
            point = (entry.checkpoint.attempt, entry.checkpoint.step)
            saved = by_point[point]
            if point in kept:
                assert not entry.delete, f"protected {point} ({kept[point]}) offered for deletion"
            if saved.deleted:
                assert (entry.delete, entry.kept_because) == (False, ("deleted",))
                assert entry.checkpoint.deleted_at is not None
                continue
            assert entry.checkpoint.deleted_at is None
            assert entry.checkpoint.expired == saved.expired(self.now)
            reasons = kept.get(point, set()) | ({"recent"} if point in recent else set())
            if reasons:
                assert set(entry.kept_because) == reasons, (point, entry.kept_because, reasons)
            elif saved.expired(self.now):
                assert entry.kept_because == ("expired",)
            else:
                assert (entry.delete, entry.kept_because) == (True, ()), (point, entry.kept_because)
        offered = [entry for entry in entries if entry.delete]
        event(f"prune: {len(entries)} listed" if len(entries) < 5 else "prune: 5 or more listed")
        event(f"prune: {'some' if offered else 'none'} offered")
        event(f"prune: kept because {sorted({why for entry in entries for why in entry.kept_because})}")
        if offered:
            chosen = data.draw(st.lists(st.sampled_from(offered), unique_by=lambda entry: id(entry), max_size=3))
            for entry in chosen:
                self.ledger.delete_checkpoint(
                    run_id=self.run_id,
                    attempt=entry.checkpoint.attempt,
                    step=entry.checkpoint.step,
                    reason="retention",
                )
                by_point[(entry.checkpoint.attempt, entry.checkpoint.step)].deleted = True

    @precondition(lambda self: bool(self.protected()))
    @rule(data=st.data())
    def deleting_a_protected_checkpoint_is_refused(self, data: st.DataObject) -> None:
        kept = self.protected()
        point = data.draw(st.sampled_from(sorted(kept)))
        head = self.ledger.head()
        try:
            self.ledger.delete_checkpoint(run_id=self.run_id, attempt=point[0], step=point[1], reason="retention")
        except Refused as error:
            assert error.reason == "CHECKPOINT_PROTECTED", error
            assert set(error.metadata["protected_by"].split(",")) == kept[point]
        else:
            raise AssertionError(f"the protected checkpoint {point} ({kept[point]}) was deleted")
        assert self.ledger.head() == head

    @precondition(lambda self: any(saved.deleted and not saved.superseded for saved in self.saved))
    @rule(data=st.data())
    def a_deleted_checkpoint_is_no_resume_point(self, data: st.DataObject) -> None:
        point = data.draw(st.sampled_from([saved for saved in self.saved if saved.deleted and not saved.superseded]))
        head = self.ledger.head()
        try:
            self.ledger.start_attempt(run_id=self.run_id, resume_from_step=point.step)
        except Refused as error:
            assert error.reason == "CHECKPOINT_DELETED", error
        else:
            raise AssertionError(f"a new attempt resumed from the deleted checkpoint at step {point.step}")
        assert self.ledger.head() == head

    @invariant()
    def the_resume_point_is_the_models(self) -> None:
        if not self.run_id:
            return
        state = self.ledger.run_state(self.run_id, min_position=self.ledger.head())
        live = self.usable()
        if not live:
            assert state.checkpoint is None and not state.resume.available
            return
        resume = max(live, key=lambda saved: (saved.step, saved.attempt))
        assert state.checkpoint is not None
        assert (state.checkpoint.attempt, state.checkpoint.step) == resume.point
        assert state.checkpoint.deleted_at is None
        assert state.resume.available and state.resume.from_step == resume.step


RetentionMachine.TestCase.settings = settings(
    max_examples=80,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestRetentionMachine = RetentionMachine.TestCase
