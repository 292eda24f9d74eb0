"""Podium's Python client: ``PodiumClient(url, token)`` and the ``podium`` command.

``podium_client.types`` (the request and response shapes) imports nothing but the
standard library; the client itself needs httpx and is imported on first use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["NotFound", "PodiumClient", "PodiumError", "Unreachable"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in __all__:
        from podium_client import client

        return getattr(client, name)
    raise AttributeError(name)
