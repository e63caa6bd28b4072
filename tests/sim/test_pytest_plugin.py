"""The ``taintplane_cluster`` fixture as a controller author uses it: the official client
against a whole cluster, time moved by the test, exact instants."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from kubernetes import client

from taintplane.testing import DEFAULT_START, LocalCluster, local_cluster


def pod(name: str, node: str = "") -> client.V1Pod:
    spec = client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")])
    if node:
        spec.node_name = node
    return client.V1Pod(metadata=client.V1ObjectMeta(name=name), spec=spec)


def test_a_stopped_node_is_tainted_at_50_s_and_its_pod_evicted_at_350_s(
    taintplane_cluster: LocalCluster,
) -> None:
    cluster = taintplane_cluster
    assert cluster.now() == DEFAULT_START
    v1 = client.CoreV1Api(cluster.kubernetes_client())
    assert sorted(n.metadata.name for n in v1.list_node().items) == ["node-1", "node-2", "node-3"]
    v1.create_namespaced_pod("default", pod("web", node="node-2"))
    cluster.advance(0)
    assert v1.read_namespaced_pod("web", "default").status.phase == "Running"

    cluster.stop_node("node-2")

    def taint_effects() -> list[str]:
        return [t.effect for t in v1.read_node("node-2").spec.taints or []]

    # The node lifecycle controller reviews nodes every 5 s: after the 50 s grace period one
    # review marks it Unknown and taints it NoSchedule, the next one NoExecute.
    cluster.advance("50s")
    assert taint_effects() == []
    while "NoExecute" not in taint_effects():
        assert cluster.advance("5s") <= DEFAULT_START + timedelta(seconds=70)
    taints = v1.read_node("node-2").spec.taints
    assert [(t.key, t.effect) for t in taints] == [
        ("node.kubernetes.io/unreachable", "NoSchedule"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
    ]
    added = next(t.time_added for t in taints if t.effect == "NoExecute")
    assert added == cluster.now()
    # DefaultTolerationSeconds gave the pod 300 s of tolerance from when the taint was seen:
    # not evicted a second before, evicted at that instant.
    cluster.advance("299s")
    assert v1.read_namespaced_pod("web", "default").metadata.deletion_timestamp is None
    cluster.advance("1s")
    evicted = v1.read_namespaced_pod("web", "default")
    assert evicted.metadata.deletion_timestamp is not None
    [target] = [c for c in evicted.status.conditions if c.type == "DisruptionTarget"]
    assert (target.reason, target.last_transition_time) == (
        "DeletionByTaintManager",
        added + timedelta(seconds=300),
    )


@pytest.mark.taintplane(nodes=1)
def test_the_marker_shapes_the_cluster(taintplane_cluster: LocalCluster) -> None:
    v1 = client.CoreV1Api(taintplane_cluster.kubernetes_client())
    assert [n.metadata.name for n in v1.list_node().items] == ["node-1"]
    assert taintplane_cluster.advance("1h30m") == DEFAULT_START + timedelta(hours=1, minutes=30)
    node = v1.read_node("node-1")
    ready = next(c for c in node.status.conditions if c.type == "Ready")
    assert ready.status == "True"  # it kept heartbeating through the hour and a half


def test_kubectl_reaches_it_and_bad_input_is_refused(tmp_path: Path) -> None:
    with local_cluster(tmp_path / "state", nodes=2) as cluster:
        assert cluster.url.startswith("http://127.0.0.1:")
        done = subprocess.run(
            ["kubectl", "--kubeconfig", str(cluster.kubeconfig), "get", "nodes", "-o", "name"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
            env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin:/usr/local/bin"},
        )
        assert done.stdout == "node/node-1\nnode/node-2\n"
        with pytest.raises(ValueError, match=r"^a clock cannot go back"):
            cluster.advance(-1)
    refused = r"^clock must be 'virtual' or 'real', not 'fast'$"
    with pytest.raises(ValueError, match=refused), local_cluster(tmp_path / "o", clock="fast"):
        pass


def test_the_fixture_is_there_for_any_project_once_taintplane_is_installed(
    tmp_path: Path,
) -> None:
    """A fresh pytest session in another directory finds the plugin through its entry point."""
    (tmp_path / "test_user.py").write_text(
        textwrap.dedent(
            """
            import pytest

            @pytest.mark.taintplane(nodes=2)
            def test_nodes(taintplane_cluster):
                import kubernetes
                v1 = kubernetes.client.CoreV1Api(taintplane_cluster.kubernetes_client())
                assert len(v1.list_node().items) == 2
                taintplane_cluster.advance("10s")
            """
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_user.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_options_are_checked_before_anything_starts(tmp_path: Path) -> None:
    for options, message in (
        ({"start": datetime(2030, 5, 1)}, "start must be a time with a zone"),
        ({"start": "soon"}, "start 'soon' is not an RFC 3339 time"),
        ({"nodes": "4"}, "nodes must be a number of nodes or a list of NodeShape, not '4'"),
        ({"nodes": -2}, "nodes must be 0 or more, not -2"),
    ):
        with (
            pytest.raises(ValueError, match=re.escape(message)),
            local_cluster(tmp_path, **options),
        ):
            pass
    pools = tmp_path / "pools.yaml"
    pools.write_text("pools: [{name: gpu, count: 2}]\n")
    with local_cluster(
        tmp_path / "s", cluster_file=str(pools), start="2030-05-01T12:00:00Z"
    ) as cluster:
        assert cluster.now() == datetime(2030, 5, 1, 12, tzinfo=UTC)
        v1 = client.CoreV1Api(cluster.kubernetes_client())
        assert [n.metadata.name for n in v1.list_node().items] == ["gpu-1", "gpu-2"]


def test_advances_from_several_threads_take_turns(tmp_path: Path) -> None:
    with local_cluster(tmp_path, nodes=1) as cluster:

        def five_seconds() -> None:
            for _ in range(5):
                cluster.advance("1s")

        workers = [threading.Thread(target=five_seconds) for _ in range(3)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
        assert cluster.now() == DEFAULT_START + timedelta(seconds=15)


def test_a_bad_marker_fails_its_test_only(tmp_path: Path) -> None:
    (tmp_path / "test_marks.py").write_text(
        textwrap.dedent(
            """
            import pytest

            @pytest.mark.taintplane(5)
            def test_positional(taintplane_cluster):
                pass

            @pytest.mark.taintplane(nodez=2)
            def test_misspelt(taintplane_cluster):
                pass

            def test_fine(taintplane_cluster):
                assert taintplane_cluster.now().year == 2026
            """
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_marks.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "1 passed, 2 errors" in done.stdout, done.stdout
    assert (
        "@pytest.mark.taintplane takes keyword options only (nodes, cluster_file, clock, "
        "start, feature_gates), not (5,)" in done.stdout
    )
    assert "@pytest.mark.taintplane: unknown option(s) nodez; known: nodes" in done.stdout
