"""An update is decided on the admitted object, and one that changes nothing writes nothing:
upstream runs mutating admission before PrepareForUpdate (which counts the generation), and
its store skips a write whose bytes are those already stored."""

import json

import httpx
import pytest

POD = """
apiVersion: v1
kind: Pod
metadata:
  name: NAME
  labels:
    app: gen
spec:
  containers:
  - name: c
    image: nginx
"""


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def pod_meta(api, name):
    return api.get(f"/api/v1/namespaces/default/pods/{name}").json()["metadata"]


def test_a_patch_that_admission_undoes_keeps_generation_and_resource_version(api, kubectl):
    kubectl("create", "-f", "-", stdin=POD.replace("NAME", "gen"))
    before = pod_meta(api, "gen")
    assert before["generation"] == 1
    # DefaultTolerationSeconds puts the two not-ready/unreachable tolerations back: the
    # resulting spec is the stored one.
    out = kubectl("patch", "pod", "gen", "-p", '{"spec":{"tolerations":[]}}')
    assert out == "pod/gen patched (no change)\n"
    after = pod_meta(api, "gen")
    assert (after["generation"], after["resourceVersion"]) == (1, before["resourceVersion"])


def test_a_no_op_update_sends_no_watch_event(api, kubectl):
    kubectl("create", "-f", "-", stdin=POD.replace("NAME", "quiet"))
    rv = pod_meta(api, "quiet")["resourceVersion"]
    kubectl("patch", "pod", "quiet", "-p", '{"spec":{"tolerations":[]}}')
    kubectl("label", "pod", "quiet", "marker=1")
    params = {"watch": "true", "resourceVersion": rv, "fieldSelector": "metadata.name=quiet"}
    with api.stream("GET", "/api/v1/namespaces/default/pods", params=params) as response:
        line = next(line for line in response.iter_lines() if line)
    event = json.loads(line)
    # The first change after rv is the label, not the no-op patch.
    assert event["type"] == "MODIFIED"
    assert event["object"]["metadata"]["labels"] == {"app": "gen", "marker": "1"}


def test_the_same_server_side_apply_again_changes_nothing(api, kubectl, tmp_path):
    manifest = tmp_path / "same.yaml"
    manifest.write_text(POD.replace("NAME", "applied"))
    kubectl("apply", "--server-side", "-f", str(manifest))
    before = pod_meta(api, "applied")
    out = kubectl("apply", "--server-side", "-f", str(manifest), "--force-conflicts")
    assert out == "pod/applied serverside-applied\n"
    after = pod_meta(api, "applied")
    assert after["generation"] == before["generation"] == 1
    assert after["resourceVersion"] == before["resourceVersion"]
    assert after["managedFields"] == before["managedFields"]


def test_the_same_apply_with_tolerations_keeps_the_generation(api, kubectl, tmp_path):
    """Admission appends its tolerations to the applied ones every time: the result is the
    stored spec, no new generation."""
    manifest = tmp_path / "tolerating.yaml"
    manifest.write_text(
        POD.replace("NAME", "tolerating")
        + "  tolerations: [{key: t, operator: Exists, effect: NoSchedule}]\n"
    )
    kubectl("apply", "--server-side", "-f", str(manifest))
    before = pod_meta(api, "tolerating")
    kubectl("apply", "--server-side", "-f", str(manifest), "--force-conflicts")
    after = pod_meta(api, "tolerating")
    assert after["generation"] == before["generation"] == 1
    assert after["resourceVersion"] == before["resourceVersion"]
