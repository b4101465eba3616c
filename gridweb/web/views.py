"""Home page and health check."""

import asyncio
from typing import Any

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from gridweb.reproductions.views import latest_per_paper

from .engine import engine_version

CHANNEL_LAYER_TIMEOUT = 2.0  # seconds for the health check's send/receive round trip


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "web/home.html", {"papers": latest_per_paper(request.user)})


def _failure(exc: BaseException) -> str:
    # The class says what failed; the message may name hosts, so only DEBUG shows it.
    return f"{type(exc).__name__}: {exc}" if settings.DEBUG else type(exc).__name__


def _check_database() -> dict[str, Any]:
    report: dict[str, Any] = {"vendor": connection.vendor}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # noqa: BLE001 - any failure means "not healthy"
        return {**report, "ok": False, "error": _failure(exc)}
    return {**report, "ok": True}


async def _check_channel_layer() -> dict[str, Any]:
    layer = get_channel_layer()
    if layer is None:
        return {"ok": False, "backend": None, "error": "no channel layer configured"}
    report: dict[str, Any] = {"backend": f"{type(layer).__module__}.{type(layer).__qualname__}"}
    try:
        channel = await layer.new_channel("healthz.")
        await layer.send(channel, {"type": "healthz.ping"})
        message = await asyncio.wait_for(layer.receive(channel), timeout=CHANNEL_LAYER_TIMEOUT)
    except Exception as exc:  # noqa: BLE001 - any failure means "not healthy"
        return {**report, "ok": False, "error": _failure(exc)}
    if message.get("type") != "healthz.ping":
        return {**report, "ok": False, "error": f"unexpected message {message!r}"}
    return {**report, "ok": True}


@never_cache
@require_safe
async def healthz(request: HttpRequest) -> JsonResponse:
    """Report whether the database and the channel layer answer (HTTP 503 when one does not)."""
    database = await sync_to_async(_check_database)()
    channel_layer = await _check_channel_layer()
    healthy = database["ok"] and channel_layer["ok"]
    body = {
        "status": "ok" if healthy else "error",
        "mode": settings.GRIDWEB_MODE,
        "engine": engine_version(),
        "database": database,
        "channel_layer": channel_layer,
    }
    return JsonResponse(body, status=200 if healthy else 503)
