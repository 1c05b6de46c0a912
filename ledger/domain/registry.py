"""Model registry families: immutable versions, promotion by compare-and-set through a gate.

Registering never promotes. A promotion names the version, the version it expects to be
current and a gate verdict, asserted by the caller or evaluated by the ledger on recorded scores
(ledger.domain.gates); it is refused when the verdict did not pass (GATE_NOT_PASSED) or the
current version moved (CURRENT_VERSION_MOVED), and that refusal is recorded (PromotionRefused). A
rollback makes a version current again that was current before (any number), with a reason. Aliases (staging,
production ...) name versions that passed a gate (were promoted once; NEVER_PROMOTED) and move by
compare-and-set on the version they name (ledger.domain.aliases). A retired
family takes no more writes (FAMILY_RETIRED) and still reads. History is never lost.

Promotions, rollbacks, alias moves and retirements are answered by request id: the same id again
answers as the first time (a refusal too, without recording it again), the same id with another
request is EXISTS_WITH_DIFFERENT_PAYLOAD. The family remembers its last REQUESTS_WINDOW ids.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ledger.domain.base import Audit, LedgerAggregate
from ledger.domain.errors import Conflict, Contended, LedgerError, NotFound, Refused
from ledger.domain.limits import DOCUMENT_BYTES_MAX, check_document_bytes, check_text
from ledger.domain.reasons import Reason

__all__ = ["REQUESTS_WINDOW", "Family"]

# The request ids a family remembers (its latest registry writes); older ones are forgotten.
REQUESTS_WINDOW = 1_000
# The refusals a promotion records, and the kind of error each is answered with again.
_RECORDED_REFUSALS: dict[str, type[LedgerError]] = {
    Reason.GATE_NOT_PASSED: Refused,
    Reason.CURRENT_VERSION_MOVED: Contended,
}


def _remember(family: Family, event: Any, refusal: dict[str, Any] | None = None) -> None:
    """Remember the request id of a registry write, and how it was answered."""
    if not (event.request_id and event.request_digest):
        return
    requests: dict[str, dict[str, Any]] = family.__dict__.setdefault("requests", {})
    requests.pop(event.request_id, None)
    requests[event.request_id] = {
        "digest": event.request_digest,
        "version": event.originator_version,
        "refusal": refusal,
    }
    while len(requests) > REQUESTS_WINDOW:
        del requests[next(iter(requests))]


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
        request_digest: str = ""

        def apply(self, family: Family) -> None:
            _remember(family, self)
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

    class PromotionRefused(LedgerAggregate.Event):
        """A promotion refused by its gate or by a lost compare-and-set, kept for audit."""

        version: int
        expected_current: int
        current: int
        verdict: dict[str, Any]
        refusal: str  # The reason (GATE_NOT_PASSED, CURRENT_VERSION_MOVED).
        message: str
        request_digest: str = ""

        def apply(self, family: Family) -> None:
            refusal = {
                "reason": self.refusal,
                "message": self.message,
                "version": self.version,
                "current": self.current,
                "expected": self.expected_current,
            }
            _remember(family, self, refusal)

    class AliasMoved(LedgerAggregate.Event):
        alias: str
        version: int  # 0: the alias was removed.
        previous: int
        request_digest: str = ""

        def apply(self, family: Family) -> None:
            _remember(family, self)
            aliases: dict[str, int] = family.__dict__.setdefault("aliases", {})
            if self.version:
                aliases[self.alias] = self.version
            else:
                aliases.pop(self.alias, None)

    class Retired(LedgerAggregate.Event):
        reason: str
        request_digest: str = ""

        def apply(self, family: Family) -> None:
            _remember(family, self)
            family.__dict__["retirement"] = {"reason": self.reason, "version": self.originator_version}

    # State added after snapshots were first taken: read with a default.

    @property
    def aliases(self) -> dict[str, int]:
        value: dict[str, int] = self.__dict__.get("aliases", {})
        return value

    @property
    def retirement(self) -> dict[str, Any] | None:
        value: dict[str, Any] | None = self.__dict__.get("retirement")
        return value

    def answered(self, audit: Audit, request_digest: str) -> int | None:
        """The version of the event that answered this request id before (None: a new request).
        A refusal is raised again as it was answered (not recorded again); the same id with
        another request is EXISTS_WITH_DIFFERENT_PAYLOAD."""
        seen = self.__dict__.get("requests", {}).get(audit.request_id) if audit.request_id else None
        if seen is None:
            return None
        if seen["digest"] != request_digest:
            raise Conflict(
                f"request id {audit.request_id} was used for another request on {self.name}",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                request_id=audit.request_id,
            )
        refusal = seen["refusal"]
        if refusal is not None:
            kind = _RECORDED_REFUSALS[refusal["reason"]]
            metadata = {"version": refusal["version"]}
            if refusal["reason"] == Reason.CURRENT_VERSION_MOVED:
                metadata = {"current": refusal["current"], "expected": refusal["expected"]}
            raise kind(refusal["message"], reason=Reason[refusal["reason"]], **metadata)
        return int(seen["version"])

    def check_not_retired(self) -> None:
        retirement = self.retirement
        if retirement is not None:
            raise Refused(
                f"family {self.name} was retired: {retirement['reason']}",
                reason=Reason.FAMILY_RETIRED,
                family=self.name,
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
        self.check_not_retired()
        number = len(self.versions) + 1
        self.record(self.VersionRegistered, audit, version=number, **version_fields)
        return number, None

    def passed_gate(self, version: int) -> bool:
        """Whether `version` was ever promoted through a passing gate verdict."""
        return any(p["version"] == version and p["kind"] == "promote" for p in self.promotions)

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

    def _moved(self, expected_current: int) -> Contended:
        return Contended(
            f"{self.name}: expected version {expected_current} to be current, but it is {self.current}",
            reason=Reason.CURRENT_VERSION_MOVED,
            current=self.current,
            expected=expected_current,
        )

    def promote(
        self, audit: Audit, *, version: int, expected_current: int, verdict: dict[str, Any], request_digest: str = ""
    ) -> int | None:
        """Compare-and-set promotion through a passing gate. Every promotion stays in the
        history that ListVersions pages through, so its verdict is bounded: DOCUMENT_BYTES_MAX as
        JSON (DOCUMENT_TOO_LARGE), its reason free text (INVALID_TEXT). A verdict that did not pass
        and a lost compare-and-set are recorded (PromotionRefused) and raised: the caller saves
        the refusal with the family."""
        self._check_version(version)
        retry = self._retry_of("promote", version, expected_current, verdict, "")
        if retry is not None:
            return retry
        check_document_bytes(verdict, "verdict", DOCUMENT_BYTES_MAX, Reason.DOCUMENT_TOO_LARGE)
        if isinstance(verdict.get("reason"), str):
            check_text(verdict["reason"], "verdict.reason")
        self.check_not_retired()
        if not verdict.get("passed"):
            error: LedgerError = Refused(
                f"the gate did not pass: {verdict.get('reason', '')}", reason=Reason.GATE_NOT_PASSED, version=version
            )
            raise self._refuse(audit, version, expected_current, verdict, error, request_digest)
        if self.current != expected_current:
            error = self._moved(expected_current)
            raise self._refuse(audit, version, expected_current, verdict, error, request_digest)
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
            request_digest=request_digest,
        )
        return None

    def _refuse(
        self,
        audit: Audit,
        version: int,
        expected_current: int,
        verdict: dict[str, Any],
        error: LedgerError,
        request_digest: str,
    ) -> LedgerError:
        """Record a refused promotion; returns the error to raise."""
        self.record(
            self.PromotionRefused,
            audit,
            version=version,
            expected_current=expected_current,
            current=self.current,
            verdict=verdict,
            refusal=str(error.reason),
            message=error.message,
            request_digest=request_digest,
        )
        return error

    def retire(self, audit: Audit, *, reason: str, request_digest: str = "") -> int | None:
        """Retire the family. Retiring again with the same reason answers with the first
        retirement's version; with another reason it is EXISTS_WITH_DIFFERENT_PAYLOAD."""
        retirement = self.retirement
        if retirement is not None:
            if retirement["reason"] == reason:
                return int(retirement["version"])
            raise Conflict(
                f"the family was retired with another reason: {retirement['reason']}",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
            )
        self.record(self.Retired, audit, reason=reason, request_digest=request_digest)
        return None

    def rollback(
        self, audit: Audit, *, version: int, expected_current: int, reason: str, request_digest: str = ""
    ) -> int | None:
        """Make a version current again that was current before (promoted once; of any number,
        an older one or a newer one rolled back from), with a reason."""
        self._check_version(version)
        retry = self._retry_of("rollback", version, expected_current, None, reason)
        if retry is not None:
            return retry
        self.check_not_retired()
        if self.current != expected_current:
            raise self._moved(expected_current)
        if version == self.current:
            raise Refused(
                f"rollback needs a version current before, not the current {self.current}",
                reason=Reason.ROLLBACK_NOT_EARLIER,
            )
        if not self.passed_gate(version):
            raise Refused(f"version {version} was never promoted", reason=Reason.NEVER_PROMOTED)
        self.record(
            self.VersionPromoted,
            audit,
            version=version,
            previous=self.current,
            kind="rollback",
            verdict=None,
            reason=reason,
            request_digest=request_digest,
        )
        return None
