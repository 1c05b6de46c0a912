"""An attempt's lease, the same on both sides of the wire: its bounds and default in seconds, and
how often a heartbeat renews it (every lease_s / HEARTBEAT_SHARE: the ledger records one only
when nothing renewed the lease in that long, the client beats that often while idle)."""

from __future__ import annotations

__all__ = ["HEARTBEAT_SHARE", "LEASE_S_DEFAULT", "LEASE_S_MAX", "LEASE_S_MIN"]

LEASE_S_DEFAULT = 60
LEASE_S_MIN = 2
LEASE_S_MAX = 86_400
HEARTBEAT_SHARE = 20
