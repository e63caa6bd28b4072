"""The scenarios in examples/ play as their comments say (seed 004's GPU story among them),
and the scenario steps they use: apply and deviceHealth."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from taintplane.sim.scenario import ScenarioError, load_scenario, parse_scenario
from taintplane.sim.simulate import SimulationReport, run_scenario

EXAMPLES = Path(__file__).parents[2] / "examples"
DEVICE_EVICTION = (
    "DeletionByDeviceTaintManager: Device Taint manager: deleting due to NoExecute taint"
)


@pytest.fixture(scope="module")
def gpu_story() -> SimulationReport:
    return asyncio.run(run_scenario(load_scenario(EXAMPLES / "gpu-overheating" / "scenario.yaml")))


def test_every_step_is_done(gpu_story: SimulationReport) -> None:
    assert [s.summary for _, s in gpu_story.steps][2:] == [
        "device gpu.example.com/gpu-1/gpu-0 is degraded",
        "apply DeviceTaintRule/gpu-1-overheating",
        "apply DeviceTaintRule/gpu-1-overheating",
        "apply DeviceTaintRule/gpu-1-overheating",
    ]
    assert not [h for h in gpu_story.timeline if h.event == "step-failed"]


def test_only_no_execute_evicts_and_the_pool_drains(gpu_story: SimulationReport) -> None:
    evictions = [h for h in gpu_story.timeline if h.event == "evicting"]
    # The degraded device's None taint, the rule's None and NoSchedule evict nothing; its
    # NoExecute (at 4m) evicts every pod on gpu-1 at once.
    assert evictions
    assert {gpu_story.offset(h.at) for h in evictions} == {240.0}
    assert {h.detail for h in evictions} == {DEVICE_EVICTION}
    last = gpu_story.samples[-1]
    # gpu-2's two GPUs run two replicas; the third has no untainted GPU left.
    assert (last.running, last.pending) == (2, 1)
    pending = [h for h in gpu_story.timeline if h.event == "unschedulable"][-1]
    assert pending.detail == (
        "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"device": "gpu.example.com/gpu-1", "health": "degraded"},
            "device must be DRIVER/POOL/DEVICE",
        ),
        ({"device": "d/p/x", "health": "hot"}, "health must be one of healthy, degraded, failed"),
        ({"device": "d/p/x", "health": "failed", "effect": "Later"}, "effect must be one of"),
    ],
)
def test_device_health_steps_are_checked(body: dict[str, str], message: str) -> None:
    with pytest.raises(ScenarioError, match=f"steps\\[0\\].deviceHealth.{message}"):
        parse_scenario({"steps": [{"at": "1m", "deviceHealth": body}]})


def test_an_unknown_device_fails_its_step_only() -> None:
    scenario = parse_scenario(
        {
            "nodes": 1,
            "steps": [{"at": "1s", "deviceHealth": {"device": "d/p/x", "health": "failed"}}],
            "until": "2s",
        }
    )
    report = asyncio.run(run_scenario(scenario))
    [failed] = [h for h in report.timeline if h.event == "step-failed"]
    assert failed.detail == "device d/p/x is not a simulated device"
