"""generateName as kube-apiserver serves it: the prefix cut to 58 characters plus five random
ones, generated again when taken (RetryGenerateName, 8 names in all), then upstream's
generate-name conflict."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import httpx
import pytest


class Suffixes(random.Random):
    """Stands in for the registry's random source: name suffixes are the given ones in turn
    (uids stay random)."""

    def __init__(self, suffixes: list[str]) -> None:
        super().__init__()
        self._suffixes: Iterator[str] = iter(suffixes)

    def choices(self, population: Any, *args: Any, **kwargs: Any) -> list[Any]:
        return list(next(self._suffixes))


@pytest.fixture(scope="module")
def api(cluster: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def pod(**metadata: Any) -> dict[str, Any]:
    return {"metadata": metadata, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


PODS = "/api/v1/namespaces/default/pods"


def test_a_taken_generated_name_is_generated_again(
    api: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert api.post(PODS, json=pod(name="gen-bbbbb")).status_code == 201
    monkeypatch.setattr("taintplane.apiserver.registry._UNIQUE", Suffixes(["bbbbb", "ccccc"]))
    created = api.post(PODS, json=pod(generateName="gen-"))
    assert created.status_code == 201
    assert created.json()["metadata"]["name"] == "gen-ccccc"


def test_eight_taken_names_are_a_generate_name_conflict(
    api: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = [c * 5 for c in "dfghjklm"]
    for suffix in taken:
        assert api.post(PODS, json=pod(name=f"full-{suffix}")).status_code == 201
    monkeypatch.setattr("taintplane.apiserver.registry._UNIQUE", Suffixes([*taken, "nnnnn"]))
    refused = api.post(PODS, json=pod(generateName="full-"))
    assert refused.status_code == 409
    status = refused.json()
    assert status["reason"] == "AlreadyExists"
    assert status["message"] == (
        'pods "full-mmmmm" already exists, the server was not able to generate a unique name '
        "for the object"
    )
    assert status["details"] == {"name": "full-mmmmm", "kind": "pods", "retryAfterSeconds": 1}


def test_a_long_prefix_is_cut_to_58_characters(
    api: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("taintplane.apiserver.registry._UNIQUE", Suffixes(["zzzzz"]))
    prefix = "p" * 70
    created = api.post(PODS, json=pod(generateName=prefix))
    assert created.status_code == 201
    assert created.json()["metadata"]["name"] == "p" * 58 + "zzzzz"
