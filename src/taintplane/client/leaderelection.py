"""Leader election on a coordination.k8s.io Lease, as client-go's ``leaderelection``.

Several copies of a component (``taintplane scheduler`` twice, say) contend for one Lease
(``kube-system/kube-scheduler``); the holder renews it every ``retry_period`` and leads while
its renewals succeed within ``renew_deadline``; the others retry every ``retry_period`` and take
over once ``lease_duration`` has passed since the last renewal they observed. Writes use the
Lease's resourceVersion, so two candidates can never both win a round. Defaults are upstream's
(15 s, 10 s, 2 s).

A failed request (an API error, or no answer at all while the API server restarts) is logged
and retried, as ``tryAcquireOrRenew``'s errors are: a leader that cannot renew within
``renew_deadline`` stops leading (``lost`` is then true), as upstream's ``renew`` gives up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import httpx

from taintplane.api.decoding import format_micro_time
from taintplane.client.client import ApiError, Client, resource
from taintplane.clock import Clock

__all__ = ["LeaderElector"]

log = logging.getLogger(__name__)

LEASES = resource("coordination.k8s.io", "v1", "leases")


class LeaderElector:
    def __init__(
        self,
        client: Client,
        clock: Clock,
        *,
        name: str,
        identity: str,
        namespace: str = "kube-system",
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
    ) -> None:
        self.client = client
        self.clock = clock
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.leading = False
        #: Whether run() returned because renewals failed for ``renew_deadline``.
        self.lost = False
        # What we last saw of the lease, and when (by our clock) it last changed.
        self._observed: tuple[str, str] | None = None  # (holder, renewTime)
        self._observed_at = 0.0

    async def _try_acquire_or_renew(self) -> bool:
        now = self.clock.now()
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.lease_duration),
            "renewTime": format_micro_time(now),
        }
        try:
            lease = await self.client.get(LEASES, self.name, self.namespace)
        except ApiError as error:
            if error.code != 404:
                raise
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": {**spec, "acquireTime": format_micro_time(now), "leaseTransitions": 0},
            }
            try:
                await self.client.create(LEASES, body, namespace=self.namespace)
            except ApiError as again:
                if again.code == 409:
                    return False
                raise
            return True
        current: dict[str, Any] = lease.get("spec") or {}
        holder = str(current.get("holderIdentity") or "")
        seen = (holder, str(current.get("renewTime") or ""))
        if seen != self._observed:
            self._observed = seen
            self._observed_at = self.clock.monotonic()
        expired = self.clock.monotonic() - self._observed_at >= self.lease_duration
        if holder and holder != self.identity and not expired:
            return False
        transitions = int(current.get("leaseTransitions") or 0)
        if holder != self.identity:
            spec["acquireTime"] = format_micro_time(now)
            transitions += 1
        body = {
            **lease,
            "spec": {**current, **spec, "leaseTransitions": transitions},
        }
        try:
            await self.client.update(LEASES, body)
        except ApiError as error:
            if error.code == 409:
                return False
            raise
        self._observed = (self.identity, str(spec["renewTime"]))
        self._observed_at = self.clock.monotonic()
        return True

    async def run(self, lead: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Wait to lead, run ``lead`` while leading; stop it (and return) if leadership is
        lost, as client-go's ``OnStoppedLeading`` does for kube components."""
        while not await self._safely_try():
            await self.clock.sleep(self.retry_period)
        self.leading = True
        log.info("%s: %s became the leader", self.name, self.identity)
        task = asyncio.create_task(lead())
        try:
            last_renewal = self.clock.monotonic()
            while not task.done():
                sleeper = asyncio.ensure_future(self.clock.sleep(self.retry_period))
                await asyncio.wait({task, sleeper}, return_when=asyncio.FIRST_COMPLETED)
                sleeper.cancel()
                if task.done():
                    break
                if await self._safely_try():
                    last_renewal = self.clock.monotonic()
                elif self.clock.monotonic() - last_renewal >= self.renew_deadline:
                    log.error(
                        "failed to renew lease %s/%s: timed out waiting for the condition",
                        self.namespace,
                        self.name,
                    )
                    self.lost = True
                    break
        finally:
            self.leading = False
            task.cancel()
            # The work's own failure (not the cancellation) is the caller's to see.
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _safely_try(self) -> bool:
        try:
            return await self._try_acquire_or_renew()
        except (ApiError, httpx.TransportError, OSError) as error:
            # An API server restarting refuses connections for a while: like an API error,
            # this round is lost and the next one, retry_period later, may succeed.
            log.error("error retrieving resource lock %s/%s: %s", self.namespace, self.name, error)
            return False
