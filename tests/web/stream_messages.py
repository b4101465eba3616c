"""Websocket messages of a run's stream as dicts: JSON text as it is, binary segment frames
(gridweb.runs.frames) as their header plus ``segments`` and ``open`` rows (column lists)."""

from __future__ import annotations

import json
from typing import Any

from gridweb.runs import frames


def decode_message(text: str | None = None, data: bytes | None = None) -> dict[str, Any]:
    if data is None:
        return json.loads(text)
    header, arrays = frames.decode(data)
    header["segments"] = {name: values.tolist() for name, values in frames.rows_of(arrays, "s").items()}
    header["open"] = {name: values.tolist() for name, values in frames.rows_of(arrays, "o").items()}
    return header


def decode_output(output: dict[str, Any]) -> dict[str, Any]:
    """A ``websocket.send`` output of Channels' WebsocketCommunicator."""
    return decode_message(output.get("text"), output.get("bytes"))


def decode_received(message: str | bytes) -> dict[str, Any]:
    """A message received by a ``websockets`` client."""
    return decode_message(data=message) if isinstance(message, bytes) else decode_message(text=message)
