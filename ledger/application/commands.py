"""The arguments of each command, validated once: frozen msgspec Structs whose construction runs
the validators of ledger.domain.limits (and ledger.domain.basis), in the order the fields are
listed, so a refused argument is refused with the same reason and message whichever way it came.

A command method builds its Struct first (nothing is loaded or recorded when that refuses), then
decides on the aggregates. Names that must be looked up (a run id, an account, a family) are
checked when they are loaded, where an unknown one is NOT_FOUND. A step batch's arguments are
ledger.domain.batches.StepBatch, built the same way by StepBatch.build.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec
from msgspec.structs import force_setattr

from ledger.domain.errors import Invalid
from ledger.domain.leases import LEASE_S_DEFAULT, check_lease_s
from ledger.domain.limits import (
    DOCUMENT_BYTES_MAX,
    ERROR_LENGTH_MAX,
    STEP_MAX,
    check_document,
    check_document_bytes,
    check_id,
    check_int,
    check_name,
    check_reference,
    check_text,
    check_usd_micro,
)
from ledger.domain.reasons import Reason
from ledger.domain.runs import DATASET_ROLES, FIDELITIES, FINISH_STATUSES, OBJECTIVE_MODES

__all__ = [
    "INT32_MAX",
    "Command",
    "DeleteCheckpoint",
    "Document",
    "FinishRun",
    "Heartbeat",
    "NoteSummary",
    "OpenRun",
    "RecordDataset",
    "RetractRun",
    "SaveCheckpoint",
    "StartAttempt",
    "check_cap",
    "check_objective",
    "check_source_checkpoint",
    "check_scores",
    "is_uuid",
    "sha256_digest",
]

INT32_MAX = 2**31 - 1
Document = dict[str, Any]
#: How many scores one checkpoint may carry.
SCORES_MAX = 64
#: The longest dataset format name.
FORMAT_LENGTH_MAX = 64
#: The longest uri of a run's source checkpoint.
SOURCE_URI_LENGTH_MAX = 2_048


class Command(msgspec.Struct, frozen=True, kw_only=True):
    """A command's arguments; `__post_init__` of each subclass validates and normalises them."""

    def _normal(self, field: str, value: Any) -> None:
        """Keep the normal form of a field (a document copied by its validator, a default filled in)."""
        force_setattr(self, field, value)


def check_cap(cap_usd_micro: int | None) -> None:
    if cap_usd_micro is not None:
        check_usd_micro(cap_usd_micro, "cap_usd_micro")


# Runs.


class OpenRun(Command, frozen=True, kw_only=True):
    run_key: str
    name: str = ""
    spec: Document = msgspec.field(default_factory=dict)
    cap_usd_micro: int | None = None
    parent_account: str = ""
    max_steps: int | None = None
    # (metric, mode) as given; normalised to {"metric", "mode"} or None.
    objective: Any = None
    # {"run_id", "step", "uri"} of another run's checkpoint this run starts from, or None.
    source_checkpoint: Any = None

    def __post_init__(self) -> None:
        check_reference(self.run_key, "run_key")
        check_text(self.name, "name", limit=256)
        self._normal("spec", check_document(self.spec, "spec"))
        check_cap(self.cap_usd_micro)
        check_reference(self.parent_account, "parent_account", required=False)
        _max_steps(self.max_steps)
        self._normal("objective", check_objective(self.objective))
        self._normal("source_checkpoint", check_source_checkpoint(self.source_checkpoint))


class StartAttempt(Command, frozen=True, kw_only=True):
    run_id: str
    attempt_id: str = ""
    label: str = ""
    resume_from_step: int | None = None
    max_steps: int | None = None
    # The attempt's lease (ledger.domain.leases); None takes LEASE_S_DEFAULT.
    lease_s: int | None = None

    def __post_init__(self) -> None:
        check_id(self.attempt_id, "attempt_id", required=False)
        check_text(self.label, "label", limit=256)
        if self.resume_from_step is not None:
            check_int(self.resume_from_step, "resume_from_step")
        _max_steps(self.max_steps)
        if self.lease_s is None:
            self._normal("lease_s", LEASE_S_DEFAULT)
        else:
            check_lease_s(self.lease_s)


class Heartbeat(Command, frozen=True, kw_only=True):
    run_id: str
    attempt: int

    def __post_init__(self) -> None:
        check_reference(self.run_id, "run_id")
        check_int(self.attempt, "attempt")


class SaveCheckpoint(Command, frozen=True, kw_only=True):
    run_id: str
    attempt: int
    step: int
    backend: str
    uri: str
    fidelity: str = "weights+optimizer"
    sampler_uri: str = ""
    final: bool = False
    expires_at: datetime | None = None
    digest: str = ""
    scores: dict[str, float] | None = None

    def __post_init__(self) -> None:
        check_int(self.attempt, "attempt", minimum=1, maximum=INT32_MAX)
        check_int(self.step, "step", maximum=STEP_MAX)
        check_id(self.backend, "backend")
        check_text(self.uri, "uri")
        if not self.uri:
            raise Invalid("uri is required", reason=Reason.MISSING_FIELD, field="uri")
        if self.fidelity not in FIDELITIES:
            raise Invalid(f"fidelity must be one of {FIDELITIES}", reason=Reason.INVALID_FIELD, field="fidelity")
        check_text(self.sampler_uri, "sampler_uri")
        check_text(self.digest, "digest", limit=256)
        if self.expires_at is not None and (
            not isinstance(self.expires_at, datetime) or self.expires_at.tzinfo is None
        ):
            raise Invalid("expires_at must be a timezone-aware time", reason=Reason.INVALID_FIELD)
        self._normal("final", bool(self.final))
        self._normal("scores", check_scores(self.scores))

    def checkpoint(self) -> Document:
        """The checkpoint as the run records it; the scores are part of its identity (a save again
        with other scores is another payload), and an unscored save records None, as saves did
        before scores existed."""
        return {
            "step": self.step,
            "backend": self.backend,
            "uri": self.uri,
            "fidelity": self.fidelity,
            "sampler_uri": self.sampler_uri,
            "final": self.final,
            "expires_at": self.expires_at,
            "digest": self.digest,
            "scores": self.scores or None,
        }


class FinishRun(Command, frozen=True, kw_only=True):
    run_id: str
    attempt: int
    status: str
    summary: Document = msgspec.field(default_factory=dict)
    error: str = ""

    def __post_init__(self) -> None:
        if self.status not in FINISH_STATUSES:
            raise Invalid(f"status must be one of {FINISH_STATUSES}", reason=Reason.INVALID_STATUS)
        check_int(self.attempt, "attempt", minimum=1, maximum=INT32_MAX)
        self._normal("summary", check_document(self.summary, "summary"))
        if not isinstance(self.error, str):
            raise Invalid("error must be a string", reason=Reason.INVALID_FIELD, field="error")
        # Diagnostic text is kept, not refused: a NUL (which PostgreSQL text cannot hold) is replaced.
        self._normal("error", self.error[:ERROR_LENGTH_MAX].replace("\x00", "\ufffd"))


class NoteSummary(Command, frozen=True, kw_only=True):
    run_id: str
    summary: Document

    def __post_init__(self) -> None:
        self._normal("summary", check_document(self.summary, "summary"))


class RetractRun(Command, frozen=True, kw_only=True):
    run_id: str
    reason: str

    def __post_init__(self) -> None:
        check_reference(self.run_id, "run_id")
        check_text(self.reason, "reason")
        if not self.reason.strip():
            raise Invalid("a retraction needs a reason", reason=Reason.MISSING_FIELD, field="reason")


class RecordDataset(Command, frozen=True, kw_only=True):
    run_id: str
    role: str
    digest: str
    format: str
    rows: int
    tokens: int | None = None
    source_uri: str = ""
    report: Document = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        check_reference(self.run_id, "run_id")
        if self.role not in DATASET_ROLES:
            raise Invalid(f"role must be one of {DATASET_ROLES}", reason=Reason.INVALID_FIELD, field="role")
        self._normal("digest", sha256_digest(self.digest))
        check_id(self.format, "format")
        if len(self.format) > FORMAT_LENGTH_MAX:
            raise Invalid(
                f"format is longer than {FORMAT_LENGTH_MAX} characters",
                reason=Reason.STRING_TOO_LONG,
                field="format",
                limit=FORMAT_LENGTH_MAX,
            )
        check_int(self.rows, "rows")
        if self.tokens is not None:
            check_int(self.tokens, "tokens")
        check_reference(self.source_uri, "source_uri", required=False)
        report = check_document(self.report, "report")
        check_document_bytes(report, "report", DOCUMENT_BYTES_MAX, Reason.DOCUMENT_TOO_LARGE)
        self._normal("report", report)

    def dataset(self) -> Document:
        """The dataset as the run records it."""
        return {
            "role": self.role,
            "digest": self.digest,
            "format": self.format,
            "rows": self.rows,
            "tokens": self.tokens,
            "source_uri": self.source_uri,
            "report": self.report,
        }


class DeleteCheckpoint(Command, frozen=True, kw_only=True):
    run_id: str
    attempt: int
    step: int
    reason: str = ""

    def __post_init__(self) -> None:
        check_reference(self.run_id, "run_id")
        check_int(self.attempt, "attempt", maximum=INT32_MAX)
        check_int(self.step, "step", maximum=STEP_MAX)
        check_text(self.reason, "reason")


def _max_steps(max_steps: int | None) -> None:
    if max_steps is not None:
        check_int(max_steps, "max_steps", minimum=1, maximum=STEP_MAX)


def check_objective(objective: Any) -> dict[str, str] | None:
    """An objective given as (metric, mode) or {"metric", "mode"}: the metric under the metric-name
    rules, the mode "min" or "max". None (or an empty metric) means none."""
    if objective is None:
        return None
    if isinstance(objective, dict):
        metric, mode = objective.get("metric", ""), objective.get("mode", "")
    elif isinstance(objective, tuple | list) and len(objective) == 2:
        metric, mode = objective
    else:
        raise Invalid("objective is a (metric, mode) pair", reason=Reason.INVALID_FIELD, field="objective")
    if metric == "" and mode == "":
        return None
    check_name(metric, "objective metric")
    if mode not in OBJECTIVE_MODES:
        raise Invalid(f"objective mode must be one of {OBJECTIVE_MODES}", reason=Reason.INVALID_FIELD, field="mode")
    return {"metric": metric, "mode": mode}


def check_scores(scores: Any) -> dict[str, float] | None:
    """A checkpoint's scores: at most SCORES_MAX names under the metric-name rules, each a finite
    number (NON_FINITE_METRIC); ints become floats. None or empty: no scores."""
    if not scores:
        if scores is not None and not isinstance(scores, dict):
            raise Invalid("scores must be a mapping", reason=Reason.INVALID_FIELD, field="scores")
        return None
    if not isinstance(scores, dict):
        raise Invalid("scores must be a mapping", reason=Reason.INVALID_FIELD, field="scores")
    if len(scores) > SCORES_MAX:
        raise Invalid(
            f"a checkpoint carries at most {SCORES_MAX} scores",
            reason=Reason.MAP_TOO_LARGE,
            field="scores",
            limit=SCORES_MAX,
        )
    checked: dict[str, float] = {}
    for name, value in scores.items():
        check_name(name, "score name")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Invalid(f"score {name} must be a number", reason=Reason.INVALID_FIELD, field="scores")
        if not math.isfinite(value):
            raise Invalid(f"score {name} is not finite", reason=Reason.NON_FINITE_METRIC, metric=name)
        checked[name] = float(value)
    return checked


def sha256_digest(digest: Any) -> str:
    """A content digest as "sha256:<64 lowercase hex>"; a bare hex sha256 is accepted too."""
    hexdigest = digest[7:] if isinstance(digest, str) and digest.startswith("sha256:") else digest
    if not isinstance(hexdigest, str) or len(hexdigest) != 64 or any(c not in "0123456789abcdef" for c in hexdigest):
        raise Invalid('digest must be "sha256:" and 64 lowercase hex digits', reason=Reason.INVALID_DIGEST)
    return "sha256:" + hexdigest


def is_uuid(name: str) -> bool:
    """Whether a name reads as a uuid (in any case, with or without braces or dashes)."""
    try:
        UUID(name)
    except ValueError:
        return False
    return True


def check_source_checkpoint(value: Any) -> dict[str, Any] | None:
    """A run's source checkpoint ({"run_id", "step", "uri"}: a run id, a step, a uri of at most
    SOURCE_URI_LENGTH_MAX characters) in its normal form; None stays None."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - {"run_id", "step", "uri"}:
        raise Invalid(
            "source_checkpoint takes run_id, step and uri", reason=Reason.INVALID_FIELD, field="source_checkpoint"
        )
    run_id = check_reference(value.get("run_id", ""), "source_checkpoint.run_id")
    if not is_uuid(run_id):
        raise Invalid(
            f"source_checkpoint.run_id {run_id!r} is not a run id",
            reason=Reason.INVALID_FIELD,
            field="source_checkpoint.run_id",
        )
    step = check_int(value.get("step", 0), "source_checkpoint.step")
    uri = check_text(value.get("uri", ""), "source_checkpoint.uri", limit=SOURCE_URI_LENGTH_MAX)
    return {"run_id": str(UUID(run_id)), "step": step, "uri": uri}
