"""Discovery documents: ``/version``, aggregated discovery v2 and the legacy lists.

kubectl needs both: aggregated discovery on ``/api`` and ``/apis`` (with its exact
Content-Type), and the legacy ``/api/v1`` APIResourceList, which ``kubectl drain`` reads to
find ``pods/eviction`` even when aggregated discovery works (KUBECTL_CONTRACT.md §2).
"""

from __future__ import annotations

from typing import Any

from taintplane import __version__
from taintplane.api.scheme import ResourceType, Scheme

__all__ = [
    "AGGREGATED_CONTENT_TYPE",
    "aggregated_apis",
    "aggregated_core",
    "legacy_api_versions",
    "legacy_group_list",
    "resource_list",
    "version_info",
]

AGGREGATED_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def version_info() -> dict[str, str]:
    # minor "35": the Kubernetes API this server implements. kubectl's dispatcher then runs its
    # built-in v1.32 client, the one KUBECTL_CONTRACT.md was measured with.
    return {
        "major": "1",
        "minor": "35",
        "emulationMajor": "1",
        "emulationMinor": "35",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "34",
        "gitVersion": "v1.35.0+taintplane",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-11-21T00:00:00Z",
        "goVersion": f"taintplane {__version__}",
        "compiler": "python",
        "platform": "linux/amd64",
    }


def _in_path_order(scheme: Scheme, group: str, version: str) -> list[ResourceType]:
    """A group version's resources as kube-apiserver lists them: it installs their routes in
    sorted path order (``daemonsets`` before ``deployments``, ``deployments/scale`` before
    ``deployments/status``), and ``kubectl get all`` prints the kinds in that order."""
    return sorted(scheme.resources(group, version), key=lambda rt: rt.plural)


def _aggregated_resource(rt: ResourceType) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": rt.plural,
        "responseKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    if rt.subresources:
        entry["subresources"] = [
            {
                "subresource": sub.name,
                "responseKind": (
                    {"group": sub.kind[0], "version": sub.kind[1], "kind": sub.kind[2]}
                    if sub.kind
                    else {"group": rt.group, "version": rt.version, "kind": rt.kind}
                ),
                "verbs": list(sub.verbs),
            }
            for sub in sorted(rt.subresources, key=lambda sub: sub.name)
        ]
    return entry


def _aggregated_group(scheme: Scheme, group: str) -> dict[str, Any]:
    return {
        "metadata": {"name": group, "creationTimestamp": None},
        "versions": [
            {
                "version": version,
                "resources": [
                    _aggregated_resource(rt) for rt in _in_path_order(scheme, group, version)
                ],
                "freshness": "Current",
            }
            for version in scheme.versions(group)
        ],
    }


def aggregated_core(scheme: Scheme) -> dict[str, Any]:
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": [_aggregated_group(scheme, "")],
    }


def aggregated_apis(scheme: Scheme) -> dict[str, Any]:
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": [_aggregated_group(scheme, group) for group in scheme.groups()],
    }


def legacy_api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def legacy_group_list(scheme: Scheme) -> dict[str, Any]:
    groups = []
    for group in scheme.groups():
        versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in scheme.versions(group)]
        groups.append({"name": group, "versions": versions, "preferredVersion": versions[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def legacy_group(scheme: Scheme, group: str) -> dict[str, Any]:
    versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in scheme.versions(group)]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": versions,
        "preferredVersion": versions[0],
    }


def resource_list(scheme: Scheme, group: str, version: str) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for rt in _in_path_order(scheme, group, version):
        entry: dict[str, Any] = {
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": list(rt.verbs),
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        resources.append(entry)
        for sub in sorted(rt.subresources, key=lambda sub: sub.name):
            sub_entry: dict[str, Any] = {
                "name": f"{rt.plural}/{sub.name}",
                "singularName": "",
                "namespaced": rt.namespaced,
            }
            if sub.kind and (sub.kind[0], sub.kind[1]) != (group, version):
                sub_entry["group"], sub_entry["version"] = sub.kind[0], sub.kind[1]
            sub_entry["kind"] = sub.kind[2] if sub.kind else rt.kind
            sub_entry["verbs"] = list(sub.verbs)
            resources.append(sub_entry)
    group_version = f"{group}/{version}" if group else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }
