"""The controllers' work queues carry upstream's names (the ``name`` label of the
``workqueue_*`` series), and queues that are handled in informer callbacks here still count
their adds and retries where client-go's would."""

from __future__ import annotations

from pathlib import Path

from taintplane.client.queue_metrics import QueueMetrics, queue_metrics_of
from taintplane.controllers.manager import ALL_CONTROLLERS
from tests.client.test_workqueue_metrics import scrape
from tests.controllers.harness import NODES, PODS, Sim, simulate
from tests.scheduler.builders import make_node, make_pod

#: The ``Name`` of each queue upstream (Kubernetes 1.35) creates in the controllers we run.
UPSTREAM_QUEUE_NAMES = {
    # pkg/controller/clusterroleaggregation
    "ClusterRoleAggregator",
    # pkg/controller/daemon, deployment, replicaset, namespace
    "daemonset",
    "deployment",
    "replicaset",
    "namespace",
    # pkg/controller/devicetainteviction: named after the controller
    "device-taint-eviction-controller",
    # pkg/controller/disruption
    "disruption",
    "disruption_recheck",
    "stale_pod_disruption",
    # pkg/controller/garbagecollector
    "garbage_collector_attempt_to_delete",
    "garbage_collector_attempt_to_orphan",
    "garbage_collector_graph_changes",
    # pkg/controller/nodelifecycle
    "node_lifecycle_controller",
    "node_lifecycle_controller_pods",
    # pkg/controller/tainteviction
    "noexec_taint_node",
    "noexec_taint_pod",
    # pkg/controller/podgc
    "orphaned_pods_nodes",
    # pkg/controller/resourceclaim
    "resource_claim",
}


def queues(sim: Sim) -> list[QueueMetrics]:
    manager = sim.cluster.controller_manager
    assert manager is not None
    return queue_metrics_of(manager.controllers.values())


def test_every_controller_names_its_queues_as_upstream(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        manager = sim.cluster.controller_manager
        assert manager is not None
        assert set(manager.controllers) == set(ALL_CONTROLLERS)
        names = [queue.name for queue in queues(sim)]
        assert sorted(names) == sorted(UPSTREAM_QUEUE_NAMES)

    simulate(tmp_path, scenario)


def test_taint_eviction_counts_node_and_pod_changes_as_upstreams_queues(
    tmp_path: Path,
) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_node(make_node("n1"))  # node added: 1
        await sim.create_pod(make_pod("doomed", node_name="n1"))  # pod added: 1
        tolerant = make_pod(
            "tolerant",
            node_name="n1",
            tolerations=[
                {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}
            ],
        )
        await sim.create_pod(tolerant)  # pod added: 2
        # Neither tolerations nor node changed: upstream's PodUpdated queues nothing.
        await sim.client.patch(
            PODS, "doomed", {"metadata": {"labels": {"a": "b"}}}, namespace="default"
        )
        # Nor does a node update that keeps its NoExecute taints.
        await sim.client.patch(NODES, "n1", {"metadata": {"labels": {"a": "b"}}})
        await sim.clock.advance(0)
        await sim.taint("n1", [{"key": "k", "effect": "NoExecute"}])  # node updated: 2
        await sim.advance(60)  # both evicted: a condition and a deletionTimestamp, not queued
        assert await sim.deletion("doomed") is not None
        assert await sim.deletion("tolerant") is not None

        samples = scrape(*queues(sim))
        for name, adds in (("noexec_taint_node", 2.0), ("noexec_taint_pod", 2.0)):
            label = f'name="{name}"'
            assert samples[f"workqueue_adds_total{{{label}}}"] == adds
            assert samples[f"workqueue_depth{{{label}}}"] == 0.0
            assert samples[f"workqueue_retries_total{{{label}}}"] == 0.0
            assert samples[f"workqueue_queue_duration_seconds_count{{{label}}}"] == adds
            assert samples[f"workqueue_queue_duration_seconds_sum{{{label}}}"] == 0.0
            assert samples[f"workqueue_work_duration_seconds_count{{{label}}}"] == adds
            assert samples[f"workqueue_unfinished_work_seconds{{{label}}}"] == 0.0

    simulate(tmp_path, scenario, controllers=("taint-eviction-controller",))


def test_pod_gc_counts_each_quarantine_request_and_each_node_checked(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_node(make_node("n1"))
        await sim.create_pod(make_pod("a", node_name="n1"))
        await sim.create_pod(make_pod("b", node_name="n1"))
        await sim.advance_to(25)
        await sim.client.delete(NODES, "n1")
        # Passes at 40, 60 and 80 s each AddAfter n1 once per pod naming it; at 80 s its
        # quarantine ends, it is added and taken once, and found gone.
        await sim.advance_to(80)
        assert await sim.pod("a") is None

        label = 'name="orphaned_pods_nodes"'
        samples = scrape(*queues(sim))
        assert samples[f"workqueue_retries_total{{{label}}}"] == 6.0
        assert samples[f"workqueue_adds_total{{{label}}}"] == 1.0
        assert samples[f"workqueue_depth{{{label}}}"] == 0.0
        assert samples[f"workqueue_work_duration_seconds_count{{{label}}}"] == 1.0

    simulate(tmp_path, scenario, controllers=("pod-garbage-collector-controller",))
