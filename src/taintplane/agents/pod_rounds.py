"""The simulated kubelets' pod work in rounds: every pod queued is synced, then their status
writes go to the API server together (``Client.batch``: in-process one store transaction and
one watch fan-out; over HTTP concurrent requests).

A cluster's kubelets run side by side, each with its own status manager, so a burst of pods
bound across the nodes reaches Running as a burst of status writes, and a ReplicaSet and its
Deployment see it in a few syncs (upstream writes their status once per sync that changes it).
One worker writing one pod at a time instead made every pod's Running a ReplicaSet status
write and a Deployment status write of its own (BENCHMARKS.md, "Requests per pod against
upstream's"). Each pod's status, and the instant it is written, is the one it was alone
(``tests/agents/test_pod_status_rounds.py``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, NamedTuple

from taintplane.client import ApiError, Client, resource
from taintplane.client.client import Op
from taintplane.client.workqueue import EXPECTED, WorkQueue

if TYPE_CHECKING:
    from taintplane.agents.pod_status import PodRun

__all__ = ["STATUS_BATCH", "StatusWrite", "log_failure", "send_statuses", "take_round"]

log = logging.getLogger(__name__)

PODS = resource("", "v1", "pods")

#: How many pods one round syncs (and so status writes it sends together) at most.
STATUS_BATCH = 256


class StatusWrite(NamedTuple):
    """A status write of a round: the pod as synced, the patch, the kubelet's record of the
    pod and the digest of what the patch reports (recorded once the write is done)."""

    key: str
    pod: dict[str, Any]
    patch: dict[str, Any]
    run: PodRun
    digest: int


async def take_round(queue: WorkQueue) -> list[str]:
    """The next round's keys: the first queued (waited for), then all queued behind it."""
    keys = [await queue.get()]
    while len(keys) < STATUS_BATCH:
        while len(queue) and len(keys) < STATUS_BATCH:
            keys.append(await queue.get())
        # A watch delivers a burst's events a turn of the loop apart: those that arrive in
        # the next turn join the round too.
        await asyncio.sleep(0)
        if not len(queue):
            break
    return keys


def log_failure(name: str, key: str, error: BaseException) -> None:
    """One line in the work queue's words (a traceback only for what no sync expects)."""
    if isinstance(error, EXPECTED):
        log.error(
            '%s: error syncing "%s": %s, requeuing',
            name,
            key,
            error,
            exc_info=log.isEnabledFor(logging.INFO),
        )
    else:  # a bug; one bad pod must still not stop the kubelets
        log.error('%s: error syncing "%s", requeuing', name, key, exc_info=error)


async def send_statuses(client: Client, name: str, writes: list[StatusWrite]) -> set[str]:
    """Send a round's status writes; the keys whose write failed, to retry (a pod deleted
    meanwhile is no failure: there is nothing left to report)."""
    ops = [
        Op.patch(
            PODS,
            w.pod["metadata"]["name"],
            {"status": w.patch},
            namespace=w.pod["metadata"]["namespace"],
            patch_type="strategic",
            subresource="status",
        )
        for w in writes
    ]
    try:
        answers = await client.batch(ops)
    except EXPECTED as error:
        for w in writes:
            log_failure(name, w.key, error)
        return {w.key for w in writes}
    failed: set[str] = set()
    for write, answer in zip(writes, answers, strict=True):
        if isinstance(answer, ApiError):
            if answer.code != 404:
                log_failure(name, write.key, answer)
                failed.add(write.key)
            continue
        write.run.last_sent = write.digest
    return failed
