"""ImageLocality: images already on the node, scaled by spread, between 23 MB and 1000 MB
per container."""

from taintplane.scheduler.plugins.image_locality import (
    MB,
    calculate_priority,
    normalized_image_name,
)
from tests.scheduler.builders import make_node, make_pod
from tests.scheduler.test_decisions import Offline


def with_images(node, *images):
    node["status"]["images"] = [{"names": names, "sizeBytes": size} for names, size in images]
    return node


def test_thresholds_and_names():
    assert calculate_priority(0, 1) == 0
    assert calculate_priority(23 * MB, 1) == 0
    assert calculate_priority(1000 * MB, 1) == 100
    assert calculate_priority(5000 * MB, 1) == 100
    assert calculate_priority(500 * MB, 2) == (100 * 477 * MB) // (1977 * MB)
    assert normalized_image_name("nginx") == "nginx:latest"
    assert normalized_image_name("localhost:5000/app") == "localhost:5000/app:latest"
    assert normalized_image_name("nginx:1.27") == "nginx:1.27"


def test_nodes_with_the_image_score_by_its_size_and_spread():
    big = (["registry.example/ml:2", "registry.example/ml@sha256:ab"], 800 * MB)
    view = Offline(
        with_images(make_node("has"), big),
        make_node("lacks"),
        make_node("also-lacks"),
        make_node("nor-this"),
    )
    pod = make_pod("p")
    pod["spec"]["containers"][0]["image"] = "registry.example/ml:2"
    decision = view.scheduler.explain(pod)
    assert decision.scores is not None
    # 800 MB on 1 of 4 nodes: 200 MB -> 100 * (200 - 23) / (1000 - 23).
    assert decision.scores["ImageLocality"]["has"] == 100 * 177 * MB // (977 * MB)
    assert decision.scores["ImageLocality"]["lacks"] == 0
    assert view.place(pod) == "has"  # the bulk path agrees
