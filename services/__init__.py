"""trainledger's programs over the ledger: the gRPC services (services.grpc), the dashboard
(services.web), what both run on (services.runtime), the CLI (services.cli) and the text the CLI
and the dashboard print for people (services.render); the composition root (`create_server`,
services.server) puts a server together. Imports ledger's public API, never the other way.

`create_server` and `serve` are imported on first use: the CLI imports this package, and a command
that only talks to a server must not load the ledger and gRPC's server side to start."""

from __future__ import annotations

from typing import Any

__all__ = ["create_server", "serve"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from services import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
