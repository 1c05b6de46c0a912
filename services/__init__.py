"""trainledger's gRPC edge: servicers, the proto <-> domain codec, the error table, interceptors,
the composition root (`create_server`) and the CLI. Imports ledger's public API, never the other way."""

from services.server import create_server, serve

__all__ = ["create_server", "serve"]
