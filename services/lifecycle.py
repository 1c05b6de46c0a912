"""The running server: a grpc.aio.Server that also runs the reservation sweep and the storage probe
behind health, serves the dashboards, and shuts down in order. services.server builds it.

Health follows storage and projection: a probe reads the head of the log every PROBE_INTERVAL_S in
a thread of its own; when storage is unreachable (or the read hangs past PROBE_TIMEOUT_S), or
projection stopped on an event it could not apply, every service turns NOT_SERVING, and SERVING
again as soon as a read succeeds. Health follows readiness too (services.runtime.readiness).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import grpc
from grpc_health.v1 import health_pb2

from ledger.domain.errors import Unavailable
from services.runtime.auth import Gate
from services.runtime.edge import Edge
from services.runtime.holder import Holder
from services.runtime.readiness import Readiness
from services.web.ops import Ops
from services.web.serving import Dashboard
from trainledger.v1 import events_pb2, registry_pb2, runs_pb2, spend_pb2

__all__ = ["LedgerServer", "SERVICE_NAMES", "GRACE_S"]

log = logging.getLogger("trainledger.services")

SWEEP_INTERVAL_S = 1.0
PROBE_INTERVAL_S = 1.0
# A probe still unanswered after this long counts as storage unavailable (a hung connection).
PROBE_TIMEOUT_S = 3.0
GRACE_S = 5.0
SERVICE_NAMES = tuple(
    module.DESCRIPTOR.services_by_name[name].full_name
    for module, name in ((runs_pb2, "Runs"), (spend_pb2, "Spend"), (registry_pb2, "Registry"), (events_pb2, "Events"))
)


class LedgerServer(grpc.aio.Server):
    """A grpc.aio.Server that also runs the reservation sweep and shuts down in order: health
    NOT_SERVING, live streams told to end, in-flight calls finished within the grace, then the
    ledger closed (when this server opened it) and the database's holder lock released."""

    def __init__(
        self,
        server: grpc.aio.Server,
        edge: Edge,
        health_servicer: Any,
        *,
        owns_ledger: bool,
        address: str = "",
        holder: Holder | None = None,
        gate: Gate | None = None,
        dashboard: Dashboard | None = None,
        ops: Ops | None = None,
        ops_dashboard: Dashboard | None = None,
    ) -> None:
        self.server, self.edge, self.health = server, edge, health_servicer
        self.readiness = ops.readiness if ops is not None else Readiness(edge.ledger)
        self.metrics = ops.metrics if ops is not None else None
        self.ops_dashboard = ops_dashboard  # /metrics, /healthz, /readyz on an address of their own.
        self.owns_ledger, self.holder = owns_ledger, holder
        self.gate = gate
        self.dashboard = dashboard
        self.address = address  # HOST:PORT as bound (the port chosen for port 0).
        self.serving = True
        self._sweeper: asyncio.Task[None] | None = None
        self._prober: asyncio.Task[None] | None = None

    def add_generic_rpc_handlers(self, generic_rpc_handlers: Any) -> None:
        self.server.add_generic_rpc_handlers(generic_rpc_handlers)

    def add_insecure_port(self, address: str) -> int:
        return self.server.add_insecure_port(address)

    def add_secure_port(self, address: str, server_credentials: grpc.ServerCredentials) -> int:
        return self.server.add_secure_port(address, server_credentials)

    async def start(self) -> None:
        await self.server.start()
        # Health reflects readiness: NOT_SERVING until the views have caught up (services.runtime.readiness).
        try:
            self.serving = await asyncio.wait_for(asyncio.to_thread(self._ready), PROBE_TIMEOUT_S)
        except Exception as error:  # Storage is down or hangs: the probe says so, and says when it is back.
            self.serving = False
            self.readiness.storage_unavailable(str(error) or f"storage did not answer within {PROBE_TIMEOUT_S:.0f} s")
        status = health_pb2.HealthCheckResponse.SERVING if self.serving else health_pb2.HealthCheckResponse.NOT_SERVING
        if not self.serving:
            log.warning("not ready yet: %s", self.readiness.why)
        for name in ("", *SERVICE_NAMES):
            await self.health.set(name, status)
        if self.ops_dashboard is not None:
            await self.ops_dashboard.start()
        self._sweeper = asyncio.create_task(self._sweep(), name="trainledger-sweep")
        self._prober = asyncio.create_task(self._probe(), name="trainledger-probe")
        if self.dashboard is not None:
            await self.dashboard.start()

    def _ready(self) -> bool:
        """The storage probe and readiness, in one worker thread: raises what the probe raises."""
        self.edge.ledger.check()
        return self.readiness.update()

    @property
    def metrics_address(self) -> str:
        """HOST:PORT of /metrics on an address of its own; empty when none is served."""
        return self.ops_dashboard.address if self.ops_dashboard is not None else ""

    @property
    def http_address(self) -> str:
        """HOST:PORT of the dashboard as bound; empty when none is served."""
        return self.dashboard.address if self.dashboard is not None else ""

    async def _sweep(self) -> None:
        """Every SWEEP_INTERVAL_S: settle the holds past their expiry, and record lost the runs
        whose attempt's lease lapsed (ledger.application.leases: every replica sweeps, one
        records each loss)."""
        while True:
            await asyncio.sleep(SWEEP_INTERVAL_S)
            for sweep in (self.edge.ledger.expire_reservations, self.edge.ledger.sweep_leases):
                try:
                    await self.edge.call(sweep)
                except Unavailable:
                    pass  # Storage is down (the probe reports it) or the views lag: next round.
                except Exception:  # The sweep must outlive a storage hiccup.
                    log.exception("the %s sweep failed; retrying", sweep.__name__)

    async def _probe(self) -> None:
        """Health follows storage: a read of the log's head every PROBE_INTERVAL_S, in a thread
        of its own (not in the workers' pool, which a storage outage may have filled)."""
        probe: asyncio.Future[bool] | None = None
        try:
            while True:
                if probe is None:
                    probe = asyncio.ensure_future(asyncio.to_thread(self._ready))
                done, _ = await asyncio.wait({probe}, timeout=PROBE_TIMEOUT_S)
                if not done:  # Still hanging: unavailable until it answers.
                    hung = f"storage did not answer within {PROBE_TIMEOUT_S:.0f} s"
                    self.readiness.storage_unavailable(hung)
                    await self._set_serving(False, hung)
                    continue
                error = probe.exception()
                probe_result, probe = error is None and probe.result(), None
                if error is None and not probe_result:
                    await self._set_serving(False, f"not ready: {self.readiness.why}")
                elif error is None:
                    await self._set_serving(True, "storage answers")
                else:
                    if not isinstance(error, Unavailable) and self.serving:
                        log.error("the storage probe failed", exc_info=error)
                    self.readiness.storage_unavailable(str(error))
                    await self._set_serving(False, str(error))
                await asyncio.sleep(PROBE_INTERVAL_S)
        finally:
            if probe is not None:
                probe.cancel()  # Its thread finishes on its own; nobody waits for the answer.

    async def _set_serving(self, serving: bool, why: str) -> None:
        if not serving and self.readiness.ready:
            self.readiness.lost(why)  # /readyz follows: the probe failed or hangs.
        if serving == self.serving:
            return
        self.serving = serving
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        if serving:
            log.info("storage is back (%s): health SERVING", why)
        elif why.startswith("not ready"):
            log.warning("%s: health NOT_SERVING", why)
        else:
            log.warning("storage is unavailable (%s): health NOT_SERVING", why)
        for name in ("", *SERVICE_NAMES):
            await self.health.set(name, status)

    async def stop(self, grace: float | None = None) -> None:
        await self.health.enter_graceful_shutdown()
        self.edge.close()
        for task in (self._sweeper, self._prober):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        try:
            if self.ops_dashboard is not None:
                await self.ops_dashboard.stop(grace)
            if self.dashboard is not None:
                await self.dashboard.stop(grace)
        finally:
            await self.server.stop(grace)
            self.edge.workers.close()  # The calls in flight have ended (or the grace has).
        try:
            if self.owns_ledger:
                self.owns_ledger = False
                await asyncio.to_thread(self.edge.ledger.close)
        finally:
            if self.holder is not None:
                self.holder.release()

    async def wait_for_termination(self, timeout: float | None = None) -> bool:
        return await self.server.wait_for_termination(timeout)
