"""``taintplane up --cluster FILE``: node pools in YAML, and every message they can draw."""

import pytest

from taintplane.agents.nodes import NodeShape
from taintplane.sim.clusterfile import (
    ClusterFileError,
    default_nodes,
    load_cluster_file,
    parse_pools,
)

DEFAULT_CAPACITY = {"cpu": "4", "memory": "16Gi", "pods": "110"}


def test_nodes_n_is_one_pool_named_node():
    assert default_nodes(3) == [NodeShape("node-1"), NodeShape("node-2"), NodeShape("node-3")]
    assert default_nodes(0) == []
    assert default_nodes(3) == parse_pools({"pools": [{"name": "node", "count": 3}]})


def test_a_full_pool_file(tmp_path):
    path = tmp_path / "pools.yaml"
    path.write_text(
        """
pools:
- name: gpu
  count: 5
  zones: [zone-a, zone-b]
  region: eu-west
  labels: {accelerator: a100}
  taints:
  - dedicated=ml:NoSchedule
  - {key: nvidia.com/gpu, effect: NoExecute}
  - key: example.com/spot
    value: "true"
    effect: PreferNoSchedule
  capacity: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "8"}
- name: cpu
  zone: zone-c
"""
    )
    shapes = load_cluster_file(path)
    assert [(s.name, s.zone) for s in shapes] == [
        ("gpu-1", "zone-a"),
        ("gpu-2", "zone-b"),
        ("gpu-3", "zone-a"),
        ("gpu-4", "zone-b"),
        ("gpu-5", "zone-a"),
        ("cpu-1", "zone-c"),
    ]
    gpu = shapes[0]
    assert gpu.region == "eu-west"
    assert gpu.labels == {"accelerator": "a100"}
    assert gpu.taints == [
        {"key": "dedicated", "value": "ml", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "effect": "NoExecute"},
        {"key": "example.com/spot", "value": "true", "effect": "PreferNoSchedule"},
    ]
    # The capacity given overrides the default's keys and keeps the others.
    assert gpu.capacity == {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"}
    assert gpu.all_labels() == {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": "gpu-1",
        "kubernetes.io/os": "linux",
        "topology.kubernetes.io/zone": "zone-a",
        "topology.kubernetes.io/region": "eu-west",
        "accelerator": "a100",
    }
    cpu = shapes[-1]
    assert (cpu.region, cpu.labels, cpu.taints, cpu.capacity) == ("", {}, [], DEFAULT_CAPACITY)
    assert "topology.kubernetes.io/zone" in cpu.all_labels()
    assert "topology.kubernetes.io/region" not in cpu.all_labels()


def test_nodes_do_not_share_mutable_parts():
    a, b = parse_pools(
        {"pools": [{"name": "p", "count": 2, "labels": {"x": "y"}, "taints": ["k:NoSchedule"]}]}
    )
    a.labels["x"] = "changed"
    a.taints[0]["effect"] = "NoExecute"
    assert b.labels == {"x": "y"}
    assert b.taints == [{"key": "k", "effect": "NoSchedule"}]


def test_defaults_count_one_no_zone_and_scalars_as_strings():
    [shape] = parse_pools(
        {"pools": [{"name": "small", "labels": {"n": 1}, "capacity": {"cpu": 8, "pods": 20}}]}
    )
    assert shape == NodeShape(
        "small-1", labels={"n": "1"}, capacity={"cpu": "8", "memory": "16Gi", "pods": "20"}
    )
    assert "topology.kubernetes.io/zone" not in shape.all_labels()


def test_zone_alone_and_count_zero():
    shapes = parse_pools(
        {"pools": [{"name": "a", "count": 2, "zone": "z1"}, {"name": "b", "count": 0}]}
    )
    assert [(s.name, s.zone) for s in shapes] == [("a-1", "z1"), ("a-2", "z1")]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (None, "the cluster file must have a non-empty list `pools`"),
        ([], "the cluster file must have a non-empty list `pools`"),
        ({}, "the cluster file must have a non-empty list `pools`"),
        ({"pools": []}, "the cluster file must have a non-empty list `pools`"),
        ({"pools": {"name": "a"}}, "the cluster file must have a non-empty list `pools`"),
        ({"pools": ["a"]}, "pools[0] must be a mapping"),
        # unknown fields, all of them, sorted, with the known ones
        (
            {"pools": [{"name": "a", "cont": 2}]},
            "pools[0]: unknown field(s) cont; "
            "known: capacity, count, devices, labels, name, region, taints, zone, zones",
        ),
        (
            {"pools": [{"name": "a"}, {"name": "b", "zonez": [], "Labels": {}}]},
            "pools[1]: unknown field(s) Labels, zonez; "
            "known: capacity, count, devices, labels, name, region, taints, zone, zones",
        ),
        # names
        ({"pools": [{"count": 2}]}, "pools[0].name is required"),
        ({"pools": [{"name": ""}]}, "pools[0].name is required"),
        ({"pools": [{"name": 7}]}, "pools[0].name is required"),
        (
            {"pools": [{"name": "a"}, {"name": "b"}, {"name": "a"}]},
            "pools[2].name 'a' is used by another pool",
        ),
        (
            {"pools": [{"name": "Bad_Name"}]},
            "pools[0].name 'Bad_Name' makes invalid node names: a lowercase RFC 1123 subdomain "
            "must consist of lower case alphanumeric characters, '-' or '.', and must start and "
            "end with an alphanumeric character (e.g. 'example.com', regex used for validation "
            "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
        (
            {"pools": [{"name": "n" * 250, "count": 1000}]},
            f"pools[0].name '{'n' * 250}' makes invalid node names: must be no more than 253 bytes",
        ),
        # counts
        (
            {"pools": [{"name": "a", "count": -1}]},
            "pools[0].count must be a whole number, 0 or more",
        ),
        (
            {"pools": [{"name": "a", "count": "3"}]},
            "pools[0].count must be a whole number, 0 or more",
        ),
        (
            {"pools": [{"name": "a", "count": 1.5}]},
            "pools[0].count must be a whole number, 0 or more",
        ),
        (
            {"pools": [{"name": "a", "count": True}]},
            "pools[0].count must be a whole number, 0 or more",
        ),
        (
            {"pools": [{"name": "a", "count": None}]},
            "pools[0].count must be a whole number, 0 or more",
        ),
        # shapes of the other fields
        ({"pools": [{"name": "a", "zones": "z1"}]}, "pools[0].zones must be a list"),
        ({"pools": [{"name": "a", "labels": ["x"]}]}, "pools[0].labels must be a mapping"),
        ({"pools": [{"name": "a", "capacity": "32"}]}, "pools[0].capacity must be a mapping"),
        ({"pools": [{"name": "a", "taints": "k:NoSchedule"}]}, "pools[0].taints must be a list"),
        # taints in kubectl's syntax: kubectl taint's own messages
        (
            {"pools": [{"name": "a", "taints": ["k=v:NoSchedule", "x:Bogus"]}]},
            "pools[0].taints[1]: invalid taint effect: Bogus, unsupported taint effect",
        ),
        (
            {"pools": [{"name": "a", "taints": ["a=b=c:NoSchedule"]}]},
            "pools[0].taints[0]: invalid taint spec: a=b=c:NoSchedule",
        ),
        (
            {"pools": [{"name": "a", "taints": ["a:b:c"]}]},
            "pools[0].taints[0]: invalid taint spec: a:b:c",
        ),
        (
            {"pools": [{"name": "a", "taints": ["bad key:NoSchedule"]}]},
            "pools[0].taints[0]: invalid taint spec: bad key:NoSchedule, name part must consist "
            "of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
            "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
        # a taint without an effect, in either syntax: the API server's message
        (
            {"pools": [{"name": "a", "taints": ["dedicated"]}]},
            "pools[0].taints[0].effect: Required value",
        ),
        (
            {"pools": [{"name": "a", "taints": [{"key": "dedicated"}]}]},
            "pools[0].taints[0].effect: Required value",
        ),
        (
            {"pools": [{"name": "a", "taints": [{"key": "k", "effect": "Nope"}]}]},
            'pools[0].taints[0].effect: Unsupported value: "Nope": supported values: '
            '"NoSchedule", "PreferNoSchedule", "NoExecute"',
        ),
        (
            {"pools": [{"name": "a", "taints": [{"effect": "NoSchedule"}]}]},
            'pools[0].taints[0].key: Invalid value: "": name part must be non-empty',
        ),
        (
            {
                "pools": [
                    {"name": "a", "taints": [{"key": "k", "value": "a b", "effect": "NoSchedule"}]}
                ]
            },
            'pools[0].taints[0].value: Invalid value: "a b": a valid label must be an empty '
            "string or consist of alphanumeric characters, '-', '_' or '.', and must start and "
            "end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
            "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
        (
            {"pools": [{"name": "a", "taints": [5]}]},
            "pools[0].taints[0]: a taint is KEY[=VALUE]:EFFECT or {key, value, effect}",
        ),
        # the same key and effect twice, across the two syntaxes
        (
            {
                "pools": [
                    {
                        "name": "a",
                        "taints": [
                            "k=v:NoSchedule",
                            "k=v:NoExecute",
                            {"key": "k", "value": "w", "effect": "NoSchedule"},
                        ],
                    }
                ]
            },
            'pools[0].taints[2]: Duplicate value: {"Key":"k","Value":"w","Effect":"NoSchedule",'
            '"TimeAdded":null}: taints must be unique by key and effect pair',
        ),
    ],
)
def test_errors(data, message):
    with pytest.raises(ClusterFileError) as raised:
        parse_pools(data)
    assert str(raised.value) == message


def test_file_errors_name_the_file(tmp_path):
    missing = tmp_path / "missing.yaml"
    with pytest.raises(ClusterFileError) as raised:
        load_cluster_file(missing)
    assert str(raised.value) == f"cannot read {missing}: No such file or directory"

    broken = tmp_path / "broken.yaml"
    broken.write_text("pools: [\n")
    with pytest.raises(ClusterFileError) as raised:
        load_cluster_file(broken)
    assert str(raised.value).startswith(f"{broken} is not valid YAML: ")

    bad = tmp_path / "bad.yaml"
    bad.write_text("pools:\n- name: a\n  count: -2\n")
    with pytest.raises(ClusterFileError) as raised:
        load_cluster_file(bad)
    assert str(raised.value) == f"{bad}: pools[0].count must be a whole number, 0 or more"

    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(ClusterFileError) as raised:
        load_cluster_file(empty)
    assert str(raised.value) == f"{empty}: the cluster file must have a non-empty list `pools`"
