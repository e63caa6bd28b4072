"""DynamicResources' PreEnqueue, live on virtual time: a pod whose claims do not exist yet is
not tried at all (no attempt, no FailedScheduling, no PodScheduled condition, no backoff) until
the claim, or the pod's record of its generated claim, arrives."""

from __future__ import annotations

from pathlib import Path

from tests.controllers.harness import PODS, Sim
from tests.dra.live import CLAIMS, claim, device_class, exactly, node_with_devices, run


async def _failed_scheduling(sim: Sim, pod: str) -> list[str]:
    return [
        e["message"]
        for e in await sim.events("FailedScheduling")
        if e["involvedObject"]["name"] == pod
    ]


def test_a_pod_waits_untried_for_its_claim_by_name(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await node_with_devices(sim, "n1", [{"name": "gpu-0"}])
        await device_class(sim, "gpu")
        await sim.create_pod(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "namespace": "default"},
                "spec": {
                    "containers": [{"name": "c", "image": "app"}],
                    "resourceClaims": [{"name": "c", "resourceClaimName": "later"}],
                },
            }
        )
        await sim.advance(30)
        pod = await sim.pod("p")
        assert pod is not None
        assert not pod["spec"].get("nodeName")
        assert not (pod.get("status") or {}).get("conditions")
        assert await _failed_scheduling(sim, "p") == []
        # The claim's creation lets it through at once, with no backoff owed.
        await claim(sim, "later", {"requests": [exactly("gpu", "gpu")]})
        await sim.advance(0)
        pod = await sim.pod("p")
        assert pod is not None
        assert pod["spec"].get("nodeName") == "n1"

    run(tmp_path, scenario)


def test_a_pod_waits_untried_for_its_generated_claim(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await node_with_devices(sim, "n1", [{"name": "gpu-0"}])
        await device_class(sim, "gpu")
        created = await sim.create_pod(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "namespace": "default"},
                "spec": {
                    "containers": [{"name": "c", "image": "app"}],
                    "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
                },
            }
        )
        await sim.advance(30)
        assert await _failed_scheduling(sim, "p") == []
        # What the resource claim controller does: the claim, owned by the pod, then its name
        # in the pod's status.
        owner = {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "p",
            "uid": created["metadata"]["uid"],
            "controller": True,
        }
        await sim.client.create(
            CLAIMS,
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": "p-gpu-x", "namespace": "default", "ownerReferences": [owner]},
                "spec": {"devices": {"requests": [exactly("gpu", "gpu")]}},
            },
            namespace="default",
        )
        await sim.advance(5)
        pod = await sim.pod("p")
        assert pod is not None
        assert not pod["spec"].get("nodeName")  # the claim exists, but the pod does not name it
        await sim.client.patch(
            PODS,
            "p",
            {
                "status": {
                    "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-x"}]
                }
            },
            namespace="default",
            patch_type="merge",
            subresource="status",
        )
        await sim.advance(0)
        pod = await sim.pod("p")
        assert pod is not None
        assert pod["spec"].get("nodeName") == "n1"
        assert await _failed_scheduling(sim, "p") == []

    run(tmp_path, scenario)
