"""Pod condition helpers: upstream's IsPodReady and UpdatePodCondition semantics."""

from typing import Any

from taintplane.api.podconditions import find_condition, is_pod_ready, update_pod_condition

TARGET = {"type": "DisruptionTarget", "status": "True", "reason": "R", "message": "m"}


def test_ready_only_when_the_ready_condition_is_true():
    assert not is_pod_ready({})
    assert not is_pod_ready({"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    assert is_pod_ready({"status": {"conditions": ["junk", {"type": "Ready", "status": "True"}]}})
    assert find_condition({"status": {"conditions": [{"type": "Ready"}]}}, "Other") is None


def test_a_new_condition_is_added_with_its_transition_time():
    pod: dict[str, Any] = {}
    assert update_pod_condition(pod, TARGET, "2026-11-21T12:00:00Z")
    assert pod["status"]["conditions"] == [{**TARGET, "lastTransitionTime": "2026-11-21T12:00:00Z"}]


def test_the_same_status_keeps_its_transition_time_and_reports_no_change():
    pod = {"status": {"conditions": [{**TARGET, "lastTransitionTime": "2026-11-21T11:00:00Z"}]}}
    assert not update_pod_condition(pod, TARGET, "2026-11-21T12:00:00Z")
    # A new message under the same status: changed, transition time kept.
    assert update_pod_condition(pod, {**TARGET, "message": "n"}, "2026-11-21T12:00:00Z")
    assert pod["status"]["conditions"] == [
        {**TARGET, "message": "n", "lastTransitionTime": "2026-11-21T11:00:00Z"}
    ]


def test_a_status_change_moves_the_transition_time():
    pod = {
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True"},
                {**TARGET, "status": "False", "lastTransitionTime": "2026-11-21T11:00:00Z"},
            ]
        }
    }
    assert update_pod_condition(pod, TARGET, "2026-11-21T12:00:00Z")
    assert pod["status"]["conditions"][1] == {
        **TARGET,
        "lastTransitionTime": "2026-11-21T12:00:00Z",
    }
