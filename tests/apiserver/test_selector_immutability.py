"""apps/v1 workload selectors cannot change (pkg/registry/apps/{deployment,replicaset,daemonset}
strategy ValidateUpdate: ValidateImmutableField on spec.selector), shown as the new selector."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import Kubectl

APPS = "/apis/apps/v1/namespaces/default"
MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture(scope="module")
def api(cluster: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def workload(kind: str, name: str, labels: dict[str, str]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        },
    }
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize(
    ("kind", "plural"),
    [("Deployment", "deployments"), ("ReplicaSet", "replicasets"), ("DaemonSet", "daemonsets")],
)
def test_selector_is_immutable(api: httpx.Client, kind: str, plural: str) -> None:
    name = f"prop-{plural}"
    created = api.post(f"{APPS}/{plural}", json=workload(kind, name, {"app": "a"}))
    assert created.status_code == 201, created.text
    changed = {
        "spec": {
            "selector": {"matchLabels": {"app": "b"}},
            "template": {"metadata": {"labels": {"app": "b"}}},
        }
    }
    response = api.patch(f"{APPS}/{plural}/{name}", json=changed, headers=MERGE)
    assert response.status_code == 422, response.text
    assert response.json()["message"] == (
        f'{kind}.apps "{name}" is invalid: spec.selector: Invalid value: '
        '{"matchLabels":{"app":"b"}}: field is immutable'
    )
    # The same selector, written with empty lists Go would not distinguish, is no change.
    same = {"spec": {"selector": {"matchLabels": {"app": "a"}, "matchExpressions": []}}}
    kept = api.patch(f"{APPS}/{plural}/{name}", json=same, headers=MERGE)
    assert kept.status_code == 200, kept.text


def test_kubectl_apply_reports_the_immutable_selector(api: httpx.Client, kubectl: Kubectl) -> None:
    assert api.post(f"{APPS}/deployments", json=workload("Deployment", "prop", {"app": "x"}))
    manifest = workload("Deployment", "prop", {"app": "y"})
    done = kubectl.run("replace", "-f", "-", stdin=json.dumps(manifest))
    assert done.returncode == 1
    assert done.stderr.strip() == (
        'The Deployment "prop" is invalid: spec.selector: Invalid value: '
        '{"matchLabels":{"app":"y"}}: field is immutable'
    )
