"""Clients of the API: transports (HTTP, in-process), a typed client, informers."""

from taintplane.client.client import ApiError, Client, Op, resource
from taintplane.client.informer import Informer, object_key
from taintplane.client.transport import HTTPTransport, InProcessTransport, Transport

__all__ = [
    "ApiError",
    "Client",
    "HTTPTransport",
    "InProcessTransport",
    "Informer",
    "Op",
    "Transport",
    "object_key",
    "resource",
]
