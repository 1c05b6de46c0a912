"""The in-process ledger server of the tests: services.embedded, where the examples find it too."""

from __future__ import annotations

from services.embedded import ServerThread, free_port

__all__ = ["ServerThread", "free_port"]
