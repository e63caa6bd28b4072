"""RuntimeClasses as kube-apiserver validates them (pkg/apis/node/validation ValidateRuntimeClass):
the handler is a DNS-1123 label, and overhead.podFixed is checked as a container's limits, so
its errors read ``overhead.limits[...]``."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

CLASSES = "/apis/node.k8s.io/v1/runtimeclasses"
LABEL_ERROR = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_names = itertools.count()


@pytest.fixture(scope="module")
def api(cluster: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def create(api: httpx.Client, **fields: Any) -> tuple[str, httpx.Response]:
    name = f"rc-{next(_names)}"
    return name, api.post(CLASSES, json={"metadata": {"name": name}, **fields})


def causes(name: str, response: httpx.Response) -> list[str]:
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["message"].startswith(f'RuntimeClass.node.k8s.io "{name}" is invalid: ')
    return [f"{c['field']}: {c['message']}" for c in body["details"]["causes"]]


@pytest.mark.parametrize("handler", ["Bad_Handler", ""])
def test_handler_must_be_a_dns_label(api: httpx.Client, handler: str) -> None:
    name, response = create(api, handler=handler)
    assert response.json()["message"] == (
        f'RuntimeClass.node.k8s.io "{name}" is invalid: handler: Invalid value: "{handler}": '
        + LABEL_ERROR
    )


@pytest.mark.parametrize(
    ("pod_fixed", "errors"),
    [
        (
            {"cpu": "-1"},
            ['overhead.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0'],
        ),
        (
            {"pods": "1"},
            [
                'overhead.limits[pods]: Invalid value: "pods": must be a standard resource for '
                "containers"
            ],
        ),
        (
            {"widgets": "1"},
            [
                'overhead.limits[widgets]: Invalid value: "widgets": must be a standard resource '
                "type or fully qualified",
                'overhead.limits[widgets]: Invalid value: "widgets": must be a standard resource '
                "for containers",
            ],
        ),
        (
            {"example.com/gpu": "500m"},
            ['overhead.limits[example.com/gpu]: Invalid value: "500m": must be an integer'],
        ),
        (
            {"hugepages-2Mi": "3Mi", "cpu": "1"},
            [
                'overhead.limits[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive '
                "integer multiple of hugepages-2Mi"
            ],
        ),
        (
            {"hugepages-2Mi": "4Mi"},
            ["overhead: Forbidden: HugePages require cpu or memory"],
        ),
    ],
)
def test_overhead_is_checked_as_container_limits(
    api: httpx.Client, pod_fixed: dict[str, str], errors: list[str]
) -> None:
    name, response = create(api, handler="runc", overhead={"podFixed": pod_fixed})
    assert causes(name, response) == errors


def test_valid_overhead_is_stored(api: httpx.Client) -> None:
    overhead = {"podFixed": {"cpu": "250m", "memory": "64Mi", "example.com/gpu": "1"}}
    _, response = create(api, handler="kata", overhead=overhead)
    assert response.status_code == 201, response.text
    assert response.json()["overhead"] == overhead
