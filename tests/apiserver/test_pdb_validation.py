"""PodDisruptionBudgets as kube-apiserver validates and stores them (pkg/apis/policy/validation,
pkg/registry/policy/poddisruptionbudget): the exact field errors for a bad spec or status."""

import itertools

import httpx
import pytest

PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
MERGE = {"Content-Type": "application/merge-patch+json"}
SELECTOR = {"matchLabels": {"app": "web"}}
_names = itertools.count()


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def _name() -> str:
    return f"pdb-{next(_names)}"


def create(api, name, spec):
    return api.post(PDBS, json={"metadata": {"name": name}, "spec": spec})


def invalid(response, name) -> list[str]:
    """The 422's message, checked to be upstream's shape; the causes' messages."""
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["reason"] == "Invalid"
    assert body["message"].startswith(f'PodDisruptionBudget.policy "{name}" is invalid: ')
    return [f"{c['field']}: {c['message']}" for c in body["details"]["causes"]]


def test_min_available_and_max_unavailable_cannot_both_be_set(api):
    name = _name()
    refused = create(api, name, {"selector": SELECTOR, "minAvailable": 1, "maxUnavailable": "50%"})
    assert refused.json()["message"] == (
        f'PodDisruptionBudget.policy "{name}" is invalid: spec: Invalid value: '
        '{"MinAvailable":1,"Selector":{"matchLabels":{"app":"web"}},"MaxUnavailable":"50%",'
        '"UnhealthyPodEvictionPolicy":null}: minAvailable and maxUnavailable cannot be both set'
    )
    assert invalid(refused, name)


@pytest.mark.parametrize(
    ("spec", "errors"),
    [
        (
            {"minAvailable": -1},
            ["spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (
            {"maxUnavailable": -2},
            ["spec.maxUnavailable: Invalid value: -2: must be greater than or equal to 0"],
        ),
        (
            {"minAvailable": "101%"},
            ['spec.minAvailable: Invalid value: "101%": must not be greater than 100%'],
        ),
        (
            {"maxUnavailable": "half"},
            [
                'spec.maxUnavailable: Invalid value: "half": a valid percent string must be a '
                "numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for "
                "validation is '[0-9]+%')"
            ],
        ),
        (
            {"minAvailable": 1, "unhealthyPodEvictionPolicy": "Foo"},
            [
                'spec.unhealthyPodEvictionPolicy: Unsupported value: "Foo": supported values: '
                '"AlwaysAllow", "IfHealthyBudget"'
            ],
        ),
    ],
)
def test_bad_budgets_are_refused_with_upstreams_errors(api, spec, errors):
    name = _name()
    assert invalid(create(api, name, {"selector": SELECTOR, **spec}), name) == errors


def test_the_selector_is_validated(api):
    name = _name()
    selector = {
        "matchLabels": {"app": "-bad-"},
        "matchExpressions": [
            {"key": "tier", "operator": "In"},
            {"key": "zone", "operator": "Exists", "values": ["a"]},
            {"key": "x", "operator": "Near", "values": ["b c"]},
        ],
    }
    assert invalid(create(api, name, {"selector": selector, "minAvailable": 1}), name) == [
        'spec.selector.matchLabels: Invalid value: "-bad-": a valid label must be an empty '
        "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end "
        "with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex "
        "used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        "spec.selector.matchExpressions[0].values: Required value: must be specified when "
        "`operator` is 'In' or 'NotIn'",
        "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when "
        "`operator` is 'Exists' or 'DoesNotExist'",
        'spec.selector.matchExpressions[2].operator: Invalid value: "Near": not a valid '
        "selector operator",
        'spec.selector.matchExpressions[2].values[0]: Invalid value: "b c": a valid label must '
        "be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
        "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
        "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ]


def test_valid_budgets_are_accepted_and_updates_are_validated(api):
    name = _name()
    for budget in ({"minAvailable": "100%"}, {"maxUnavailable": 0}, {}):
        assert create(api, _name(), {"selector": SELECTOR, **budget}).status_code == 201
    spec = {"selector": SELECTOR, "minAvailable": 0, "unhealthyPodEvictionPolicy": "AlwaysAllow"}
    assert create(api, name, spec).status_code == 201
    patched = api.patch(f"{PDBS}/{name}", json={"spec": {"maxUnavailable": 1}}, headers=MERGE)
    assert invalid(patched, name)[0].endswith("minAvailable and maxUnavailable cannot be both set")


def test_status_writes_are_validated(api):
    name = _name()
    assert create(api, name, {"selector": SELECTOR, "minAvailable": 1}).status_code == 201
    status = {
        "disruptionsAllowed": -1,
        "currentHealthy": 0,
        "desiredHealthy": 0,
        "expectedPods": -3,
        "conditions": [{"type": "DisruptionAllowed", "status": "Maybe"}],
    }
    refused = api.patch(f"{PDBS}/{name}/status", json={"status": status}, headers=MERGE)
    assert invalid(refused, name) == [
        'status.conditions[0].status: Unsupported value: "Maybe": supported values: "False", '
        '"True", "Unknown"',
        "status.conditions[0].lastTransitionTime: Required value: must be set",
        "status.conditions[0].reason: Required value: must be set",
        "status.disruptionsAllowed: Invalid value: -1: must be greater than or equal to 0",
        "status.expectedPods: Invalid value: -3: must be greater than or equal to 0",
    ]
