"""Websocket routes (wrapped in the session's authentication by gridweb.asgi)."""

from django.urls import URLPattern, path

from gridweb.runs.consumers import RunStreamConsumer

websocket_urlpatterns: list[URLPattern] = [
    path("ws/runs/<int:run_id>/", RunStreamConsumer.as_asgi(), name="run-stream"),
]
