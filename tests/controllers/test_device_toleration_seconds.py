"""A claim tolerating a NoExecute device taint for a while (issue 18, finding 2), as upstream 1.35:

* the allocator tolerates the taint whatever ``tolerationSeconds`` says (``ToleratesTaint``
  compares key, value and effect only), so a replacement pod is allocated the tainted device;
* the device taint eviction controller evicts at ``timeAdded + tolerationSeconds``, which for a
  claim allocated after that instant is at once;
* so a Deployment loops (evicted, replaced, allocated, evicted), at the pace at which the
  resource claim controller, under kube-controller-manager's client limit (20 qps, burst 30),
  makes and cleans up claims: a handful at the first instant, then a few a second, never a
  burst without end at one instant;
* once the rule's effect is None the last replacement runs, and the loop stops.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from taintplane.agents.nodes import DeviceSet, NodeShape
from taintplane.client import resource
from tests.controllers.harness import PODS, Sim, simulate
from tests.controllers.workload_builders import DEPLOYMENTS, make_deployment

TEMPLATES = resource("resource.k8s.io", "v1", "resourceclaimtemplates")
CLASSES = resource("resource.k8s.io", "v1", "deviceclasses")
RULES = resource("resource.k8s.io", "v1alpha3", "devicetaintrules")
#: kube-controller-manager's client burst (--kube-api-burst), the claim controller's too.
CLAIM_CONTROLLER_BURST = 30
DRIVER = "gpu.example.com"


async def _workload(sim: Sim) -> None:
    await sim.client.create(
        CLASSES,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        },
    )
    toleration = {
        "key": "overheating",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 60,
    }
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu", "tolerations": [toleration]}}
    await sim.client.create(
        TEMPLATES,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "gpu", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [request]}}},
        },
        namespace="default",
    )
    deployment = make_deployment("app", 1, {"app": "app"})
    deployment["spec"]["template"]["spec"]["resourceClaims"] = [
        {"name": "gpu", "resourceClaimTemplateName": "gpu"}
    ]
    await sim.client.create(DEPLOYMENTS, deployment, namespace="default")


def _rule(effect: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "DeviceTaintRule",
        "metadata": {"name": "overheating"},
        "spec": {
            "deviceSelector": {"driver": DRIVER},
            "taint": {"key": "overheating", "value": "true", "effect": effect},
        },
    }


async def _pods(sim: Sim) -> list[dict[str, Any]]:
    items, _ = await sim.client.list(PODS, "default")
    return items


def test_a_tolerated_noexecute_device_taint_evicts_on_time_and_replaces_at_upstreams_pace(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    created: Counter[float] = Counter()  # instant -> pods created
    deleted: dict[str, float] = {}  # pod -> instant its deletion began

    async def scenario(sim: Sim) -> None:
        scheduler = sim.cluster.scheduler
        assert scheduler is not None

        def added(pod: dict[str, Any]) -> None:
            created[sim.elapsed] += 1

        def updated(old: dict[str, Any], new: dict[str, Any]) -> None:
            if new["metadata"].get("deletionTimestamp") and not old["metadata"].get(
                "deletionTimestamp"
            ):
                deleted.setdefault(new["metadata"]["name"], sim.elapsed)

        scheduler.pod_informer.add_handlers(added, updated)
        await _workload(sim)
        await sim.advance(10)
        (first,) = await _pods(sim)
        assert first["status"]["phase"] == "Running"
        name = first["metadata"]["name"]

        await sim.client.create(RULES, _rule("NoExecute"))
        tainted_at = sim.elapsed
        created.clear()
        await sim.advance_to(tainted_at + 59)
        # Tolerated for 60 s from the taint's timeAdded: untouched until then.
        assert [p["metadata"]["name"] for p in await _pods(sim)] == [name]
        assert name not in deleted
        assert not created

        await sim.advance_to(tainted_at + 60)
        assert deleted[name] == tainted_at + 60
        # Each replacement gets a device (the toleration matches) and is evicted as soon as it
        # is bound (timeAdded + 60 s is past): a few at this instant, within the claim
        # controller's burst of 30 requests (each round costs it four or five), not hundreds.
        # A round's pod comes from the ReplicaSet controller before the claim controller spends
        # its tokens on it, so the rounds begun are at most ceil(30 / 4) = 8; whether the last
        # one begins depends on how the store's writer thread interleaves with the loop.
        burst = created[tainted_at + 60]
        assert 1 <= burst <= math.ceil(CLAIM_CONTROLLER_BURST / 4), created
        assert all(at == tainted_at + 60 for at in deleted.values())

        await sim.advance_to(tainted_at + 70)
        # Then at its sustained 20 requests a second: about four rounds a second.
        later = [created[t] for t in created if t > tainted_at + 60]
        assert sum(later) <= 6 * 10, created
        assert max(later) <= 3, created  # at most a few at any one instant
        assert sum(later) >= 20, created  # upstream does loop: it is not stuck either

        # Effect None: nothing evicts any more; the replacement of the moment runs, for good.
        rule = await sim.client.get(RULES, "overheating")
        rule["spec"]["taint"]["effect"] = "None"
        await sim.client.update(RULES, rule)
        await sim.advance(10)
        created.clear()
        await sim.advance(60)
        pods = [p for p in await _pods(sim) if not p["metadata"].get("deletionTimestamp")]
        assert [p["status"]["phase"] for p in pods] == ["Running"]
        assert not created

    with caplog.at_level(logging.WARNING):
        simulate(
            tmp_path,
            scenario,
            components=("scheduler", "controller-manager", "agents"),
            nodes=[NodeShape("gpu-1", devices=[DeviceSet(DRIVER, count=2)])],
        )
    # Conflicts and not-found of the claim controller (its informer a step behind the
    # scheduler's writes) are expected: one line each, in client-go's words, no traceback.
    for record in caplog.records:
        assert not record.exc_info, record.getMessage()
