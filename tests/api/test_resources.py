"""A pod's effective requests (resourcehelper.PodRequests): containers summed, sidecars added,
each resource at least what an init container needs while it runs, plus overhead."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from taintplane.api.resources import amount, pod_requests


def container(cpu: str = "", memory: str = "", always: bool = False) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    made: dict[str, Any] = {"name": "c", "resources": {"requests": requests}}
    if always:
        made["restartPolicy"] = "Always"
    return made


def test_containers_are_summed_and_an_init_container_raises_the_floor() -> None:
    spec = {
        "containers": [container("500m", "1Gi"), container("1", "1Gi")],
        "initContainers": [container("2", "512Mi")],
    }
    assert pod_requests(spec) == {"cpu": 2000, "memory": 2 * 1024**3}


def test_sidecars_add_to_the_containers_and_to_the_init_containers_after_them() -> None:
    spec = {
        "containers": [container("1")],
        "initContainers": [
            container("1", always=True),  # a sidecar, running from here on
            container("2"),  # runs beside the sidecar: 3
            container("500m", always=True),  # a second sidecar
        ],
    }
    # Containers 1 + sidecars 1.5 = 2.5; the init peak is 3 (2 beside the first sidecar).
    assert pod_requests(spec) == {"cpu": 3000}
    spec["initContainers"][1] = container("1")
    assert pod_requests(spec) == {"cpu": 2500}


def test_overhead_is_added_and_nothing_asked_is_nothing() -> None:
    spec = {"containers": [container("100m")], "overhead": {"cpu": "250m", "memory": "64Mi"}}
    assert pod_requests(spec) == {"cpu": 350, "memory": 64 * 1024**2}
    assert pod_requests({"containers": [{"name": "c"}]}) == {}
    assert amount("cpu", "not a quantity") == 0


@given(
    st.lists(st.integers(0, 4000), min_size=1, max_size=5),
    st.lists(st.integers(0, 4000), max_size=5),
)
def test_without_sidecars_it_is_the_larger_of_the_sum_and_the_largest_init(
    main: list[int], init: list[int]
) -> None:
    spec = {
        "containers": [container(f"{m}m") for m in main],
        "initContainers": [container(f"{i}m") for i in init],
    }
    expected = max(sum(main), max(init, default=0))
    assert pod_requests(spec).get("cpu", 0) == expected
