"""An attempt's lease, the same on both sides of the wire: its bounds and default in seconds, and
how often a heartbeat renews it (every heartbeat_period_s: the ledger records one only when
nothing renewed the lease in that long, the client beats that often while idle).

The period is lease_s / HEARTBEAT_SHARE, but never above HEARTBEAT_PERIOD_MAX_S: the last sign of
life is what an abandoned GPU hold is charged up to, so its resolution must not grow with the
lease (an hour's lease would otherwise leave a crash inside a minute's hold charged $0). An idle
attempt thus adds at most one event per HEARTBEAT_PERIOD_MAX_S, as with the default lease."""

from __future__ import annotations

__all__ = [
    "HEARTBEAT_PERIOD_MAX_S",
    "HEARTBEAT_SHARE",
    "LEASE_S_DEFAULT",
    "LEASE_S_MAX",
    "LEASE_S_MIN",
    "heartbeat_period_s",
]

LEASE_S_DEFAULT = 60
LEASE_S_MIN = 2
LEASE_S_MAX = 86_400
HEARTBEAT_SHARE = 20
HEARTBEAT_PERIOD_MAX_S = 3.0


def heartbeat_period_s(lease_s: int) -> float:
    """How often an idle attempt with a lease of `lease_s` beats (and the ledger records a beat)."""
    return min(lease_s / HEARTBEAT_SHARE, HEARTBEAT_PERIOD_MAX_S)
