"""DynamicResources' devices-in-use bookkeeping follows the claim informer (upstream's assume
cache and inFlightAllocations): nothing of a deleted claim is remembered."""

from __future__ import annotations

from typing import Any

from taintplane.dra.claims import allocated_devices
from taintplane.scheduler.plugins.dynamic_resources import DraCaches, DynamicResources


def _claim(uid: str, version: int, *, device: str = "") -> dict[str, Any]:
    claim: dict[str, Any] = {
        "metadata": {
            "name": "c",
            "namespace": "default",
            "uid": uid,
            "resourceVersion": str(version),
        },
        "status": {},
    }
    if device:
        result = {"request": "r", "driver": "d", "pool": "p", "device": device}
        claim["status"]["allocation"] = {"devices": {"results": [result]}}
    return claim


def _in_use(plugin: DynamicResources) -> set[tuple[str, str, str]]:
    return allocated_devices(plugin._all_claims())


def test_an_assumed_claim_gives_way_to_the_informer_only_when_it_is_as_new() -> None:
    claims: dict[str, dict[str, Any]] = {"default/c": _claim("u1", 4)}
    plugin = DynamicResources(DraCaches(claims=claims))
    plugin.assumed["u1"] = _claim("u1", 5, device="d0")
    assert _in_use(plugin) == {("d", "p", "d0")}
    plugin.claim_changed(claims["default/c"])  # an older version: still assumed
    assert _in_use(plugin) == {("d", "p", "d0")}
    claims["default/c"] = _claim("u1", 6)  # deallocated since
    plugin.claim_changed(claims["default/c"])
    assert plugin.assumed == {}
    assert _in_use(plugin) == set()


def test_a_deleted_claim_frees_its_devices_assumed_or_in_flight() -> None:
    claims: dict[str, dict[str, Any]] = {"default/c": _claim("u1", 4)}
    plugin = DynamicResources(DraCaches(claims=claims))
    plugin.assumed["u1"] = _claim("u1", 5, device="d0")
    plugin.in_flight["u1"] = _claim("u1", 4, device="d1")
    assert _in_use(plugin) == {("d", "p", "d1")}
    gone = claims.pop("default/c")
    plugin.claim_deleted(gone)
    assert (plugin.assumed, plugin.in_flight) == ({}, {})
    # A claim of the same name made again is a new claim, with its devices free.
    claims["default/c"] = _claim("u2", 9)
    assert _in_use(plugin) == set()


def test_a_claim_replaced_under_its_name_is_the_old_ones_deletion() -> None:
    old, new = _claim("u1", 4), _claim("u2", 9)
    claims: dict[str, dict[str, Any]] = {"default/c": new}
    plugin = DynamicResources(DraCaches(claims=claims))
    plugin.assumed["u1"] = _claim("u1", 5, device="d0")
    plugin.claim_updated(old, new)
    assert plugin.assumed == {}
