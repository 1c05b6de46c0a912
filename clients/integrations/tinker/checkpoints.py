"""The checkpoints of a ledgered Tinker training client: save_state (weights and optimizer, a
resume point), save_weights_for_sampler (weights only) and save_checkpoint (both under one name,
one checkpoint), each recorded on the ledger when Tinker answers, with the scores of the
evaluations since the last checkpoint and the TTL Tinker keeps it for."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import tinker
from tinker import types

from clients.integrations.provenance import finite_scores
from clients.integrations.tinker.common import BACKEND, FIDELITY_STATE, FIDELITY_WEIGHTS, CheckpointConflict
from clients.integrations.tinker.futures import LedgeredFuture, OpenHold
from clients.recorder import RunRecorder

__all__ = ["TrainingCheckpoints"]

log = logging.getLogger("trainledger.clients.tinker")


class TrainingCheckpoints:
    """The checkpoint methods of LedgeredTrainingClient (which supplies the clients, the step
    counts, what this attempt recorded, and how calls are submitted in order)."""

    if TYPE_CHECKING:
        training_client: tinker.TrainingClient
        recorder: RunRecorder
        resumed_from_step: int | None
        _step: int
        _submitted_steps: int
        _checkpoints: dict[int, str]
        _scores: dict[str, float]
        _submit_lock: threading.Lock

        def add(self, future: LedgeredFuture[Any]) -> LedgeredFuture[Any]: ...

        def _metadata(self, extra: Mapping[str, str] | None) -> dict[str, str]: ...

        def _submit(
            self,
            kind: str,
            hold: OpenHold | None,
            settle: Callable[[Any], Any],
            call: Callable[[], Any],
            fail: Callable[[BaseException], None] | None = None,
        ) -> LedgeredFuture[Any]: ...

    def save_state(
        self,
        name: str,
        ttl_seconds: int | None = None,
        *,
        overwrite: bool = False,
        final: bool = False,
        user_metadata: dict[str, str] | None = None,
        scores: Mapping[str, float] | None = None,
    ) -> LedgeredFuture[types.SaveWeightsResponse]:
        """Save weights and optimizer state; its result records a weights+optimizer checkpoint
        (uri tinker://.../weights/<name>) at the current step, expiring after `ttl_seconds`, with
        the scores of the evaluations since the last checkpoint (evaluate()) and `scores` over them."""
        self._check_no_sampler_checkpoint()
        saved_at, metadata = datetime.now(UTC), self._metadata(user_metadata)

        def settle(response: types.SaveWeightsResponse) -> types.SaveWeightsResponse:
            self._record_checkpoint(
                response.path, FIDELITY_STATE, "", saved_at, ttl_seconds, final, "state", self._take_scores(scores)
            )
            return response

        return self._submit(
            "save_state",
            None,
            settle,
            lambda: self.training_client.save_state(
                name, ttl_seconds=ttl_seconds, overwrite=overwrite, user_metadata=metadata
            ),
        )

    def save_weights_for_sampler(
        self,
        name: str,
        ttl_seconds: int | None = None,
        *,
        record: bool = True,
        user_metadata: dict[str, str] | None = None,
    ) -> LedgeredFuture[types.SaveWeightsForSamplerResponse]:
        """Save sampler weights; its result records a weights-only checkpoint (uri and sampler_uri
        the sampler path) unless `record` is False or this step already has a checkpoint. It is
        no resume point: prefer save_checkpoint() for one checkpoint with both paths."""
        saved_at, metadata = datetime.now(UTC), self._metadata(user_metadata)

        def settle(response: types.SaveWeightsForSamplerResponse) -> types.SaveWeightsForSamplerResponse:
            if record and self._step not in self._checkpoints:
                self._record_checkpoint(
                    response.path, FIDELITY_WEIGHTS, response.path, saved_at, ttl_seconds, False, "sampler"
                )
            return response

        return self._submit(
            "save_weights_for_sampler",
            None,
            settle,
            lambda: self.training_client.save_weights_for_sampler(
                name, ttl_seconds=ttl_seconds, user_metadata=metadata
            ),
        )

    def save_checkpoint(
        self,
        name: str,
        ttl_seconds: int | None = None,
        *,
        final: bool = False,
        user_metadata: dict[str, str] | None = None,
        scores: Mapping[str, float] | None = None,
    ) -> LedgeredFuture[dict[str, str]]:
        """save_state and save_weights_for_sampler under one name, recorded as one checkpoint:
        {"path": tinker://.../weights/<name>, "sampler_path": tinker://.../sampler_weights/<name>},
        with scores as save_state's."""
        self._check_no_sampler_checkpoint()
        saved_at, metadata = datetime.now(UTC), self._metadata(user_metadata)
        futures: list[Any] = []

        def wait(timeout: float | None) -> dict[str, str]:
            return {"path": futures[0].result(timeout).path, "sampler_path": futures[1].result(timeout).path}

        def settle(paths: dict[str, str]) -> dict[str, str]:
            self._record_checkpoint(
                paths["path"],
                FIDELITY_STATE,
                paths["sampler_path"],
                saved_at,
                ttl_seconds,
                final,
                "state",
                self._take_scores(scores),
            )
            return paths

        with self._submit_lock:
            futures.append(self.training_client.save_state(name, ttl_seconds=ttl_seconds, user_metadata=metadata))
            futures.append(
                self.training_client.save_weights_for_sampler(name, ttl_seconds=ttl_seconds, user_metadata=metadata)
            )
            return self.add(LedgeredFuture("save_checkpoint", wait, settle, lambda error: None, self))

    # Internals.
    def _check_no_sampler_checkpoint(self) -> None:
        # The ledger keeps one checkpoint per step and attempt: a sampler-only one would hide this.
        if self._checkpoints.get(self._submitted_steps) == "sampler":
            raise CheckpointConflict(
                f"step {self._submitted_steps} already has a sampler-only checkpoint; "
                "save_checkpoint() records weights, optimizer and sampler paths in one"
            )

    def _record_checkpoint(
        self,
        uri: str,
        fidelity: str,
        sampler_uri: str,
        saved_at: datetime,
        ttl_seconds: int | None,
        final: bool,
        kind: str,
        scores: Mapping[str, float] | None = None,
    ) -> None:
        step = self._step
        if self.resumed_from_step is not None and step <= self.resumed_from_step:
            log.info("not recording %s at step %d: this attempt resumed from it", uri, step)
            return
        expires_at = saved_at + timedelta(seconds=ttl_seconds) if ttl_seconds else None
        self.recorder.checkpoint(
            step,
            uri,
            BACKEND,
            fidelity,
            sampler_uri=sampler_uri,
            final=final,
            expires_at=expires_at,
            scores=scores or None,
        )
        self._checkpoints[step] = kind

    def _take_scores(self, given: Mapping[str, float] | None) -> dict[str, float]:
        """The scores of the checkpoint being recorded: the evaluations' since the last one, with
        `given` over them (finite values only); the evaluations' are used up."""
        scores, self._scores = self._scores, {}
        scores.update(finite_scores(given, what=f"the checkpoint at step {self._step}"))
        return scores
