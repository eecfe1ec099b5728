"""Which redirect URIs a client may use, read the same way by every parser that will ever see them
(docs/oauth.md#redirect-uris).

A URI is accepted only if Python's ``urlsplit``, yarl (which aiohttp uses to send the redirect) and the
WHATWG URL parser (what the person's browser follows; ``ada-url``) agree on its scheme, host and port. A
URI they read differently, such as ``http://evil.example\\@127.0.0.1/cb`` (urlsplit: host 127.0.0.1; a
browser: evil.example), would let the consent page name one host while the code goes to another, so it
is refused outright, as are user info, fragments, whitespace, control and non-ASCII characters.

Then, by scheme (the native-app rules of docs/oauth.md#redirect-uris):

- ``https`` to any host (claimed https redirects included);
- ``http`` only to the loopback host (``127.0.0.1``, ``[::1]``, ``localhost``), any port;
- a private-use scheme of a native app (``cursor://``, ``vscode://``, ``com.example.app:/cb``), except the
  schemes a browser runs or opens locally (``javascript:``, ``data:``, ``file:``...), which are refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

import ada_url
from yarl import URL

_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")
_DEFAULT_PORTS = {"http": 80, "https": 443}
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
# Schemes a browser executes, renders from the URI itself or hands to local handlers: never a redirect target.
REFUSED_SCHEMES = frozenset(
    {
        "javascript", "vbscript", "data", "file", "blob", "filesystem", "about", "view-source", "jar",
        "ftp", "ws", "wss", "mailto", "tel", "sms", "intent", "resource", "chrome", "chrome-extension",
        "moz-extension", "ms-browser-extension", "livescript", "mhtml",
    }
)  # fmt: skip


class RedirectRefused(ValueError):
    """The redirect URI is not one a client may use; the message says why."""


@dataclass(frozen=True)
class RedirectTarget:
    scheme: str
    host: str  # "" for a private-use URI without an authority (com.example.app:/cb)

    @property
    def shown(self) -> str:
        """What the consent page names: the host for the web, scheme and host for a native app."""
        if self.scheme in _DEFAULT_PORTS:
            return self.host
        return f"{self.scheme}://{self.host}" if self.host else f"{self.scheme}:"


def _port(scheme: str, port: int | str | None) -> int | None:
    return int(port) if port not in (None, "") else _DEFAULT_PORTS.get(scheme)


_RESPONSE_PARAMS = frozenset({"code", "state", "error", "error_description", "error_uri", "iss"})


def parse_redirect(uri: str) -> RedirectTarget:
    """The target of an acceptable redirect URI; RedirectRefused otherwise."""
    if not uri or len(uri) > 2000 or not all("\x21" <= ch <= "\x7e" for ch in uri) or "\\" in uri:
        raise RedirectRefused("redirect URIs are printable ASCII without spaces or backslashes")
    if "#" in uri:
        raise RedirectRefused("redirect URIs carry no fragment (RFC 6749 §3.1.2)")
    try:
        split = urlsplit(uri)
        split_port = split.port
        yarl_url = URL(uri)
        whatwg = ada_url.parse_url(uri)
    except ValueError:
        raise RedirectRefused("the redirect URI does not parse") from None
    scheme = split.scheme.lower()
    if not _SCHEME.fullmatch(scheme):
        raise RedirectRefused("the redirect URI has no scheme")
    answered = {name.lower() for name, _ in parse_qsl(split.query, keep_blank_values=True)} & _RESPONSE_PARAMS
    if answered:
        # the answer's own parameters would then appear twice, and a client reading the first would take
        # the URI's (docs/oauth.md#redirect-uris)
        raise RedirectRefused(f"redirect URIs carry no {min(answered)!r} parameter: the answer adds it")
    if "@" in split.netloc or split.username is not None or yarl_url.user is not None or whatwg["username"]:
        raise RedirectRefused("redirect URIs carry no user info")
    hosts = {
        (split.hostname or "").lower(),
        (yarl_url.raw_host or "").lower(),
        whatwg["hostname"].lower().strip("[]"),
    }
    ports = {_port(scheme, split_port), _port(scheme, yarl_url.explicit_port), _port(scheme, whatwg["port"])}
    schemes = {scheme, (yarl_url.scheme or "").lower(), whatwg["protocol"].rstrip(":").lower()}
    if len(hosts) != 1 or len(ports) != 1 or len(schemes) != 1:
        raise RedirectRefused("parsers disagree on where this redirect URI goes")
    (host,) = hosts
    if scheme == "https":
        if not host:
            raise RedirectRefused("an https redirect URI needs a host")
    elif scheme == "http":
        if host not in LOOPBACK_HOSTS:
            raise RedirectRefused("plain http redirects go to the loopback host only (RFC 8252 §7.3)")
    elif scheme in REFUSED_SCHEMES:
        raise RedirectRefused(f"the {scheme}: scheme is never a redirect target")
    return RedirectTarget(scheme, host)


def redirect_allowed(uri: str) -> bool:
    try:
        parse_redirect(uri)
    except RedirectRefused:
        return False
    return True
