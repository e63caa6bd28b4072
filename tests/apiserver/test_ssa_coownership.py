"""Server-side apply co-ownership and client-written managedFields, as structured-merge-diff
and kube-apiserver's fieldmanager do: applying a value a field already has makes the applier a
co-owner (a write), a forced apply takes only what it changes, a request may replace or clear
managedFields, a patch applies to the object with its resourceVersion; and kubectl's
client-side to server-side apply migration (client-go csaupgrade) goes through."""

import json

import httpx
import pytest

APPLY = {"Content-Type": "application/apply-patch+yaml"}
MERGE = {"Content-Type": "application/merge-patch+json"}
JSON_PATCH = {"Content-Type": "application/json-patch+json"}
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def deployment(name: str, labels: dict[str, str], replicas: int = 1) -> dict[str, object]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, **({"labels": labels} if labels else {})},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }


def spec_fields(with_replicas: bool = True) -> dict[str, object]:
    fields: dict[str, object] = {
        "f:selector": {"f:matchLabels": {"f:app": {}}},
        "f:template": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {"f:containers": {'k:{"name":"c"}': {".": {}, "f:image": {}, "f:name": {}}}},
        },
    }
    if with_replicas:
        fields["f:replicas"] = {}
    return fields


def entries(obj: dict[str, object]) -> list[tuple[str, str, object]]:
    metadata = obj["metadata"]
    assert isinstance(metadata, dict)
    return [
        (e["manager"], e["operation"], e["fieldsV1"]) for e in metadata.get("managedFields", [])
    ]


def apply(api: httpx.Client, name: str, body: dict[str, object], query: str) -> httpx.Response:
    return api.patch(f"{DEPLOYMENTS}/{name}?{query}", content=json.dumps(body), headers=APPLY)


def test_applying_the_same_values_adds_a_co_owner_who_keeps_them(api):
    first = apply(api, "co", deployment("co", {"a": "1"}), "fieldManager=kubectl")
    assert first.status_code == 201
    same = apply(api, "co", deployment("co", {"a": "1"}), "fieldManager=other")
    assert same.status_code == 200
    owned = {"f:metadata": {"f:labels": {"f:a": {}}}, "f:spec": spec_fields()}
    # Recording the co-owner is a write; its entry has no time (the object did not change),
    # so it sorts first (sortEncodedManagedFields: a missing time counts as zero).
    assert entries(same.json()) == [("other", "Apply", owned), ("kubectl", "Apply", owned)]
    metadata = same.json()["metadata"]
    assert int(metadata["resourceVersion"]) > int(first.json()["metadata"]["resourceVersion"])
    assert "time" not in metadata["managedFields"][0]
    # The first applier drops label a: "other" still owns it, so it stays.
    dropped = apply(api, "co", deployment("co", {}), "fieldManager=kubectl")
    assert dropped.status_code == 200
    assert dropped.json()["metadata"]["labels"] == {"a": "1"}
    assert entries(dropped.json()) == [
        ("other", "Apply", owned),
        ("kubectl", "Apply", {"f:spec": spec_fields()}),
    ]


def test_a_forced_apply_takes_only_the_fields_it_changes(api):
    assert apply(api, "forced", deployment("forced", {"a": "1"}), "fieldManager=kubectl").is_success
    refused = apply(api, "forced", deployment("forced", {"a": "1"}, 3), "fieldManager=other")
    assert refused.status_code == 409
    assert refused.json()["message"] == (
        'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas'
    )
    forced = apply(
        api, "forced", deployment("forced", {"a": "1"}, 3), "fieldManager=other&force=true"
    )
    assert forced.status_code == 200
    assert forced.json()["spec"]["replicas"] == 3
    labels: dict[str, object] = {"f:metadata": {"f:labels": {"f:a": {}}}}
    assert entries(forced.json()) == [
        ("kubectl", "Apply", {**labels, "f:spec": spec_fields(with_replicas=False)}),
        ("other", "Apply", {**labels, "f:spec": spec_fields()}),
    ]


def test_applying_again_what_one_applied_writes_nothing(api):
    created = apply(api, "again", deployment("again", {"a": "1"}), "fieldManager=kubectl")
    again = apply(api, "again", deployment("again", {"a": "1"}), "fieldManager=kubectl")
    assert again.json()["metadata"] == created.json()["metadata"]


def test_an_update_that_changes_nothing_writes_nothing(api):
    created = apply(api, "noop", deployment("noop", {"a": "1"}), "fieldManager=kubectl")
    version = created.json()["metadata"]["resourceVersion"]
    same = api.patch(
        f"{DEPLOYMENTS}/noop?fieldManager=editor",
        json={"metadata": {"labels": {"a": "1"}}},
        headers=MERGE,
    )
    assert same.json()["metadata"] == created.json()["metadata"]
    put = api.put(f"{DEPLOYMENTS}/noop?fieldManager=editor", json=same.json())
    assert put.json()["metadata"]["resourceVersion"] == version
    assert entries(put.json()) == entries(created.json())


def test_a_request_may_replace_or_clear_managed_fields(api):
    created = apply(api, "mf", deployment("mf", {"a": "1"}), "fieldManager=kubectl").json()
    # Entries that do not decode (no operation) leave the live ones.
    invalid = api.patch(
        f"{DEPLOYMENTS}/mf",
        json={"metadata": {"managedFields": [{"manager": "x", "fieldsType": "FieldsV1"}]}},
        headers=MERGE,
    )
    assert invalid.status_code == 200
    assert invalid.json()["metadata"] == created["metadata"]
    # Valid entries replace them, stored in upstream's form and order (Apply first).
    replaced = api.patch(
        f"{DEPLOYMENTS}/mf",
        json={
            "metadata": {
                "managedFields": [
                    {
                        "manager": "u",
                        "operation": "Update",
                        "apiVersion": "apps/v1",
                        "fieldsType": "FieldsV1",
                        "fieldsV1": {"f:spec": {"f:replicas": {}}},
                    },
                    {
                        "manager": "p",
                        "operation": "Apply",
                        "apiVersion": "apps/v1",
                        "fieldsType": "FieldsV1",
                        "fieldsV1": {"f:metadata": {"f:labels": {"f:a": {}}}},
                    },
                    {
                        "manager": "empty",
                        "operation": "Update",
                        "apiVersion": "apps/v1",
                        "fieldsType": "FieldsV1",
                        "fieldsV1": {},
                    },
                ]
            }
        },
        headers=MERGE,
    )
    assert replaced.status_code == 200
    assert replaced.json()["metadata"]["managedFields"] == [
        {
            "manager": "p",
            "operation": "Apply",
            "apiVersion": "apps/v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:a": {}}}},
        },
        {
            "manager": "u",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:replicas": {}}},
        },
    ]
    assert int(replaced.json()["metadata"]["resourceVersion"]) > int(
        created["metadata"]["resourceVersion"]
    )
    # [{}] clears them.
    cleared = api.patch(
        f"{DEPLOYMENTS}/mf", json={"metadata": {"managedFields": [{}]}}, headers=MERGE
    )
    assert cleared.status_code == 200
    assert "managedFields" not in cleared.json()["metadata"]
    assert "managedFields" not in api.get(f"{DEPLOYMENTS}/mf").json()["metadata"]


def test_a_patch_applies_to_the_object_with_its_resource_version(api):
    created = apply(api, "rv", deployment("rv", {"a": "1"}), "fieldManager=kubectl").json()
    version = created["metadata"]["resourceVersion"]
    tested = api.patch(
        f"{DEPLOYMENTS}/rv",
        json=[
            {"op": "test", "path": "/metadata/resourceVersion", "value": version},
            {"op": "replace", "path": "/metadata/resourceVersion", "value": version},
            {"op": "replace", "path": "/metadata/labels/a", "value": "2"},
        ],
        headers=JSON_PATCH,
    )
    assert tested.status_code == 200
    assert tested.json()["metadata"]["labels"] == {"a": "2"}
    stale = api.patch(
        f"{DEPLOYMENTS}/rv",
        json=[
            {"op": "replace", "path": "/metadata/resourceVersion", "value": version},
            {"op": "replace", "path": "/metadata/labels/a", "value": "3"},
        ],
        headers=JSON_PATCH,
    )
    assert stale.status_code == 409
    assert stale.json()["reason"] == "Conflict"
    assert api.get(f"{DEPLOYMENTS}/rv").json()["metadata"]["labels"] == {"a": "2"}


MIGRATED = """apiVersion: apps/v1
kind: Deployment
metadata: {name: migrated, namespace: default, labels: {a: "1"}}
spec:
  replicas: 1
  selector: {matchLabels: {app: migrated}}
  template:
    metadata: {labels: {app: migrated}}
    spec:
      containers: [{name: c, image: busybox}]
"""


def test_kubectl_migrates_client_side_apply_to_server_side_apply(kubectl):
    kubectl("apply", "-f", "-", stdin=MIGRATED)
    done = kubectl.run("apply", "--server-side", "-f", "-", stdin=MIGRATED)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "deployment.apps/migrated serverside-applied\n"
    assert done.stderr == ""  # no "server rejected managed fields migration"
    obj = json.loads(
        kubectl("get", "deployment", "migrated", "-o", "json", "--show-managed-fields")
    )
    # kubectl applied the annotation as kubectl-last-applied, moved the client-side entry
    # into its Apply entry (JSON patch pinned to the resourceVersion), then applied again,
    # which pruned what only the client-side entry had named (defaults, put back).
    assert entries(obj) == [
        (
            "kubectl-last-applied",
            "Apply",
            {
                "f:metadata": {
                    "f:annotations": {"f:kubectl.kubernetes.io/last-applied-configuration": {}}
                }
            },
        ),
        (
            "kubectl",
            "Apply",
            {
                "f:metadata": {"f:labels": {"f:a": {}}},
                "f:spec": {
                    "f:replicas": {},
                    "f:selector": {"f:matchLabels": {"f:app": {}}},
                    "f:template": {
                        "f:metadata": {"f:labels": {"f:app": {}}},
                        "f:spec": {
                            "f:containers": {
                                'k:{"name":"c"}': {".": {}, "f:image": {}, "f:name": {}}
                            }
                        },
                    },
                },
            },
        ),
    ]
    # lastAppliedUpdater: the annotation is what kubectl applied, as Go encodes it.
    assert obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] == (
        '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"a":"1"},'
        '"name":"migrated","namespace":"default"},"spec":{"replicas":1,"selector":'
        '{"matchLabels":{"app":"migrated"}},"template":{"metadata":{"labels":{"app":"migrated"}},'
        '"spec":{"containers":[{"image":"busybox","name":"c"}]}}}}\n'
    )
    assert obj["spec"]["progressDeadlineSeconds"] == 600  # pruned, defaulted again
    # A second server-side apply has nothing left to migrate.
    again = kubectl.run("apply", "--server-side", "-f", "-", stdin=MIGRATED)
    assert (again.returncode, again.stderr) == (0, "")
