"""One HTTP POST to a webhook endpoint, guarded: http(s) only; the host is resolved
first and refused when any of its addresses is private, loopback, link-local,
multicast, reserved or unspecified (unless ``PODIUM_WEBHOOK_ALLOW_PRIVATE``); the
connection then goes to the address checked (a second lookup cannot swap it); no
redirect is followed; a response is read up to a few kilobytes; every step has the
timeout. The standard library only: nothing here needs more."""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

READ_AT_MOST = 4096  # bytes of a response kept (its excerpt is shorter)


class Refused(Exception):
    """The URL may not be called (scheme, or an address that is not public)."""


@dataclass(frozen=True)
class Answer:
    status_code: int | None  # None: no HTTP answer (refused, timed out, connection error)
    excerpt: str
    error: str
    duration_ms: float

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not (ip.is_multicast or ip.is_reserved or ip.is_unspecified)


def resolve(url: str, *, allow_private: bool) -> tuple[str, str, int, str]:
    """(scheme, host, port, address to connect to); raises ``Refused``."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise Refused(f"Only http and https URLs are called, not {parts.scheme or 'none'}.")
    host = parts.hostname
    if not host:
        raise Refused("The URL has no host.")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise Refused(f"The URL's port is not valid: {exc}.") from None
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise Refused(f"The host {host} does not resolve: {exc}.") from None
    addresses = [info[4][0] for info in found]
    if not addresses:
        raise Refused(f"The host {host} does not resolve.")
    if not allow_private:
        blocked = [a for a in addresses if not _public(a)]
        if blocked:
            raise Refused(
                f"The host {host} resolves to an address that is not public ({blocked[0]}): "
                "refused (PODIUM_WEBHOOK_ALLOW_PRIVATE=1 allows it, for development)."
            )
    return parts.scheme, host, port, addresses[0]


class _Pinned(http.client.HTTPConnection):
    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self.address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)


class _PinnedTLS(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self.address = address

    def connect(self) -> None:
        sock = socket.create_connection((self.address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


def post(
    url: str, *, body: bytes, headers: dict[str, str], timeout: float, allow_private: bool
) -> Answer:
    """POST ``body``; never raises (a refusal or a failure is an ``Answer`` without a
    status code)."""
    started = time.perf_counter()

    def elapsed() -> float:
        return round((time.perf_counter() - started) * 1000, 1)

    try:
        scheme, host, port, address = resolve(url, allow_private=allow_private)
    except Refused as exc:
        return Answer(None, "", str(exc), elapsed())
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kind = _PinnedTLS if scheme == "https" else _Pinned
    connection = kind(host, port, address, timeout)
    try:
        connection.request(
            "POST",
            target,
            body=body,
            headers={
                "Content-Type": "application/json",
                "User-Agent": "Podium-Webhooks",
                **headers,
            },
        )
        response = connection.getresponse()
        content = response.read(READ_AT_MOST)
        return Answer(response.status, content.decode("utf-8", "replace"), "", elapsed())
    except TimeoutError:
        return Answer(None, "", f"No answer within {timeout:g} s.", elapsed())
    except (OSError, http.client.HTTPException, ssl.SSLError) as exc:
        return Answer(None, "", f"{type(exc).__name__}: {exc}"[:500], elapsed())
    finally:
        connection.close()
