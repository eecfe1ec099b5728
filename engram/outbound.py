"""The one HTTP client for every request engram makes to a host someone else named (DID resolution, the PLC
directory, synced PDSes and space hosts, registered syncers, client metadata): docs/security.md#outbound-requests.

The check runs on addresses, after name resolution, so no spelling of a host gets past it: ``0x7f000001``,
``0x7f.1``, octal, decimal, ``[::ffff:127.0.0.1]`` and a DNS name pointing at 127.0.0.1 all end at the same
test. Two places see every connection aiohttp opens, redirect hops included:

- the resolver (``GuardedResolver``) drops refused addresses from what a name resolves to, so a name with
  one public and one internal address connects only to the public one;
- the socket factory refuses to create a socket for a refused address: IP literals skip the resolver, and
  it is the last step before ``connect()`` whatever produced the address.

Refused: loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7), link-local, CGNAT (100.64/10), multicast, unspecified, reserved
and documentation ranges, and any IPv6 address embedding one (v4-mapped, v4-compatible, 6to4, NAT64):
whatever ``ipaddress`` does not call global. ``ENGRAM_DEV=1`` allows everything; ``ENGRAM_OUTBOUND_ALLOW``
lists networks that are allowed anyway (an internal PLC mirror, the fakes in tests).

Callers see ``describe(exc)``, which never names the exception class, address or port: a caller who picks
the URL must not learn which internal ports answer.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
USER_AGENT = "engram (+https://github.com/engram)"
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class OutboundRefused(OSError):
    """A request engram will not make: an internal address, or a credential over plain http."""


def embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (v4-mapped, v4-compatible, 6to4, NAT64), if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    packed = ip.packed
    if ip in _NAT64 or (packed[:12] == bytes(12) and int(ip) > 1):  # ::a.b.c.d (deprecated v4-compatible)
        return ipaddress.IPv4Address(packed[12:])
    return None


def is_internal(ip: IpAddress) -> bool:
    """Anything not on the public internet, or an IPv6 address wrapping such an IPv4 address."""
    if isinstance(ip, ipaddress.IPv6Address) and (inner := embedded_v4(ip)) is not None:
        return is_internal(inner)  # where the packets go is the IPv4 address's network
    return not ip.is_global or ip.is_multicast or ip.is_unspecified or ip.is_reserved


def parse_host_address(host: str) -> IpAddress | None:
    """The address an IP-literal host names in any spelling the C library accepts (``0x7f.1``, ``017700000001``,
    ``2130706433``), or None for a name. For early, friendlier refusals; the connect-time check is the guard."""
    host = host.strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class OutboundPolicy:
    dev: bool = False  # ENGRAM_DEV=1: internal addresses and plain http are fine
    allow: tuple[IpNetwork, ...] = ()  # ENGRAM_OUTBOUND_ALLOW

    def permits(self, ip: IpAddress) -> bool:
        if self.dev or not is_internal(ip):
            return True
        candidates = [ip]
        if isinstance(ip, ipaddress.IPv6Address) and (inner := embedded_v4(ip)) is not None:
            candidates.append(inner)
        return any(c in net for c in candidates for net in self.allow if c.version == net.version)

    def permits_host(self, host: str) -> bool:
        """False for a host that is an IP literal (in any spelling) this policy refuses, or ``localhost``."""
        if host.lower().rstrip(".") in ("localhost", "localhost.localdomain") or host.lower().endswith(
            ".localhost"
        ):
            return self.permits(ipaddress.ip_address("127.0.0.1"))
        ip = parse_host_address(host)
        return ip is None or self.permits(ip)

    def check_url(self, url: str, *, credential: bool) -> None:
        """Before sending: an http(s) URL whose host is not a refused literal, and https whenever the request
        carries a credential (a password, a bearer token), except in dev mode. Raises OutboundRefused. A URL
        that no request could be built from is refused here too (a malformed IPv6 literal, a port out of
        range, credentials in the URL, a host name that is not valid IDNA), rather than failing later
        inside aiohttp with an error no caller expects."""
        try:
            parts = urlsplit(url)
            port_ok = parts.port is None or parts.port > 0
        except ValueError:
            raise OutboundRefused("not an http(s) URL") from None
        if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
            raise OutboundRefused("not an http(s) URL")
        if parts.username is not None or parts.password is not None:
            raise OutboundRefused("credentials may not be part of the URL")
        if parse_host_address(parts.hostname) is None and not valid_host_name(parts.hostname):
            raise OutboundRefused("not a valid host name")
        if credential and parts.scheme != "https" and not self.dev:
            raise OutboundRefused("credentials are sent over https only")
        if not self.permits_host(parts.hostname):
            raise OutboundRefused("the host is an internal address")


def valid_host_name(host: str) -> bool:
    """Whether `host` is a DNS name a resolver can be asked for: IDNA-encodable, labels of 1-63 octets,
    253 in all (a trailing dot allowed)."""
    try:
        encoded = host.rstrip(".").encode("idna")
    except UnicodeError:
        return False
    return 0 < len(encoded) <= 253 and all(0 < len(label) <= 63 for label in encoded.split(b"."))


class GuardedResolver(AbstractResolver):
    """Resolves through ``inner`` and keeps only the addresses the policy permits."""

    def __init__(self, policy: OutboundPolicy, inner: AbstractResolver | None = None):
        self._policy = policy
        # getaddrinfo in a thread: the C library's reading of every numeric spelling, nothing to close
        self._inner = inner or aiohttp.ThreadedResolver()

    async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET) -> list[ResolveResult]:
        if parse_host_address(host) is None and not valid_host_name(host):
            # getaddrinfo's IDNA codec would raise UnicodeError, which aiohttp passes on unwrapped: as a
            # name that does not resolve, it becomes the connection error every caller handles
            raise socket.gaierror(socket.EAI_NONAME, "not a valid host name")
        found = await self._inner.resolve(host, port, family)
        kept = [r for r in found if self._policy.permits(ipaddress.ip_address(r["host"].split("%", 1)[0]))]
        if not kept:
            raise OutboundRefused("the host is an internal address")
        return kept

    async def close(self) -> None:
        await self._inner.close()


def _socket_factory(policy: OutboundPolicy):
    def create(addr_info) -> socket.socket:
        family, type_, proto, _, sockaddr = addr_info
        if not policy.permits(ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])):
            raise OutboundRefused("the host is an internal address")
        return socket.socket(family=family, type=type_, proto=proto)

    return create


def guarded_session(
    policy: OutboundPolicy,
    *,
    resolver: AbstractResolver | None = None,
    headers: dict[str, str] | None = None,
) -> aiohttp.ClientSession:
    """A ClientSession whose every connection is checked against ``policy``. ``resolver`` replaces the
    system's name resolution (tests point names at loopback with it). Proxies from the environment are
    ignored: a proxy would connect on engram's behalf, past the check."""
    connector = aiohttp.TCPConnector(
        resolver=GuardedResolver(policy, resolver), socket_factory=_socket_factory(policy)
    )
    return aiohttp.ClientSession(
        connector=connector, headers={"User-Agent": USER_AGENT, **(headers or {})}, trust_env=False
    )


def refused(exc: BaseException) -> bool:
    """Whether an aiohttp error (or its cause) is the policy refusing the request."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OutboundRefused):
            return True
        current = getattr(current, "os_error", None) or current.__cause__ or current.__context__
    return False


def describe(exc: BaseException) -> str:
    """What a caller may be told about a failed outbound request: never the exception class, the address, the
    port or the TLS detail (they would map the operator's internal network)."""
    if isinstance(exc, OutboundRefused) or refused(exc):
        return "refused: not a public https host"
    return "the host could not be reached"
