"""schemathesis against the OpenAPI v3 documents the server publishes (every served
group-version, merged into one): requests generated from the published schemas, path
parameters and query parameters included, get no 5xx. One example per operation in CI."""

from __future__ import annotations

import http.client
from typing import Any

import httpx
import schemathesis
from hypothesis import HealthCheck, given, settings

from taintplane.sim.cluster import Cluster

#: Up to ~160 short warnings fit kube-apiserver's 4 Ki runes (filters/warning.go), each its
#: own header; Python's http.client refuses responses of more than 100 headers.
http.client._MAXHEADERS = 1000  # type: ignore[attr-defined]

#: Query parameters left out: ``watch`` turns a list into a stream held open until its
#: timeout (the watch tests cover it), and ``pretty`` changes nothing.
SKIPPED_PARAMETERS = ("watch", "pretty")


def merged_openapi(base_url: str) -> dict[str, Any]:
    """Every served group-version's document, their paths and components merged (component
    names are Go package paths, the same in every document)."""
    merged: dict[str, Any] = {"paths": {}, "components": {"schemas": {}}}
    with httpx.Client(base_url=base_url, timeout=30) as client:
        index = client.get("/openapi/v3").json()["paths"]
        for entry in index.values():
            document = client.get(entry["serverRelativeURL"]).json()
            merged.setdefault("openapi", document["openapi"])
            merged.setdefault("info", document["info"])
            merged["paths"].update(document.get("paths", {}))
            for kind, entries in (document.get("components") or {}).items():
                merged["components"].setdefault(kind, {}).update(entries)
    return merged


def test_published_operations_get_no_5xx(cluster: Cluster) -> None:
    # schemathesis' own pytest integration (from_fixture) needs pytest < 9 (node._nodeid):
    # the operations' strategies are driven by hypothesis here instead.
    published = schemathesis.openapi.from_dict(merged_openapi(cluster.url))
    operations = [result.ok() for result in published.get_all_operations()]  # type: ignore[union-attr]
    assert len(operations) > 100
    for operation in operations:
        check_operation(operation, cluster.url, EXAMPLES_PER_OPERATION)


#: Examples per operation in CI (166 operations); benchmarks/fuzz_api.py --openapi runs more.
EXAMPLES_PER_OPERATION = 1


def check_operation(
    operation: Any, base_url: str, examples: int, codes: dict[int, int] | None = None
) -> None:
    """``examples`` generated requests for ``operation``; raises on the first 5xx (shrunk by
    hypothesis). ``codes`` counts the answers by status."""

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(operation.as_strategy())
    def run(case: Any) -> None:
        for name in SKIPPED_PARAMETERS:
            (case.query or {}).pop(name, None)
        response = case.call(base_url=base_url, timeout=30)
        if codes is not None:
            codes[response.status_code] = codes.get(response.status_code, 0) + 1
        where = f"{case.method} {case.formatted_path} {case.query} {str(case.body)[:300]}"
        assert response.status_code < 500, (
            f"{response.status_code} for {where}: {response.text[:500]}"
        )
        if response.status_code >= 400:
            assert response.json().get("kind") == "Status", where

    run()
