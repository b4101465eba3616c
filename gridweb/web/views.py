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

CHANNEL_LAYER_TIMEOUT = 2.0  # seconds for the message to come back; slower is "busy", not down
CHANNEL_LAYER_SEND_TIMEOUT = 5.0  # seconds to reach the layer and hand it the message; slower is down


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
    """Down (``ok`` false) when the layer cannot be reached or refuses the message; busy (``ok``
    and ``busy``) when it took the message but the round trip back took longer than
    CHANNEL_LAYER_TIMEOUT -- what a loaded server's channel layer does (a crowd of websocket
    replays on this process), not a reason to take it out of a load balancer."""
    layer = get_channel_layer()
    if layer is None:
        return {"ok": False, "backend": None, "error": "no channel layer configured"}
    report: dict[str, Any] = {"backend": f"{type(layer).__module__}.{type(layer).__qualname__}"}
    try:
        channel = await asyncio.wait_for(layer.new_channel("healthz."), timeout=CHANNEL_LAYER_SEND_TIMEOUT)
        await asyncio.wait_for(layer.send(channel, {"type": "healthz.ping"}), timeout=CHANNEL_LAYER_SEND_TIMEOUT)
    except Exception as exc:  # noqa: BLE001 - not reached, or refused: down
        return {**report, "ok": False, "error": _failure(exc)}
    try:
        message = await asyncio.wait_for(layer.receive(channel), timeout=CHANNEL_LAYER_TIMEOUT)
    except TimeoutError:
        return {**report, "ok": True, "busy": True,
                "detail": f"the layer took the message but did not hand it back within {CHANNEL_LAYER_TIMEOUT:g} s "
                          "(it answers, slowly: this server is busy)"}
    except Exception as exc:  # noqa: BLE001 - any other failure means "not healthy"
        return {**report, "ok": False, "error": _failure(exc)}
    if message.get("type") != "healthz.ping":
        return {**report, "ok": False, "error": f"unexpected message {message!r}"}
    return {**report, "ok": True}


@never_cache
@require_safe
async def healthz(request: HttpRequest) -> JsonResponse:
    """Readiness (``/healthz`` and ``/healthz/ready``): whether the database and the channel layer
    answer. HTTP 503 when one is down; 200 with ``"status": "busy"`` when the channel layer answers
    but slowly (docs/deploy.md: what a load balancer should poll)."""
    database = await sync_to_async(_check_database)()
    channel_layer = await _check_channel_layer()
    healthy = database["ok"] and channel_layer["ok"]
    body = {
        "status": ("busy" if channel_layer.get("busy") else "ok") if healthy else "error",
        "mode": settings.GRIDWEB_MODE,
        "engine": engine_version(),
        "database": database,
        "channel_layer": channel_layer,
    }
    return JsonResponse(body, status=200 if healthy else 503)


@never_cache
@require_safe
async def healthz_live(request: HttpRequest) -> JsonResponse:
    """Liveness (``/healthz/live``): this process answers requests. No dependency is asked, so a
    database or Redis outage, or a loaded channel layer, never gets a working process restarted."""
    return JsonResponse({"status": "ok", "mode": settings.GRIDWEB_MODE, "engine": engine_version()})
