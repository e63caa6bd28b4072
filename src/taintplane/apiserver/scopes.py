"""Keys the API server puts in a request's ASGI scope for its own handlers."""

from __future__ import annotations

__all__ = ["SCOPE_IN_PROCESS"]

#: Set on requests from in-process components (the loopback app). Their bodies are serialized
#: from dicts by taintplane's client, so they cannot set a key twice: the handlers skip looking
#: for duplicate fields in them (a second JSON parse of every body, ~4 % of an eviction).
SCOPE_IN_PROCESS = "taintplane.in_process"
