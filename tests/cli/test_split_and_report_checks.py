"""What split components, `node`, `what-if` and `simulate` say when things are not as asked:
a lease that cannot be renewed, fault injection without local nodes, the command a what-if
answers, a report that could not be written. Virtual time, in process; no sleeps."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from taintplane.cli import simulate as simulate_cli
from taintplane.cli.components import lead
from taintplane.cli.main import cli
from taintplane.client import Client
from taintplane.client.transport import InProcessTransport
from taintplane.sim.admin import NO_SIMULATED_NODES, AdminApp
from tests.client.test_leader_election_outage import Outage
from tests.controllers.harness import Sim, simulate

SNAPSHOT = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: node-1, creationTimestamp: "2026-01-01T00:00:00Z", labels: {pool: a}}
  status:
    conditions: [{type: Ready, status: "True", lastHeartbeatTime: "2026-01-01T00:00:00Z"}]
    allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
- apiVersion: v1
  kind: Node
  metadata: {name: node-2, creationTimestamp: "2026-01-01T00:00:00Z", labels: {pool: b}}
  spec: {taints: [{key: old, value: x, effect: NoSchedule}]}
  status:
    conditions: [{type: Ready, status: "True", lastHeartbeatTime: "2026-01-01T00:00:00Z"}]
    allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
"""


def test_a_component_that_loses_its_lease_exits_with_an_error(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        transport = Outage(sim.client.transport)
        worked: list[str] = []

        async def work() -> None:
            worked.append("scheduling")
            await asyncio.Event().wait()

        task = asyncio.create_task(lead(Client(transport), "kube-scheduler", True, work, sim.clock))
        await sim.advance(0)
        assert worked == ["scheduling"]
        transport.down = True  # the API server restarts, and takes longer than 10 s
        await sim.advance(10)
        assert task.done()
        with pytest.raises(click.ClickException) as raised:
            task.result()
        assert raised.value.message == (
            "leaderelection lost: the lease kube-system/kube-scheduler could not be renewed "
            "within 10s (is the API server up?); start this component again"
        )

    simulate(tmp_path, scenario, components=())


def test_fault_injection_without_local_nodes_says_where_it_works(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        apiserver = sim.cluster.apiserver
        assert apiserver is not None
        admin = InProcessTransport(AdminApp(sim.cluster, apiserver.app))
        for path, body in [
            ("/taintplane/v1/nodes/node-1/stop", b""),
            ("/taintplane/v1/nodes/node-1/condition", b'{"type":"Ready","status":"False"}'),
            ("/taintplane/v1/zones/a/stop", b""),
            ("/taintplane/v1/devices/gpu.example.com/node-1/gpu-0/health", b"{}"),
        ]:
            answer = await admin.request("POST", path, body=body)
            assert answer.status == 409
            assert json.loads(answer.body) == {"error": NO_SIMULATED_NODES}

    simulate(tmp_path, scenario, components=())
    assert NO_SIMULATED_NODES == (
        "this API server runs no simulated nodes: `taintplane node` and `taintplane device` act "
        "on the nodes of `taintplane up` only, not on those of a separate `taintplane agents` "
        "process; in a split deployment, stop that process to stop its nodes (one `agents` per "
        "pool or zone stops them apart), or run `taintplane up` for fault injection"
    )


@pytest.mark.parametrize(
    ("args", "header"),
    [
        (
            ["nodes", "node-2", "old=y:NoSchedule", "--overwrite"],
            ["What if: kubectl taint nodes node-2 old=y:NoSchedule --overwrite"],
        ),
        (
            ["nodes", "-l", "pool in (b)", "k=v:NoSchedule"],
            ["What if: kubectl taint nodes k=v:NoSchedule -l 'pool in (b)'", "Nodes: node-2"],
        ),
        (
            ["nodes", "--all", "k=v:NoSchedule"],
            ["What if: kubectl taint nodes k=v:NoSchedule --all", "Nodes: node-1 node-2"],
        ),
    ],
)
def test_what_if_heads_its_report_with_the_command_as_given(
    tmp_path: Path, args: list[str], header: list[str]
) -> None:
    snapshot = tmp_path / "snap.yaml"
    snapshot.write_text(SNAPSHOT)
    result = CliRunner().invoke(
        cli, ["what-if", "taint", *args, "--snapshot", str(snapshot), "--until", "1m"]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[: len(header)] == header
    assert lines[len(header)].startswith("Simulated from 2026-01-01T00:00:00Z for 1m0s")


def test_simulate_checks_the_report_path_before_simulating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("nodes: 1\n")

    async def must_not_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("simulated before checking --report")

    monkeypatch.setattr(simulate_cli, "run_scenario", must_not_run)
    report = tmp_path / "missing-dir" / "x.html"
    result = CliRunner().invoke(cli, ["simulate", str(scenario), "--report", str(report)])
    assert result.exit_code == 1
    assert result.output == f"Error: cannot write {report}: No such file or directory\n"


def test_simulate_leaves_no_file_behind_from_the_check(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("nodes: 1\nuntil: 1m\n")
    report = tmp_path / "x.html"
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes: 1\nsteps: [{at: 5, stop: {nodes: [node-1]}}]\n")
    result = CliRunner().invoke(cli, ["simulate", str(bad), "--report", str(report)])
    assert result.exit_code == 2  # a bad input file
    assert result.output == (
        f'Error: {bad}: steps[0].at: time: missing unit in duration "5" (use e.g. 90s, 5m, 1h30m)\n'
    )
    assert not report.exists()
    result = CliRunner().invoke(cli, ["simulate", str(scenario), "--report", str(report)])
    assert result.exit_code == 0, result.output
    assert report.read_text().startswith("<!")
