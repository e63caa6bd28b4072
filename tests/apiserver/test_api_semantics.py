"""resourceVersion, pagination, selectors, watch, graceful deletion, namespaces, dryRun."""

import json

import httpx
import pytest


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def pod(name, labels=None, **spec):
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec},
    }


def node(name, **fields):
    return {"metadata": {"name": name, **fields}}


def watch_lines(api, path, params, count):
    events = []
    with api.stream("GET", path, params={**params, "watch": "true"}) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line:
                events.append(json.loads(line))
            if len(events) == count:
                break
    return events


def test_default_namespaces_exist(api):
    names = [n["metadata"]["name"] for n in api.get("/api/v1/namespaces").json()["items"]]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]


def test_resource_versions_increase_and_guard_updates(api):
    first = api.post("/api/v1/nodes", json=node("rv")).json()
    rv1 = int(first["metadata"]["resourceVersion"])
    stale = dict(first, metadata={**first["metadata"], "labels": {"a": "1"}})
    second = api.put("/api/v1/nodes/rv", json=stale).json()
    assert int(second["metadata"]["resourceVersion"]) > rv1
    conflict = api.put("/api/v1/nodes/rv", json=stale)
    assert conflict.status_code == 409
    assert conflict.json()["reason"] == "Conflict"
    # Without a resourceVersion the update is unconditional.
    unconditional = {"metadata": {"name": "rv", "labels": {"b": "2"}}}
    assert api.put("/api/v1/nodes/rv", json=unconditional).status_code == 200
    # An update that changes nothing does not write.
    current = api.get("/api/v1/nodes/rv").json()
    again = api.put("/api/v1/nodes/rv", json=current).json()
    assert again["metadata"]["resourceVersion"] == current["metadata"]["resourceVersion"]
    # System fields cannot be changed by an update.
    forged = dict(
        current,
        metadata={
            **current["metadata"],
            "uid": "forged",
            "creationTimestamp": "2000-01-01T00:00:00Z",
        },
    )
    kept = api.put("/api/v1/nodes/rv", json=forged).json()
    assert kept["metadata"]["uid"] == first["metadata"]["uid"]
    assert kept["metadata"]["creationTimestamp"] == first["metadata"]["creationTimestamp"]


def test_pagination_with_continue_tokens_keeps_one_snapshot(api):
    for i in range(5):
        api.post("/api/v1/namespaces/default/pods", json=pod(f"page-{i}", {"page": "yes"}))
    first = api.get(
        "/api/v1/namespaces/default/pods", params={"limit": 2, "labelSelector": "page=yes"}
    ).json()
    assert [p["metadata"]["name"] for p in first["items"]] == ["page-0", "page-1"]
    token = first["metadata"]["continue"]
    api.post("/api/v1/namespaces/default/pods", json=pod("page-9", {"page": "yes"}))
    names = []
    while token:
        page = api.get(
            "/api/v1/namespaces/default/pods",
            params={"limit": 2, "continue": token, "labelSelector": "page=yes"},
        ).json()
        names += [p["metadata"]["name"] for p in page["items"]]
        assert page["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        token = page["metadata"].get("continue")
    assert names == ["page-2", "page-3", "page-4"]
    bad = api.get("/api/v1/namespaces/default/pods", params={"continue": "garbage"})
    assert bad.status_code == 400


def test_label_and_field_selectors(api):
    api.post(
        "/api/v1/namespaces/default/pods",
        json=pod("sel-a", {"tier": "web", "env": "prod"}, nodeName="n1"),
    )
    api.post("/api/v1/namespaces/default/pods", json=pod("sel-b", {"tier": "db"}))

    def names(**params):
        return [
            p["metadata"]["name"]
            for p in api.get("/api/v1/pods", params=params).json()["items"]
            if p["metadata"]["name"].startswith("sel-")
        ]

    assert names(labelSelector="tier in (web,db)") == ["sel-a", "sel-b"]
    assert names(labelSelector="tier=web,env") == ["sel-a"]
    assert names(labelSelector="!env") == ["sel-b"]
    assert names(labelSelector="tier notin (web)") == ["sel-b"]
    assert names(fieldSelector="spec.nodeName=n1") == ["sel-a"]
    assert names(fieldSelector="spec.nodeName=n1,status.phase!=Succeeded") == ["sel-a"]
    assert names(fieldSelector="spec.nodeName!=n1,metadata.name=sel-b") == ["sel-b"]


def test_watch_from_a_resource_version_and_from_zero(api):
    start = api.get("/api/v1/nodes").json()["metadata"]["resourceVersion"]
    api.post("/api/v1/nodes", json=node("w1"))
    api.patch(
        "/api/v1/nodes/w1",
        json={"metadata": {"labels": {"x": "1"}}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    api.delete("/api/v1/nodes/w1")
    events = watch_lines(api, "/api/v1/nodes", {"resourceVersion": start}, 3)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "w1"),
        ("MODIFIED", "w1"),
        ("DELETED", "w1"),
    ]
    assert events[0]["object"]["kind"] == "Node"
    revisions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert revisions == sorted(revisions)
    initial = watch_lines(api, "/api/v1/namespaces", {"resourceVersion": "0"}, 4)
    assert {e["type"] for e in initial} == {"ADDED"}


def test_label_selected_watch_turns_moves_into_added_and_deleted(api):
    start = api.get("/api/v1/nodes").json()["metadata"]["resourceVersion"]
    api.post("/api/v1/nodes", json=node("mover"))
    merge = {"Content-Type": "application/merge-patch+json"}
    api.patch("/api/v1/nodes/mover", json={"metadata": {"labels": {"pick": "me"}}}, headers=merge)
    api.patch("/api/v1/nodes/mover", json={"metadata": {"labels": {"pick": None}}}, headers=merge)
    events = watch_lines(
        api, "/api/v1/nodes", {"resourceVersion": start, "labelSelector": "pick=me"}, 2
    )
    assert [e["type"] for e in events] == ["ADDED", "DELETED"]


def test_watch_below_the_compacted_revision_is_an_error_event(api, cluster):
    import asyncio

    old = api.get("/api/v1/nodes").json()["metadata"]["resourceVersion"]
    api.post("/api/v1/nodes", json=node("compact-me"))
    latest = int(api.get("/api/v1/nodes").json()["metadata"]["resourceVersion"])
    future = asyncio.run_coroutine_threadsafe(cluster.store.compact(latest), cluster.loop)
    future.result(10)
    events = watch_lines(api, "/api/v1/nodes", {"resourceVersion": old}, 1)
    assert events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
    assert status["message"] == f"too old resource version: {old} ({latest})"


def test_bookmarks_only_when_asked(api, cluster):
    start = api.get("/api/v1/nodes").json()["metadata"]["resourceVersion"]
    events = watch_lines(
        api, "/api/v1/nodes", {"resourceVersion": start, "timeoutSeconds": "1"}, 99
    )
    assert events == []  # the stream ended at the timeout with nothing to say


def test_finalizers_hold_deletion_until_removed(api):
    api.post("/api/v1/nodes", json=node("held", finalizers=["example.com/hold"]))
    deleted = api.delete("/api/v1/nodes/held")
    assert deleted.status_code == 200
    body = deleted.json()
    assert body["metadata"]["deletionTimestamp"]
    assert api.get("/api/v1/nodes/held").status_code == 200
    released = api.patch(
        "/api/v1/nodes/held",
        json={"metadata": {"finalizers": None}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert released.status_code == 200
    assert api.get("/api/v1/nodes/held").status_code == 404


def test_scheduled_pods_are_deleted_gracefully(api):
    api.post("/api/v1/namespaces/default/pods", json=pod("graceful", nodeName="somewhere"))
    body = api.delete("/api/v1/namespaces/default/pods/graceful").json()
    assert body["metadata"]["deletionGracePeriodSeconds"] == 30
    assert body["metadata"]["deletionTimestamp"]
    forced = api.request(
        "DELETE", "/api/v1/namespaces/default/pods/graceful", json={"gracePeriodSeconds": 0}
    )
    assert forced.status_code == 200
    assert api.get("/api/v1/namespaces/default/pods/graceful").status_code == 404


def test_a_pod_terminating_gracefully_outlives_updates_until_its_final_deletion(api):
    """Upstream's shouldDeleteDuringUpdate: an update deletes an object being deleted with no
    finalizer left only once its grace period is 0 — a pod terminating gracefully stays for
    its kubelet's status updates, and a finalizer removed then does not delete it either."""
    path = "/api/v1/namespaces/default/pods/grace-held"
    held = pod("grace-held", nodeName="somewhere")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    api.post("/api/v1/namespaces/default/pods", json=held)
    assert api.delete(path).json()["metadata"]["deletionGracePeriodSeconds"] == 30
    merge = {"Content-Type": "application/merge-patch+json"}
    released = api.patch(path, json={"metadata": {"finalizers": None}}, headers=merge)
    assert released.status_code == 200
    status = api.patch(f"{path}/status", json={"status": {"phase": "Succeeded"}}, headers=merge)
    assert status.status_code == 200
    assert status.json()["status"]["phase"] == "Succeeded"
    assert api.get(path).status_code == 200
    # The kubelet's final deletion (grace 0) removes it: no finalizer is left.
    final = api.request("DELETE", path, json={"gracePeriodSeconds": 0})
    assert final.status_code == 200
    assert api.get(path).status_code == 404


def test_a_finalizer_removed_after_the_final_deletion_lets_the_pod_go(api):
    path = "/api/v1/namespaces/default/pods/final-held"
    held = pod("final-held", nodeName="somewhere")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    api.post("/api/v1/namespaces/default/pods", json=held)
    api.delete(path)
    kept = api.request("DELETE", path, json={"gracePeriodSeconds": 0}).json()
    assert kept["metadata"]["deletionGracePeriodSeconds"] == 0
    assert api.get(path).status_code == 200
    merge = {"Content-Type": "application/merge-patch+json"}
    api.patch(path, json={"metadata": {"finalizers": None}}, headers=merge)
    assert api.get(path).status_code == 404


def test_deleting_a_namespace_terminates_it_until_it_is_finalized(api):
    # The API server's part (pkg/registry/core/namespace/storage): DELETE starts the
    # termination and keeps the content; emptying it is the namespace controller's (not
    # running here: tests/controllers/test_namespace_deletion.py), which then removes the
    # `kubernetes` spec finalizer through namespaces/NAME/finalize.
    created = api.post("/api/v1/namespaces", json={"metadata": {"name": "doomed"}}).json()
    assert created["spec"] == {"finalizers": ["kubernetes"]}
    api.post("/api/v1/namespaces/doomed/pods", json=pod("inside"))
    response = api.delete("/api/v1/namespaces/doomed")
    assert response.status_code == 200
    assert response.json()["status"]["phase"] == "Terminating"
    assert api.get("/api/v1/namespaces/doomed/pods/inside").status_code == 200
    again = api.delete("/api/v1/namespaces/doomed")  # still terminating: the object, 200
    assert again.status_code == 200
    assert again.json()["metadata"]["deletionTimestamp"]
    refused = api.post("/api/v1/namespaces/doomed/pods", json=pod("late"))
    assert refused.status_code == 403
    # An update of the namespace keeps its spec finalizers and so the namespace.
    labelled = api.patch(
        "/api/v1/namespaces/doomed",
        json={"metadata": {"labels": {"a": "b"}}, "spec": {"finalizers": []}},
        headers={"Content-Type": "application/merge-patch+json"},
    ).json()
    assert labelled["spec"]["finalizers"] == ["kubernetes"]
    finalize = {**labelled, "spec": {"finalizers": []}}
    finalized = api.put("/api/v1/namespaces/doomed/finalize", json=finalize)
    assert finalized.status_code == 200
    events = watch_lines(
        api,
        "/api/v1/namespaces",
        {
            "resourceVersion": response.json()["metadata"]["resourceVersion"],
            "fieldSelector": "metadata.name=doomed",
        },
        2,
    )
    assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]
    assert api.get("/api/v1/namespaces/doomed").status_code == 404


def test_dry_run_changes_nothing(api):
    created = api.post("/api/v1/nodes?dryRun=All", json=node("dry"))
    assert created.status_code == 201
    assert created.json()["metadata"]["name"] == "dry"
    assert api.get("/api/v1/nodes/dry").status_code == 404
    bad = api.post("/api/v1/nodes?dryRun=Some", json=node("dry"))
    assert bad.status_code == 400


def test_binding_assigns_a_node_once(api):
    api.post("/api/v1/namespaces/default/pods", json=pod("to-bind"))
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "to-bind"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n7"},
    }
    assert (
        api.post("/api/v1/namespaces/default/pods/to-bind/binding", json=binding).status_code == 201
    )
    bound = api.get("/api/v1/namespaces/default/pods/to-bind").json()
    assert bound["spec"]["nodeName"] == "n7"
    assert bound["status"]["conditions"][0]["type"] == "PodScheduled"
    again = api.post("/api/v1/namespaces/default/pods/to-bind/binding", json=binding)
    assert again.status_code == 409
    assert again.json()["message"] == (
        'Operation cannot be fulfilled on pods/binding "to-bind": pod to-bind is already assigned to node "n7"'
    )


def test_concurrent_patches_without_preconditions_all_apply(cluster):
    import asyncio

    async def scenario():
        async with httpx.AsyncClient(base_url=cluster.url, timeout=30) as client:
            await client.post("/api/v1/nodes", json=node("contended"))
            responses = await asyncio.gather(
                *(
                    client.patch(
                        "/api/v1/nodes/contended",
                        json={"metadata": {"labels": {f"l{i}": "x"}}},
                        headers={"Content-Type": "application/merge-patch+json"},
                    )
                    for i in range(30)
                )
            )
            final = (await client.get("/api/v1/nodes/contended")).json()
        return [r.status_code for r in responses], final["metadata"]["labels"]

    codes, labels = asyncio.run(scenario())
    assert codes == [200] * 30
    assert labels == {f"l{i}": "x" for i in range(30)}


def test_a_patch_that_names_a_stale_resource_version_conflicts(api):
    created = api.post("/api/v1/nodes", json=node("pinned")).json()
    rv = created["metadata"]["resourceVersion"]
    merge = {"Content-Type": "application/merge-patch+json"}
    assert (
        api.patch(
            "/api/v1/nodes/pinned", json={"metadata": {"labels": {"a": "1"}}}, headers=merge
        ).status_code
        == 200
    )
    stale = api.patch(
        "/api/v1/nodes/pinned",
        json={"metadata": {"resourceVersion": rv, "labels": {"b": "2"}}},
        headers=merge,
    )
    assert stale.status_code == 409
    assert "b" not in api.get("/api/v1/nodes/pinned").json()["metadata"]["labels"]


def test_lists_without_selectors_carry_each_items_resource_version(api):
    deployment = {
        "metadata": {"name": "spliced"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }
    created = api.post("/apis/apps/v1/namespaces/default/deployments", json=deployment).json()
    listed = api.get("/apis/apps/v1/namespaces/default/deployments").json()
    assert listed["kind"] == "DeploymentList"
    item = listed["items"][0]
    assert item["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert "resourceVersion" not in item["spec"]["template"]["metadata"]
    assert item == api.get("/apis/apps/v1/namespaces/default/deployments/spliced").json()


def test_events_are_served_in_both_versions_from_one_store(api):
    event = {
        "metadata": {"name": "ev-1"},
        "involvedObject": {"kind": "Node", "name": "n1"},
        "reason": "NodeNotReady",
        "message": "Node n1 status is now: NodeNotReady",
        "type": "Normal",
        "reportingComponent": "node-controller",
        "count": 1,
    }
    created = api.post("/api/v1/namespaces/default/events", json=event)
    assert created.status_code == 201
    as_v1 = api.get("/apis/events.k8s.io/v1/namespaces/default/events/ev-1").json()
    assert as_v1["apiVersion"] == "events.k8s.io/v1"
    assert as_v1["regarding"] == {"kind": "Node", "name": "n1"}
    assert as_v1["note"] == "Node n1 status is now: NodeNotReady"
    assert as_v1["reportingController"] == "node-controller"
    assert as_v1["deprecatedCount"] == 1
    assert "involvedObject" not in as_v1
    new = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "ev-2"},
        "regarding": {"kind": "Pod", "name": "p"},
        "note": "scheduled",
        "reason": "Scheduled",
        "type": "Normal",
        "reportingController": "default-scheduler",
        "action": "Binding",
    }
    assert api.post("/apis/events.k8s.io/v1/namespaces/default/events", json=new).status_code == 201
    core = api.get("/api/v1/namespaces/default/events/ev-2").json()
    assert (core["apiVersion"], core["involvedObject"]["name"], core["message"]) == (
        "v1",
        "p",
        "scheduled",
    )
    patched = api.patch(
        "/apis/events.k8s.io/v1/namespaces/default/events/ev-2",
        json={"note": "bound"},
        headers={"Content-Type": "application/merge-patch+json"},
    ).json()
    assert patched["note"] == "bound"
    listed = api.get("/apis/events.k8s.io/v1/namespaces/default/events").json()
    assert listed["kind"] == "EventList"
    assert listed["apiVersion"] == "events.k8s.io/v1"
    assert {e["metadata"]["name"] for e in listed["items"]} >= {"ev-1", "ev-2"}
    assert all("note" in e for e in listed["items"])


def test_the_bindings_resource_binds_the_pod_its_binding_names(api):
    """POST /api/v1/namespaces/NS/bindings, the older way to bind (kube-apiserver serves it
    beside pods/binding); discovery lists it, create only."""
    api.post("/api/v1/namespaces/default/pods", json=pod("legacy-bind"))
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "legacy-bind"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n8"},
    }
    created = api.post("/api/v1/namespaces/default/bindings", json=binding)
    assert created.status_code == 201, created.text
    assert api.get("/api/v1/namespaces/default/pods/legacy-bind").json()["spec"]["nodeName"] == "n8"
    again = api.post("/api/v1/namespaces/default/bindings", json=binding)
    assert again.status_code == 409
    listed = {r["name"]: r for r in api.get("/api/v1").json()["resources"]}
    assert listed["bindings"]["kind"] == "Binding"
    assert listed["bindings"]["namespaced"] is True
    assert listed["bindings"]["verbs"] == ["create"]
    assert api.get("/api/v1/namespaces/default/bindings").status_code == 405
