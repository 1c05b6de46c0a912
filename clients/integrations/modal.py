"""Training inside a Modal function, recorded in the ledger (extra `modal`: pip install "trainledger[modal]").

    @app.function(gpu="H100", volumes={"/ckpt": volume}, secrets=[modal.Secret.from_name("trainledger")],
                  retries=modal.Retries(max_retries=3))
    def train():
        with open_recorder(run_key=run_key(spec), name="sft", spec=spec) as run, \\
                GpuMeter(run, GpuPrice(3_950_000, gpu_type="H100", sheet="modal")) as meter:
            start = 0
            if (path := resume_path(volume, run.state, mount="/ckpt")) is not None:
                load(path); start = run.state.resume.from_step + 1
            for step in range(start, total):
                meter.tick()                         # SpendCapExceeded when the next interval is refused
                run.log(step, loss=train_step())
                if step % 100 == 99:
                    save(f"/ckpt/{run.run_id}/step-{step}.pt")
                    commit_and_record(volume, run, step, f"/ckpt/{run.run_id}/step-{step}.pt", mount="/ckpt")

- Connection (`client_from_env`): TRAINLEDGER_ADDRESS (host:port) and TRAINLEDGER_PRINCIPAL from the
  environment, which a Modal Secret supplies in the container. TRAINLEDGER_TOKEN, when set, goes
  as ``authorization: Bearer <token>`` on every call, and only over TLS, since the container
  reaches the ledger over a network: a token implies TLS (system roots, or the PEM file named by
  TRAINLEDGER_CA_FILE; a client certificate from TRAINLEDGER_CERT_FILE and TRAINLEDGER_KEY_FILE,
  see clients.tls). TRAINLEDGER_TLS=1 asks for TLS without a token. Serve the ledger with
  `trainledger serve --tls-cert ... --tls-key ...` (or behind a proxy that terminates TLS).
- Attempts (`open_recorder`): each container that runs the function is a new attempt labelled
  ``modal:<MODAL_TASK_ID>`` plus ``/<function call id>`` when modal.current_function_call_id()
  knows one; it resumes from the run's latest checkpoint by default, so a retry (modal.Retries,
  a preempted container) continues where the last committed checkpoint left off and fences the
  container it replaces. A run that ended "failed" (the exception modal.Retries retries) or
  "stopped" is reopened by default (reopen=True) so the retry can start; a done run is refused
  (RunEnded). The cap and parent account given go with every open (a cap given changes the run's),
  and so does `source_checkpoint`, another run's checkpoint this training starts from (its lineage).
- Ending: leaving the recorder's block finishes the run as clients.recorder.exit_status says:
  "done"; "stopped" for a spend-cap refusal (GpuMeter's SpendCapExceeded) or an interrupt
  (KeyboardInterrupt; SIGTERM with stop_on_sigterm=True); "failed" for any other exception.
- Checkpoints (`commit_and_record`): a file written to a Volume is durable only after
  Volume.commit(); the checkpoint is recorded after the commit returns, never before, so the
  ledger never points at a file a crash could lose. `resume_path` reloads the volume (to see what
  another container committed) and maps the checkpoint's uri back to a path under the mount; it
  trusts nothing in the uri: the path must stay under the mount (real paths resolved: no `..`,
  no symlink out of it), and the file's digest must be the one recorded with it
  (verify_digest=False accepts a checkpoint recorded without one). Otherwise ResumeRefused, the
  one refusal of every integration's resume (clients.integrations.resume), with its reason.
- Tags for the bill (`run_tags`, `tag_app`): Modal's billing report attributes cost to the App
  a run executes in, with the App's tags. The App is tagged ``trainledger_run_id=<run id>`` and,
  when the run has a parent account, ``trainledger_account=<account>``, so the lines
  clients.billing.modal pulls from the report are attributed to the run (and its account) by
  the ledger. Give them when the App is made, ``modal.App("sft", tags=run_tags(run_id,
  account))``, when the run id is known then; otherwise `open_recorder` tags the App running in
  this container once the run is open (``app=`` names another App, ``tag=False`` turns it
  off): it reads the App's tags, merges the run's into them (the run's win) and sets them
  (App.set_tags replaces all of an App's tags, so the others are kept by merging). Tagging never
  raises into training: a failure (no credentials, Modal unreachable) is logged and training
  goes on; the bill's lines are then unattributed until tagged, or attributed by a file's
  run_id column. Modal attributes a tag to the whole report interval it was set in.
- GPU spend (`GpuMeter`, clients.integrations.meter: the meter the Transformers callback uses too):
  wall-clock time of the container's GPUs x the GpuPrice rate. An interval
  (``interval_s`` of GPU time) is reserved before it starts; when it has passed (seen by `tick()`)
  or the meter stops, the milliseconds actually used are committed and the next interval is
  reserved. Time before the meter starts (container start, image pull, model load before the
  block) is not metered.

Modal is contacted only to tag the App (open_recorder in a Modal container, or tag_app); modal is
imported only for that and to ask for the current function call id.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, Literal, Protocol

from clients.billing.modal import ACCOUNT_TAG, RUN_TAG
from clients.client import LedgerClient
from clients.integrations.meter import GpuMeter
from clients.integrations.resume import Loader, ResumePoint, ResumeReason, ResumeRefused, decide, local_path, resumed
from clients.models import CheckpointReceipt, RunState
from clients.recorder import RunRecorder
from clients.retry import RetryPolicy
from clients.runkey import dataset_digest, file_digest
from clients.tls import ENV_CA_FILE, ENV_TLS, TLS

__all__ = [
    "client_from_env",
    "attempt_label",
    "open_recorder",
    "run_tags",
    "tag_app",
    "container_app",
    "RUN_TAG",
    "ACCOUNT_TAG",
    "commit_and_record",
    "resume_path",
    "volume_uri",
    "GpuMeter",
    "ResumeRefused",
    "ResumeReason",
    "ENV_ADDRESS",
    "ENV_PRINCIPAL",
    "ENV_TOKEN",
    "ENV_TLS",
    "ENV_CA_FILE",
    "BACKEND",
]

log = logging.getLogger("trainledger.clients.modal")

ENV_ADDRESS = "TRAINLEDGER_ADDRESS"
ENV_PRINCIPAL = "TRAINLEDGER_PRINCIPAL"
ENV_TOKEN = "TRAINLEDGER_TOKEN"
BACKEND = "modal-volume"
URI_SCHEME = "modal-volume://"


class Volume(Protocol):
    """What is used of a modal.Volume (a test stands in with any object having these)."""

    def commit(self) -> Any: ...

    def reload(self) -> Any: ...


# -- connection and attempts ----------------------------------------------------------------------


def _flag(value: str | None) -> bool | None:
    if value is None or value == "":
        return None
    return value.strip().lower() not in ("0", "false", "no", "off")


def client_from_env(
    environ: Mapping[str, str] | None = None, *, timeout_s: float = 10.0, retries: RetryPolicy | int | None = None
) -> LedgerClient:
    """A LedgerClient for TRAINLEDGER_ADDRESS as TRAINLEDGER_PRINCIPAL, with TRAINLEDGER_TOKEN as
    its bearer token over TLS (see the module docstring). Raises KeyError when no address
    is set and ValueError for a token with TRAINLEDGER_TLS=0."""
    env = os.environ if environ is None else environ
    address = env.get(ENV_ADDRESS, "")
    if not address:
        raise KeyError(f"{ENV_ADDRESS} is not set: add it to the function's Modal Secret")
    token = env.get(ENV_TOKEN, "")
    tls = _flag(env.get(ENV_TLS))
    if token and tls is False:
        raise ValueError(f"{ENV_TOKEN} is sent only over TLS; unset {ENV_TLS}=0")
    secure = TLS.from_environment(env) or (TLS() if token else None)
    return LedgerClient(
        address,
        principal=env.get(ENV_PRINCIPAL, ""),
        token=token,
        tls=secure or False,
        timeout_s=timeout_s,
        retries=retries,
    )


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


def run_tags(run_id: str, account: str = "") -> dict[str, str]:
    """The tags that attribute Modal's bill to a run: ``{"trainledger_run_id": run_id}`` plus
    ``"trainledger_account": account`` when the run has a parent account. For
    ``modal.App(..., tags=run_tags(run_id, account))``. Raises ValueError without a run id."""
    if not run_id:
        raise ValueError("run_tags needs the run id")
    tags = {RUN_TAG: run_id}
    if account:
        tags[ACCOUNT_TAG] = account
    return tags


def container_app() -> Any | None:
    """The modal.App this process runs in when it is a Modal container's function, else None
    (also without the modal package)."""
    try:
        import modal
    except ImportError:
        return None
    try:
        if modal.is_local():
            return None
        return modal.App._get_container_app()
    except Exception:  # noqa: BLE001 - an SDK without these is simply not in a container we know
        return None


def tag_app(app: Any = None, *, run_id: str, account: str = "", client: Any = None) -> dict[str, str] | None:
    """Tag a Modal App with run_tags(run_id, account), keeping its other tags: the App's tags
    are read (App.get_tags) and, unless they already say so, set to their union with the run's
    (App.set_tags; the run's win, and a previous run's account tag goes when this run has
    none). `app`: a running, deployed or looked-up modal.App (it needs an App id); default: the
    App of this container (container_app()). `client`: a modal.Client for the calls (default:
    the App's own). Returns the tags the App has now, or None when nothing was tagged: no App
    (outside a container), an App without an id, or a failure. Never raises: a failure is
    logged as a warning, since a tag must not stop training."""
    target = app if app is not None else container_app()
    if target is None:
        log.debug("no Modal App to tag with run %s (not in a Modal container)", run_id)
        return None
    try:
        wanted = run_tags(run_id, account)
        if not getattr(target, "app_id", None):
            log.warning("the Modal App is not running (no App id): not tagged with run %s", run_id)
            return None
        current = dict(target.get_tags(client=client))
        # The run's tags replace a previous run's, its account tag included (removed when none).
        merged = {key: value for key, value in current.items() if key != ACCOUNT_TAG} | wanted
        if merged == current:
            return current
        replaced = current.get(RUN_TAG)
        if replaced and replaced != run_id:
            log.info("the Modal App %s now bills to run %s (was %s)", target.app_id, run_id, replaced)
        target.set_tags(merged, client=client)
        return merged
    except Exception as error:  # noqa: BLE001 - a failed tag is logged, never raised into training
        log.warning("could not tag the Modal App with run %s: %s: %s", run_id, type(error).__name__, error)
        return None


def open_recorder(
    client: LedgerClient | None = None,
    *,
    run_key: str,
    name: str = "",
    spec: Mapping[str, Any] | None = None,
    cap_usd_micro: int | None = None,
    parent_account: str = "",
    resume_from_step: int | Literal["latest"] | None = "latest",
    label: str | None = None,
    reopen: bool = True,
    app: Any = None,
    tag: bool = True,
    source_checkpoint: Any = None,
    **options: Any,
) -> RunRecorder:
    """RunRecorder.open for this container: the client from the environment unless given, the
    attempt labelled with the Modal task (and call) id unless `label` is given, resuming from
    the run's latest checkpoint by default, reopening a failed or stopped run by default (a
    modal.Retries retry of a failed input; reopen=False refuses it with RunEnded). An
    `outbox_dir` option on the container's own disk outlives a ledger outage, not the
    container: a retry in a fresh container cannot replay it.
    Once the run is open, the App it executes in is tagged with its run id and parent account
    (tag_app: `app`, default the container's App; nothing outside a container; `tag=False`
    turns it off); a failed tag is logged, never raised. `source_checkpoint`
    (clients.RunSourceCheckpoint or {"run_id", "step", "uri"}): the checkpoint of another run this
    training starts from, recorded as the run's source when it is opened; it goes with every open
    (each retry's), as the run's cap does."""
    client = client or client_from_env()
    recorder = RunRecorder.open(
        client,
        run_key=run_key,
        name=name,
        spec=spec,
        cap_usd_micro=cap_usd_micro,
        parent_account=parent_account,
        attempt_label=label or attempt_label(),
        resume_from_step=resume_from_step,
        reopen=reopen,
        source_checkpoint=source_checkpoint,
        **options,
    )
    if tag and recorder.run_id:
        tag_app(app, run_id=recorder.run_id, account=parent_account)
    return recorder


# -- checkpoints on a Volume ----------------------------------------------------------------------


def volume_uri(path: str | os.PathLike[str], *, mount: str | os.PathLike[str] | None, volume_name: str | None) -> str:
    """``modal-volume://<volume name>/<path under the mount>`` when both are known, else the path."""
    path = PurePosixPath(os.fspath(path))
    if mount is None or not volume_name:
        return str(path)
    relative = path.relative_to(PurePosixPath(os.fspath(mount)))  # ValueError outside the mount
    return f"{URI_SCHEME}{volume_name}/{relative}"


def commit_and_record(
    volume: Volume,
    recorder: RunRecorder,
    step: int,
    path: str | os.PathLike[str],
    *,
    mount: str | os.PathLike[str] | None = None,
    volume_name: str | None = None,
    uri: str | None = None,
    backend: str = BACKEND,
    fidelity: str = "weights",
    digest: str | None = None,
    final: bool = False,
    sampler_uri: str = "",
    expires_at: datetime | None = None,
) -> CheckpointReceipt:
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
    return recorder.checkpoint(
        step, uri, backend, fidelity, sampler_uri=sampler_uri, final=final, expires_at=expires_at, digest=digest
    )


def resume_path(
    volume: Volume | None,
    state: RunState | None,
    *,
    mount: str | os.PathLike[str] | None = None,
    verify: bool = True,
    verify_digest: bool = True,
) -> Path | None:
    """The local path (real path) of the checkpoint the current attempt resumed from, or None when
    it started from scratch. Reloads `volume` first (when given) so files another container
    committed are visible (Volume.reload() fails while files on the volume are open). A
    ``modal-volume://<volume>/<path>`` uri maps to `mount`/<path>, a plain uri is a path; either
    way it must resolve under `mount` (a `..` or a symlink out of it is refused, always). With
    `verify`, the path must exist and, with `verify_digest` too, its sha256 must be the digest
    recorded with the checkpoint; `verify_digest=False` resumes from a checkpoint recorded
    without a digest (or changed since). Raises ResumeRefused (clients.integrations.resume, a
    ValueError) with its reason: CHECKPOINT_UNKNOWN (the state does not name the checkpoint),
    ROOT_UNKNOWN (no mount), OTHER_VOLUME, OUTSIDE_ROOT, CHECKPOINT_MISSING, DIGEST_MISSING,
    DIGEST_UNVERIFIABLE, DIGEST_MISMATCH."""
    point = resumed(state)
    if point is None:
        return None

    def locate(point: ResumePoint) -> Path:
        assert mount is not None  # decide() asks for the mount first.
        path = _volume_path(volume, point, mount, state)
        if volume is not None:
            volume.reload()
        return path

    return decide(point, _LOADER, root=mount, locate=locate, verify=verify, verify_digest=verify_digest, state=state)


def _volume_path(
    volume: Volume | None, point: ResumePoint, mount: str | os.PathLike[str], state: RunState | None
) -> Path:
    """Where a checkpoint's uri is under the mount; ResumeRefused OTHER_VOLUME for another volume's."""
    uri = point.uri
    if not uri.startswith(URI_SCHEME):
        return local_path(uri)
    name, _, relative = uri[len(URI_SCHEME) :].partition("/")
    own = getattr(volume, "name", None)
    if own and name != own:
        raise ResumeRefused(
            ResumeReason.OTHER_VOLUME,
            f"the checkpoint at step {point.step} is on volume {name!r}, not on {own!r} mounted at {mount}: {uri}",
            state=state,
        )
    return Path(mount) / relative


def _digest(path: Path) -> str:
    return dataset_digest(path) if path.is_dir() else file_digest(path)


# A checkpoint on a volume: a file or a directory of files under the mount, of any backend.
_LOADER = Loader(kind="any", digest=_digest, root_name="mount")
