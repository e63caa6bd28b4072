"""The ReplicaSet counts kept from pod events (``replicaset_pods``) always equal a full recount
of the ReplicaSet's pods, as upstream's ``calculateStatus`` and ``claimPods`` would make it,
whatever the order of adds, updates and deletes and whenever the counts were first built."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from taintplane.api.decoding import format_time
from taintplane.api.selectors import label_selector_from_dict
from taintplane.client import Client, resource
from taintplane.client.informer import Informer, object_key
from taintplane.controllers.replicaset_pods import ReplicaSetPods
from taintplane.controllers.replicaset_status import calculate_status, next_availability_check
from taintplane.controllers.workloads import (
    OWNER_INDEX,
    is_pod_active,
    is_pod_terminating,
    owner_index,
)
from tests.controllers.harness import START

SELECTOR = {"matchLabels": {"app": "web"}}
TEMPLATES = [{"app": "web"}, {"app": "web", "tier": "x"}]
READY_TIMES = [format_time(START), format_time(START + timedelta(seconds=5)), None, "garbage"]
NOW = [START + timedelta(seconds=s) for s in (0, 5, 9, 10, 15, 16, 30)]

pod_states = st.fixed_dictionaries(
    {
        "owner": st.sampled_from(["A", "B", None]),
        "app": st.sampled_from(["web", "other", None]),
        "tier": st.sampled_from(["x", None]),
        "phase": st.sampled_from(["Pending", "Running", "Succeeded", "Failed", None]),
        "deleting": st.booleans(),
        "ready": st.sampled_from(["True", "False", None]),
        "since": st.sampled_from(READY_TIMES),
    }
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.integers(0, 5), pod_states),
        st.tuples(st.just("delete"), st.integers(0, 5), st.none()),
        st.tuples(st.just("build"), st.integers(0, 1), st.none()),
    ),
    max_size=40,
)


def make_pod(i: int, state: dict[str, Any], version: int) -> dict[str, Any]:
    labels = {k: state[k] for k in ("app", "tier") if state[k] is not None}
    meta: dict[str, Any] = {
        "name": f"p{i}",
        "namespace": "default",
        "labels": labels,
        "resourceVersion": str(version),
    }
    if state["owner"] is not None:
        meta["ownerReferences"] = [
            {
                "kind": "ReplicaSet",
                "name": state["owner"],
                "uid": state["owner"],
                "controller": True,
            }
        ]
    if state["deleting"]:
        meta["deletionTimestamp"] = format_time(START)
    status: dict[str, Any] = {}
    if state["phase"] is not None:
        status["phase"] = state["phase"]
    if state["ready"] is not None:
        condition = {"type": "Ready", "status": state["ready"]}
        if state["since"] is not None:
            condition["lastTransitionTime"] = state["since"]
        status["conditions"] = [condition]
    return {"metadata": meta, "status": status}


def informer() -> Informer:
    # Never run: the test plays the watch (cache first, then the handlers, as _watch does).
    pods = Informer(cast(Client, None), resource("", "v1", "pods"))
    pods.add_index(OWNER_INDEX, owner_index)
    return pods


def deliver(pods: Informer, obj: dict[str, Any] | None, key: str) -> None:
    if obj is None:
        gone = pods._store(key, None)
        if gone is not None:
            pods._deleted(gone)
        return
    old = pods._store(key, obj)
    if old is None:
        pods._added(obj)
    else:
        pods._updated(old, obj)


def replicaset(template: dict[str, str], min_ready: int) -> dict[str, Any]:
    return {
        "metadata": {"name": "A", "namespace": "default", "uid": "A"},
        "spec": {
            "replicas": 3,
            "selector": SELECTOR,
            "minReadySeconds": min_ready,
            "template": {"metadata": {"labels": template}},
        },
    }


@settings(max_examples=300, deadline=None)
@given(operations)
def test_counts_follow_pod_events_as_a_full_recount_would(ops: list[Any]) -> None:
    pods = informer()
    counts = ReplicaSetPods(pods)
    pods.add_handlers(counts.added, counts.updated, counts.deleted)
    selector = label_selector_from_dict(SELECTOR)
    template: dict[str, str] | None = None
    for version, (verb, i, state) in enumerate(ops):
        if verb == "put":
            deliver(pods, make_pod(i, state, version), f"default/p{i}")
        elif verb == "delete":
            deliver(pods, None, f"default/p{i}")
        else:
            template = TEMPLATES[i]
        if template is None:
            continue
        kept = counts.counts("A", SELECTOR, selector, template)
        owned = pods.by_index(OWNER_INDEX, "A")
        matching = [p for p in owned if selector.matches(p["metadata"].get("labels") or {})]
        active = [p for p in matching if is_pod_active(p)]
        terminating = [p for p in matching if is_pod_terminating(p)]
        unmatched = {object_key(p) for p in owned if is_pod_active(p)} - {
            object_key(p) for p in active
        }
        assert kept.unmatched == unmatched
        for min_ready in (0, 10):
            rs = replicaset(template, min_ready)
            for now in NOW:
                want = calculate_status(rs, active, terminating, None, now)
                got = (
                    kept.active,
                    kept.labelled,
                    kept.ready,
                    kept.available(min_ready, now),
                    kept.terminating,
                )
                assert got == (
                    want["replicas"],
                    want["fullyLabeledReplicas"],
                    want["readyReplicas"],
                    want["availableReplicas"],
                    want["terminatingReplicas"],
                )
                if min_ready:
                    assert kept.next_check(min_ready, now) == next_availability_check(
                        active, min_ready, now
                    )


def test_counts_are_rebuilt_when_the_template_labels_change() -> None:
    pods = informer()
    counts = ReplicaSetPods(pods)
    pods.add_handlers(counts.added, counts.updated, counts.deleted)
    state = {
        "owner": "A",
        "app": "web",
        "tier": None,
        "phase": "Running",
        "deleting": False,
        "ready": "True",
        "since": READY_TIMES[0],
    }
    deliver(pods, make_pod(0, state, 1), "default/p0")
    selector = label_selector_from_dict(SELECTOR)
    assert counts.counts("A", SELECTOR, selector, TEMPLATES[0]).labelled == 1
    assert counts.counts("A", SELECTOR, selector, TEMPLATES[1]).labelled == 0
    counts.forget("A")
    deliver(pods, None, "default/p0")  # no counts for A any more: nothing to move
    assert counts.counts("A", SELECTOR, selector, TEMPLATES[1]).active == 0
