"""DynamicResources' queueing hints (upstream v1.35's isSchedulableAfterClaimChange and
isSchedulableAfterPodChange) over the cases of upstream's own tables, the events it registers,
and a parked pod on virtual time that waits through claim, node and deletion events until a
claim that held its device is deallocated."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from taintplane.clock import VirtualClock
from taintplane.scheduler.events import ClusterEvent
from taintplane.scheduler.nodeinfo import PodInfo
from taintplane.scheduler.plugins import names
from taintplane.scheduler.plugins.dynamic_resources import DraCaches, DynamicResources
from taintplane.scheduler.queue import INTERESTS
from taintplane.scheduler.scheduler import RESOURCE_CLAIMS, RESOURCE_SLICES, Scheduler
from tests.scheduler.builders import make_node, taint
from tests.scheduler.test_dynamic_resources import (
    DRIVER,
    GPU_CLASS,
    claim_pod,
    gpu_slice,
    make_claim,
)


def _owned(claim: dict[str, Any], pod: str = "p") -> dict[str, Any]:
    """Made from ``pod``'s template: the pod controls it."""
    owner = {"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": f"uid-{pod}"}
    claim["metadata"]["ownerReferences"] = [{**owner, "controller": True}]
    return claim


def _allocated(claim: dict[str, Any], device: str = "gpu-0") -> dict[str, Any]:
    result = {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": device}
    claim["status"] = {"allocation": {"devices": {"results": [result]}}}
    return claim


def _with_status(pod: dict[str, Any], *created: tuple[str, str]) -> PodInfo:
    """The pod once the resource claim controller named its generated claims."""
    pod = copy.deepcopy(pod)
    pod["status"] = {
        "resourceClaimStatuses": [{"name": n, "resourceClaimName": c} for n, c in created]
    }
    return PodInfo.of(pod)


def _plugin(*claims: dict[str, Any]) -> DynamicResources:
    return DynamicResources(
        DraCaches(claims={f"default/{c['metadata']['name']}": c for c in claims})
    )


def _on_claim(plugin: DynamicResources) -> Any:
    return plugin.queueing_hints()[ClusterEvent.RESOURCE_CLAIM]


def _on_pod(plugin: DynamicResources) -> Any:
    return plugin.queueing_hints()[ClusterEvent.POD_GENERATED_CLAIM]


TEMPLATE_POD = PodInfo.of(claim_pod("p", template="t"))  # its claim not created yet
NAMED_POD = PodInfo.of(claim_pod("p", "p-gpu"))


# ---- isSchedulableAfterClaimChange ---------------------------------------------------------


def test_a_claim_change_skips_a_pod_whose_claims_cannot_all_be_resolved():
    foreign = _allocated(make_claim("p-gpu"))  # not owned by the pod
    assert not _on_claim(_plugin(foreign))(TEMPLATE_POD, None, foreign)
    # The template's claim not named yet: another claim's change is no help either.
    other = _allocated(make_claim("p-gpu-foo"))
    assert not _on_claim(_plugin(other))(TEMPLATE_POD, None, other)


def test_the_pods_claim_created_queues():
    pending = _owned(make_claim("p-gpu"))
    assert _on_claim(_plugin(pending))(NAMED_POD, None, pending)


def test_a_finalizer_added_skips_but_a_status_change_queues():
    pending = _owned(make_claim("p-gpu"))
    finalized = copy.deepcopy(pending)
    finalized["metadata"]["finalizers"] = ["foo"]
    assert not _on_claim(_plugin(finalized))(NAMED_POD, pending, finalized)
    allocated = copy.deepcopy(pending)
    allocated["status"] = {"allocation": {}}  # any allocation, however empty
    assert _on_claim(_plugin(allocated))(NAMED_POD, pending, allocated)
    # An absent status, an empty one and empty lists are alike (a semantic deep equal).
    bare = {k: v for k, v in pending.items() if k != "status"}
    empty_lists = {**pending, "status": {"reservedFor": [], "devices": None}}
    assert not _on_claim(_plugin(empty_lists))(NAMED_POD, bare, empty_lists)


def test_another_claims_deallocation_queues_any_pod_whose_claims_resolve():
    other = _allocated(make_claim("other"))
    freed = {**other, "status": {}}
    plugin = _plugin(_owned(make_claim("p-gpu")), freed)
    assert _on_claim(plugin)(NAMED_POD, other, freed)
    # Another claim's other changes do not concern the pod.
    reserved = copy.deepcopy(other)
    reserved["status"]["reservedFor"] = [{"resource": "pods", "name": "x", "uid": "x"}]
    assert not _on_claim(plugin)(NAMED_POD, other, reserved)


def test_a_wrong_object_is_an_error():
    pending = make_claim("p-gpu")
    with pytest.raises(TypeError):
        _on_claim(_plugin(pending))(NAMED_POD, None, "not-a-claim")
    with pytest.raises(TypeError):
        _on_claim(_plugin(pending))(NAMED_POD, "not-a-claim", pending)
    with pytest.raises(TypeError):
        _on_pod(_plugin(pending))(TEMPLATE_POD, None, "not-a-pod")


# ---- isSchedulableAfterPodChange -----------------------------------------------------------


def test_the_pods_status_naming_its_claim_queues_once_every_claim_resolves():
    claim = _owned(make_claim("p-gpu"))
    complete = _with_status(claim_pod("p", template="t"), ("gpu", "p-gpu"))
    assert _on_pod(_plugin(claim))(TEMPLATE_POD, None, complete)
    assert not _on_pod(_plugin())(TEMPLATE_POD, None, complete)  # the claim not seen yet
    other = PodInfo.of(claim_pod("p2", template="t"))
    assert not _on_pod(_plugin(claim))(other, None, complete)  # another pod's update
    two = claim_pod("p", template="t")
    two["spec"]["resourceClaims"].append({"name": "gpu-2", "resourceClaimTemplateName": "t"})
    half = _with_status(two, ("gpu", "p-gpu"))  # one of two claims made
    assert not _on_pod(_plugin(claim))(PodInfo.of(two), None, half)


# ---- the events registered -----------------------------------------------------------------


def test_the_events_registered_are_upstreams_with_hints_on():
    assert INTERESTS[names.DYNAMIC_RESOURCES] == {
        ClusterEvent.NODE_ADD,
        ClusterEvent.NODE_LABEL,
        ClusterEvent.NODE_ALLOCATABLE,
        ClusterEvent.RESOURCE_CLAIM,
        ClusterEvent.POD_GENERATED_CLAIM,
        ClusterEvent.DEVICE_CLASS,
        ClusterEvent.RESOURCE_SLICE,
        ClusterEvent.DEVICE_TAINT_RULE,  # upstream: the slice updates it causes
    }
    assert set(DynamicResources().queueing_hints()) == {
        ClusterEvent.RESOURCE_CLAIM,
        ClusterEvent.POD_GENERATED_CLAIM,
    }


# ---- through a scheduler on virtual time ---------------------------------------------------


def _informed(scheduler: Scheduler, rt: Any, old: Any, new: Any) -> None:
    """What the informer does with a watch event: its cache, then its handlers."""
    informer = scheduler.informers.of(rt)
    obj = new if new is not None else old
    meta = obj["metadata"]
    key = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
    informer._store(key, new)
    if old is None:
        informer._added(new)
    elif new is None:
        informer._deleted(old)
    else:
        informer._updated(old, new)


def test_a_parked_pod_waits_through_irrelevant_events_until_its_device_is_freed():
    async def scenario() -> list[Any]:
        clock = VirtualClock()
        scheduler = Scheduler(client=None, clock=clock, seed=1)  # type: ignore[arg-type]
        n1 = make_node("n1")
        scheduler._node_added(n1)
        scheduler.dra_caches.classes["gpu"] = GPU_CLASS  # type: ignore[index]
        _informed(scheduler, RESOURCE_SLICES, None, gpu_slice("n1", count=1))
        holder = _allocated(make_claim("held"))
        for claim in (holder, make_claim("mine")):
            _informed(scheduler, RESOURCE_CLAIMS, None, claim)
        scheduler._pod_added(claim_pod("p", "mine"))
        queue = scheduler.queue
        seen: list[Any] = []

        async def attempt() -> str:
            pod = await queue.pop()
            decision = scheduler.decide(pod)
            if not decision.node:
                assert decision.diagnosis is not None
                queue.unschedulable(pod, decision.diagnosis.unschedulable_plugins)
            return decision.node or decision.message

        seen.append(await attempt())
        seen.append(queue.pending())
        # Irrelevant: the holder gets a finalizer; another pod's claim is created, then
        # deleted; a node's taints change; a slice is deleted.
        finalized = copy.deepcopy(holder)
        finalized["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
        _informed(scheduler, RESOURCE_CLAIMS, holder, finalized)
        stranger = make_claim("stranger")
        _informed(scheduler, RESOURCE_CLAIMS, None, stranger)
        _informed(scheduler, RESOURCE_CLAIMS, stranger, None)
        scheduler._node_updated(n1, make_node("n1", taints=[taint("x", "PreferNoSchedule")]))
        _informed(scheduler, RESOURCE_SLICES, gpu_slice("n2"), None)
        seen.append(queue.pending())
        # Relevant: the holder is deallocated, its device free.
        _informed(scheduler, RESOURCE_CLAIMS, finalized, {**finalized, "status": {}})
        seen.append(queue.pending())
        await clock.advance(1)
        seen.append(await attempt())
        return seen

    seen = asyncio.run(scenario())
    assert seen[0].startswith("0/1 nodes are available: 1 cannot allocate all claims.")
    assert seen[1:4] == [{"unschedulable": 1}, {"unschedulable": 1}, {"backoff": 1}]
    assert seen[4] == "n1"


def test_a_pod_gated_for_its_claim_is_let_through_by_that_claim_only():
    scheduler = Scheduler(client=None, clock=VirtualClock(), seed=1)  # type: ignore[arg-type]
    scheduler._node_added(make_node("n1"))
    scheduler._pod_added(claim_pod("p", "mine"))
    assert scheduler.queue.pending() == {"gated": 1}
    _informed(scheduler, RESOURCE_CLAIMS, None, make_claim("someone-elses"))
    assert scheduler.queue.pending() == {"gated": 1}
    _informed(scheduler, RESOURCE_CLAIMS, None, make_claim("mine"))
    assert scheduler.queue.pending() == {"active": 1}
