"""Websocket routes. Empty for now: run streaming consumers are added here."""

from django.urls import URLPattern

websocket_urlpatterns: list[URLPattern] = []
