"""PriorityClass objects and the Priority admission plugin, through kubectl and the REST API."""

import httpx
import pytest

PCS = "/apis/scheduling.k8s.io/v1/priorityclasses"


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def pc(name, value, **extra):
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **extra,
    }


def pod(name, **spec):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec},
    }


def test_system_classes_exist_and_kubectl_lists_them(kubectl):
    out = kubectl("get", "priorityclasses", "-o", "name")
    assert out.split() == [
        "priorityclass.scheduling.k8s.io/system-cluster-critical",
        "priorityclass.scheduling.k8s.io/system-node-critical",
    ]
    value = kubectl("get", "pc", "system-node-critical", "-o", "jsonpath={.value}")
    assert value == "2000001000"


def test_pod_without_class_gets_priority_zero(api):
    created = api.post("/api/v1/namespaces/default/pods", json=pod("plain")).json()
    assert created["spec"]["priority"] == 0
    assert created["spec"]["preemptionPolicy"] == "PreemptLowerPriority"
    assert "priorityClassName" not in created["spec"]


def test_pod_class_resolves_to_value_and_policy(api):
    assert api.post(PCS, json=pc("batch", 100, preemptionPolicy="Never")).status_code == 201
    created = api.post(
        "/api/v1/namespaces/default/pods", json=pod("job", priorityClassName="batch")
    ).json()
    assert created["spec"]["priority"] == 100
    assert created["spec"]["preemptionPolicy"] == "Never"
    critical = api.post(
        "/api/v1/namespaces/default/pods",
        json=pod("critical", priorityClassName="system-cluster-critical"),
    ).json()
    assert critical["spec"]["priority"] == 2000000000


def test_unknown_class_is_forbidden_and_nothing_is_written(api):
    response = api.post(
        "/api/v1/namespaces/default/pods", json=pod("ghost", priorityClassName="nope")
    )
    assert response.status_code == 403
    status = response.json()
    assert status["reason"] == "Forbidden"
    assert status["message"] == (
        'pods "ghost" is forbidden: no PriorityClass with name nope was found'
    )
    assert api.get("/api/v1/namespaces/default/pods/ghost").status_code == 404


def test_priority_that_differs_from_the_class_is_forbidden(api):
    response = api.post("/api/v1/namespaces/default/pods", json=pod("liar", priority=5))
    assert response.status_code == 403
    assert response.json()["message"] == (
        'pods "liar" is forbidden: the integer value of priority (5) must not be provided in '
        "pod spec; priority admission controller computed 0 from the given PriorityClass name"
    )


def test_only_one_global_default(api):
    assert api.post(PCS, json=pc("everyone", 7, globalDefault=True)).status_code == 201
    try:
        second = api.post(PCS, json=pc("everyone-else", 8, globalDefault=True))
        assert second.status_code == 403
        assert second.json()["message"] == (
            'priorityclasses.scheduling.k8s.io "everyone-else" is forbidden: PriorityClass '
            "everyone is marked as default. Only one default can exist"
        )
        created = api.post("/api/v1/namespaces/default/pods", json=pod("defaulted")).json()
        assert created["spec"]["priorityClassName"] == "everyone"
        assert created["spec"]["priority"] == 7
    finally:
        api.delete(f"{PCS}/everyone")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            pc("system-mine", 5),
            'PriorityClass.scheduling.k8s.io "system-mine" is invalid: metadata.name: '
            "Forbidden: priority class names with 'system-' prefix are reserved for system use "
            "only. error: system-mine is not a known system priority class",
        ),
        (
            pc("huge", 1000000001),
            'PriorityClass.scheduling.k8s.io "huge" is invalid: value: Forbidden: maximum '
            "allowed value of a user defined priority is 1000000000",
        ),
        (
            pc("odd", 1, preemptionPolicy="Sometimes"),
            'PriorityClass.scheduling.k8s.io "odd" is invalid: preemptionPolicy: Unsupported '
            'value: "Sometimes": supported values: "Never", "PreemptLowerPriority"',
        ),
    ],
)
def test_invalid_classes_are_refused(api, body, message):
    response = api.post(PCS, json=body)
    assert response.status_code == 422
    assert response.json()["message"] == message


def test_value_is_immutable(api):
    assert api.post(PCS, json=pc("fixed", 1)).status_code == 201
    response = api.patch(
        f"{PCS}/fixed", json={"value": 2}, headers={"Content-Type": "application/merge-patch+json"}
    )
    assert response.status_code == 422
    assert response.json()["message"] == (
        'PriorityClass.scheduling.k8s.io "fixed" is invalid: value: Forbidden: may not be '
        "changed in an update."
    )


def test_kubectl_get_shows_upstream_columns(kubectl):
    out = kubectl("get", "pc", "system-node-critical")
    header, row = out.splitlines()
    assert header.split() == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    cells = row.split()
    assert cells[:3] == ["system-node-critical", "2000001000", "false"]
    assert cells[4] == "PreemptLowerPriority"


def test_admission_sees_every_write_to_classes_at_once(api):
    """The classes are read from a cached list: each create, update and delete must show."""
    assert api.post(PCS, json=pc("transient", 3)).status_code == 201
    made = api.post(
        "/api/v1/namespaces/default/pods", json=pod("t1", priorityClassName="transient")
    )
    assert made.json()["spec"]["priority"] == 3
    merge = {"Content-Type": "application/merge-patch+json"}
    assert (
        api.patch(f"{PCS}/transient", json={"globalDefault": True}, headers=merge).status_code
        == 200
    )
    assert (
        api.post("/api/v1/namespaces/default/pods", json=pod("t2")).json()["spec"][
            "priorityClassName"
        ]
        == "transient"
    )
    assert api.delete(f"{PCS}/transient").status_code == 200
    gone = api.post(
        "/api/v1/namespaces/default/pods", json=pod("t3", priorityClassName="transient")
    )
    assert gone.status_code == 403
    assert (
        "priorityClassName"
        not in api.post("/api/v1/namespaces/default/pods", json=pod("t4")).json()["spec"]
    )


def test_subresources_are_not_admitted():
    """As upstream's plugin: an Eviction (CREATE pods/eviction) or a status write is left
    alone, not given a priority as if it were a pod."""
    import asyncio

    from taintplane.admission.chain import Attributes
    from taintplane.admission.priority import Priority
    from taintplane.api.scheme import SCHEME

    class NoClasses:
        async def list(self, api_version, kind):
            return []

        async def get(self, api_version, kind, name, namespace=""):
            return None

    pods = SCHEME.lookup("", "v1", "pods")
    assert pods is not None
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p"}}
    attributes = Attributes("CREATE", pods, "default", eviction, None, "eviction")
    asyncio.run(Priority(NoClasses()).admit(attributes))
    assert "spec" not in eviction
