"""Device taints and tolerations (KEP-5055): matching, effects, rule selectors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taintplane.api.decoding import DecodeError
from taintplane.api.device_taints import (
    DeviceTaint,
    DeviceTaintEffect,
    DeviceTaintSelector,
    DeviceToleration,
    rule_selects,
    untolerated_taints,
)
from taintplane.api.field import Path
from taintplane.api.taints import Taint
from taintplane.api.tolerations import Toleration

NO_SCHEDULE, NO_EXECUTE, NONE = (
    DeviceTaintEffect.NO_SCHEDULE,
    DeviceTaintEffect.NO_EXECUTE,
    DeviceTaintEffect.NONE,
)
OVERHEATING = DeviceTaint("gpu.example.com/degraded", "NoExecute", "overheating")


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        (DeviceToleration("gpu.example.com/degraded", "Exists"), True),
        (DeviceToleration("gpu.example.com/degraded", "Equal", "overheating"), True),
        (DeviceToleration("gpu.example.com/degraded", "", "overheating"), True),
        (DeviceToleration("gpu.example.com/degraded", "Equal", "other"), False),
        (DeviceToleration("gpu.example.com/degraded", "Equal"), False),
        (DeviceToleration("", "Exists"), True),
        (DeviceToleration("", "Exists", effect="NoExecute"), True),
        (DeviceToleration("", "Exists", effect="NoSchedule"), False),
        (DeviceToleration("", "Exists", effect="None"), False),
        (DeviceToleration("other", "Exists"), False),
        (DeviceToleration("gpu.example.com/degraded", "Lt", "overheating"), False),
    ],
)
def test_toleration_matches_a_taint(toleration, tolerated):
    assert toleration.tolerates(OVERHEATING) is tolerated


def test_no_execute_toleration_does_not_imply_no_schedule():
    key = "gpu.example.com/failed"
    taints = [DeviceTaint(key, "NoSchedule"), DeviceTaint(key, "NoExecute")]
    only_execute = [DeviceToleration(key, "Exists", effect="NoExecute")]
    assert untolerated_taints(taints, only_execute, NO_SCHEDULE) == [taints[0]]
    assert untolerated_taints(taints, only_execute, NO_EXECUTE) == []
    either = [DeviceToleration(key, "Exists")]
    assert untolerated_taints(taints, either, NO_SCHEDULE) == []


def test_unknown_effects_count_as_none():
    future = DeviceTaint("k", "NoExecuteWithPodDisruptionBudget")
    assert future.effective_effect is NONE
    assert untolerated_taints([future], [], NO_EXECUTE) == []
    assert untolerated_taints([future], [], NONE) == [future]
    assert DeviceTaint("k", "None").effective_effect is NONE


def test_wire_form_round_trip():
    data = {"key": "k", "value": "v", "effect": "NoSchedule", "timeAdded": "2026-01-01T00:00:00Z"}
    taint = DeviceTaint.from_dict(data)
    assert taint.to_dict() == data
    assert str(taint) == "k=v:NoSchedule"
    toleration = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}
    assert DeviceToleration.from_dict(toleration).to_dict() == toleration
    with pytest.raises(DecodeError, match="cannot unmarshal number into Go struct field"):
        DeviceTaint.from_dict({"key": 5}, Path.root("spec", "taint"))


@pytest.mark.parametrize(
    ("selector", "device", "selected"),
    [
        (None, ("gpu.example.com", "node-1", "gpu-0"), False),
        ({}, ("gpu.example.com", "node-1", "gpu-0"), True),
        ({"driver": "gpu.example.com"}, ("gpu.example.com", "node-2", "gpu-7"), True),
        ({"driver": "gpu.example.com"}, ("nic.example.com", "node-1", "gpu-0"), False),
        ({"pool": "node-1"}, ("nic.example.com", "node-1", "eth-0"), True),
        ({"pool": "node-1", "device": "gpu-3"}, ("gpu.example.com", "node-1", "gpu-3"), True),
        ({"pool": "node-1", "device": "gpu-3"}, ("gpu.example.com", "node-1", "gpu-4"), False),
        ({"driver": None, "device": "gpu-3"}, ("any.example.com", "any", "gpu-3"), True),
    ],
)
def test_rule_selector(selector, device, selected):
    assert rule_selects(DeviceTaintSelector.from_dict(selector), *device) is selected


keys = st.sampled_from(["", "a", "b", "example.com/x"])
values = st.sampled_from(["", "1", "v"])
effects = st.sampled_from(["None", "NoSchedule", "NoExecute"])
device_taints = st.builds(DeviceTaint, key=keys.filter(bool), value=values, effect=effects)
device_tolerations = st.builds(
    DeviceToleration,
    key=keys,
    operator=st.sampled_from(["", "Equal", "Exists"]),
    value=values,
    effect=st.sampled_from(["", "None", "NoSchedule", "NoExecute"]),
)


@given(device_tolerations, device_taints)
def test_matching_is_node_taint_matching(toleration, taint):
    """For the effects both know, device matching is ``v1.Toleration.ToleratesTaint``."""
    node = Toleration(
        key=toleration.key,
        operator=toleration.operator,
        value=toleration.value,
        effect=toleration.effect,
    )
    assert toleration.tolerates(taint) is node.tolerates(
        Taint(key=taint.key, value=taint.value, effect=taint.effect)
    )


@given(st.lists(device_taints, max_size=5), st.lists(device_tolerations, max_size=3), effects)
def test_untolerated_is_each_taint_on_its_own(taints, tolerations, effect):
    result = untolerated_taints(taints, tolerations, DeviceTaintEffect(effect))
    for taint in taints:
        expected = taint.effect == effect and not any(t.tolerates(taint) for t in tolerations)
        assert (taint in result) is expected
    # Adding a toleration never makes more taints untolerated.
    more = untolerated_taints(
        taints, [*tolerations, DeviceToleration("", "Exists")], DeviceTaintEffect(effect)
    )
    assert more == []
