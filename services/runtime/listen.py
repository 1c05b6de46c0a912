"""Listen addresses: HOST:PORT or [IPv6]:PORT parsed and checked before anything is served, the
dashboard's and /metrics' sockets bound (an address in use is refused, never shared), and how a
browser on this machine reaches a wildcard bind."""

from __future__ import annotations

import errno
import ipaddress
import re
import socket

__all__ = ["StartupError", "parse_listen", "listen_address", "bind_problem", "bind_http", "reachable"]


class StartupError(Exception):
    """The server cannot start: the database cannot be opened or the address cannot be bound."""


LISTEN_FORMAT = "expected HOST:PORT or [IPv6]:PORT with a port from 0 to 65535, e.g. 127.0.0.1:50051"
BIND_ERRORS = {
    errno.EADDRINUSE: "the address is already in use",
    errno.EADDRNOTAVAIL: "the address is not available on this machine",
    errno.EACCES: "permission denied",
}


def parse_listen(address: str) -> tuple[str, int]:
    """The host (an IPv6 address without its brackets) and port of a listen address, HOST:PORT or
    [IPv6]:PORT with a port from 0 to 65535 (0: any free port). Raises StartupError naming what
    is wrong; grpc itself would serve a bare host on port 443."""

    def refuse(why: str) -> StartupError:
        return StartupError(f"cannot listen on {address}: {why}; {LISTEN_FORMAT}")

    port: str | None
    bracketed = re.fullmatch(r"\[([^\[\]]*)\](?::(.*))?", address)
    if bracketed:
        host, port = bracketed.group(1), bracketed.group(2)
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise refuse(f"{host!r} is not an IPv6 address") from None
    else:
        if address.count(":") > 1:
            raise refuse("an IPv6 address goes in brackets")
        host, colon, port = address.partition(":")
        if not colon:
            port = None
        if not host or re.search(r"[\s\[\]/@]", host):
            raise refuse("no host" if not host else f"{host!r} is not a host name or address")
    if not port:
        raise refuse("no port")
    if not re.fullmatch(r"[0-9]{1,5}", port) or int(port) > 65535:
        raise refuse(f"{port!r} is not a port")
    return host, int(port)


def listen_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def bind_problem(host: str, port: int) -> str | None:
    """Why `host`:`port` cannot be listened on, or None when it can. Binds each address the host
    resolves to as gRPC does (SO_REUSEADDR, no SO_REUSEPORT): an address in use anywhere is a
    refusal; an address of the host this machine lacks (::1 without IPv6) is not, while another
    one binds."""
    try:
        resolved = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as error:
        return f"cannot resolve {host}: {getattr(error, 'strerror', None) or error}"
    problems: list[tuple[int, str]] = []
    for family, kind, proto, _, sockaddr in dict.fromkeys(resolved):  # Each address once.
        try:
            with socket.socket(family, kind, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(sockaddr)
        except OSError as error:
            reason = BIND_ERRORS.get(error.errno or 0) or error.strerror or str(error)
            if error.errno == errno.EACCES and 0 < port < 1024:
                reason += " (ports below 1024 need privileges)"
            problems.append((error.errno or 0, reason))
        else:
            problems.append((0, ""))
    in_use = [reason for number, reason in problems if number == errno.EADDRINUSE]
    if in_use:
        return in_use[0]
    if problems and all(reason for _, reason in problems):
        return problems[0][1]
    return None


def bind_http(address: str, what: str = "the dashboard") -> list[socket.socket]:
    """Listening sockets for `what` (the dashboard, or /metrics) at `address` (HOST:PORT; port 0:
    one free port for every address of the host). Raises StartupError naming what is wrong."""
    host, wanted_port = parse_listen(address)
    problem = bind_problem(host, wanted_port)
    if problem:
        raise StartupError(f"cannot serve {what} on {address}: {problem}")
    try:
        resolved = socket.getaddrinfo(host, wanted_port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as error:
        raise StartupError(f"cannot serve {what} on {address}: cannot resolve {host}") from error
    sockets: list[socket.socket] = []
    port = wanted_port
    try:
        for family, kind, proto, _, sockaddr in dict.fromkeys(resolved):
            listener = socket.socket(family, kind, proto)
            try:
                listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                listener.bind((sockaddr[0], port, *sockaddr[2:]))
                listener.listen(1024)
                listener.setblocking(False)
            except OSError as error:
                listener.close()
                if sockets and error.errno == errno.EADDRNOTAVAIL:
                    continue  # An address of the host this machine lacks (::1 without IPv6).
                reason = BIND_ERRORS.get(error.errno or 0) or error.strerror or str(error)
                raise StartupError(f"cannot serve {what} on {address}: {reason}") from None
            sockets.append(listener)
            port = listener.getsockname()[1]
    except BaseException:
        for listener in sockets:
            listener.close()
        raise
    return sockets


def reachable(address: str) -> str:
    """`address` (HOST:PORT) as a browser on this machine reaches it: a wildcard bind (0.0.0.0,
    ::), which no browser is sent to and the dashboard does not answer for, as loopback."""
    host, _, port = address.rpartition(":")
    wildcard = {"0.0.0.0": "127.0.0.1", "[::]": "[::1]", "::": "[::1]"}
    return f"{wildcard.get(host, host)}:{port}"
