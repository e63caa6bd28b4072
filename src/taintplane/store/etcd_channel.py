"""The gRPC side of the etcd backend: one ``grpc.aio`` channel to the cluster's members,
and the mapping of etcd's gRPC errors to store errors.

Several endpoints become one channel over a static address list with gRPC's ``pick_first``
policy: it talks to the first member that answers and, when that connection breaks, moves to
the next, so failover needs no code of ours. Calls wait for a connection (up to their
deadline) instead of failing at once, which is safe for writes too: a call that never left
the client cannot have been applied.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import grpc
from aetcd import rpc

from taintplane.store.errors import Compacted, FutureRevision, StoreError, TooLarge
from taintplane.store.etcd_target import EtcdTarget

__all__ = ["Unavailable", "channel_target", "open_channel", "store_error"]

#: A list page is small, but an unpaginated chunk of large objects is not (gRPC's default
#: receive limit of 4 MiB broke a 10k-object list in STORAGE.md §3).
_MAX_RECEIVE = 512 * 1024 * 1024

_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.max_receive_message_length", _MAX_RECEIVE),
    ("grpc.max_send_message_length", 16 * 1024 * 1024),
    # Notice a dead member on an idle connection (the watch stream is one); etcd accepts
    # pings every 5 s or more (--grpc-keepalive-min-time).
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
]


class Unavailable(StoreError):
    """etcd did not answer (down, unreachable, no leader) within the deadline."""


async def channel_target(target: EtcdTarget) -> str:
    """gRPC's name for the members: ``host:port`` for one (DNS is gRPC's), else a static
    ``ipv4:``/``ipv6:`` list of their addresses, resolved once, here."""
    if len(target.endpoints) == 1:
        host, port = target.endpoints[0]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    loop = asyncio.get_running_loop()
    v4: list[str] = []
    v6: list[str] = []
    for host, port in target.endpoints:
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as error:
            raise Unavailable(f"cannot resolve etcd endpoint {host}:{port}: {error}") from error
        for family, _, _, _, address in infos:
            if family == socket.AF_INET:
                v4.append(f"{address[0]}:{port}")
            elif family == socket.AF_INET6:
                v6.append(f"[{address[0]}]:{port}")
    # One list per channel: prefer IPv4 (every member usually has one), else IPv6.
    chosen = v4 or v6
    scheme = "ipv4" if v4 else "ipv6"
    return f"{scheme}:" + ",".join(dict.fromkeys(chosen))


async def open_channel(target: EtcdTarget) -> grpc.aio.Channel:
    return grpc.aio.insecure_channel(await channel_target(target), options=_OPTIONS)


def store_error(error: grpc.aio.AioRpcError, where: str, *, requested: int = 0) -> StoreError:
    """The store error an etcd gRPC error means (the message tells compacted and future
    revisions apart: both are OUT_OF_RANGE)."""
    details = error.details() or ""
    code = error.code()
    if code == grpc.StatusCode.OUT_OF_RANGE and "compacted" in details:
        return Compacted(requested, requested + 1)
    if code == grpc.StatusCode.OUT_OF_RANGE and "future" in details:
        return FutureRevision(requested, requested - 1)
    if "request is too large" in details:
        return TooLarge(where, 0, 0)
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return Unavailable(f"etcd did not answer ({where}): {details or code.name}")
    return StoreError(f"etcd: {details or code.name} ({where})")


def compare_create_is(key: bytes, revision: int) -> Any:
    return rpc.Compare(
        key=key, result=rpc.Compare.EQUAL, target=rpc.Compare.CREATE, create_revision=revision
    )


def compare_exists(key: bytes) -> Any:
    return rpc.Compare(
        key=key, result=rpc.Compare.GREATER, target=rpc.Compare.CREATE, create_revision=0
    )


def compare_mod_is(key: bytes, revision: int) -> Any:
    return rpc.Compare(
        key=key, result=rpc.Compare.EQUAL, target=rpc.Compare.MOD, mod_revision=revision
    )
