"""The arguments of each command, validated once: frozen msgspec Structs whose construction runs
the validators of ledger.domain.limits (and ledger.domain.basis), in the order the fields are
listed, so a refused argument is refused with the same reason and message whichever way it came.

A command method builds its Struct first (nothing is loaded or recorded when that refuses), then
decides on the aggregates. Names that must be looked up (a run id, an account, a family) are
checked when they are loaded, where an unknown one is NOT_FOUND. A step batch's arguments are
ledger.domain.batches.StepBatch, built the same way by StepBatch.build.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import msgspec
from msgspec.structs import force_setattr

from ledger.domain.basis import check_basis
from ledger.domain.errors import Invalid
from ledger.domain.limits import (
    ERROR_LENGTH_MAX,
    STEP_MAX,
    check_document,
    check_id,
    check_int,
    check_reference,
    check_text,
    check_usd_micro,
)
from ledger.domain.reasons import Reason
from ledger.domain.runs import FIDELITIES, FINISH_STATUSES

__all__ = [
    "Charge",
    "Commit",
    "FinishRun",
    "NoteSummary",
    "OpenAccount",
    "OpenRun",
    "Promote",
    "Register",
    "Release",
    "Reserve",
    "Rollback",
    "SaveCheckpoint",
    "SetCap",
    "StartAttempt",
    "RESERVATION_TTL_DEFAULT",
    "RESERVATION_TTL_MAX",
]

RESERVATION_TTL_DEFAULT = timedelta(minutes=15)
RESERVATION_TTL_MAX = timedelta(days=7)
INT32_MAX = 2**31 - 1
Document = dict[str, Any]


class Command(msgspec.Struct, frozen=True, kw_only=True):
    """A command's arguments; `__post_init__` of each subclass validates and normalises them."""

    def _normal(self, field: str, value: Any) -> None:
        """Keep the normal form of a field (a document copied by its validator, a default filled in)."""
        force_setattr(self, field, value)


def _cap(cap_usd_micro: int | None) -> None:
    if cap_usd_micro is not None:
        check_usd_micro(cap_usd_micro, "cap_usd_micro")


# Runs.


class OpenRun(Command, frozen=True, kw_only=True):
    run_key: str
    name: str = ""
    spec: Document = msgspec.field(default_factory=dict)
    cap_usd_micro: int | None = None
    parent_account: str = ""

    def __post_init__(self) -> None:
        check_reference(self.run_key, "run_key")
        check_text(self.name, "name", limit=256)
        self._normal("spec", check_document(self.spec, "spec"))
        _cap(self.cap_usd_micro)
        check_reference(self.parent_account, "parent_account", required=False)


class StartAttempt(Command, frozen=True, kw_only=True):
    run_id: str
    attempt_id: str = ""
    label: str = ""
    resume_from_step: int | None = None

    def __post_init__(self) -> None:
        check_id(self.attempt_id, "attempt_id", required=False)
        check_text(self.label, "label", limit=256)
        if self.resume_from_step is not None:
            check_int(self.resume_from_step, "resume_from_step")


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

    def checkpoint(self) -> Document:
        """The checkpoint as the run records it."""
        return {
            "step": self.step,
            "backend": self.backend,
            "uri": self.uri,
            "fidelity": self.fidelity,
            "sampler_uri": self.sampler_uri,
            "final": self.final,
            "expires_at": self.expires_at,
            "digest": self.digest,
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


# Spend.


class OpenAccount(Command, frozen=True, kw_only=True):
    account: str
    parent: str = ""
    cap_usd_micro: int | None = None

    def __post_init__(self) -> None:
        check_reference(self.account, "account")
        check_reference(self.parent, "parent", required=False)
        if _is_uuid(self.account):
            raise Invalid(
                "account names in the form of a uuid are reserved for the accounts of runs",
                reason=Reason.ACCOUNT_NAME_RESERVED,
                account=self.account,
            )
        _cap(self.cap_usd_micro)


class SetCap(Command, frozen=True, kw_only=True):
    account: str
    cap_usd_micro: int | None

    def __post_init__(self) -> None:
        _cap(self.cap_usd_micro)


class Reserve(Command, frozen=True, kw_only=True):
    account: str
    reservation_id: str
    amount_usd_micro: int
    basis: Document = msgspec.field(default_factory=dict)
    ttl: timedelta = RESERVATION_TTL_DEFAULT
    attempt: int = 0

    def __post_init__(self) -> None:
        check_id(self.reservation_id, "reservation_id")
        check_usd_micro(self.amount_usd_micro, "amount_usd_micro")
        self._normal("basis", check_basis(self.basis))
        check_int(self.attempt, "attempt", maximum=INT32_MAX)
        if self.ttl == timedelta(0):
            self._normal("ttl", RESERVATION_TTL_DEFAULT)
        if not timedelta(0) < self.ttl <= RESERVATION_TTL_MAX:
            raise Invalid("ttl must be positive and at most 7 days", reason=Reason.INVALID_TTL)


class Commit(Command, frozen=True, kw_only=True):
    account: str
    reservation_id: str
    actual_usd_micro: int
    basis: Document = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        check_reference(self.reservation_id, "reservation_id")
        check_usd_micro(self.actual_usd_micro, "actual_usd_micro")
        self._normal("basis", check_basis(self.basis))


class Release(Command, frozen=True, kw_only=True):
    account: str
    reservation_id: str
    reason: str = ""

    def __post_init__(self) -> None:
        check_reference(self.reservation_id, "reservation_id")
        check_text(self.reason, "reason")


class Charge(Command, frozen=True, kw_only=True):
    account: str
    charge_id: str
    amount_usd_micro: int
    basis: Document = msgspec.field(default_factory=dict)
    reason: str = ""

    def __post_init__(self) -> None:
        check_id(self.charge_id, "charge_id")
        check_usd_micro(self.amount_usd_micro, "amount_usd_micro")
        self._normal("basis", check_basis(self.basis))
        check_text(self.reason, "reason")


# Registry.


class Register(Command, frozen=True, kw_only=True):
    family: str
    artifact_uri: str
    digest: str
    source_run_id: str = ""
    source_step: int = 0
    metadata: Document = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        check_reference(self.family, "family")
        check_text(self.artifact_uri, "artifact_uri")
        if not self.artifact_uri:
            raise Invalid("artifact_uri is required", reason=Reason.MISSING_FIELD, field="artifact_uri")
        self._normal("digest", _sha256_digest(self.digest))
        check_reference(self.source_run_id, "source_run_id", required=False)
        check_int(self.source_step, "source_step")
        self._normal("metadata", check_document(self.metadata, "metadata"))

    def version_fields(self) -> Document:
        """The version as the family records it."""
        return {
            "artifact_uri": self.artifact_uri,
            "digest": self.digest,
            "source_run_id": self.source_run_id,
            "source_step": self.source_step,
            "metadata": self.metadata,
        }


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


def _is_uuid(name: str) -> bool:
    """Whether a name reads as a uuid (in any case, with or without braces or dashes)."""
    try:
        UUID(name)
    except ValueError:
        return False
    return True


def _sha256_digest(digest: Any) -> str:
    """A content digest as "sha256:<64 lowercase hex>"; a bare hex sha256 is accepted too."""
    hexdigest = digest[7:] if isinstance(digest, str) and digest.startswith("sha256:") else digest
    if not isinstance(hexdigest, str) or len(hexdigest) != 64 or any(c not in "0123456789abcdef" for c in hexdigest):
        raise Invalid('digest must be "sha256:" and 64 lowercase hex digits', reason=Reason.INVALID_DIGEST)
    return "sha256:" + hexdigest
