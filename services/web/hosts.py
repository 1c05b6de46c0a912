"""Which Host headers the dashboard answers: the names it is served under, never any other, so that
a page on a name that an attacker points at this machine (DNS rebinding) cannot read the API, even
with authentication off.

Answered: localhost, 127.0.0.1 and ::1; the host of its --http address; the address a request
arrived at (a literal address in the Host header is what a browser sends when it is typed, and no
DNS answer can make one); and the names an operator allows (`serve --http-allowed-host NAME`,
repeatable, or TRAINLEDGER_HTTP_ALLOWED_HOSTS, comma-separated), where `*.example.com` allows
every name under example.com. The port is not compared. Anything else, a missing Host header
included, is refused by services.web.app with 421 HOST_NOT_ALLOWED.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

__all__ = ["AllowedHosts", "HostsError", "HOSTS_MAX", "LOOPBACK_HOSTS"]

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
HOSTS_MAX = 64
HOST_LENGTH_MAX = 253
_LABEL = r"[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?"
_NAME = re.compile(rf"(\*\.)?{_LABEL}(\.{_LABEL})*")
_HOST_HEADER = re.compile(r"(?P<host>\[[0-9a-f:.]+\]|[^\[\]:/@\s]+)(:[0-9]{1,5})?")


class HostsError(ValueError):
    """An allowed host that is not a host name (of HOST_LENGTH_MAX characters at most), an address,
    or `*.` and a name; or more than HOSTS_MAX of them."""


def _normal(host: str) -> str:
    """A host as compared: lower case, an address in its canonical form without brackets."""
    host = host.strip().lower()
    try:
        return str(ipaddress.ip_address(host[1:-1] if host.startswith("[") and host.endswith("]") else host))
    except ValueError:
        return host


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _checked(name: str) -> str:
    host = _normal(name)
    if not _is_address(host) and (len(host) > HOST_LENGTH_MAX or not _NAME.fullmatch(host)):
        shown = name if len(name) <= 80 else name[:80] + "..."
        raise HostsError(f"--http-allowed-host {shown!r} is not a host name, an address, or *. and a name")
    return host


class AllowedHosts:
    """The hosts the dashboard answers: the loopback names, `bound` (the host of its listen
    address) and `names`. Raises HostsError for a name that is not one, or more than HOSTS_MAX."""

    def __init__(self, names: Iterable[str] = (), bound: str = "") -> None:
        given = [name for name in names if name.strip()]
        if len(given) > HOSTS_MAX:
            raise HostsError(f"at most {HOSTS_MAX} --http-allowed-host names, not {len(given)}")
        checked = [_checked(name) for name in given]
        self.exact = {*LOOPBACK_HOSTS, *(name for name in checked if not name.startswith("*."))}
        if bound and not (_is_address(_normal(bound)) and ipaddress.ip_address(_normal(bound)).is_unspecified):
            self.exact.add(_normal(bound))  # Not 0.0.0.0 nor ::, which no browser should be sent to.
        self.suffixes = tuple(name[1:] for name in checked if name.startswith("*."))

    def allows(self, host_header: str, local_address: str = "") -> bool:
        """Whether a request with this Host header (empty: none), arriving at `local_address`,
        is answered."""
        match = _HOST_HEADER.fullmatch(host_header.strip().lower())
        if match is None:
            return False
        host = _normal(match.group("host"))
        if host in self.exact or (local_address and host == _normal(local_address)):
            return True
        return any(host.endswith(suffix) for suffix in self.suffixes)
