"""Discovery lists a group version's resources and subresources in kube-apiserver's order."""

import httpx
import pytest


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def test_discovery_lists_resources_and_subresources_in_path_order(api, kubectl):
    """kube-apiserver installs routes sorted by path; kubectl get all prints the kinds of the
    'all' category in that order (daemonsets before deployments)."""
    names = [r["name"] for r in api.get("/apis/apps/v1").json()["resources"]]
    assert names == sorted(names)
    assert [r["name"] for r in api.get("/api/v1").json()["resources"]][:3] == [
        "bindings",
        "events",
        "namespaces",
    ]
    for manifest in (
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: order}\nspec:\n"
        "  selector: {matchLabels: {app: order}}\n  template:\n    metadata: {labels: {app: order}}\n"
        "    spec: {containers: [{name: c, image: x}]}\n",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: order}\nspec:\n"
        "  selector: {matchLabels: {app: order}}\n  template:\n    metadata: {labels: {app: order}}\n"
        "    spec: {containers: [{name: c, image: x}]}\n",
    ):
        kubectl("create", "-f", "-", stdin=manifest)
    kinds = [line.split("/")[0] for line in kubectl("get", "all", "-o", "name").splitlines()]
    assert [k for k in dict.fromkeys(kinds) if k.endswith(".apps")] == [
        "daemonset.apps",
        "deployment.apps",
    ]
