"""A Status that tells the client when to retry says so in the Retry-After header too, as
upstream's responsewriters.ErrorNegotiated writes every error."""

import httpx
import pytest

PODS = "/api/v1/namespaces/default/pods"
PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def test_an_eviction_the_budget_cannot_judge_yet_says_when_to_retry(api):
    labels = {"app": "retry"}
    pod = {
        "metadata": {"name": "retry-0", "labels": labels},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]},
    }
    assert api.post(PODS, json=pod).status_code == 201
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    patch = {"Content-Type": "application/merge-patch+json"}
    api.patch(f"{PODS}/retry-0/status", json={"status": status}, headers=patch)
    budget = {"metadata": {"name": "retry"}, "spec": {"selector": {"matchLabels": labels}}}
    assert api.post(PDBS, json=budget).status_code == 201  # not processed yet
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "retry-0"}}
    refused = api.post(f"{PODS}/retry-0/eviction", json=body)
    assert refused.status_code == 429
    assert refused.json()["details"]["retryAfterSeconds"] == 10
    assert refused.headers["Retry-After"] == "10"


def test_a_resource_version_from_the_future_says_when_to_retry(api):
    refused = api.get(PODS, params={"resourceVersion": "999999999"})
    assert refused.status_code == 504
    assert refused.json()["details"]["retryAfterSeconds"] == 1
    assert refused.headers["Retry-After"] == "1"


def test_other_errors_carry_no_retry_after(api):
    missing = api.get(f"{PODS}/nobody")
    assert missing.status_code == 404
    assert "Retry-After" not in missing.headers
