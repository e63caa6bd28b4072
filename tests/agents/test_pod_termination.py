"""How a simulated kubelet stops a pod being deleted, as upstream's kubelet: ``Killing``
events, the terminal phase and terminated containers, then removal with the pod's uid as
precondition — on virtual time, at exact instants."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from taintplane.agents.nodes import NodeShape
from taintplane.client import resource
from tests.controllers.harness import Sim, simulate
from tests.scheduler.builders import make_pod

PODS = resource("", "v1", "pods")


def pod(
    name: str, *, shutdown: float | None = None, grace: int = 30, **extra: Any
) -> dict[str, Any]:
    made = make_pod(name, node_name="node-1", terminationGracePeriodSeconds=grace)
    made["spec"]["containers"].append({"name": "sidecar", "image": "envoy"})
    if shutdown is not None:
        made["metadata"]["annotations"] = {"sim.taintplane.io/shutdown-seconds": str(shutdown)}
    made["metadata"].update(extra)
    return made


def conditions(found: dict[str, Any]) -> dict[str, tuple[str, str | None, str]]:
    return {
        c["type"]: (c["status"], c.get("reason"), c["lastTransitionTime"])
        for c in found["status"]["conditions"]
    }


def run(tmp_path: Path, scenario: Any) -> None:
    simulate(tmp_path, scenario, components=("agents",), nodes=[NodeShape("node-1")])


def test_a_deleted_pod_is_killed_reports_succeeded_and_is_removed(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_pod(pod("web", shutdown=5, finalizers=["example.com/keep"]))
        await sim.advance_to(10)
        running = await sim.pod("web")
        assert running is not None
        assert running["status"]["phase"] == "Running"
        await sim.client.delete(PODS, "web", "default")
        await sim.advance(0)
        killing = await sim.events("Killing")
        assert [(e["message"], e["involvedObject"]["fieldPath"]) for e in killing] == [
            ("Stopping container c", "spec.containers{c}"),
            ("Stopping container sidecar", "spec.containers{sidecar}"),
        ]
        assert {e["source"]["component"] for e in killing} == {"kubelet"}
        assert {e["source"]["host"] for e in killing} == {"node-1"}
        await sim.advance(4.9)
        still = await sim.pod("web")
        assert still is not None
        assert still["status"]["phase"] == "Running"
        await sim.advance(0.1)  # the containers exit on SIGTERM after 5 s
        stopped = await sim.pod("web")
        assert stopped is not None  # the finalizer keeps it, in its terminal phase
        assert stopped["status"]["phase"] == "Succeeded"
        assert conditions(stopped) == {
            "PodReadyToStartContainers": ("False", None, "2026-01-01T00:00:15Z"),
            "Initialized": ("True", "PodCompleted", "2026-01-01T00:00:00Z"),
            "Ready": ("False", "PodCompleted", "2026-01-01T00:00:15Z"),
            "ContainersReady": ("False", "PodCompleted", "2026-01-01T00:00:15Z"),
            "PodScheduled": ("True", None, "2026-01-01T00:00:00Z"),
        }
        # The kubelet's conditions in upstream's order (generateAPIPodStatus).
        assert [c["type"] for c in stopped["status"]["conditions"]] == [
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled",
        ]
        states = {c["name"]: c for c in stopped["status"]["containerStatuses"]}
        assert set(states) == {"c", "sidecar"}
        images = {"c": "nginx", "sidecar": "envoy"}
        for name, container in states.items():
            # Complete statuses (the Python client refuses a container status without image).
            assert container["image"] == images[name]
            assert container["imageID"].startswith(f"{images[name]}@sha256:")
            assert container["restartCount"] == 0
            assert container["lastState"] == {}
            assert container["ready"] is False
            assert container["started"] is False
            assert list(container["state"]) == ["terminated"]
            terminated = container["state"]["terminated"]
            assert terminated["exitCode"] == 0
            assert terminated["reason"] == "Completed"
            assert terminated["startedAt"] == "2026-01-01T00:00:00Z"
            assert terminated["finishedAt"] == "2026-01-01T00:00:15Z"
            assert terminated["containerID"].startswith("containerd://")
        await sim.client.patch(PODS, "web", {"metadata": {"finalizers": None}}, namespace="default")
        await sim.advance(0)
        assert await sim.pod("web") is None

    run(tmp_path, scenario)


def test_a_container_outliving_its_grace_period_is_killed_and_the_pod_fails(
    tmp_path: Path,
) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_pod(pod("slow", shutdown=60, grace=10, finalizers=["example.com/keep"]))
        await sim.advance(1)
        await sim.client.delete(PODS, "slow", "default")
        await sim.advance(9.9)
        before = await sim.pod("slow")
        assert before is not None
        assert before["status"]["phase"] == "Running"
        await sim.advance(0.1)
        stopped = await sim.pod("slow")
        assert stopped is not None
        assert stopped["status"]["phase"] == "Failed"
        assert conditions(stopped)["Ready"] == ("False", "PodFailed", "2026-01-01T00:00:11Z")
        assert conditions(stopped)["Initialized"] == ("True", None, "2026-01-01T00:00:00Z")
        exits = {
            c["state"]["terminated"]["exitCode"] for c in stopped["status"]["containerStatuses"]
        }
        assert exits == {137}
        reasons = {
            c["state"]["terminated"]["reason"] for c in stopped["status"]["containerStatuses"]
        }
        assert reasons == {"Error"}

    run(tmp_path, scenario)


def test_without_a_finalizer_the_pod_reports_its_end_then_is_gone(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        created = await sim.create_pod(pod("quick"))
        await sim.advance(1)
        seen: list[tuple[str, str, bool]] = []

        async def watch() -> None:
            async for kind, obj in sim.client.watch(
                PODS, "default", resource_version=created["metadata"]["resourceVersion"]
            ):
                if kind != "BOOKMARK":
                    deleting = bool(obj["metadata"].get("deletionTimestamp"))
                    seen.append((kind, obj["status"].get("phase", ""), deleting))

        watcher = asyncio.create_task(watch())
        await sim.advance(0)
        await sim.client.delete(PODS, "quick", "default")
        await sim.advance(0)
        assert await sim.pod("quick") is None
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
        assert seen[-3:] == [
            ("MODIFIED", "Running", True),  # the graceful deletion
            ("MODIFIED", "Succeeded", True),  # the kubelet's terminal status
            ("DELETED", "Succeeded", True),  # its final deletion
        ]
        assert len(await sim.events("Killing")) == 2

    run(tmp_path, scenario)


def test_a_static_pod_keeps_its_phase_and_is_removed(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        static = pod("etcd", finalizers=["example.com/keep"])
        static["metadata"]["annotations"] = {"kubernetes.io/config.source": "file"}
        await sim.create_pod(static)
        await sim.advance(1)
        await sim.client.delete(PODS, "etcd", "default")
        await sim.advance(0)
        kept = await sim.pod("etcd")
        assert kept is not None
        assert kept["status"]["phase"] == "Running"  # upstream: no terminal phase for static pods

    run(tmp_path, scenario)


def test_a_started_pod_tells_pulled_created_started_per_container(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_pod(pod("started"))  # containers c (nginx) and sidecar (envoy)
        await sim.advance(1)
        seen = []
        for reason in ("Pulled", "Created", "Started"):
            for event in await sim.events(reason):
                seen.append((reason, event["involvedObject"]["fieldPath"], event["message"]))
        # Both images are untagged, so pulled Always: a real kubelet would report a pull we
        # cannot simulate honestly, so no Pulled event; a tagged image is "already present".
        assert sorted(seen) == [
            ("Created", "spec.containers{c}", "Container created"),
            ("Created", "spec.containers{sidecar}", "Container created"),
            ("Started", "spec.containers{c}", "Container started"),
            ("Started", "spec.containers{sidecar}", "Container started"),
        ]
        tagged = pod("tagged")
        tagged["spec"]["containers"] = [{"name": "web", "image": "nginx:1.27"}]
        await sim.create_pod(tagged)
        await sim.advance(1)
        pulled = [e for e in await sim.events("Pulled") if e["involvedObject"]["name"] == "tagged"]
        assert [(e["message"], e["source"]) for e in pulled] == [
            (
                'Container image "nginx:1.27" already present on machine and can be accessed '
                "by the pod",
                {"component": "kubelet", "host": "node-1"},
            )
        ]

    run(tmp_path, scenario)


def test_a_pods_events_list_in_the_order_they_happened(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        unbound = make_pod("ordered")
        unbound["spec"]["containers"] = [{"name": "web", "image": "nginx:1.27"}]
        await sim.create_pod(unbound)
        await sim.advance(1)
        items, _ = await sim.client.list(resource("", "v1", "events"), "default")
        mine = [e for e in items if e["involvedObject"]["name"] == "ordered"]
        # Listed by name (as kubectl describe receives them): all at one instant, yet in order.
        assert [e["reason"] for e in mine] == ["Scheduled", "Pulled", "Created", "Started"]

    simulate(
        tmp_path,
        scenario,
        components=("scheduler", "controller-manager", "agents"),
        nodes=[NodeShape("node-1")],
    )
