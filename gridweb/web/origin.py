"""Websockets opened by a page of another site are refused.

A browser opening a websocket sends the Origin of the page that opened it, and the session cookie
with it: without this check, any site a logged-in user visits could read that user's private runs'
streams (``ALLOWED_HOSTS = *`` made channels' own origin check accept every origin). So, when there
is an Origin, the socket's Host must be one of ``ALLOWED_HOSTS`` (a host name an attacker's DNS
cannot rebind to this server unnoticed) and the page's origin -- scheme, host and port -- must be
the site's own: ``http://`` + Host for a plain socket, ``https://`` + Host for a secure one (the
scope's ``wss``, or, behind the TLS proxy, its ``X-Forwarded-Proto`` when ``SECURE_PROXY_SSL_HEADER``
says the deployment trusts it, as ``gridweb.settings_production`` does: docs/deploy.md). Another
port of the same host is another site (another program's pages), and so is ``https`` for ``http``.
An origin listed exactly in ``CSRF_TRUSTED_ORIGINS`` is accepted too, as Django's CSRF check accepts
it for a form (a proxy on a non-default port passes a Host without the port). A client that sends
no Origin (a script with an API token) is no browser carrying someone else's cookie: it goes on to
the consumer's own checks.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(scheme: str, netloc: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` with the scheme's default port filled in; None if malformed."""
    if scheme not in DEFAULT_PORTS or not netloc or any(c in netloc for c in "@/?#"):
        return None
    try:
        parts = urlsplit(f"{scheme}://{netloc}")
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is no number, or out of range
        return None
    if not host:
        return None
    return scheme, host.lower(), DEFAULT_PORTS[scheme] if port is None else port


def _socket_scheme(scope, headers: dict[bytes, bytes]) -> str:
    """The scheme of the page that may open this socket: https when the socket is secure."""
    proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy:
        header, secure_value = proxy
        # HTTP_X_FORWARDED_PROTO -> x-forwarded-proto
        value = headers.get(header.removeprefix("HTTP_").replace("_", "-").lower().encode("latin-1"))
        if value is not None:
            return "https" if value.decode("latin-1").split(",")[0].strip() == secure_value else "http"
    # daphne leaves "scheme" out of a websocket's scope; ASGI's default is ws
    return "https" if scope.get("scheme", "ws") == "wss" else "http"


def origin_allowed(scope) -> bool:
    """Whether this websocket scope may be opened (True when no Origin is sent)."""
    headers = dict(scope.get("headers") or [])
    origin, host = headers.get(b"origin"), headers.get(b"host")
    if origin is None:
        return True
    if host is None:
        return False
    host_text, origin_text = host.decode("latin-1"), origin.decode("latin-1").strip()
    domain, _ = split_domain_port(host_text)
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return False
    page = _origin(*origin_text.split("://", 1)) if "://" in origin_text else None
    if page is None:
        return False
    if page == _origin(_socket_scheme(scope, headers), host_text):
        return True
    trusted = (_origin(*entry.split("://", 1)) for entry in settings.CSRF_TRUSTED_ORIGINS
               if "://" in entry and "*" not in entry)
    return page in trusted


class SameOriginValidator:
    """ASGI middleware: deny a websocket whose Origin is not the site's own (scheme, host, port)."""

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not origin_allowed(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
