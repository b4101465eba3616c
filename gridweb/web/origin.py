"""Websockets opened by a page of another site are refused.

A browser opening a websocket sends the Origin of the page that opened it, and the session cookie
with it: without this check, any site a logged-in user visits could read that user's private runs'
streams (``ALLOWED_HOSTS = *`` made channels' own origin check accept every origin). So, when there
is an Origin, the socket's Host must be one of ``ALLOWED_HOSTS`` (a host name an attacker's DNS
cannot rebind to this server unnoticed) and the page's host must be that host (the TLS proxy passes
the Host header on: docs/deploy.md). A client that sends no Origin (a script with an API token) is
no browser carrying someone else's cookie: it goes on to the consumer's own checks.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host


def _hostname(netloc: str) -> str:
    return (urlsplit(f"//{netloc}").hostname or "").lower()


class SameOriginValidator:
    """ASGI middleware: deny a websocket whose Origin names another host than its Host header."""

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket":
            headers = dict(scope.get("headers") or [])
            origin, host = headers.get(b"origin"), headers.get(b"host")
            if origin is not None:
                origin_host = (urlsplit(origin.decode("latin-1")).hostname or "").lower()
                host_name = _hostname(host.decode("latin-1")) if host is not None else ""
                domain, _ = split_domain_port(host.decode("latin-1")) if host is not None else ("", "")
                if (not origin_host or origin_host != host_name
                        or not validate_host(domain, settings.ALLOWED_HOSTS)):
                    return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
