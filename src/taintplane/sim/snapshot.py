"""Cluster state to simulate from, and putting it into a fresh store.

A snapshot is what ``kubectl get nodes,pods,… -A -o yaml`` prints (a ``List``), a stream of
YAML or JSON documents, or the same kinds read from a live cluster over its API. Restoring it
writes the objects straight into an empty store, as restoring an etcd backup does: names, uids,
owner references, creation times, bindings and statuses stay what they were, which creating
them through the API would not allow.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from taintplane.api.decoding import parse_timestamp
from taintplane.api.scheme import SCHEME, ResourceType, Scheme
from taintplane.apiserver.registry_reads import encode_for_storage
from taintplane.client import ApiError, Client
from taintplane.store.batch import Write, write_many
from taintplane.store.errors import AlreadyExists
from taintplane.store.interface import Store

__all__ = [
    "SNAPSHOT_RESOURCES",
    "SnapshotError",
    "load_yaml_documents",
    "not_restored",
    "objects_of",
    "read_live",
    "read_snapshot_file",
    "restore",
    "snapshot_instant",
]


class SnapshotError(ValueError):
    pass


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """YAML 1.1 without timestamps: ``2026-01-01T00:00:00Z`` stays the string the API
    server expects (a safe_load would make it a datetime); libyaml's parser when present."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _served(group: str, version: str, plural: str) -> ResourceType:
    found = SCHEME.lookup(group, version, plural)
    assert found is not None, plural
    return found


#: What decides where pods run and what evicts them: the kinds read from a live cluster.
SNAPSHOT_RESOURCES: tuple[ResourceType, ...] = tuple(
    _served(g, v, p)
    for g, v, p in (
        ("", "v1", "namespaces"),
        ("", "v1", "nodes"),
        ("", "v1", "pods"),
        ("coordination.k8s.io", "v1", "leases"),
        ("node.k8s.io", "v1", "runtimeclasses"),
        ("scheduling.k8s.io", "v1", "priorityclasses"),
        ("apps", "v1", "controllerrevisions"),
        ("apps", "v1", "deployments"),
        ("apps", "v1", "replicasets"),
        ("apps", "v1", "daemonsets"),
        ("policy", "v1", "poddisruptionbudgets"),
        ("resource.k8s.io", "v1", "deviceclasses"),
        ("resource.k8s.io", "v1", "resourceslices"),
        ("resource.k8s.io", "v1", "resourceclaims"),
        ("resource.k8s.io", "v1", "resourceclaimtemplates"),
        ("resource.k8s.io", "v1alpha3", "devicetaintrules"),
    )
)

#: Objects restored in one store transaction.
RESTORE_BATCH = 512

#: Kinds a snapshot may hold that a simulation starts without: Events are history, not state.
_NOT_RESTORED = frozenset({("v1", "Event"), ("events.k8s.io/v1", "Event")})


def _flatten(document: Any, where: str) -> Iterator[dict[str, Any]]:
    if document is None:
        return
    if not isinstance(document, dict):
        raise SnapshotError(
            f"{where}: expected an object or a List, found {type(document).__name__}"
        )
    kind = document.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and "items" in document:
        for index, item in enumerate(document.get("items") or []):
            yield from _flatten(item, f"{where}, item {index}")
        return
    metadata = document.get("metadata")
    if not document.get("apiVersion") or not kind or not isinstance(metadata, dict):
        raise SnapshotError(f"{where}: an object needs apiVersion, kind and metadata")
    if not metadata.get("name"):
        raise SnapshotError(f"{where}: {kind} has no metadata.name")
    yield document


def load_yaml_documents(text: str) -> list[Any]:
    """Every YAML (or JSON) document in ``text``, times left as strings."""
    try:
        return list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as error:
        raise SnapshotError(str(error)) from error


def objects_of(items: list[Any], where: str) -> list[dict[str, Any]]:
    """The objects of a list of manifests (``List``s flattened), each checked to name itself."""
    objects: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        objects.extend(_flatten(item, f"{where}[{index}]"))
    return objects


def read_snapshot_file(path: Path) -> list[dict[str, Any]]:
    """Every object in a YAML or JSON file: single objects, ``List``s, several documents."""
    try:
        text = path.read_text()
    except OSError as error:
        raise SnapshotError(f"cannot read snapshot {path}: {error.strerror or error}") from error
    try:
        documents = load_yaml_documents(text)
    except SnapshotError as error:
        raise SnapshotError(f"snapshot {path} is not YAML or JSON: {error}") from error
    objects: list[dict[str, Any]] = []
    for index, document in enumerate(documents):
        objects.extend(_flatten(document, f"snapshot {path}, document {index + 1}"))
    return objects


async def read_live(client: Client) -> list[dict[str, Any]]:
    """The snapshot kinds as a live cluster holds them now (kinds it does not serve: none)."""
    objects: list[dict[str, Any]] = []
    for rt in SNAPSHOT_RESOURCES:
        try:
            items, _ = await client.list(rt)
        except ApiError as error:
            if error.code in (404, 405):
                continue  # e.g. the alpha DeviceTaintRule on a cluster without it
            raise
        for item in items:
            item.setdefault("apiVersion", rt.api_version)
            item.setdefault("kind", rt.kind)
            objects.append(item)
    return objects


_CONDITION_TIMES = ("lastHeartbeatTime", "lastTransitionTime", "lastProbeTime")


def _instants(obj: dict[str, Any]) -> Iterator[str]:
    yield obj["metadata"].get("creationTimestamp") or ""
    status = obj.get("status")
    if isinstance(status, dict):
        for condition in status.get("conditions") or []:
            if isinstance(condition, dict):
                yield from (str(condition.get(name) or "") for name in _CONDITION_TIMES)
    spec = obj.get("spec")
    if obj.get("kind") == "Lease" and isinstance(spec, dict):
        yield str(spec.get("renewTime") or "")
    if obj.get("kind") == "Node" and isinstance(spec, dict):
        for taint in spec.get("taints") or []:
            if isinstance(taint, dict):
                yield str(taint.get("timeAdded") or "")


def snapshot_instant(objects: Iterable[dict[str, Any]]) -> datetime | None:
    """When the snapshot was taken, as well as it says: its newest creation, condition,
    taint or lease renewal time (heartbeats keep these fresh on a live cluster)."""
    newest: datetime | None = None
    for obj in objects:
        for text in _instants(obj):
            if not text:
                continue
            try:
                instant = parse_timestamp(text)
            except ValueError:
                continue
            if instant is None or instant.tzinfo is None:
                continue
            if newest is None or instant > newest:
                newest = instant
    return newest


def not_restored(objects: Iterable[dict[str, Any]], scheme: Scheme = SCHEME) -> list[str]:
    """The kinds of ``objects`` a copy of the cluster starts without, as ``apiVersion Kind``:
    the ones taintplane does not serve (a StatefulSet, a Job, a custom resource) and Events."""
    return sorted(
        {
            f"{o['apiVersion']} {o['kind']}"
            for o in objects
            if scheme.by_kind(str(o["apiVersion"]), str(o["kind"])) is None
            or (str(o["apiVersion"]), str(o["kind"])) in _NOT_RESTORED
        }
    )


async def restore(
    store: Store, objects: Iterable[dict[str, Any]], scheme: Scheme = SCHEME
) -> list[str]:
    """Write ``objects`` into ``store`` as they are; the kinds left out, as ``apiVersion
    Kind`` (not served here, or Events). A namespace that objects use but the snapshot does not
    hold is created, so controllers can create pods in it (after the snapshot's own, which
    win)."""
    skipped: set[str] = set()
    namespaces: set[str] = set()
    namespace_type = scheme.by_kind("v1", "Namespace")
    assert namespace_type is not None
    writes = _Creates(store)
    for obj in objects:
        api_version, kind = str(obj["apiVersion"]), str(obj["kind"])
        rt = scheme.by_kind(api_version, kind)
        if rt is None or (api_version, kind) in _NOT_RESTORED:
            skipped.add(f"{api_version} {kind}")
            continue
        stored = {**obj, "metadata": dict(obj["metadata"])}
        metadata = stored["metadata"]
        metadata.pop("resourceVersion", None)
        metadata.setdefault("uid", str(uuid.uuid4()))
        namespace = ""
        if rt.namespaced:
            namespace = metadata.setdefault("namespace", "default")
            namespaces.add(namespace)
        await writes.add(rt.storage_key(namespace, metadata["name"]), stored)
    # The snapshot's own namespaces are written before these, so they win.
    await writes.flush()
    for name in namespaces:
        namespace_object = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": name,
                "uid": str(uuid.uuid4()),
                "labels": {"kubernetes.io/metadata.name": name},
            },
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        }
        await writes.add(namespace_type.storage_key("", name), namespace_object)
    await writes.flush()
    return sorted(skipped)


class _Creates:
    """Creations committed :data:`RESTORE_BATCH` at a time (one transaction each, not one per
    object: 100 000 pods are restored in seconds, not a minute). The same object twice in a
    snapshot: the first one stands."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._pending: list[Write] = []

    async def add(self, key: str, obj: dict[str, Any]) -> None:
        self._pending.append(Write("create", key, encode_for_storage(obj)))
        if len(self._pending) >= RESTORE_BATCH:
            await self.flush()

    async def flush(self) -> None:
        pending, self._pending = self._pending, []
        for result in await write_many(self._store, pending):
            if isinstance(result, BaseException) and not isinstance(result, AlreadyExists):
                raise result
