"""The taint eviction controller on virtual time: exact due instants, cancellation, events,
the pod condition and the metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prometheus_client import generate_latest

from taintplane.controllers.tainteviction import TaintEvictionController
from tests.controllers.harness import Sim, at, simulate
from tests.scheduler.builders import make_node, make_pod, taint

ONLY = ("taint-eviction-controller",)


def toleration(key: str, effect: str = "NoExecute", seconds: int | None = None, **extra):
    t = {"key": key, "operator": "Exists", "effect": effect, **extra}
    if seconds is not None:
        t["tolerationSeconds"] = seconds
    return t


def controller(sim: Sim) -> TaintEvictionController:
    manager = sim.cluster.controller_manager
    assert manager is not None
    found = manager.controllers["taint-eviction-controller"]
    assert isinstance(found, TaintEvictionController)
    return found


def condition(pod, kind="DisruptionTarget"):
    return next((c for c in pod["status"].get("conditions", []) if c["type"] == kind), None)


def test_toleration_seconds_3600_evicts_at_exactly_3600_s(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_node(make_node("n1"))
        await sim.create_pod(
            make_pod("web", node_name="n1", tolerations=[toleration("dedicated", seconds=3600)])
        )
        await sim.advance_to(10)
        await sim.taint("n1", [taint("dedicated", value="db", effect="NoExecute")])
        assert controller(sim).scheduled("default", "web") == at(3610)
        await sim.advance_to(3609.999)
        assert await sim.deletion("web") is None
        await sim.advance_to(3610)
        pod = await sim.pod("web")
        assert pod is not None
        assert pod["metadata"]["deletionTimestamp"] == "2026-01-01T01:00:40Z"  # +30 s grace
        assert condition(pod) == {
            "type": "DisruptionTarget",
            "status": "True",
            "lastTransitionTime": "2026-01-01T01:00:10Z",
            "reason": "DeletionByTaintManager",
            "message": "Taint manager: deleting due to NoExecute taint",
            "observedGeneration": 1,  # CalculatePodConditionObservedGeneration
            "lastProbeTime": None,
        }
        events = await sim.events("TaintManagerEviction")
        assert [(e["message"], e["type"], e["source"]) for e in events] == [
            (
                "Marking for deletion Pod default/web",
                "Normal",
                {"component": "taint-eviction-controller"},
            )
        ]
        assert events[0]["involvedObject"]["name"] == "web"
        assert events[0]["lastTimestamp"] == "2026-01-01T01:00:10Z"
        manager = sim.cluster.controller_manager
        assert manager is not None
        metrics = generate_latest(manager.registry).decode()
        assert "taint_eviction_controller_pod_deletions_total 1.0" in metrics
        assert 'taint_eviction_controller_pod_deletion_duration_seconds_bucket{le="0.005"} 1.0' in (
            metrics
        )

    simulate(tmp_path, scenario, controllers=ONLY)


def test_removing_the_taint_first_cancels_the_eviction(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_node(make_node("n1"))
        await sim.create_pod(
            make_pod("web", node_name="n1", tolerations=[toleration("dedicated", seconds=3600)])
        )
        await sim.taint("n1", [taint("dedicated", effect="NoExecute")])
        await sim.advance_to(3599)
        await sim.taint("n1", None)
        assert controller(sim).scheduled("default", "web") is None
        await sim.advance_to(7200)
        assert await sim.deletion("web") is None
        events = await sim.events("TaintManagerEviction")
        assert [(e["message"], e["lastTimestamp"]) for e in events] == [
            ("Cancelling deletion of Pod default/web", "2026-01-01T00:59:59Z")
        ]
        # Upstream's reference names the pod only: no uid, no resourceVersion.
        assert events[0]["involvedObject"] == {
            "kind": "Pod",
            "namespace": "default",
            "name": "web",
            "apiVersion": "v1",
        }
        assert events[0]["source"] == {"component": "taint-eviction-controller"}

    simulate(tmp_path, scenario, controllers=ONLY)


def test_untolerated_taint_evicts_at_once_and_tolerated_forever_never(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_node(make_node("n1"))
        await sim.create_pod(make_pod("plain", node_name="n1"))
        await sim.create_pod(make_pod("forever", node_name="n1", tolerations=[toleration("k")]))
        await sim.create_pod(
            make_pod("zero", node_name="n1", tolerations=[toleration("k", seconds=0)])
        )
        await sim.create_pod(
            make_pod("negative", node_name="n1", tolerations=[toleration("k", seconds=-5)])
        )
        await sim.advance_to(5)
        await sim.taint("n1", [taint("k", effect="NoExecute")])
        for name in ("plain", "zero", "negative"):
            assert await sim.deletion(name) == "2026-01-01T00:00:35Z", name
        await sim.advance_to(100_000)
        assert await sim.deletion("forever") is None

    simulate(tmp_path, scenario, controllers=ONLY)


def test_seed_example_three_taints_two_tolerations_keeps_running(tmp_path: Path) -> None:
    """Seed 002: key1=value1:NoSchedule, key1=value1:NoExecute, key2=value2:NoSchedule and a
    pod tolerating the first two. Already there, it keeps running (the NoExecute taint is
    tolerated); the NoSchedule one would only keep it from being scheduled."""

    async def scenario(sim: Sim) -> None:
        await sim.create_node(make_node("n1"))
        tolerations = [
            {"key": "key1", "operator": "Equal", "value": "value1", "effect": "NoSchedule"},
            {"key": "key1", "operator": "Equal", "value": "value1", "effect": "NoExecute"},
        ]
        await sim.create_pod(make_pod("p", node_name="n1", tolerations=tolerations))
        await sim.taint(
            "n1",
            [
                taint("key1", value="value1", effect="NoSchedule"),
                taint("key1", value="value1", effect="NoExecute"),
                taint("key2", value="value2", effect="NoSchedule"),
            ],
        )
        await sim.advance_to(86_400)
        assert await sim.deletion("p") is None

    simulate(tmp_path, scenario, controllers=ONLY)


def test_a_scheduled_deletion_is_never_pushed_later(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_node(make_node("n1"))
        tolerations = [toleration("a", seconds=100), toleration("b", seconds=1000)]
        await sim.create_pod(make_pod("p", node_name="n1", tolerations=tolerations))
        await sim.taint("n1", [taint("a", effect="NoExecute")])
        assert controller(sim).scheduled("default", "p") == at(100)
        await sim.advance_to(50)
        # Swapping for a taint tolerated for longer keeps the earlier instant ...
        await sim.taint("n1", [taint("b", effect="NoExecute")])
        assert controller(sim).scheduled("default", "p") == at(100)
        await sim.advance_to(99)
        assert await sim.deletion("p") is None
        await sim.advance_to(100)
        assert await sim.deletion("p") == "2026-01-01T00:02:10Z"

    simulate(tmp_path, scenario, controllers=ONLY)


def test_a_scheduled_deletion_is_not_moved_earlier_by_a_later_taint_either(
    tmp_path: Path,
) -> None:
    """Upstream keeps existing work unless it was created at this very instant: a second
    taint with a shorter toleration, observed later, leaves the first deadline alone."""

    async def scenario(sim: Sim) -> None:
        await sim.create_node(make_node("n1"))
        tolerations = [toleration("a", seconds=1000), toleration("b", seconds=100)]
        await sim.create_pod(make_pod("p", node_name="n1", tolerations=tolerations))
        await sim.advance_to(10)
        await sim.taint("n1", [taint("a", effect="NoExecute")])
        assert controller(sim).scheduled("default", "p") == at(1010)
        await sim.advance_to(500)
        await sim.taint("n1", [taint("a", effect="NoExecute"), taint("b", effect="NoExecute")])
        assert controller(sim).scheduled("default", "p") == at(1010)
        await sim.advance_to(1009)
        assert await sim.deletion("p") is None
        await sim.advance_to(1010)
        assert await sim.deletion("p") == "2026-01-01T00:17:20Z"

    simulate(tmp_path, scenario, controllers=ONLY)


def test_a_pod_bound_to_an_already_tainted_node_is_scheduled_from_its_arrival(
    tmp_path: Path,
) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_node(make_node("n1", taints=[taint("k", effect="NoExecute")]))
        await sim.advance_to(42)
        await sim.create_pod(
            make_pod("late", node_name="n1", tolerations=[toleration("k", seconds=60)])
        )
        assert controller(sim).scheduled("default", "late") == at(102)

    simulate(tmp_path, scenario, controllers=ONLY)


def test_a_pod_evicted_again_keeps_its_disruption_transition_time(tmp_path: Path) -> None:
    """Upstream's addConditionAndDeletePod writes the condition only when UpdatePodCondition
    changes it: a pod held by a finalizer, evicted at 10 s and again at 30 s (taint lifted at
    20 s, put back at 30 s), keeps lastTransitionTime 10 s. The first (graceful) delete moved
    its generation to 2, so the second eviction's condition observes generation 2: that
    change, and only that, is written."""

    async def scenario(sim: Sim) -> None:
        status_patches: list[str] = []
        client = controller(sim).client
        patch = client.patch

        async def counting_patch(res: Any, name: str, body: Any, *args: Any, **kw: Any) -> Any:
            if kw.get("subresource") == "status":
                status_patches.append(name)
            return await patch(res, name, body, *args, **kw)

        client.patch = counting_patch  # type: ignore[method-assign,assignment]
        await sim.create_node(make_node("n1"))
        held = make_pod("web", node_name="n1")
        held["metadata"]["finalizers"] = ["example.com/hold"]
        await sim.create_pod(held)
        await sim.advance_to(10)
        await sim.taint("n1", [taint("k", effect="NoExecute")])
        await sim.advance(0)
        assert status_patches == ["web"]
        await sim.advance_to(20)
        await sim.taint("n1", None)
        await sim.advance_to(30)
        await sim.taint("n1", [taint("k", effect="NoExecute")])
        await sim.advance(0)
        pod = await sim.pod("web")
        assert pod is not None
        assert condition(pod) == {
            "type": "DisruptionTarget",
            "status": "True",
            "lastTransitionTime": "2026-01-01T00:00:10Z",
            "reason": "DeletionByTaintManager",
            "message": "Taint manager: deleting due to NoExecute taint",
            "observedGeneration": 2,  # CalculatePodConditionObservedGeneration
            "lastProbeTime": None,
        }
        assert status_patches == ["web", "web"]
        events = await sim.events("TaintManagerEviction")
        # The events and the metrics are those of two evictions.
        assert [
            (e["message"], e["firstTimestamp"], e["lastTimestamp"], e["count"]) for e in events
        ] == [
            (
                "Marking for deletion Pod default/web",
                "2026-01-01T00:00:10Z",
                "2026-01-01T00:00:30Z",
                2,
            )
        ]
        manager = sim.cluster.controller_manager
        assert manager is not None
        metrics = generate_latest(manager.registry).decode()
        assert "taint_eviction_controller_pod_deletions_total 2.0" in metrics

    simulate(tmp_path, scenario, controllers=ONLY)
