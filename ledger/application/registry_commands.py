"""The arguments of the commands on the registry: register a version, promote one through a gate,
roll back to one. See ledger.application.commands for how they are validated.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ledger.application.commands import INT32_MAX, Command, Document, sha256_digest
from ledger.domain.errors import Invalid
from ledger.domain.limits import check_document, check_int, check_reference, check_text
from ledger.domain.reasons import Reason

__all__ = ["Promote", "Register", "Rollback"]


class Register(Command, frozen=True, kw_only=True):
    family: str
    artifact_uri: str
    digest: str
    source_run_id: str = ""
    source_step: int = 0
    metadata: Document = msgspec.field(default_factory=dict)
    # {run_id, step, attempt, checkpoint_digest}: the run's checkpoint the version is made from.
    source_checkpoint: Document | None = None

    def __post_init__(self) -> None:
        check_reference(self.family, "family")
        check_text(self.artifact_uri, "artifact_uri")
        if not self.artifact_uri:
            raise Invalid("artifact_uri is required", reason=Reason.MISSING_FIELD, field="artifact_uri")
        self._normal("digest", sha256_digest(self.digest))
        check_reference(self.source_run_id, "source_run_id", required=False)
        check_int(self.source_step, "source_step")
        self._normal("metadata", check_document(self.metadata, "metadata"))
        if self.source_checkpoint is not None:
            self._source_checkpoint(self.source_checkpoint)

    def _source_checkpoint(self, source: Any) -> None:
        """Checks the source checkpoint and fills source_run_id and source_step from it: when the
        request gave them too they must name the same checkpoint (INVALID_FIELD)."""
        if not isinstance(source, dict):
            raise Invalid("source_checkpoint must be a mapping", reason=Reason.INVALID_FIELD, field="source_checkpoint")
        unknown = set(source) - {"run_id", "step", "attempt", "checkpoint_digest"}
        if unknown:
            raise Invalid(
                f"source_checkpoint has unknown fields {sorted(unknown)}",
                reason=Reason.INVALID_FIELD,
                field="source_checkpoint",
            )
        run_id = check_reference(source.get("run_id", ""), "source_checkpoint.run_id")
        step = check_int(source.get("step", 0), "source_checkpoint.step")
        attempt = check_int(source.get("attempt", 0), "source_checkpoint.attempt", maximum=INT32_MAX)
        checkpoint_digest = check_text(
            source.get("checkpoint_digest", ""), "source_checkpoint.checkpoint_digest", limit=256
        )
        if self.source_run_id and self.source_run_id != run_id:
            raise Invalid(
                "source_run_id names another run than source_checkpoint",
                reason=Reason.INVALID_FIELD,
                field="source_run_id",
            )
        if self.source_step and self.source_step != step:
            raise Invalid(
                "source_step names another step than source_checkpoint",
                reason=Reason.INVALID_FIELD,
                field="source_step",
            )
        self._normal("source_run_id", run_id)
        self._normal("source_step", step)
        self._normal(
            "source_checkpoint",
            {"run_id": run_id, "step": step, "attempt": attempt, "checkpoint_digest": checkpoint_digest},
        )

    def version_fields(self) -> Document:
        """The version as the family records it (source_checkpoint only when one was named, so a
        version without one is recorded as versions were before it existed)."""
        fields = {
            "artifact_uri": self.artifact_uri,
            "digest": self.digest,
            "source_run_id": self.source_run_id,
            "source_step": self.source_step,
            "metadata": self.metadata,
        }
        if self.source_checkpoint is not None:
            fields["source_checkpoint"] = self.source_checkpoint
        return fields


class Promote(Command, frozen=True, kw_only=True):
    family: str
    version: int
    expected_current: int
    verdict: Document

    def __post_init__(self) -> None:
        check_int(self.version, "version", minimum=1, maximum=INT32_MAX)
        check_int(self.expected_current, "expected_current", maximum=INT32_MAX)
        self._normal("verdict", check_document(self.verdict, "verdict"))


class Rollback(Command, frozen=True, kw_only=True):
    family: str
    version: int
    expected_current: int
    reason: str

    def __post_init__(self) -> None:
        check_int(self.version, "version", minimum=1, maximum=INT32_MAX)
        check_int(self.expected_current, "expected_current", maximum=INT32_MAX)
        check_text(self.reason, "reason")
