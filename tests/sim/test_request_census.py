"""The API requests one Deployment's pods cost from create to Running, by kind, against what
upstream's components send for the same pod (BENCHMARKS.md, "Requests per pod against
upstream's").

Upstream (v1.35) per pod: the ReplicaSet controller's create; the scheduler's binding and its
``Scheduled`` Event (events.k8s.io); the kubelet's ``Pulled`` (image already present),
``Created`` and ``Started`` Events and, from its status manager, a GET and a status PATCH for
each status it syncs (the ContainerCreating one, then Running: two of each at least); a
ReplicaSet status PUT per sync whose status changed (``updateReplicaSetStatus``: the replica
count on create, the ready/available counts on Running, so at most two a pod) and a Deployment
status PUT per sync whose status changed (one per ReplicaSet status change at most). Ours must
write no more of any kind, refuse none (409) and write nothing unchanged. The kubelets write
in rounds (agents/pod_rounds.py), so the pods' Running reaches the ReplicaSet in bursts and its
status, and the Deployment's, are written a few times in all rather than once a pod; what they
end with is the same.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from taintplane.agents.nodes import NodeShape
from taintplane.bench.census import Census, _resource
from taintplane.bench.deployment_scale import DEPLOYMENTS, deployment
from tests.controllers.harness import PODS, Sim, simulate
from tests.controllers.workload_builders import REPLICASETS

REPLICAS = 12

#: (verb, resource, subresource, detail) -> the most upstream sends per pod.
UPSTREAM_PER_POD = {
    ("create", "pods", "", ""): 1,
    ("create", "pods", "binding", ""): 1,
    ("create", "events.events.k8s.io", "", "Scheduled"): 1,
    ("create", "events", "", "Pulled"): 1,
    ("create", "events", "", "Created"): 1,
    ("create", "events", "", "Started"): 1,
    ("patch", "pods", "status", ""): 2,
    ("update", "replicasets.apps", "status", ""): 2,
    ("update", "deployments.apps", "status", ""): 2,
}


def test_resource_of_a_path() -> None:
    assert _resource("/api/v1/namespaces/default/pods/p/status") == ("pods", "status", True)
    assert _resource("/apis/apps/v1/namespaces/default/replicasets") == (
        "replicasets.apps",
        "",
        False,
    )
    assert _resource("/api/v1/nodes/n") == ("nodes", "", True)
    assert _resource("/api/v1/namespaces/default") == ("namespaces", "", True)


def test_a_deployments_pods_cost_no_more_requests_than_upstreams(tmp_path: Path) -> None:
    census = Census()
    counted: Counter[tuple[str, str, str, str]] = Counter()

    async def scenario(sim: Sim) -> None:
        api = sim.cluster.apiserver
        assert api is not None
        setattr(api, "_asgi", census.wrap(api._asgi))  # noqa: B010
        await sim.client.create(DEPLOYMENTS, deployment(REPLICAS), namespace="default")
        for _ in range(5):
            await sim.advance(1)
        items, _ = await sim.client.list(PODS, "default")
        assert len(items) == REPLICAS
        assert all(p["status"]["phase"] == "Running" for p in items)
        (rs,), _ = await sim.client.list(REPLICASETS, "default")
        counts = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")
        assert [rs["status"][c] for c in counts] == [REPLICAS] * 4
        status = (await sim.client.get(DEPLOYMENTS, "web", "default"))["status"]
        counts = ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")
        assert [status[c] for c in counts] == [REPLICAS] * 4
        available = [c for c in status["conditions"] if c["type"] == "Available"]
        assert available[0]["status"] == "True"

    simulate(
        tmp_path,
        scenario,
        components=("scheduler", "controller-manager", "agents"),
        nodes=[NodeShape(f"node-{i}") for i in range(3)],
    )
    for seen, count in census.counts.items():
        counted[(seen.verb, seen.resource, seen.subresource, seen.detail)] += count
    details: list[Any] = [k for k in counted if k[3] in ("409", "unchanged")]
    assert details == [], "a refused or unchanged write"
    reads = {k: n for k, n in counted.items() if k[0] in ("get", "list")}
    # The test's own reads at the end are the only ones.
    assert reads == {
        ("list", "pods", "", ""): 1,
        ("list", "replicasets.apps", "", ""): 1,
        ("get", "deployments.apps", "", ""): 1,
    }
    for kind, most in UPSTREAM_PER_POD.items():
        assert counted[kind] <= most * REPLICAS, (kind, counted[kind])
    # Exactly one of each per pod where ours is upstream's; one status patch (straight to
    # Running: the simulated containers start in the instant the pod is admitted).
    for kind in [*list(UPSTREAM_PER_POD)[:6], ("patch", "pods", "status", "")]:
        assert counted[kind] == REPLICAS, (kind, counted[kind])
    # The kubelets' rounds: the burst of Running pods in a few ReplicaSet and Deployment
    # status writes (one a pod when one worker wrote one pod at a time).
    for kind in list(UPSTREAM_PER_POD)[-2:]:
        assert counted[kind] <= REPLICAS * 2 // 3, (kind, counted[kind])
