"""Pool files and scenarios are refused before anything runs when the API server would refuse
their nodes (labels, quantities), and scenario durations read as `clock advance` reads them."""

from pathlib import Path

import pytest

from taintplane.sim.clusterfile import ClusterFileError, load_cluster_file, parse_pools
from taintplane.sim.scenario import ScenarioError, parse_scenario

QUANTITY = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
KEY = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


@pytest.mark.parametrize(
    ("pool", "message"),
    [
        ({"labels": {"bad key!": "x"}}, f'pools[0].labels: Invalid value: "bad key!": {KEY}'),
        ({"labels": {"k": "bad value!"}}, f'pools[0].labels: Invalid value: "bad value!": {VALUE}'),
        (
            {"capacity": {"cpu": "lots"}},
            f'pools[0].capacity[cpu]: Invalid value: "lots": {QUANTITY}',
        ),
        (
            {"devices": [{"driver": "gpu.example.com", "capacity": {"memory": "80 GB"}}]},
            f'pools[0].devices[0].capacity[memory]: Invalid value: "80 GB": {QUANTITY}',
        ),
    ],
)
def test_labels_and_quantities_are_checked(pool: dict[str, object], message: str) -> None:
    with pytest.raises(ClusterFileError) as raised:
        parse_pools({"pools": [{"name": "a", **pool}]})
    assert str(raised.value) == message


def test_valid_labels_and_quantities_pass() -> None:
    (shape,) = parse_pools(
        {
            "pools": [
                {
                    "name": "a",
                    "labels": {"example.com/tier": "gold", "empty": ""},
                    "capacity": {"cpu": "500m", "memory": "1.5Gi", "example.com/gpu": 8},
                }
            ]
        }
    )
    assert shape.labels == {"example.com/tier": "gold", "empty": ""}
    assert shape.capacity["example.com/gpu"] == "8"


def test_the_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "badlabel.yaml"
    path.write_text('pools:\n- name: a\n  count: 1\n  labels: {"bad key!": x}\n')
    with pytest.raises(ClusterFileError) as raised:
        load_cluster_file(path)
    assert str(raised.value) == f'{path}: pools[0].labels: Invalid value: "bad key!": {KEY}'


def test_a_scenario_cluster_block_is_checked_too() -> None:
    with pytest.raises(ScenarioError) as raised:
        parse_scenario({"cluster": {"pools": [{"name": "a", "capacity": {"cpu": "lots"}}]}})
    assert str(raised.value) == (
        f'cluster: pools[0].capacity[cpu]: Invalid value: "lots": {QUANTITY}'
    )


@pytest.mark.parametrize("at", [5, "5", 5.0])
def test_a_bare_number_is_a_duration_without_unit(at: object) -> None:
    with pytest.raises(ScenarioError) as raised:
        parse_scenario({"steps": [{"at": at, "stop": {"nodes": ["node-1"]}}]})
    assert str(raised.value) == (
        f'steps[0].at: time: missing unit in duration "{at}" (use e.g. 90s, 5m, 1h30m)'
    )


def test_zero_needs_no_unit_and_until_reads_alike() -> None:
    scenario = parse_scenario({"steps": [{"at": 0, "stop": {"nodes": ["node-1"]}}]})
    assert scenario.steps[0].at == 0.0
    with pytest.raises(ScenarioError) as raised:
        parse_scenario({"until": 300})
    assert str(raised.value) == (
        'until: time: missing unit in duration "300" (use e.g. 90s, 5m, 1h30m)'
    )
