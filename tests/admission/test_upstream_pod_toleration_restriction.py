"""plugin/pkg/admission/podtolerationrestriction's unit tests (v1.35), ported through the API
server: TestPodAdmission's table (namespace defaults and whitelist, the cluster's from the plugin
configuration, nil against empty annotations, memory-pressure for pods that are not BestEffort),
TestHandles, TestIgnoreUpdatingInitializedPod, config_test.go's TestConfigParse and
validation_test.go's TestValidateConfiguration.

DefaultTolerationSeconds is disabled here, so a pod carries what this plugin alone gives it, as
upstream's tests call the plugin alone. Upstream compares with ``ElementsMatch``; the order is
pinned too, as ``MergeTolerations(pod's, extra)`` gives it: the pod's own first.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from taintplane.admission.admission_config import AdmissionConfigError
from taintplane.admission.plugins import AdmissionOptions, AdmissionSetup
from taintplane.admission.pod_toleration_restriction import (
    NS_DEFAULT_TOLERATIONS,
    NS_WL_TOLERATIONS,
    load_configuration,
)
from taintplane.apiserver.app import APIServer
from taintplane.clock import VirtualClock
from taintplane.store.sqlite import SqliteStore

NS = "test-namespace"
PODS = f"/api/v1/namespaces/{NS}/pods"
Call = Callable[..., Awaitable[httpx.Response]]

T = {"key": "testKey", "operator": "Equal", "value": "testValue", "effect": "NoSchedule"}
T1 = {**T, "value": "testValue1"}
T2 = {**T, "value": "testValue2"}
MEMORY_PRESSURE = {
    "key": "node.kubernetes.io/memory-pressure",
    "operator": "Exists",
    "effect": "NoSchedule",
}
BEST_EFFORT: list[dict[str, Any]] = [{"name": "test", "image": "i"}]
BURSTABLE = [
    {
        "name": "test",
        "image": "i",
        "resources": {"limits": {"cpu": "1000m"}, "requests": {"cpu": "500m"}},
    }
]
# Upstream's "guaranteed" pod sets CPU only, so it is Burstable too: not BestEffort is what counts.
GUARANTEED = [
    {
        "name": "test",
        "image": "i",
        "resources": {"limits": {"cpu": "1000m"}, "requests": {"cpu": "1000m"}},
    }
]
NS_CONFLICT = (
    "pod tolerations (possibly merged with namespace default tolerations) conflict with its "
    "namespace whitelist"
)
NONE = object()  # the annotation (or cluster setting) left out, as a nil slice upstream


def _setup(default: Any = NONE, whitelist: Any = NONE) -> AdmissionSetup:
    setup = AdmissionOptions(
        enable=("PodTolerationRestriction",), disable=("DefaultTolerationSeconds",)
    ).load()
    config: dict[str, Any] = {
        "apiVersion": "podtolerationrestriction.admission.k8s.io/v1alpha1",
        "kind": "Configuration",
    }
    if default is not NONE:
        config["default"] = default
    if whitelist is not NONE:
        config["whitelist"] = whitelist
    return AdmissionSetup(setup.enabled, load_configuration(config), {})


def run(tmp: Path, setup: AdmissionSetup, scenario: Callable[[Call], Awaitable[None]]) -> None:
    async def main() -> None:
        store = await SqliteStore(tmp / "store.db").open()
        server = APIServer(store, VirtualClock(), admission=setup)
        await server.bootstrap()
        transport = httpx.ASGITransport(app=server.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:

            async def call(method: str, path: str, body: Any = None) -> httpx.Response:
                return await http.request(method, path, json=body)

            try:
                await scenario(call)
            finally:
                await server.close()
                await store.close()

    asyncio.run(main())


def namespace(annotations: dict[str, Any]) -> dict[str, Any]:
    encoded = {k: json.dumps(v) for k, v in annotations.items() if v is not NONE}
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": NS, "annotations": encoded},
    }


def pod(containers: list[Any], tolerations: list[Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers}
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "test-pod"}, "spec": spec}


# name, pod containers, cluster default, namespace defaults, namespace whitelist,
# cluster whitelist, pod tolerations, merged tolerations (None: refused)
CASES: list[tuple[str, list[Any], Any, Any, Any, Any, list[Any], list[Any] | None]] = [
    (
        "default cluster tolerations with empty pod tolerations and nil namespace tolerations",
        BEST_EFFORT, [T], NONE, NONE, NONE, [], [T],
    ),
    (
        "default cluster tolerations with pod tolerations specified",
        BEST_EFFORT, [T], [], NONE, NONE, [T], [T],
    ),
    ("namespace tolerations", BEST_EFFORT, [], [T], NONE, NONE, [T], [T]),
    ("no pod tolerations", BEST_EFFORT, [], [T], NONE, NONE, [], [T]),
    (
        "duplicate key pod and namespace tolerations",
        BEST_EFFORT, [], [T], NONE, NONE, [T1], [T1, T],
    ),
    (
        "conflicting pod and default cluster tolerations but overridden by empty namespace "
        "tolerations",
        BEST_EFFORT, [T2], [], NONE, NONE, [T1], [T1],
    ),
    ("merged pod tolerations satisfy whitelist", BEST_EFFORT, [], [T], [T], NONE, [], [T]),
    (
        "Override default cluster toleration by empty namespace level toleration",
        BEST_EFFORT, [T], [], NONE, NONE, [], [],
    ),
    (
        "pod toleration conflicts with default cluster white list which is overridden by empty "
        "namespace whitelist",
        BEST_EFFORT, NONE, NONE, [], [T1], [T], [T],
    ),
    (
        "merged pod tolerations conflict with the whitelist",
        BEST_EFFORT, [], [T], [T1], NONE, [], None,
    ),
    (
        "added memoryPressure/DiskPressure for Burstable pod",
        BURSTABLE, [], [T], [], NONE, [], [T, MEMORY_PRESSURE],
    ),
    (
        "Pod with duplicate key tolerations should not be modified",
        BEST_EFFORT, [], [], [], NONE, [T, T1], [T, T1],
    ),
    (
        "added memoryPressure/DiskPressure for Guaranteed pod",
        GUARANTEED, [], [T], [], NONE, [], [T, MEMORY_PRESSURE],
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    (
        "containers",
        "cluster_default",
        "defaults",
        "whitelist",
        "cluster_whitelist",
        "own",
        "merged",
    ),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_pod_admission(
    tmp_path: Path,
    containers: list[Any],
    cluster_default: Any,
    defaults: Any,
    whitelist: Any,
    cluster_whitelist: Any,
    own: list[Any],
    merged: list[Any] | None,
) -> None:
    async def scenario(call: Call) -> None:
        ns = namespace({NS_DEFAULT_TOLERATIONS: defaults, NS_WL_TOLERATIONS: whitelist})
        assert (await call("POST", "/api/v1/namespaces", ns)).status_code == 201
        created = await call("POST", PODS, pod(containers, own))
        if merged is None:
            # Upstream returns a plain error: 500, StatusReasonUnknown ("", left out), the text.
            assert created.status_code == 500, created.text
            status = created.json()
            assert (status["message"], status.get("reason")) == (NS_CONFLICT, None)
            assert (await call("GET", f"{PODS}/test-pod")).status_code == 404
            return
        assert created.status_code == 201, created.text
        assert created.json()["spec"].get("tolerations", []) == merged

    run(tmp_path, _setup(cluster_default, cluster_whitelist), scenario)


def test_cluster_whitelist_refusal_names_the_cluster(tmp_path: Path) -> None:
    """v1.35 names where the whitelist came from (``whitelistScope``)."""

    async def scenario(call: Call) -> None:
        assert (await call("POST", "/api/v1/namespaces", namespace({}))).status_code == 201
        created = await call("POST", PODS, pod(BEST_EFFORT, [T]))
        assert created.status_code == 500
        assert created.json()["message"] == NS_CONFLICT.replace(
            "namespace whitelist", "cluster whitelist"
        )

    run(tmp_path, _setup(whitelist=[T1]), scenario)


def test_update_is_handled_without_defaults(tmp_path: Path) -> None:
    """TestHandles (CREATE and UPDATE) and TestIgnoreUpdatingInitializedPod: an update gets no
    namespace defaults, even ones that differ from the pod's, but the whitelist still holds."""

    async def scenario(call: Call) -> None:
        assert (await call("POST", "/api/v1/namespaces", namespace({}))).status_code == 201
        created = await call("POST", PODS, pod(BEST_EFFORT, [T1]))
        assert created.status_code == 201, created.text
        annotated = namespace({NS_DEFAULT_TOLERATIONS: [T2]})
        assert (await call("PUT", f"/api/v1/namespaces/{NS}", annotated)).status_code == 200
        body = created.json()
        body["metadata"]["labels"] = {"updated": "yes"}
        updated = await call("PUT", f"{PODS}/test-pod", body)
        assert updated.status_code == 200, updated.text
        assert updated.json()["spec"]["tolerations"] == [T1]
        # The whitelist is checked on update too.
        fenced = namespace({NS_WL_TOLERATIONS: [T2]})
        assert (await call("PUT", f"/api/v1/namespaces/{NS}", fenced)).status_code == 200
        body = updated.json()
        body["metadata"]["labels"] = {"updated": "again"}
        refused = await call("PUT", f"{PODS}/test-pod", body)
        assert (refused.status_code, refused.json()["message"]) == (500, NS_CONFLICT)
        # DELETE is not handled: the pod goes although the whitelist refuses its tolerations.
        assert (await call("DELETE", f"{PODS}/test-pod")).status_code == 200

    run(tmp_path, _setup(), scenario)


@pytest.mark.parametrize("version", ["v1alpha1", "v1"])
def test_config_parse(tmp_path: Path, version: str) -> None:
    config = tmp_path / "admission.yaml"
    config.write_text(
        f"""\
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodTolerationRestriction
  configuration:
    apiVersion: podtolerationrestriction.admission.k8s.io/{version}
    kind: Configuration
    default:
    - key: key1
      operator: Equal
      value: value1
    whitelist:
    - key: key2
      operator: Equal
      value: value2
"""
    )
    setup = AdmissionOptions(config_file=config).load()
    restriction = setup.toleration_restriction
    assert [t.to_dict() for t in restriction.default] == [
        {"key": "key1", "operator": "Equal", "value": "value1"}
    ]
    assert [t.to_dict() for t in restriction.whitelist] == [
        {"key": "key2", "operator": "Equal", "value": "value2"}
    ]


VALID = {
    "default": [
        {"key": "foo", "operator": "Exists", "value": "", "effect": "NoExecute",
         "tolerationSeconds": 60},
        {"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoExecute",
         "tolerationSeconds": 60},
        {"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoSchedule"},
        {"operator": "Exists", "effect": "NoSchedule"},
    ],
    "whitelist": [
        {"key": "foo", "value": "bar", "effect": "NoSchedule"},
        {"key": "foo", "operator": "Equal", "value": "bar"},
    ],
}  # fmt: skip


@pytest.mark.parametrize(
    ("config", "error"),
    [
        (VALID, None),
        (
            {"whitelist": [{"key": "foo", "operator": "Exists", "value": "bar",
                            "effect": "NoSchedule"}]},
            "invalid config: [podtolerationrestriction.whitelist[0].operator: Invalid value: "
            '{"Key":"foo","Operator":"Exists","Value":"bar","Effect":"NoSchedule",'
            "\"TolerationSeconds\":null}: value must be empty when `operator` is 'Exists']",
        ),
        (
            {"default": [{"operator": "Equal", "value": "bar", "effect": "NoSchedule"}]},
            'invalid config: [podtolerationrestriction.default[0].operator: Invalid value: "Equal": '
            "operator must be Exists when `key` is empty, which means \"match all values and all "
            'keys"]',
        ),
    ],
    ids=["valid cases", "Exists with a value", "Equal without a key"],
)  # fmt: skip
def test_validate_configuration(tmp_path: Path, config: dict[str, Any], error: str | None) -> None:
    file = tmp_path / "admission.yaml"
    plugin = {
        "apiVersion": "podtolerationrestriction.admission.k8s.io/v1alpha1",
        "kind": "Configuration",
        **config,
    }
    file.write_text(
        json.dumps(
            {
                "apiVersion": "apiserver.config.k8s.io/v1",
                "kind": "AdmissionConfiguration",
                "plugins": [{"name": "PodTolerationRestriction", "configuration": plugin}],
            }
        )
    )
    options = AdmissionOptions(config_file=file)
    if error is None:
        options.load()
        return
    with pytest.raises(AdmissionConfigError) as refused:
        options.load()
    assert str(refused.value) == f"{file}: PodTolerationRestriction: {error}"


def test_chain_order_of_added_tolerations(tmp_path: Path) -> None:
    """Every plugin that adds tolerations, in kube-apiserver's order: the pod's own, then
    DefaultTolerationSeconds' two, PodTolerationRestriction's namespace defaults and
    memory-pressure (merged after the pod's), ExtendedResourceToleration's, RuntimeClass's."""
    setup = AdmissionOptions(
        enable=("PodTolerationRestriction", "ExtendedResourceToleration")
    ).load()
    gpu = {"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    sandbox = {"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}
    seconds = {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}

    async def scenario(call: Call) -> None:
        ns = namespace({NS_DEFAULT_TOLERATIONS: [T]})
        assert (await call("POST", "/api/v1/namespaces", ns)).status_code == 201
        rc = {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": "sandboxed"},
            "handler": "runsc",
            "scheduling": {"tolerations": [sandbox, T]},
        }
        assert (await call("POST", "/apis/node.k8s.io/v1/runtimeclasses", rc)).status_code == 201
        gpu_request = {"cpu": "1", "example.com/gpu": "1"}
        resources = {"requests": gpu_request, "limits": {"example.com/gpu": "1"}}
        containers = [{"name": "c", "image": "i", "resources": resources}]
        body = pod(containers, [T1])
        body["spec"]["runtimeClassName"] = "sandboxed"
        created = await call("POST", PODS, body)
        assert created.status_code == 201, created.text
        assert created.json()["spec"]["tolerations"] == [
            T1,
            {"key": "node.kubernetes.io/not-ready", **seconds},
            {"key": "node.kubernetes.io/unreachable", **seconds},
            T,
            MEMORY_PRESSURE,
            gpu,
            sandbox,
        ]

    run(tmp_path, setup, scenario)


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        # encoding/json matches field names case-insensitively and ignores unknown ones.
        (
            '[{"Key":"foo","OPERATOR":"Exists","Effect":"NoSchedule","extra":1}]',
            [{"key": "foo", "operator": "Exists", "effect": "NoSchedule"}],
        ),
        # An exact name is preferred, but a later key still overwrites an earlier one.
        ('[{"key":"a","Key":"b","operator":"Exists"}]', [{"key": "b", "operator": "Exists"}]),
        # null leaves a string alone and clears tolerationSeconds.
        (
            '[{"key":"a","key":null,"operator":"Exists","effect":"NoExecute",'
            '"tolerationSeconds":5,"TolerationSeconds":null}]',
            [{"key": "a", "operator": "Exists", "effect": "NoExecute"}],
        ),
        (
            '[{"key":"a","operator":"Exists","effect":"NoExecute","tolerationSeconds":"5"}]',
            "json: cannot unmarshal string into Go struct field Toleration.tolerationSeconds of "
            "type int64",
        ),
        (
            '[{"key":"a","operator":"Exists","effect":"NoExecute","tolerationSeconds":1.5}]',
            "json: cannot unmarshal number 1.5 into Go struct field Toleration.tolerationSeconds "
            "of type int64",
        ),
        (
            '[{"key":5,"value":true}]',
            "json: cannot unmarshal number into Go struct field Toleration.key of type string",
        ),
        ("[[]]", "json: cannot unmarshal array into Go value of type v1.Toleration"),
    ],
    ids=[
        "case-insensitive",
        "last wins",
        "null",
        "string seconds",
        "fraction",
        "number key",
        "array",
    ],
)
def test_annotation_decoded_as_go_does(
    tmp_path: Path, annotation: str, expected: list[Any] | str
) -> None:
    async def scenario(call: Call) -> None:
        ns = namespace({})
        ns["metadata"]["annotations"] = {NS_DEFAULT_TOLERATIONS: annotation}
        assert (await call("POST", "/api/v1/namespaces", ns)).status_code == 201
        created = await call("POST", PODS, pod(BEST_EFFORT, []))
        if isinstance(expected, str):
            assert (created.status_code, created.json()["message"]) == (500, expected)
            return
        assert created.status_code == 201, created.text
        assert created.json()["spec"]["tolerations"] == expected

    run(tmp_path, _setup(), scenario)
