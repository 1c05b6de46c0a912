"""A loopback fake of Modal's gRPC API, good enough for the real ``modal`` SDK (1.x) to pull a
billing report and tag an App.

The real SDK connects to it over HTTP/2 on 127.0.0.1 (grpclib, as the SDK itself uses): point
``MODAL_SERVER_URL`` at ``server.server_url`` and give the SDK the fake's credentials. No mocks
inside the SDK: its own client, stubs, retries and proto decoding run unchanged.

    server = FakeModalServer().start()
    server.add_item(object_id="ap-1", description="trainer", environment_name="main",
                    interval_start=datetime(2026, 11, 30, 10, tzinfo=UTC), cost="0.734",
                    cost_by_resource={"CPU": "0.034", "GPU (H100)": "0.7"},
                    tags={"trainledger_run_id": "run-1"})
    monkeypatch.setenv("MODAL_SERVER_URL", server.server_url)
    client = modal.Client.from_credentials(FakeModalServer.TOKEN_ID, FakeModalServer.TOKEN_SECRET)
    items = modal.Workspace.from_context(client=client).billing.report(
        start=datetime(2026, 11, 30, tzinfo=UTC), end=datetime(2026, 12, 1, tzinfo=UTC),
        resolution="h", tag_names=["*"])
    server.stop()

What it serves (everything else answers UNIMPLEMENTED, so a call the SDK makes that the fake
does not know about fails loudly instead of being answered wrongly):

- ClientHello, WorkspaceNameLookup (what ``Workspace.from_context()`` hydrates with),
  EnvironmentGetOrCreate (``modal.Environment.from_name``; environments are made on first use).
- WorkspaceBillingReport (unary-stream): the configured items whose interval start lies in
  [start rounded down to the resolution, end); an item's interval must be whole by ``end``
  (Modal reports full intervals only). ``tag_names`` selects tags as Modal does: ``["*"]`` all,
  named keys only otherwise, none without. ``environment_ids`` (Environment.billing.report)
  keep that environment's items.
- AppGetOrCreate (``modal.App.lookup``), AppGetTags and AppSetTags: an app's tags are
  replaced by AppSetTags (Modal's semantics); every AppSetTags is recorded in
  ``server.set_tags_calls`` as (app_id, tags).

Every call checks the credentials the SDK sends (``x-modal-token-id`` / ``x-modal-token-secret``)
and answers UNAUTHENTICATED for others. ``fail_next(method, status)`` makes the next call of that
method fail with a gRPC status (pick one the SDK does not retry, such as PERMISSION_DENIED, to
see a failure at once). Every call is recorded in ``server.calls`` (method names, in order) and
each report request in ``server.report_requests``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf import empty_pb2
from grpclib import GRPCError, Status
from grpclib.server import Server, Stream
from modal_proto import api_grpc, api_pb2

__all__ = ["FakeModalServer", "FakeReportItem", "FakeApp", "ReportRequest"]

_RESOLUTIONS = {"h": timedelta(hours=1), "d": timedelta(days=1)}


@dataclasses.dataclass
class FakeReportItem:
    """One row of the billing report: a Modal object's cost over one interval. Costs are decimal
    text, as on the wire."""

    object_id: str
    description: str
    environment_name: str
    interval_start: datetime
    cost: str
    cost_by_resource: dict[str, str] = dataclasses.field(default_factory=dict)
    tags: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class FakeApp:
    app_id: str
    name: str
    environment_name: str
    tags: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class ReportRequest:
    """A WorkspaceBillingReport request as the SDK sent it."""

    start: datetime
    end: datetime
    resolution: str
    tag_names: list[str]
    environment_ids: list[str]


def _unimplemented(name: str) -> Callable[..., Any]:
    async def handler(self: Any, stream: Stream[Any, Any]) -> None:
        raise GRPCError(Status.UNIMPLEMENTED, f"{name} is not served by the fake Modal server")

    handler.__name__ = name
    return handler


# Every RPC of ModalClient answers UNIMPLEMENTED unless the servicer below defines it.
_Unimplemented: type[api_grpc.ModalClientBase] = type(
    "_Unimplemented",
    (api_grpc.ModalClientBase,),
    {name: _unimplemented(name) for name in api_grpc.ModalClientBase.__abstractmethods__},
)


def _floor(moment: datetime, resolution: str) -> datetime:
    if resolution == "d":
        return moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return moment.replace(minute=0, second=0, microsecond=0)


class _Servicer(_Unimplemented):  # type: ignore[misc, valid-type]
    def __init__(self, fake: FakeModalServer) -> None:
        self.fake = fake

    async def _begin(self, stream: Stream[Any, Any], method: str) -> None:
        fake = self.fake
        with fake.lock:
            fake.calls.append(method)
            failure = fake.failures.pop(method, None)
        metadata: Mapping[str, Any] = stream.metadata or {}
        token = (metadata.get("x-modal-token-id"), metadata.get("x-modal-token-secret"))
        if token != (fake.TOKEN_ID, fake.TOKEN_SECRET):
            raise GRPCError(Status.UNAUTHENTICATED, "token missing or not valid")
        if failure is not None:
            raise GRPCError(failure, f"{method} failed (injected)")

    async def ClientHello(self, stream: Stream[empty_pb2.Empty, api_pb2.ClientHelloResponse]) -> None:
        await stream.recv_message()
        await self._begin(stream, "ClientHello")
        await stream.send_message(api_pb2.ClientHelloResponse())

    async def WorkspaceNameLookup(self, stream: Stream[empty_pb2.Empty, api_pb2.WorkspaceNameLookupResponse]) -> None:
        await stream.recv_message()
        await self._begin(stream, "WorkspaceNameLookup")
        name = self.fake.workspace_name
        await stream.send_message(api_pb2.WorkspaceNameLookupResponse(workspace_name=name, username=name))

    async def EnvironmentGetOrCreate(
        self, stream: Stream[api_pb2.EnvironmentGetOrCreateRequest, api_pb2.EnvironmentGetOrCreateResponse]
    ) -> None:
        request = await stream.recv_message()
        assert request is not None
        await self._begin(stream, "EnvironmentGetOrCreate")
        name = request.deployment_name or self.fake.default_environment
        environment_id = self.fake.environment_id(name)
        await stream.send_message(
            api_pb2.EnvironmentGetOrCreateResponse(
                environment_id=environment_id, metadata=api_pb2.EnvironmentMetadata(name=name)
            )
        )

    async def WorkspaceBillingReport(
        self, stream: Stream[api_pb2.WorkspaceBillingReportRequest, api_pb2.WorkspaceBillingReportItem]
    ) -> None:
        request = await stream.recv_message()
        assert request is not None
        await self._begin(stream, "WorkspaceBillingReport")
        fake = self.fake
        start = request.start_timestamp.ToDatetime().replace(tzinfo=UTC)
        end = request.end_timestamp.ToDatetime().replace(tzinfo=UTC)
        resolution = request.resolution
        if resolution not in _RESOLUTIONS:
            raise GRPCError(Status.INVALID_ARGUMENT, f"resolution must be 'd' or 'h', not {resolution!r}")
        tag_names = list(request.tag_names)
        environment_ids = list(request.environment_ids)
        with fake.lock:
            fake.report_requests.append(ReportRequest(start, end, resolution, tag_names, environment_ids))
            names = {fake.environments[e] for e in environment_ids if e in fake.environments}
            items = list(fake.items)
        first, step = _floor(start, resolution), _RESOLUTIONS[resolution]
        for item in items:
            if not first <= item.interval_start or item.interval_start + step > end:
                continue
            if environment_ids and item.environment_name not in names:
                continue
            if "*" in tag_names:
                tags = dict(item.tags)
            else:
                tags = {key: value for key, value in item.tags.items() if key in tag_names}
            message = api_pb2.WorkspaceBillingReportItem(
                object_id=item.object_id,
                description=item.description,
                environment_name=item.environment_name,
                cost=item.cost,
                tags=tags,
                cost_by_resource=dict(item.cost_by_resource),
            )
            message.interval.FromDatetime(item.interval_start)
            await stream.send_message(message)

    async def AppGetOrCreate(
        self, stream: Stream[api_pb2.AppGetOrCreateRequest, api_pb2.AppGetOrCreateResponse]
    ) -> None:
        request = await stream.recv_message()
        assert request is not None
        await self._begin(stream, "AppGetOrCreate")
        fake = self.fake
        with fake.lock:
            app = fake.apps.get(request.app_name) or next(
                (a for a in fake.apps.values() if a.name == request.app_name), None
            )
        if app is None:
            if request.object_creation_type != api_pb2.OBJECT_CREATION_TYPE_CREATE_IF_MISSING:
                raise GRPCError(Status.NOT_FOUND, f"App {request.app_name!r} not found")
            app = fake.add_app(request.app_name, environment_name=request.environment_name)
        await stream.send_message(api_pb2.AppGetOrCreateResponse(app_id=app.app_id))

    def _app(self, app_id: str) -> FakeApp:
        app = self.fake.apps.get(app_id)
        if app is None:
            raise GRPCError(Status.NOT_FOUND, f"App {app_id!r} not found")
        return app

    async def AppGetTags(self, stream: Stream[api_pb2.AppGetTagsRequest, api_pb2.AppGetTagsResponse]) -> None:
        request = await stream.recv_message()
        assert request is not None
        await self._begin(stream, "AppGetTags")
        with self.fake.lock:
            tags = dict(self._app(request.app_id).tags)
        await stream.send_message(api_pb2.AppGetTagsResponse(tags=tags))

    async def AppSetTags(self, stream: Stream[api_pb2.AppSetTagsRequest, empty_pb2.Empty]) -> None:
        request = await stream.recv_message()
        assert request is not None
        await self._begin(stream, "AppSetTags")
        with self.fake.lock:
            app = self._app(request.app_id)
            app.tags = dict(request.tags)
            self.fake.set_tags_calls.append((request.app_id, dict(request.tags)))
        await stream.send_message(empty_pb2.Empty())


class FakeModalServer:
    """Modal's control plane on a loopback port, on its own thread and event loop."""

    TOKEN_ID = "ak-trainledgerfake"
    TOKEN_SECRET = "as-trainledgerfake"

    def __init__(self, *, workspace_name: str = "trainledger-tests", default_environment: str = "main") -> None:
        self.workspace_name = workspace_name
        self.default_environment = default_environment
        self.lock = threading.Lock()
        self.items: list[FakeReportItem] = []
        self.apps: dict[str, FakeApp] = {}
        self.environments: dict[str, str] = {}  # environment id -> name
        self.calls: list[str] = []
        self.report_requests: list[ReportRequest] = []
        self.set_tags_calls: list[tuple[str, dict[str, str]]] = []
        self.failures: dict[str, Status] = {}
        self.port = 0
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: Server | None = None

    # -- configuration ----------------------------------------------------------------------

    def add_item(
        self,
        *,
        object_id: str,
        description: str,
        environment_name: str,
        interval_start: datetime,
        cost: str,
        cost_by_resource: Mapping[str, str] | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> FakeReportItem:
        item = FakeReportItem(
            object_id=object_id,
            description=description,
            environment_name=environment_name,
            interval_start=interval_start.astimezone(UTC),
            cost=cost,
            cost_by_resource=dict(cost_by_resource or {}),
            tags=dict(tags or {}),
        )
        with self.lock:
            self.items.append(item)
        return item

    def add_app(self, name: str, *, environment_name: str = "", tags: Mapping[str, str] | None = None) -> FakeApp:
        with self.lock:
            app = FakeApp(
                app_id=f"ap-fake{next(self._ids):06d}",
                name=name,
                environment_name=environment_name or self.default_environment,
                tags=dict(tags or {}),
            )
            self.apps[app.app_id] = app
        return app

    def environment_id(self, name: str) -> str:
        with self.lock:
            for environment_id, known in self.environments.items():
                if known == name:
                    return environment_id
            environment_id = f"en-fake{next(self._ids):06d}"
            self.environments[environment_id] = name
            return environment_id

    def fail_next(self, method: str, status: Status = Status.PERMISSION_DENIED) -> None:
        with self.lock:
            self.failures[method] = status

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def server_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeModalServer:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="fake-modal-server", daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), loop).result(30)
        return self

    async def _start(self) -> None:
        self._server = Server([_Servicer(self)])
        await self._server.start("127.0.0.1", 0)
        listening: Any = self._server._server  # grpclib keeps the asyncio server it listens with
        self.port = int(listening.sockets[0].getsockname()[1])

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._loop = self._thread = None
        try:
            asyncio.run_coroutine_threadsafe(self._stop(), loop).result(30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(30)
            loop.close()

    def __enter__(self) -> FakeModalServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
