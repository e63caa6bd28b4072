"""What a work queue logs when a sync fails: an expected failure (the API refusing, the server
out of reach) is one line in client-go's words with the requeue; a bug keeps its traceback."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest

from taintplane.client import ApiError
from taintplane.client.workqueue import WorkQueue
from taintplane.clock import VirtualClock

REFUSED = ApiError(
    {
        "code": 403,
        "reason": "Forbidden",
        "message": 'pods "web-" is forbidden: pod rejected: RuntimeClass "nope" not found',
    }
)


def failing_twice(error: Exception, level: int, caplog: pytest.LogCaptureFixture) -> None:
    logging.getLogger("taintplane").setLevel(level)
    try:

        async def main() -> None:
            clock = VirtualClock()
            queue = WorkQueue(clock, name="replicaset")
            calls = 0

            async def sync(key: str) -> None:
                nonlocal calls
                calls += 1
                if calls <= 2:
                    raise error

            queue.add("default/web")
            runner = asyncio.create_task(queue.run(sync))
            await clock.advance(1)
            runner.cancel()
            await asyncio.gather(runner, return_exceptions=True)
            assert calls == 3

        with caplog.at_level(logging.DEBUG):
            asyncio.run(main())
    finally:
        logging.getLogger("taintplane").setLevel(logging.NOTSET)


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (REFUSED, 'pods "web-" is forbidden: pod rejected: RuntimeClass "nope" not found'),
        (httpx.ConnectError("All connection attempts failed"), "All connection attempts failed"),
    ],
)
def test_an_expected_failure_is_one_line_with_the_requeue(caplog, error, text):
    failing_twice(error, logging.WARNING, caplog)
    records = [r for r in caplog.records if r.name == "taintplane.client.workqueue"]
    assert [r.getMessage() for r in records] == [
        f'replicaset: error syncing "default/web": {text}, requeuing'
    ] * 2
    assert all(r.levelno == logging.ERROR and not r.exc_info for r in records)


def test_with_v_an_expected_failure_shows_its_traceback(caplog):
    failing_twice(REFUSED, logging.INFO, caplog)
    records = [r for r in caplog.records if r.name == "taintplane.client.workqueue"]
    assert len(records) == 2
    assert all(r.exc_info is not None and r.exc_info[1] is REFUSED for r in records)


def test_a_bug_keeps_its_traceback(caplog):
    failing_twice(KeyError("spec"), logging.WARNING, caplog)
    records = [r for r in caplog.records if r.name == "taintplane.client.workqueue"]
    assert [r.getMessage() for r in records] == [
        'replicaset: error syncing "default/web", requeuing'
    ] * 2
    assert all(r.exc_info is not None for r in records)


def test_the_resourceclaim_controller_words_it_as_upstream(caplog):
    """pkg/controller/resourceclaim's processNextWorkItem: ``%v failed with: %v``."""
    from typing import cast

    from taintplane.client import Client
    from taintplane.client.shared import SharedInformers
    from taintplane.controllers.resourceclaim import ResourceClaimController

    async def main() -> None:
        clock = VirtualClock()
        client = cast(Client, None)
        controller = ResourceClaimController(client, clock, SharedInformers(client))

        async def refused(key: str) -> None:
            raise REFUSED

        controller._sync = refused  # type: ignore[method-assign]
        controller.queue.add("pod:default/web-0")
        runner = asyncio.create_task(controller.run())
        await clock.advance(0)
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)

    with caplog.at_level(logging.WARNING):
        asyncio.run(main())
    records = [r for r in caplog.records if r.name == "taintplane.client.workqueue"]
    assert [r.getMessage() for r in records] == [
        'resource_claim: pod:default/web-0 failed with: pods "web-" is forbidden: pod '
        'rejected: RuntimeClass "nope" not found'
    ]


def test_the_namespace_controller_words_a_failed_deletion_as_upstream(caplog):
    """pkg/controller/namespace's worker: content still there once the pods' grace period has
    passed (a pod on a node whose kubelet is gone) is ``deletion of namespace %v failed: %v``,
    one line, retried with the queue's backoff; it was logged as a bug, with its traceback."""
    from typing import cast

    from taintplane.client import Client
    from taintplane.client.shared import SharedInformers
    from taintplane.controllers.namespace import NamespaceController
    from taintplane.controllers.namespace_deletion import DeletionFailed

    remain = "unexpected items still remain in namespace: team for gvr: /v1, Resource=pods"
    calls = []

    async def main() -> None:
        clock = VirtualClock()
        client = cast(Client, None)
        controller = NamespaceController(client, clock, SharedInformers(client))

        async def stuck(name: str) -> None:
            calls.append(clock.monotonic())
            raise DeletionFailed(remain)

        controller._sync = stuck  # type: ignore[method-assign]
        controller.queue.add("team")
        runner = asyncio.create_task(controller.run())
        await clock.advance(0.02)
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)

    with caplog.at_level(logging.WARNING):
        asyncio.run(main())
    records = [r for r in caplog.records if r.name == "taintplane.client.workqueue"]
    # Tried at 0, 5 ms, 15 ms (5 ms doubling): three failures, three lines, no traceback.
    assert len(calls) == 3
    assert [r.getMessage() for r in records] == [
        f"namespace: deletion of namespace team failed: {remain}"
    ] * 3
    assert all(r.levelno == logging.ERROR and not r.exc_info for r in records)
