"""trainledger's gRPC edge: servicers, the proto <-> domain codec, the error table, interceptors,
the composition root (`create_server`) and the CLI. Imports ledger's public API, never the other way.

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
