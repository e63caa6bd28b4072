"""DynamicResources on a fixed view: claim resolution, allocation per node, upstream's messages,
Reserve's in-flight devices and PreBind's writes."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from taintplane.api.features import FeatureGates
from taintplane.clock import VirtualClock
from taintplane.scheduler.framework import CycleState
from taintplane.scheduler.nodeinfo import PodInfo
from taintplane.scheduler.scheduler import Scheduler
from tests.scheduler.builders import make_node, make_pod

DRIVER = "gpu.example.com"
NO_PREEMPTION = "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
#: DynamicResources' PostFilter for a pod without claims, or rejected before they were resolved
NO_CLAIMS = "no new claims to deallocate"
#: ... and for a pod with claims, none of which it can deallocate
STILL = "still not schedulable"


def gpu_slice(node: str, count: int = 2, taints: dict[int, list[dict[str, Any]]] | None = None):
    devices = []
    for i in range(count):
        device: dict[str, Any] = {"name": f"gpu-{i}", "attributes": {"index": {"int": i}}}
        if taints and i in taints:
            device["taints"] = taints[i]
        devices.append(device)
    return {
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def make_claim(name: str, count: int = 1, **extra: Any) -> dict[str, Any]:
    exactly = {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": count, **extra}
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
        "status": {},
    }


GPU_CLASS = {
    "metadata": {"name": "gpu"},
    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
}


def claim_pod(name: str, *claims: str, template: str = "") -> dict[str, Any]:
    pod = make_pod(name)
    pod["metadata"]["uid"] = f"uid-{name}"
    refs: list[dict[str, Any]] = [{"name": c, "resourceClaimName": c} for c in claims]
    if template:
        refs.append({"name": "gpu", "resourceClaimTemplateName": template})
    pod["spec"]["resourceClaims"] = refs
    return pod


class View:
    def __init__(self, slices=(), claims=(), classes=(GPU_CLASS,), rules=()):
        self.scheduler = Scheduler(
            client=None,  # type: ignore[arg-type]
            clock=VirtualClock(),
            seed=1,
            features=FeatureGates(),
        )
        for node in ("n1", "n2"):
            self.scheduler._node_added(make_node(node))
        caches = self.scheduler.dra_caches
        for s in slices:
            caches.slices[s["metadata"]["name"]] = s  # type: ignore[index]
        for c in claims:
            caches.claims[f"default/{c['metadata']['name']}"] = c  # type: ignore[index]
        for c in classes:
            caches.classes[c["metadata"]["name"]] = c  # type: ignore[index]
        for r in rules:
            caches.rules[r["metadata"]["name"]] = r  # type: ignore[index]

    def place(self, pod):
        decision = self.scheduler.decide(PodInfo.of(pod))
        return decision.node or decision.message


def test_a_template_claim_not_created_yet_rejects_the_pod_before_filtering():
    view = View([gpu_slice("n1")])
    assert view.place(claim_pod("p", template="gpu-template")) == (
        '0/2 nodes are available: pod "default/p": ResourceClaim not created yet. '
        f"{NO_CLAIMS}, {NO_PREEMPTION}"
    )


def test_missing_deleted_and_foreign_claims():
    view = View([gpu_slice("n1")])
    assert view.place(claim_pod("p", "c")) == (
        '0/2 nodes are available: resourceclaim.resource.k8s.io "c" not found. '
        f"{NO_CLAIMS}, {NO_PREEMPTION}"
    )
    deleting = make_claim("c")
    deleting["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    assert View([gpu_slice("n1")], [deleting]).place(claim_pod("p", "c")) == (
        f'0/2 nodes are available: resourceclaim "c" is being deleted. {NO_CLAIMS}, {NO_PREEMPTION}'
    )
    pod = claim_pod("p", template="t")
    pod["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-x"}]}
    assert View([gpu_slice("n1")], [make_claim("p-gpu-x")]).place(pod) == (
        "0/2 nodes are available: ResourceClaim default/p-gpu-x was not created for pod "
        f"default/p (pod is not owner). {NO_CLAIMS}, {NO_PREEMPTION}"
    )


def test_a_missing_device_class():
    view = View([gpu_slice("n1")], [make_claim("c")], classes=())
    assert view.place(claim_pod("p", "c")) == (
        "0/2 nodes are available: request gpu: device class gpu does not exist. "
        f"{NO_CLAIMS}, {NO_PREEMPTION}"
    )


def test_the_pod_goes_where_devices_are_free_and_untolerated_taints_count_as_taken():
    no_schedule = [{"key": "example.com/hot", "value": "1", "effect": "NoSchedule"}]
    slices = [gpu_slice("n1", taints={0: no_schedule, 1: no_schedule}), gpu_slice("n2")]
    view = View(slices, [make_claim("c")])
    assert view.place(claim_pod("p", "c")) == "n2"
    assert View(slices, [make_claim("c", count=3)]).place(claim_pod("p", "c")) == (
        f"0/2 nodes are available: 2 cannot allocate all claims. {STILL}, {NO_PREEMPTION}"
    )


def test_a_tolerated_taint_and_an_effect_none_taint_do_not_block():
    slices = [
        gpu_slice("n1", taints={0: [{"key": "k", "effect": "NoExecute"}]}),
        gpu_slice("n2", count=0),
    ]
    tolerating = make_claim("c", tolerations=[{"key": "k", "operator": "Exists"}])
    assert View(slices, [tolerating]).place(claim_pod("p", "c")) == "n1"
    informational = [gpu_slice("n1", count=1, taints={0: [{"key": "k", "effect": "None"}]})]
    assert View(informational, [make_claim("c")]).place(claim_pod("p", "c")) == "n1"


def test_a_device_taint_rule_with_an_empty_selector_blocks_every_device():
    rule: dict[str, Any] = {
        "metadata": {"name": "maintenance"},
        "spec": {"deviceSelector": {}, "taint": {"key": "maint", "effect": "NoSchedule"}},
    }
    view = View([gpu_slice("n1"), gpu_slice("n2")], [make_claim("c")], rules=[rule])
    assert view.place(claim_pod("p", "c")) == (
        f"0/2 nodes are available: 2 cannot allocate all claims. {STILL}, {NO_PREEMPTION}"
    )
    unselected = {**rule, "spec": {"taint": rule["spec"]["taint"]}}
    view = View([gpu_slice("n1")], [make_claim("c")], rules=[unselected])
    assert view.place(claim_pod("p", "c")) == "n1"


def test_an_allocated_claim_pins_its_pods_to_its_node():
    claim = make_claim("c")
    claim["status"] = {
        "allocation": {
            "devices": {
                "results": [{"request": "gpu", "driver": DRIVER, "pool": "n2", "device": "gpu-0"}]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}
                ]
            },
        }
    }
    view = View([gpu_slice("n1"), gpu_slice("n2")], [claim])
    assert view.place(claim_pod("p", "c")) == "n2"
    view.scheduler._node_deleted(make_node("n2"))
    view.scheduler._node_added(make_node("n3"))
    assert view.place(claim_pod("p", "c")).startswith(
        "0/2 nodes are available: 2 resourceclaim not available on the node."
    )


def test_a_cel_error_is_an_error_of_the_filter():
    claim = make_claim("c", selectors=[{"cel": {"expression": f'device.attributes["{DRIVER}"].x'}}])
    message = View([gpu_slice("n1"), gpu_slice("n2", count=0)], [claim]).place(claim_pod("p", "c"))
    # An Error aborts the cycle (findNodesThatPassFilters): the error alone, no diagnosis.
    assert message.startswith(
        'running "DynamicResources" filter plugin: claim default/c: selector #0 on device '
        "gpu.example.com/n1/gpu-0: CEL runtime error: no such key: x"
    )


def test_reserve_holds_the_devices_for_later_cycles_and_unreserve_releases_them():
    view = View([gpu_slice("n1", count=1)], [make_claim("a"), make_claim("b")])
    first = PodInfo.of(claim_pod("p1", "a"))
    decision = view.scheduler.decide(first)
    assert decision.node == "n1"
    assert decision.state is not None
    framework = view.scheduler.framework
    assert framework.run_reserve(decision.state, first, "n1") is None
    assert view.place(claim_pod("p2", "b")).startswith(
        "0/2 nodes are available: 2 cannot allocate all claims."
    )
    framework.run_unreserve(decision.state, first, "n1")
    assert view.place(claim_pod("p2", "b")) == "n1"


class RecordingClient:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def update(self, rt, obj, *, subresource=""):
        self.calls.append((subresource or "main", copy.deepcopy(obj)))
        return copy.deepcopy(obj)


def test_prebind_adds_the_finalizer_then_writes_allocation_and_reservation():
    view = View([gpu_slice("n1", count=1)], [make_claim("c")])
    client = RecordingClient()
    view.scheduler.dra.client = client  # type: ignore[assignment]
    pod = PodInfo.of(claim_pod("p", "c"))
    decision = view.scheduler.decide(pod)
    state = decision.state or CycleState()
    framework = view.scheduler.framework
    assert framework.run_reserve(state, pod, "n1") is None
    assert asyncio.run(framework.run_pre_bind(state, pod, "n1")) is None
    (first, main), (second, status) = client.calls
    assert (first, second) == ("main", "status")
    assert main["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    assert status["status"] == {
        "allocation": {
            "devices": {
                "results": [{"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                ]
            },
        },
        "reservedFor": [{"resource": "pods", "name": "p", "uid": "uid-p"}],
    }


def test_pods_without_claims_skip_the_plugin():
    view = View()
    assert view.place(make_pod("plain")) in {"n1", "n2"}


def allocated(name: str, node: str, reserved_for: tuple[str, ...] = ()) -> dict[str, Any]:
    claim = make_claim(name)
    claim["status"] = {
        "allocation": {
            "devices": {
                "results": [{"request": "gpu", "driver": DRIVER, "pool": node, "device": "gpu-0"}]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            },
        },
        "reservedFor": [
            {"resource": "pods", "name": uid, "uid": f"uid-{uid}"} for uid in reserved_for
        ],
    }
    return claim


def test_post_filter_deallocates_an_allocated_claim_reserved_for_nobody_else():
    claim = allocated("c", "gone")
    view = View([gpu_slice("n1")], [claim])
    client = RecordingClient()
    view.scheduler.dra.client = client  # type: ignore[assignment]
    decision = view.scheduler.decide(PodInfo.of(claim_pod("p", "c")))
    assert decision.message == (
        "0/2 nodes are available: 2 resourceclaim not available on the node. "
        f"deallocation of ResourceClaim completed, {NO_PREEMPTION}"
    )
    assert decision.state is not None
    assert asyncio.run(view.scheduler.dra.write_deallocation(decision.state)) is None
    ((subresource, written),) = client.calls
    assert subresource == "status"
    assert written["metadata"]["name"] == "c"
    assert written["status"] == {}  # neither allocation nor reservedFor
    assert claim["status"]["allocation"]  # the cached claim is left to the informer
    assert asyncio.run(view.scheduler.dra.write_deallocation(decision.state)) is None
    assert len(client.calls) == 1  # written once
    # Reserved for this very pod only: deallocated as well.
    mine = View([gpu_slice("n1")], [allocated("c", "gone", reserved_for=("p",))])
    assert "deallocation of ResourceClaim completed, " in mine.place(claim_pod("p", "c"))


def test_post_filter_leaves_a_claim_another_pod_uses():
    view = View([gpu_slice("n1")], [allocated("c", "gone", reserved_for=("other",))])
    decision = view.scheduler.decide(PodInfo.of(claim_pod("p", "c")))
    assert decision.message == (
        "0/2 nodes are available: 2 resourceclaim not available on the node. "
        f"{STILL}, {NO_PREEMPTION}"
    )
    assert decision.state is not None
    assert asyncio.run(view.scheduler.dra.write_deallocation(decision.state)) is None


def test_pods_without_claims_get_the_plugins_post_filter_reason():
    view = View()
    view.scheduler._node_deleted(make_node("n2"))
    view.scheduler._node_updated(make_node("n1"), make_node("n1", unschedulable=True))
    assert view.place(make_pod("plain")) == (
        "0/1 nodes are available: 1 node(s) were unschedulable. no new claims to deallocate, "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
