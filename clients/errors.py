"""The client's one exception hierarchy, built from google.rpc.ErrorInfo.reason, never from text.

Every error the server sends carries ErrorInfo(reason, domain "trainledger", metadata) in the
status details. `error_from_rpc` turns a grpc.RpcError into the most specific class: first by
reason (the refusals a caller branches on), then by status code, so an error from a proxy or
from gRPC itself (no ErrorInfo) still lands in the right branch.

REASONS (clients.reasons) is the client's own list of every reason the server can send (the
client cannot import the server's catalogue, ledger.domain.reasons); tests/contract/test_reasons.py
holds the two equal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]
from grpc_status import rpc_status

from clients.reasons import REASONS

__all__ = [
    "DOMAIN",
    "LedgerClientError",
    "InvalidArgument",
    "NotFound",
    "AlreadyExists",
    "FailedPrecondition",
    "Aborted",
    "ResourceExhausted",
    "Unavailable",
    "DeadlineExceeded",
    "Cancelled",
    "Unauthenticated",
    "PermissionDenied",
    "Internal",
    "SpendCapExceeded",
    "AttemptSuperseded",
    "RunFinished",
    "RunEnded",
    "CurrentVersionMoved",
    "WatcherTooSlow",
    "GateNotPassed",
    "RunRetracted",
    "CheckpointProtected",
    "REASONS",
    "BY_REASON",
    "error_from_rpc",
]

DOMAIN = "trainledger"
_DETAILS_KEY = "grpc-status-details-bin"


class LedgerClientError(Exception):
    """A call to the ledger failed. `reason` is the server's stable ErrorInfo reason (or the
    status code's name when the server sent none), `metadata` its string map, `code` the
    grpc.StatusCode."""

    def __init__(
        self,
        reason: str,
        message: str,
        metadata: Mapping[str, str] | None = None,
        code: grpc.StatusCode = grpc.StatusCode.UNKNOWN,
    ) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message
        self.metadata: dict[str, str] = dict(metadata or {})
        self.code = code

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.reason!r}, {self.message!r})"


class InvalidArgument(LedgerClientError):
    """A field is malformed or a limit is exceeded; resending the same request cannot help."""


class NotFound(LedgerClientError):
    """An unknown run, attempt, account, reservation, family, version or checkpoint."""


class AlreadyExists(LedgerClientError):
    """The same id was used before with a different payload."""


class FailedPrecondition(LedgerClientError):
    """The request breaks a rule of the current state."""


class Aborted(LedgerClientError):
    """A compare-and-set was lost, or a write conflict outlived the server's retries."""


class ResourceExhausted(LedgerClientError):
    """A quota would be crossed."""


class Unavailable(LedgerClientError):
    """The ledger (or its storage) could not be reached, or a view did not catch up in time."""


class DeadlineExceeded(LedgerClientError):
    """The call's deadline passed before an answer came."""


class Cancelled(LedgerClientError):
    """The call was cancelled."""


class Unauthenticated(LedgerClientError):
    """The caller is not authenticated."""


class PermissionDenied(LedgerClientError):
    """The caller is not allowed to do this."""


class Internal(LedgerClientError):
    """Anything else: a server bug; `metadata["request_id"]` finds it in the server's log."""


class SpendCapExceeded(ResourceExhausted):
    """A reservation would cross the cap of `account` (the run's or a parent's); the refusal is
    recorded for audit. `remaining_usd_micro` is what is left on that account."""

    @property
    def account(self) -> str:
        return self.metadata.get("account", "")

    @property
    def remaining_usd_micro(self) -> int | None:
        value = self.metadata.get("remaining_usd_micro", "")
        return int(value) if value.lstrip("-").isdigit() else None


class AttemptSuperseded(FailedPrecondition):
    """A newer attempt of the run has started: this process is a zombie and must stop writing."""


class RunFinished(FailedPrecondition):
    """The run has finished; nothing more may be appended to it."""


class RunEnded(RunFinished):
    """A run that has ended was to be opened again: `status` "done" (it takes no new attempt: use a
    new run key), or "failed" / "stopped" without reopen=True (use a new run key, or pass
    reopen=True to start a new attempt on it). Raised by the client before any attempt starts;
    `run_id`, `status`, and `state`, the RunState it was judged on."""

    def __init__(
        self,
        reason: str,
        message: str,
        metadata: Mapping[str, str] | None = None,
        code: grpc.StatusCode = grpc.StatusCode.FAILED_PRECONDITION,
        state: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__(reason, message, metadata, code)
        self.state = dict(state or {})

    @property
    def run_id(self) -> str:
        return self.metadata.get("run_id", "")

    @property
    def status(self) -> str:
        return self.metadata.get("status", "")

    @classmethod
    def of(cls, state: Mapping[str, object]) -> RunEnded:
        """The refusal for a RunState whose run has ended, naming the run and what to do."""
        run: Mapping[str, str] = state["run"]  # type: ignore[assignment]
        status, run_id = run["status"], run["run_id"]
        name = run.get("name") or run.get("run_key") or ""
        named = f"run {name!r} ({run_id})" if name and name != run_id else f"run {run_id}"
        if status == "done":
            advice = "use a new run key (a done run takes no new attempt)"
        else:
            advice = "use a new run key, or pass reopen=True to start a new attempt on it"
        return cls(
            "RUN_FINISHED",
            f"{named} is {status}: {advice}",
            {"run_id": run_id, "run_key": run.get("run_key", ""), "status": status},
            state=state,
        )


class GateNotPassed(FailedPrecondition):
    """A promotion was refused because its gate verdict did not pass."""


class CurrentVersionMoved(Aborted):
    """A promotion lost its compare-and-set: another version became current first."""


class RunRetracted(FailedPrecondition):
    """A write to a run an operator retracted: the run takes no more writes (its history stays)."""


class CheckpointProtected(FailedPrecondition):
    """A checkpoint deletion was refused: the checkpoint is the live resume point, the best on the
    run's objective or a registered version's source (`metadata["protected_by"]` says which)."""


class WatcherTooSlow(ResourceExhausted):
    """A watch of a run fell too far behind the run and was dropped; `metadata["next_position"]`
    is the position to watch again from."""


# The refusals callers branch on, by reason: each has a class of its own.
BY_REASON: dict[str, type[LedgerClientError]] = {
    "SPEND_CAP_EXCEEDED": SpendCapExceeded,
    "ATTEMPT_SUPERSEDED": AttemptSuperseded,
    "RUN_FINISHED": RunFinished,
    "GATE_NOT_PASSED": GateNotPassed,
    "CURRENT_VERSION_MOVED": CurrentVersionMoved,
    "WATCHER_TOO_SLOW": WatcherTooSlow,
    "RUN_RETRACTED": RunRetracted,
    "CHECKPOINT_PROTECTED": CheckpointProtected,
}

_BY_CODE: dict[grpc.StatusCode, type[LedgerClientError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.OUT_OF_RANGE: InvalidArgument,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExists,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.ABORTED: Aborted,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.CANCELLED: Cancelled,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.INTERNAL: Internal,
}


def _rich_status(error: grpc.RpcError) -> status_pb2.Status | None:
    """The google.rpc.Status in the trailers, or None. from_call refuses a status whose code or
    message differs from the call's; the details are still ours then, so read them directly."""
    try:
        return rpc_status.from_call(error)  # type: ignore[arg-type]
    except ValueError:
        pass
    except Exception:  # noqa: BLE001 - an object that is not a full grpc.Call.
        return None
    trailers: Any = error.trailing_metadata()
    for key, value in trailers or ():
        if key == _DETAILS_KEY:
            return status_pb2.Status.FromString(value)
    return None


def _error_info(status: status_pb2.Status | None) -> error_details_pb2.ErrorInfo | None:
    for detail in status.details if status is not None else ():
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info) and info.domain == DOMAIN:
            return info
    return None


def error_from_rpc(error: grpc.RpcError) -> LedgerClientError:
    """The exception for a failed call: the reason's class, else the status code's class."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    message = (error.details() if hasattr(error, "details") else "") or ""
    info = _error_info(_rich_status(error))
    reason = info.reason if info is not None else (code.name if code is not None else "UNKNOWN")
    metadata = dict(info.metadata) if info is not None else {}
    cls = BY_REASON.get(reason) if info is not None else None
    cls = cls or _BY_CODE.get(code, LedgerClientError)
    return cls(reason, message, metadata, code)
