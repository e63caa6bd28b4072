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


# ---- the registry strategy (PrepareForCreate / PrepareForUpdate) and the status' encoding ----

STATUS_ZERO = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}


def test_create_resets_the_status_and_spec_changes_bump_the_generation(api):
    name = _name()
    body = {
        "metadata": {"name": name},
        "spec": {"selector": SELECTOR, "minAvailable": 1},
        "status": {"disruptionsAllowed": 5, "currentHealthy": 5, "observedGeneration": 3},
    }
    created = api.post(PDBS, json=body).json()
    assert created["metadata"]["generation"] == 1
    assert created["status"] == STATUS_ZERO  # never omitted, even before the controller
    status = {**STATUS_ZERO, "observedGeneration": 1, "expectedPods": 2}
    api.patch(f"{PDBS}/{name}/status", json={"status": status}, headers=MERGE)
    labelled = api.patch(
        f"{PDBS}/{name}", json={"metadata": {"labels": {"a": "b"}}}, headers=MERGE
    ).json()
    assert labelled["metadata"]["generation"] == 1
    changed = api.patch(
        f"{PDBS}/{name}",
        json={"spec": {"minAvailable": 2}, "status": {"expectedPods": 9}},
        headers=MERGE,
    ).json()
    assert changed["metadata"]["generation"] == 2
    assert changed["status"] == status  # an update of the budget keeps the status
    rewritten = api.patch(
        f"{PDBS}/{name}/status",
        json={"spec": {"minAvailable": 7}, "status": {"expectedPods": 3}},
        headers=MERGE,
    ).json()
    assert rewritten["spec"]["minAvailable"] == 2  # a status write keeps the spec
    assert rewritten["metadata"]["generation"] == 2


def test_a_condition_without_observed_generation_is_stored_without_it(api):
    name = _name()
    assert create(api, name, {"selector": SELECTOR, "maxUnavailable": 1}).status_code == 201
    condition = {
        "type": "DisruptionAllowed",
        "status": "False",
        "observedGeneration": 0,
        "reason": "SyncFailed",
        "message": "",
        "lastTransitionTime": "2025-01-01T00:00:00Z",
    }
    written = api.put(
        f"{PDBS}/{name}/status",
        json={
            **api.get(f"{PDBS}/{name}").json(),
            "status": {"disruptionsAllowed": 0, "conditions": [condition]},
        },
    )
    assert written.status_code == 200, written.text
    stored = written.json()["status"]
    assert stored["conditions"] == [
        {k: v for k, v in condition.items() if k != "observedGeneration"}
    ]
    assert {k: v for k, v in stored.items() if k != "conditions"} == STATUS_ZERO


def test_the_official_client_reads_a_new_budget(cluster, api):
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config

    name = _name()
    assert create(api, name, {"selector": SELECTOR, "minAvailable": 1}).status_code == 201
    api_client = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig_path))
    try:
        policy = k8s.PolicyV1Api(api_client)
        read = policy.read_namespaced_pod_disruption_budget(name, "default")
        assert (read.status.current_healthy, read.status.expected_pods) == (0, 0)
        listed = policy.list_namespaced_pod_disruption_budget("default")
        assert name in [b.metadata.name for b in listed.items]
    finally:
        api_client.close()
