"""A websocket opened by a page is accepted only from the site's own origin: scheme, host and port
(issue 34, item 7: ``http://127.0.0.1:9999`` was accepted by a site at ``http://127.0.0.1:8000``)."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import async_to_sync
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.testing import WebsocketCommunicator

from gridweb.web.origin import SameOriginValidator

checked = SameOriginValidator(AsyncWebsocketConsumer.as_asgi())


def connects(origin: str | None, host: str = "gridweb.example", scheme: str | None = None,
             forwarded_proto: str | None = None) -> bool:
    headers = [(b"host", host.encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    if forwarded_proto is not None:
        headers.append((b"x-forwarded-proto", forwarded_proto.encode()))

    async def attempt() -> bool:
        communicator = WebsocketCommunicator(checked, "/ws/runs/1/", headers=headers)
        if scheme is not None:
            communicator.scope["scheme"] = scheme
        connected, _ = await communicator.connect(timeout=5)
        await communicator.disconnect()
        return connected

    return async_to_sync(attempt)()


@pytest.fixture(autouse=True)
def plain_settings(settings):
    settings.ALLOWED_HOSTS = ["gridweb.example", "127.0.0.1"]
    settings.SECURE_PROXY_SSL_HEADER = None
    settings.CSRF_TRUSTED_ORIGINS = []


def test_the_sites_own_origin_is_accepted():
    assert connects("http://gridweb.example")
    assert connects("http://gridweb.example:80")  # the default port, spelled out
    assert connects("http://127.0.0.1:8000", host="127.0.0.1:8000")
    assert connects("https://gridweb.example", scheme="wss")
    assert connects("https://gridweb.example:8443", host="gridweb.example:8443", scheme="wss")
    assert connects(None)  # a script (no browser, no one else's cookie): the consumer decides


def test_a_page_on_another_port_of_the_same_host_is_refused():
    assert not connects("http://127.0.0.1:9999", host="127.0.0.1:8000")
    assert not connects("http://gridweb.example:8080")
    assert not connects("http://gridweb.example", host="gridweb.example:8000")


def test_a_page_of_another_scheme_is_refused():
    assert not connects("https://gridweb.example")  # the socket is plain ws
    assert not connects("http://gridweb.example", scheme="wss")
    assert not connects("https://127.0.0.1:8000", host="127.0.0.1:8000")


def test_other_hosts_and_broken_origins_are_refused():
    assert not connects("http://evil.example")
    assert not connects("null")
    assert not connects("http://gridweb.example:notaport")
    assert not connects("http://evil.example", host="evil.example")  # not an allowed host


def test_behind_the_tls_proxy_the_forwarded_scheme_decides(settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert connects("https://gridweb.example", forwarded_proto="https")
    assert not connects("http://gridweb.example", forwarded_proto="https")
    assert connects("http://gridweb.example", forwarded_proto="http")
    assert not connects("https://gridweb.example", forwarded_proto="http")


def test_the_forwarded_scheme_is_not_trusted_without_a_proxy_setting():
    # anyone can send the header; only a deployment that declares its proxy believes it
    assert not connects("https://gridweb.example", forwarded_proto="https")


def test_an_exactly_trusted_csrf_origin_is_accepted(settings):
    # a proxy on a non-default port passes Host without it; Django's CSRF check needs the same entry
    settings.CSRF_TRUSTED_ORIGINS = ["https://gridweb.example:8443", "https://*.other.example"]
    assert connects("https://gridweb.example:8443")
    assert not connects("https://gridweb.example:8444")
    assert not connects("https://a.other.example")  # wildcards are not taken for websockets


def test_the_live_server_refuses_a_page_on_another_port_or_scheme(full_stack_site):
    import websockets
    from websockets.exceptions import InvalidStatus

    url = f"{full_stack_site.ws_url}/ws/runs/1/"
    port = full_stack_site.base_url.rsplit(":", 1)[1]

    async def status(origin: str) -> int:
        try:
            async with websockets.connect(url, origin=origin, open_timeout=10) as ws:
                await ws.close()
                return 101
        except InvalidStatus as refused:
            return refused.response.status_code

    async def all_statuses() -> dict[str, int]:
        return {origin: await status(origin) for origin in
                (f"http://127.0.0.1:{port}", "http://127.0.0.1:9999", f"https://127.0.0.1:{port}")}

    found = asyncio.run(all_statuses())
    # the own page reaches the consumer, which accepts and then closes with its own code (no run 1)
    assert found == {f"http://127.0.0.1:{port}": 101, "http://127.0.0.1:9999": 403,
                     f"https://127.0.0.1:{port}": 403}, found
