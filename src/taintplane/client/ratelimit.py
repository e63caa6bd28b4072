"""Client-side rate limiting: client-go's default token bucket (``rest.Config.QPS``/``Burst``).

Every request waits for a token from a bucket that starts full with ``burst`` tokens and refills
at ``qps`` tokens a second on the component's clock (``flowcontrol.NewTokenBucketRateLimiter``,
the work queue's :class:`TokenBucket`: a request that finds the bucket empty reserves the next
token and waits for it, so concurrent requests queue in order). kube-controller-manager builds
one client, and so one bucket, per controller, from ``--kube-api-qps`` (20) and
``--kube-api-burst`` (30).

Under a virtual clock the wait is virtual time: a controller that loops as fast as the API
answers (zero latency here) spreads its requests over time as upstream's does, instead of
doing them all at one instant. Watches are not limited (client-go limits each request, and a
watch is one long request).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping

from taintplane.client.client import Client
from taintplane.client.transport import RawResponse, Transport
from taintplane.client.workqueue import TokenBucket
from taintplane.clock import Clock

__all__ = [
    "CONTROLLER_MANAGER_BURST",
    "CONTROLLER_MANAGER_QPS",
    "RateLimitedTransport",
    "rate_limited",
]

#: kube-controller-manager's ``--kube-api-qps`` and ``--kube-api-burst`` defaults.
CONTROLLER_MANAGER_QPS = 20.0
CONTROLLER_MANAGER_BURST = 30


class RateLimitedTransport:
    """A transport whose requests each take a token from ``bucket`` first."""

    def __init__(self, inner: Transport, clock: Clock, bucket: TokenBucket) -> None:
        self.inner = inner
        self.clock = clock
        self.bucket = bucket

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str = "application/json",
    ) -> RawResponse:
        delay = self.bucket.reserve()
        if delay > 0:
            await self.clock.sleep(delay)
        return await self.inner.request(
            method, path, params=params, body=body, content_type=content_type
        )

    def stream(
        self, path: str, params: Mapping[str, str]
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[bytes]]:
        return self.inner.stream(path, params)

    async def close(self) -> None:
        # The inner transport is shared with other clients: theirs to close.
        return None


def rate_limited(
    client: Client,
    clock: Clock,
    qps: float = CONTROLLER_MANAGER_QPS,
    burst: int = CONTROLLER_MANAGER_BURST,
) -> Client:
    """A client on ``client``'s transport with its own bucket (one controller's client)."""
    bucket = TokenBucket(clock, qps=qps, burst=burst)
    transport = RateLimitedTransport(client.transport, clock, bucket)
    return Client(transport, field_manager=client.field_manager)
