"""Model registry families: immutable versions, promotion by compare-and-set through a gate.

Registering never promotes. A promotion names the version, the version it expects to be
current and a gate verdict; it is refused when the verdict did not pass (GATE_NOT_PASSED) or the
current version moved (CURRENT_VERSION_MOVED). A rollback promotes an earlier version that was
promoted before, with a reason. History is never lost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ledger.domain.base import Audit, LedgerAggregate
from ledger.domain.errors import Conflict, Contended, NotFound, Refused
from ledger.domain.limits import DOCUMENT_BYTES_MAX, check_document_bytes, check_text
from ledger.domain.reasons import Reason

__all__ = ["Family"]


class Family(LedgerAggregate):
    """The versions of one model family and which one is current."""

    if TYPE_CHECKING:  # Set by the events' apply(): the state, as the type checker sees it.
        name: str
        versions: list[dict[str, Any]]
        current: int
        promotions: list[dict[str, Any]]

    def __init__(self) -> None:
        pass

    class Created(LedgerAggregate.Created):
        name: str

        def apply(self, family: Family) -> None:
            family.name = self.name
            family.versions = []  # index = version - 1
            family.current = 0
            family.promotions = []

    class VersionRegistered(LedgerAggregate.Event):
        version: int
        artifact_uri: str
        digest: str
        source_run_id: str
        source_step: int
        metadata: dict[str, Any]
        # {"run_id", "step", "attempt", "checkpoint_digest"} of the checkpoint it was made from.
        source_checkpoint: dict[str, Any] | None = None

        def apply(self, family: Family) -> None:
            family.versions.append(
                {
                    "version": self.version,
                    "artifact_uri": self.artifact_uri,
                    "digest": self.digest,
                    "source_run_id": self.source_run_id,
                    "source_step": self.source_step,
                    "metadata": self.metadata,
                    "source_checkpoint": self.source_checkpoint,
                    "registered_version": self.originator_version,
                }
            )

    class VersionPromoted(LedgerAggregate.Event):
        version: int
        previous: int
        kind: str  # promote | rollback
        verdict: dict[str, Any] | None
        reason: str

        def apply(self, family: Family) -> None:
            family.current = self.version
            family.promotions.append(
                {
                    "version": self.version,
                    "previous": self.previous,
                    "kind": self.kind,
                    "verdict": self.verdict,
                    "reason": self.reason,
                    "event_version": self.originator_version,
                }
            )

    def register(self, audit: Audit, *, version_fields: dict[str, Any]) -> tuple[int, int | None]:
        """Register a version. Returns (version number, event version of an identical earlier
        registration or None). The digest identifies the artifact."""
        for existing in self.versions:
            if existing["digest"] == version_fields["digest"]:
                # .get: versions in snapshots taken before a field existed lack it (None).
                if all(existing.get(key) == value for key, value in version_fields.items()):
                    return int(existing["version"]), int(existing["registered_version"])
                raise Conflict(
                    f"digest {version_fields['digest']} is registered as version {existing['version']} "
                    "with another payload",
                    reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                    version=existing["version"],
                )
        number = len(self.versions) + 1
        self.record(self.VersionRegistered, audit, version=number, **version_fields)
        return number, None

    def _check_version(self, version: int) -> None:
        if not 1 <= version <= len(self.versions):
            raise NotFound(f"{self.name} has no version {version}", reason=Reason.VERSION_NOT_FOUND, version=version)

    def _retry_of(
        self, kind: str, version: int, expected_current: int, verdict: dict[str, Any] | None, reason: str
    ) -> int | None:
        last = self.promotions[-1] if self.promotions else None
        if (
            last is not None
            and last["kind"] == kind
            and last["version"] == version
            and last["previous"] == expected_current
            and last["verdict"] == verdict
            and last["reason"] == reason
        ):
            return int(last["event_version"])
        return None

    def _check_current(self, expected_current: int) -> None:
        if self.current != expected_current:
            raise Contended(
                f"{self.name}: expected version {expected_current} to be current, but it is {self.current}",
                reason=Reason.CURRENT_VERSION_MOVED,
                current=self.current,
                expected=expected_current,
            )

    def promote(self, audit: Audit, *, version: int, expected_current: int, verdict: dict[str, Any]) -> int | None:
        """Compare-and-set promotion through a passing gate. Every promotion stays in the
        history that ListVersions pages through, so its verdict is bounded: DOCUMENT_BYTES_MAX as
        JSON (DOCUMENT_TOO_LARGE), its reason free text (INVALID_TEXT)."""
        self._check_version(version)
        retry = self._retry_of("promote", version, expected_current, verdict, "")
        if retry is not None:
            return retry
        check_document_bytes(verdict, "verdict", DOCUMENT_BYTES_MAX, Reason.DOCUMENT_TOO_LARGE)
        if isinstance(verdict.get("reason"), str):
            check_text(verdict["reason"], "verdict.reason")
        if not verdict.get("passed"):
            raise Refused(
                f"the gate did not pass: {verdict.get('reason', '')}", reason=Reason.GATE_NOT_PASSED, version=version
            )
        self._check_current(expected_current)
        if version == self.current:
            raise Refused(f"version {version} is already current", reason=Reason.ALREADY_CURRENT)
        self.record(
            self.VersionPromoted,
            audit,
            version=version,
            previous=self.current,
            kind="promote",
            verdict=verdict,
            reason="",
        )
        return None

    def rollback(self, audit: Audit, *, version: int, expected_current: int, reason: str) -> int | None:
        """Promote an earlier, once-promoted version again, with a reason."""
        self._check_version(version)
        retry = self._retry_of("rollback", version, expected_current, None, reason)
        if retry is not None:
            return retry
        self._check_current(expected_current)
        if version >= self.current:
            raise Refused(
                f"rollback needs a version before the current {self.current}", reason=Reason.ROLLBACK_NOT_EARLIER
            )
        if not any(p["version"] == version and p["kind"] == "promote" for p in self.promotions):
            raise Refused(f"version {version} was never promoted", reason=Reason.NEVER_PROMOTED)
        self.record(
            self.VersionPromoted,
            audit,
            version=version,
            previous=self.current,
            kind="rollback",
            verdict=None,
            reason=reason,
        )
        return None
