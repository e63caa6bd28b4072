"""Containers' and pods' resource requirements as kube-apiserver validates them
(pkg/apis/core/validation ValidateContainerResourceRequirements, validatePodResources): names,
quantities, requests against limits, and the pod-level ``spec.resources`` of PodLevelResources,
for pods and for the pod templates of workloads."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from taintplane.api import names

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
C0 = "spec.containers[0].resources"
BAD_NAME = "example.com/a_b/c"
#: IsQualifiedName's own message (tested with the names module).
NOT_QUALIFIED = names.is_qualified_name(BAD_NAME)[0]
NOT_EXTENDED = "doesn't follow extended resource name standard"
_names = itertools.count()


@pytest.fixture(scope="module")
def api(cluster: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def container(name: str = "c", **resources: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox", "resources": resources}


def create_pod(api: httpx.Client, *containers: dict[str, Any], **spec: Any) -> httpx.Response:
    body = {
        "metadata": {"name": f"rr-{next(_names)}"},
        "spec": {"containers": list(containers), **spec},
    }
    return api.post(PODS, json=body)


def message(response: httpx.Response) -> str:
    assert response.status_code == 422, response.text
    text = str(response.json()["message"])
    return text.split(" is invalid: ", 1)[1]


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        (
            {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
            f'{C0}.requests: Invalid value: "2": must be less than or equal to cpu limit of 1',
        ),
        (
            # The quantity as Go prints it: canonical, not as sent.
            {"requests": {"memory": "2048Mi"}, "limits": {"memory": "1Gi"}},
            f'{C0}.requests: Invalid value: "2Gi": must be less than or equal to memory limit '
            "of 1Gi",
        ),
        (
            {"requests": {"memory": "-1"}},
            f'{C0}.requests[memory]: Invalid value: "-1": must be greater than or equal to 0',
        ),
        (
            {"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "2"}},
            f'{C0}.requests: Invalid value: "1": must be equal to example.com/gpu limit of 2',
        ),
        (
            {"requests": {"example.com/gpu": "1"}},
            f"{C0}.limits: Required value: Limit must be set for non overcommitable resources",
        ),
        (
            {"limits": {"example.com/gpu": "500m"}},
            # The pod's request defaults to its limit, and is checked as well.
            f'[{C0}.limits[example.com/gpu]: Invalid value: "500m": must be an integer, '
            f'{C0}.requests[example.com/gpu]: Invalid value: "500m": must be an integer]',
        ),
        (
            {"limits": {"widgets": "1"}},
            f'[{C0}.limits[widgets]: Invalid value: "widgets": must be a standard resource type '
            f"or fully qualified, "
            f'{C0}.limits[widgets]: Invalid value: "widgets": must be a standard resource for '
            f"containers, "
            f'{C0}.requests[widgets]: Invalid value: "widgets": must be a standard resource type '
            f"or fully qualified, "
            f'{C0}.requests[widgets]: Invalid value: "widgets": must be a standard resource for '
            f"containers]",
        ),
        (
            {"limits": {BAD_NAME: "1"}},
            f'[{C0}.limits[{BAD_NAME}]: Invalid value: "{BAD_NAME}": {NOT_QUALIFIED}, '
            f'{C0}.limits[{BAD_NAME}]: Invalid value: "{BAD_NAME}": {NOT_EXTENDED}, '
            f'{C0}.requests[{BAD_NAME}]: Invalid value: "{BAD_NAME}": {NOT_QUALIFIED}, '
            f'{C0}.requests[{BAD_NAME}]: Invalid value: "{BAD_NAME}": {NOT_EXTENDED}]',
        ),
        (
            {"limits": {"hugepages-2Mi": "3Mi"}},
            f'[{C0}.limits[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer '
            "multiple of hugepages-2Mi, "
            f'{C0}.requests[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer '
            "multiple of hugepages-2Mi, "
            f"{C0}: Forbidden: HugePages require cpu or memory]",
        ),
        (
            {"requests": {"hugepages-2Mi": "2Mi", "memory": "1Mi"}, "limits": {"memory": "1Mi"}},
            f"{C0}.limits: Required value: Limit must be set for non overcommitable resources",
        ),
    ],
)
def test_container_resources_are_validated(
    api: httpx.Client, resources: dict[str, Any], expected: str
) -> None:
    assert message(create_pod(api, container(**resources))) == expected


def test_valid_resources_are_accepted_and_requests_default_to_limits(api: httpx.Client) -> None:
    created = create_pod(
        api,
        container(
            requests={"cpu": "500m"},
            limits={"cpu": "1", "memory": "1Gi", "example.com/gpu": "2", "hugepages-2Mi": "4Mi"},
        ),
    )
    assert created.status_code == 201, created.text
    assert created.json()["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "500m",
        "memory": "1Gi",
        "example.com/gpu": "2",
        "hugepages-2Mi": "4Mi",
    }


def test_init_container_resources_are_validated(api: httpx.Client) -> None:
    response = create_pod(
        api,
        container(),
        initContainers=[container("init", requests={"cpu": "2"}, limits={"cpu": "1"})],
    )
    assert message(response) == (
        'spec.initContainers[0].resources.requests: Invalid value: "2": must be less than or '
        "equal to cpu limit of 1"
    )


def test_a_deployment_template_is_validated_at_its_path(api: httpx.Client) -> None:
    labels = {"app": "rr"}
    template_container = container(requests={"cpu": "2"}, limits={"cpu": "1"})
    response = api.post(
        DEPLOYMENTS,
        json={
            "metadata": {"name": "rr-deploy"},
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [template_container]},
                },
            },
        },
    )
    assert response.status_code == 422, response.text
    assert response.json()["message"] == (
        'Deployment.apps "rr-deploy" is invalid: spec.template.spec.containers[0].resources.'
        'requests: Invalid value: "2": must be less than or equal to cpu limit of 1'
    )


def test_pod_level_requests_default_from_the_containers_and_limits(api: httpx.Client) -> None:
    created = create_pod(
        api,
        container("a", requests={"cpu": "250m"}),
        container("b", requests={"cpu": "250m", "memory": "64Mi"}),
        resources={"limits": {"cpu": "1", "memory": "1Gi", "hugepages-2Mi": "2Mi"}},
    )
    assert created.status_code == 201, created.text
    assert created.json()["spec"]["resources"] == {
        "limits": {"cpu": "1", "memory": "1Gi", "hugepages-2Mi": "2Mi"},
        "requests": {"cpu": "500m", "memory": "64Mi", "hugepages-2Mi": "2Mi"},
    }


@pytest.mark.parametrize(
    ("containers", "resources", "expected"),
    [
        (
            [container(requests={"cpu": "2"})],
            {"limits": {"cpu": "1"}},
            'spec.resources.requests: Invalid value: "2": must be less than or equal to cpu '
            "limit of 1",
        ),
        (
            [container(limits={"memory": "200Mi"})],
            {"limits": {"memory": "100Mi"}},
            '[spec.resources.requests: Invalid value: "200Mi": must be less than or equal to '
            "memory limit of 100Mi, "
            'spec.resources.containers[0][memory].limits: Invalid value: "200Mi": must be less '
            "than or equal to pod limits of 100Mi]",
        ),
        (
            [container(requests={"cpu": "1500m"}), container("d", requests={"cpu": "1"})],
            {"requests": {"cpu": "2"}},
            'spec.resources.requests[cpu]: Invalid value: "2": must be greater than or equal to '
            "aggregate container requests of 2500m",
        ),
        (
            [container()],
            {"limits": {"ephemeral-storage": "1Gi"}},
            'spec.resources.limits[ephemeral-storage]: Unsupported value: "ephemeral-storage": '
            'supported values: "cpu", "hugepages-", "memory"',
        ),
        (
            [container()],
            {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]},
            "spec.resources.claims: Forbidden: claims cannot be set for Resources at pod-level",
        ),
    ],
)
def test_pod_level_resources_are_validated(
    api: httpx.Client, containers: list[dict[str, Any]], resources: dict[str, Any], expected: str
) -> None:
    assert message(create_pod(api, *containers, resources=resources)) == expected


def test_a_sidecar_counts_towards_the_aggregate_request(api: httpx.Client) -> None:
    """AggregateContainerRequests: a sidecar runs beside the regular containers, so its
    request adds to theirs; an ordinary init container only needs its own at its turn."""
    sidecar = {**container("side", requests={"memory": "64Mi"}), "restartPolicy": "Always"}
    init = container("init", requests={"memory": "100Mi"})
    response = create_pod(
        api,
        container(requests={"memory": "64Mi"}),
        initContainers=[sidecar, init],
        resources={"requests": {"memory": "150Mi"}},
    )
    assert message(response) == (
        'spec.resources.requests[memory]: Invalid value: "150Mi": must be greater than or equal '
        "to aggregate container requests of 164Mi"
    )
