"""Where a node page's eviction instant comes from: the taint eviction controller's own queue
when the dashboard runs beside it, else reckoned from the API. They differ where upstream keeps
a deadline already scheduled when a later taint brings a shorter toleration."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from starlette.types import Receive, Scope, Send

from taintplane.controllers.tainteviction import TaintEvictionController
from taintplane.web.dashboard import Dashboard
from taintplane.web.stay import go_duration
from tests.controllers.harness import Sim, at, simulate
from tests.scheduler.builders import make_node, make_pod, taint


async def nothing_else(scope: Scope, receive: Receive, send: Send) -> None:
    raise AssertionError("only dashboard pages are asked for")


def controller(sim: Sim) -> TaintEvictionController:
    assert sim.cluster.controller_manager is not None
    found = sim.cluster.controller_manager.controllers["taint-eviction-controller"]
    assert isinstance(found, TaintEvictionController)
    return found


def stays(page: str) -> list[str]:
    table = re.search(r'<table id="pods">(.*?)</table>', page)
    assert table is not None
    return re.findall(r"<tr><td>[^<]*</td><td>[^<]*</td><td>([^<]*)</td></tr>", table.group(1))


def toleration(key: str, seconds: int) -> dict[str, Any]:
    return {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}


def test_the_controllers_deadline_wins_over_the_reckoned_one(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_node(make_node("n1"))
        both = [toleration("k", 3600), toleration("k2", 600)]
        await sim.create_pod(make_pod("web", node_name="n1", tolerations=both))
        await sim.advance_to(10)
        await sim.taint("n1", [taint("k", effect="NoExecute")])
        await sim.advance_to(20)
        await sim.taint("n1", [taint("k", effect="NoExecute"), taint("k2", effect="NoExecute")])
        # Upstream's processPodOnNode keeps the deadline k's 3600 s set at 10 s.
        assert controller(sim).scheduled("default", "web") == at(3610)
        beside = Dashboard(sim.client, sim.clock, nothing_else, evictions=controller(sim))
        status, page = await beside.node_page(sim.client, "n1")
        assert status == 200
        assert stays(page) == ["k2:NoExecute op=Exists for 600s: evicted at 01:00:10, in 59m50s"]
        assert 'id="reckoned"' not in page
        # Apart from the controller, the last write of the taints (20 s) is all the API tells.
        apart = Dashboard(sim.client, sim.clock, nothing_else)
        _, page = await apart.node_page(sim.client, "n1")
        assert stays(page) == ["k2:NoExecute op=Exists for 600s: evicted at 00:10:20, in 10m0s"]
        assert 'id="reckoned"' in page

    simulate(tmp_path, scenario, controllers=("taint-eviction-controller",))


def test_time_left_reads_as_go_prints_a_duration() -> None:
    assert [go_duration(s) for s in (0, 0.2, 1, 599, 3600, 3661, -5)] == [
        "0s",
        "1s",
        "1s",
        "9m59s",
        "1h0m0s",
        "1h1m1s",
        "0s",
    ]
