"""Training inside a Modal function, recorded in the ledger (extra `modal`: pip install "trainledger[modal]").

    @app.function(gpu="H100", volumes={"/ckpt": volume}, secrets=[modal.Secret.from_name("trainledger")],
                  retries=modal.Retries(max_retries=3))
    def train():
        with open_recorder(run_key=run_key(spec), name="sft", spec=spec) as run, \\
                GpuMeter(run, GpuPrice(3_950_000, gpu_type="H100", sheet="modal")) as meter:
            start = 0
            if (path := resume_path(volume, run.state, mount="/ckpt")) is not None:
                load(path); start = run.state["resume"]["from_step"] + 1
            for step in range(start, total):
                meter.tick()                         # SpendCapExceeded when the next interval is refused
                run.log(step, loss=train_step())
                if step % 100 == 99:
                    save(f"/ckpt/{run.run_id}/step-{step}.pt")
                    commit_and_record(volume, run, step, f"/ckpt/{run.run_id}/step-{step}.pt", mount="/ckpt")

- Connection (`client_from_env`): TRAINLEDGER_ADDRESS (host:port) and TRAINLEDGER_PRINCIPAL from the
  environment, which a Modal Secret supplies in the container. TRAINLEDGER_TOKEN, when set, goes
  as ``authorization: Bearer <token>`` call credentials, which gRPC sends only over TLS: a token
  implies TLS (system roots, or the PEM file named by TRAINLEDGER_CA_FILE). TRAINLEDGER_TLS=1 asks
  for TLS without a token. The ledger server itself checks no token and serves no TLS today: put
  it behind a proxy that terminates TLS and checks the token.
- Attempts (`open_recorder`): each container that runs the function is a new attempt labelled
  ``modal:<MODAL_TASK_ID>`` plus ``/<function call id>`` when modal.current_function_call_id()
  knows one; it resumes from the run's latest checkpoint by default, so a retry (modal.Retries,
  a preempted container) continues where the last committed checkpoint left off and fences the
  container it replaces. A run that ended "failed" (the exception modal.Retries retries) or
  "stopped" is reopened by default (reopen=True) so the retry can start; a done run is refused
  (RunEnded). The cap and parent account given go with every open (a cap given changes the run's).
- Ending: leaving the recorder's block finishes the run as clients.recorder.exit_status says:
  "done"; "stopped" for a spend-cap refusal (GpuMeter's SpendCapExceeded) or an interrupt
  (KeyboardInterrupt; SIGTERM with stop_on_sigterm=True); "failed" for any other exception.
- Checkpoints (`commit_and_record`): a file written to a Volume is durable only after
  Volume.commit(); the checkpoint is recorded after the commit returns, never before, so the
  ledger never points at a file a crash could lose. `resume_path` reloads the volume (to see what
  another container committed) and maps the checkpoint's uri back to a path under the mount; it
  trusts nothing in the uri: the path must stay under the mount (real paths resolved: no `..`,
  no symlink out of it), and the file's digest must be the one recorded with it
  (verify_digest=False accepts a checkpoint recorded without one). ResumeRefused otherwise.
- GPU spend (`GpuMeter`): wall-clock time of the container's GPUs x the GpuPrice rate. An interval
  (``interval_s`` of GPU time) is reserved before it starts; when it has passed (seen by `tick()`)
  or the meter stops, the milliseconds actually used are committed and the next interval is
  reserved. Time before the meter starts (container start, image pull, model load before the
  block) is not metered.

Nothing here contacts Modal: modal is imported only to ask for the current function call id.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, Literal, Protocol

import grpc

from clients.client import CHANNEL_OPTIONS, LedgerClient
from clients.errors import LedgerClientError, SpendCapExceeded
from clients.integrations.pricing import GpuPrice
from clients.integrations.paths import outside as _outside
from clients.recorder import RunRecorder
from clients.retry import RetryPolicy
from clients.runkey import dataset_digest, file_digest

__all__ = ["client_from_env", "attempt_label", "open_recorder", "commit_and_record", "resume_path", "volume_uri",
           "GpuMeter", "ResumeRefused", "ENV_ADDRESS", "ENV_PRINCIPAL", "ENV_TOKEN", "ENV_TLS", "ENV_CA_FILE",
           "BACKEND"]

log = logging.getLogger("trainledger.clients.modal")

ENV_ADDRESS = "TRAINLEDGER_ADDRESS"
ENV_PRINCIPAL = "TRAINLEDGER_PRINCIPAL"
ENV_TOKEN = "TRAINLEDGER_TOKEN"
ENV_TLS = "TRAINLEDGER_TLS"
ENV_CA_FILE = "TRAINLEDGER_CA_FILE"
BACKEND = "modal-volume"
URI_SCHEME = "modal-volume://"


class ResumeRefused(ValueError):
    """The checkpoint the run state names cannot be resumed from as it stands. `reason`:
    MOUNT_UNKNOWN (no mount to hold the path to), OTHER_VOLUME (a checkpoint on another volume),
    OUTSIDE_MOUNT (the path, or a file under it, resolves outside the mount), DIGEST_MISSING
    (recorded without a digest: verify_digest=False to accept it), DIGEST_UNVERIFIABLE (not a
    sha256 digest), DIGEST_MISMATCH (the file changed since it was recorded)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason, self.message = reason, message


class Volume(Protocol):
    """What is used of a modal.Volume (a test stands in with any object having these)."""

    def commit(self) -> Any: ...

    def reload(self) -> Any: ...


# -- connection and attempts ----------------------------------------------------------------------


def _flag(value: str | None) -> bool | None:
    if value is None or value == "":
        return None
    return value.strip().lower() not in ("0", "false", "no", "off")


def client_from_env(environ: Mapping[str, str] | None = None, *, timeout_s: float = 10.0,
                    retries: RetryPolicy | int | None = None) -> LedgerClient:
    """A LedgerClient for TRAINLEDGER_ADDRESS as TRAINLEDGER_PRINCIPAL, with TRAINLEDGER_TOKEN as
    bearer call credentials over TLS (see the module docstring). Raises KeyError when no address
    is set and ValueError for a token with TRAINLEDGER_TLS=0."""
    env = os.environ if environ is None else environ
    address = env.get(ENV_ADDRESS, "")
    if not address:
        raise KeyError(f"{ENV_ADDRESS} is not set: add it to the function's Modal Secret")
    token = env.get(ENV_TOKEN, "")
    tls = _flag(env.get(ENV_TLS))
    if token and tls is False:
        raise ValueError(f"{ENV_TOKEN} is sent only over TLS; unset {ENV_TLS}=0")
    channel = None
    if token or tls:
        roots = Path(env[ENV_CA_FILE]).read_bytes() if env.get(ENV_CA_FILE) else None
        credentials = grpc.ssl_channel_credentials(root_certificates=roots)
        if token:
            credentials = grpc.composite_channel_credentials(credentials, grpc.access_token_call_credentials(token))
        channel = grpc.secure_channel(address, credentials, options=CHANNEL_OPTIONS)
    return LedgerClient(address, principal=env.get(ENV_PRINCIPAL, ""), timeout_s=timeout_s, retries=retries,
                        channel=channel)


def _function_call_id() -> str | None:
    try:
        import modal
    except ImportError:
        return None
    try:
        return modal.current_function_call_id()
    except Exception:  # noqa: BLE001 - outside a container some versions raise instead of None
        return None


def attempt_label(environ: Mapping[str, str] | None = None) -> str | None:
    """``modal:<MODAL_TASK_ID>[/<function call id>]``, or None outside a Modal container (the
    recorder's default "host:pid" label then)."""
    env = os.environ if environ is None else environ
    task_id = env.get("MODAL_TASK_ID", "")
    if not task_id:
        return None
    call_id = _function_call_id()
    return f"modal:{task_id}/{call_id}" if call_id else f"modal:{task_id}"


def open_recorder(client: LedgerClient | None = None, *, run_key: str, name: str = "",
                  spec: Mapping[str, Any] | None = None, cap_usd_micro: int | None = None,
                  parent_account: str = "", resume_from_step: int | Literal["latest"] | None = "latest",
                  label: str | None = None, reopen: bool = True, **options: Any) -> RunRecorder:
    """RunRecorder.open for this container: the client from the environment unless given, the
    attempt labelled with the Modal task (and call) id unless `label` is given, resuming from
    the run's latest checkpoint by default, reopening a failed or stopped run by default (a
    modal.Retries retry of a failed input; reopen=False refuses it with RunEnded). An
    `outbox_dir` option on the container's own disk outlives a ledger outage, not the
    container: a retry in a fresh container cannot replay it."""
    client = client or client_from_env()
    return RunRecorder.open(client, run_key=run_key, name=name, spec=spec, cap_usd_micro=cap_usd_micro,
                            parent_account=parent_account, attempt_label=label or attempt_label(),
                            resume_from_step=resume_from_step, reopen=reopen, **options)


# -- checkpoints on a Volume ----------------------------------------------------------------------


def volume_uri(path: str | os.PathLike[str], *, mount: str | os.PathLike[str] | None, volume_name: str | None) -> str:
    """``modal-volume://<volume name>/<path under the mount>`` when both are known, else the path."""
    path = PurePosixPath(os.fspath(path))
    if mount is None or not volume_name:
        return str(path)
    relative = path.relative_to(PurePosixPath(os.fspath(mount)))  # ValueError outside the mount
    return f"{URI_SCHEME}{volume_name}/{relative}"


def commit_and_record(volume: Volume, recorder: RunRecorder, step: int, path: str | os.PathLike[str], *,
                      mount: str | os.PathLike[str] | None = None, volume_name: str | None = None,
                      uri: str | None = None, backend: str = BACKEND, fidelity: str = "weights",
                      digest: str | None = None, final: bool = False, sampler_uri: str = "",
                      expires_at: datetime | None = None) -> dict[str, Any]:
    """Make a checkpoint written under a Volume's mount durable, then record it: digest the file
    (sha256) or directory (clients.dataset_digest), ``volume.commit()``, and only once the commit
    returned, ``recorder.checkpoint(...)``. A commit that raises records nothing. The uri is
    ``modal-volume://<name>/<path under mount>`` when `mount` is given (name from `volume_name` or
    ``volume.name``), else the path. Returns the recorder's answer; raises LedgerClientError."""
    local = Path(path)
    if digest is None:
        digest = dataset_digest(local) if local.is_dir() else file_digest(local)
    if uri is None:
        uri = volume_uri(local, mount=mount, volume_name=volume_name or getattr(volume, "name", None))
    volume.commit()
    return recorder.checkpoint(step, uri, backend, fidelity, sampler_uri=sampler_uri, final=final,
                               expires_at=expires_at, digest=digest)


def resume_path(volume: Volume | None, state: Mapping[str, Any] | None, *,
                mount: str | os.PathLike[str] | None = None, verify: bool = True,
                verify_digest: bool = True) -> Path | None:
    """The local path (real path) of the checkpoint the current attempt resumed from, or None when
    it started from scratch. Reloads `volume` first (when given) so files another container
    committed are visible (Volume.reload() fails while files on the volume are open). A
    ``modal-volume://<volume>/<path>`` uri maps to `mount`/<path>, a plain uri is a path; either
    way it must resolve under `mount` (a `..` or a symlink out of it is refused, always). With
    `verify`, the path must exist (FileNotFoundError) and, with `verify_digest` too, its sha256
    must be the digest recorded with the checkpoint; `verify_digest=False` resumes from a
    checkpoint recorded without a digest (or changed since). Raises ResumeRefused (a ValueError)
    with its reason: MOUNT_UNKNOWN, OTHER_VOLUME, OUTSIDE_MOUNT, DIGEST_MISSING,
    DIGEST_UNVERIFIABLE, DIGEST_MISMATCH; LookupError when the state does not name the checkpoint."""
    if not state:
        return None
    current = state.get("current_attempt")
    attempt = next((a for a in state.get("attempts") or () if a.get("number") == current), None)
    if attempt is None or attempt.get("resumed_from_step") is None:
        return None
    step = attempt["resumed_from_step"]
    checkpoint, resume = state.get("checkpoint") or {}, state.get("resume") or {}
    if checkpoint and checkpoint.get("step") == step:
        uri, digest = checkpoint["handle"]["uri"], checkpoint.get("digest", "")
    elif resume.get("available") and resume.get("from_step") == step and resume.get("handle"):
        uri, digest = resume["handle"]["uri"], ""
    else:
        raise LookupError(f"the run state does not name the checkpoint at step {step}; refresh it")
    if mount is None:
        raise ResumeRefused("MOUNT_UNKNOWN", f"the checkpoint at step {step} ({uri}) cannot be held to a mount: "
                            "give the mount the volume is attached at")
    if uri.startswith(URI_SCHEME):
        name, _, relative = uri[len(URI_SCHEME):].partition("/")
        own = getattr(volume, "name", None)
        if own and name != own:
            raise ResumeRefused("OTHER_VOLUME", f"the checkpoint at step {step} is on volume {name!r}, not on "
                                f"{own!r} mounted at {mount}: {uri}")
        path = Path(mount) / relative
    else:
        path = Path(uri.removeprefix("file://"))
    if volume is not None:
        volume.reload()
    if problem := _outside(path, mount):
        raise ResumeRefused("OUTSIDE_MOUNT", f"the checkpoint at step {step} ({uri}) is not under the mount: "
                            f"{problem}")
    if verify:
        if not path.exists():
            raise FileNotFoundError(f"the checkpoint at step {step} is not at {path}")
        if verify_digest:
            if not digest:
                raise ResumeRefused("DIGEST_MISSING", f"the checkpoint at step {step} ({path}) was recorded without "
                                    "a digest, so it cannot be checked: pass verify_digest=False to resume from it "
                                    "anyway")
            if not digest.startswith("sha256:"):
                raise ResumeRefused("DIGEST_UNVERIFIABLE", f"the checkpoint at step {step} ({path}) was recorded with "
                                    f"digest {digest!r}, not a sha256 one this can check: pass verify_digest=False "
                                    "to resume from it anyway")
            actual = dataset_digest(path) if path.is_dir() else file_digest(path)
            if actual != digest:
                raise ResumeRefused("DIGEST_MISMATCH", f"{path} changed since it was recorded as the checkpoint at "
                                    f"step {step}: digest {actual}, recorded {digest}")
    return Path(os.path.realpath(path))


# -- GPU time as spend ----------------------------------------------------------------------------


class GpuMeter:
    """GPU wall-clock time x `price` as the run's spend, held an interval at a time (see the module
    docstring). `start()` reserves the first `interval_s`; `tick()` (call it every step or so)
    commits the milliseconds used and reserves the next interval once `interval_s` has passed;
    `stop()` commits the last, partial interval. A refused reservation raises SpendCapExceeded
    from start()/tick(): stop training, save, and let the block end; the time until stop() is
    then charged without a hold (recorded as overrun), since the GPU was billed for it anyway.
    Holds expire after `ttl_s` (default: two intervals plus a minute) when the container dies
    without committing. As a context manager the meter stops on the way out, exception or not."""

    def __init__(self, recorder: RunRecorder, price: GpuPrice, *, interval_s: float = 600.0,
                 ttl_s: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be positive")
        self.recorder = recorder
        self.price = price
        self.interval_s = interval_s
        self.ttl_s = ttl_s if ttl_s is not None else 2 * interval_s + 60
        self.clock = clock
        self.intervals: list[dict[str, Any]] = []  # settled: reservation_id, reserved, used_ms, actual
        self._hold: dict[str, Any] | None = None
        self._started_at: float | None = None  # start of the interval being metered

    @property
    def running(self) -> bool:
        return self._started_at is not None

    @property
    def committed_usd_micro(self) -> int:
        return sum(interval["actual_usd_micro"] for interval in self.intervals)

    @property
    def gpu_milliseconds(self) -> int:
        return sum(interval["gpu_milliseconds"] for interval in self.intervals)

    def start(self) -> GpuMeter:
        if self._started_at is None:
            self._started_at = self.clock()
            try:
                self._reserve()
            except BaseException:
                self._started_at = None  # refused before anything ran: nothing to meter
                raise
        return self

    def tick(self) -> bool:
        """Settle the interval and reserve the next once `interval_s` has passed: True when it
        did. Raises SpendCapExceeded (the next interval refused) or LedgerClientError."""
        if self._started_at is None:
            return False
        now = self.clock()
        if now - self._started_at < self.interval_s:
            return False
        self._settle(now)
        self._started_at = now
        self._reserve()
        return True

    def stop(self) -> None:
        """Commit the time used since the last settlement. Raises LedgerClientError."""
        if self._started_at is None:
            return
        self._settle(self.clock())
        self._started_at = None

    def __enter__(self) -> GpuMeter:
        return self.start()

    def __exit__(self, exc_type: Any, exc: BaseException | None, traceback: Any) -> None:
        if exc is None:
            self.stop()
            return
        try:
            self.stop()
        except LedgerClientError as error:
            log.warning("could not commit the last GPU interval (%s); its hold expires", error)

    def _reserve(self) -> None:
        milliseconds = round(self.interval_s * 1000)
        amount = self.price.amount(milliseconds)
        recorder = self.recorder
        try:
            answer = recorder.client.reserve(account=recorder.account, amount_usd_micro=amount,
                                             basis=self.price.basis(milliseconds), ttl_s=self.ttl_s,
                                             attempt=recorder.attempt)
        except SpendCapExceeded:
            self._hold = None  # the time from here to stop() is charged without a hold
            raise
        self._hold = {"reservation_id": answer["reservation_id"], "amount_usd_micro": amount}

    def _settle(self, now: float) -> None:
        assert self._started_at is not None
        used_ms = max(0, round((now - self._started_at) * 1000))
        basis, actual = self.price.basis(used_ms), self.price.amount(used_ms)
        recorder, hold = self.recorder, self._hold
        if hold is not None:
            recorder.client.commit(account=recorder.account, reservation_id=hold["reservation_id"],
                                   actual_usd_micro=actual, basis=basis)
            reservation_id, reserved = hold["reservation_id"], hold["amount_usd_micro"]
        elif used_ms == 0:
            return
        else:
            answer = recorder.client.charge(account=recorder.account, amount_usd_micro=actual, basis=basis,
                                            reason="GPU time after a refused reservation")
            reservation_id, reserved = answer["charge_id"], 0
        self._hold = None
        self.intervals.append({"reservation_id": reservation_id, "reserved_usd_micro": reserved,
                               "gpu_milliseconds": used_ms, "actual_usd_micro": actual})

