"""Whether a pod spec names Secrets or ConfigMaps, and which, as upstream's
``VisitPodSecretNames`` and ``VisitPodConfigmapNames`` (pkg/api/pod) find them: in every
container (init and ephemeral too), in image pull secrets and in volumes. A reference counts
when it is there at all, even with an empty name, as upstream visits it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["configmap_names", "references_configmaps", "references_secrets", "secret_names"]

#: Volume sources whose ``secretRef`` names a Secret.
_SECRET_REF_VOLUMES = ("cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi", "storageos")


def _dicts(value: Any) -> Iterator[Mapping[str, Any]]:
    for item in value if isinstance(value, list) else []:
        if isinstance(item, Mapping):
            yield item


def _containers(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from _dicts(spec.get(key))


def _present(value: Any) -> bool:
    return value is not None


def _container_refers(container: Mapping[str, Any], env_from: str, key_ref: str) -> bool:
    if any(_present(source.get(env_from)) for source in _dicts(container.get("envFrom"))):
        return True
    for variable in _dicts(container.get("env")):
        value_from = variable.get("valueFrom")
        if isinstance(value_from, Mapping) and _present(value_from.get(key_ref)):
            return True
    return False


def _projected(volume: Mapping[str, Any], kind: str) -> bool:
    projected = volume.get("projected")
    sources = projected.get("sources") if isinstance(projected, Mapping) else None
    return any(_present(source.get(kind)) for source in _dicts(sources))


def _volume_names_secret(volume: Mapping[str, Any]) -> bool:
    azure_file = volume.get("azureFile")
    if isinstance(azure_file, Mapping):
        return bool(azure_file.get("secretName"))  # upstream visits a non-empty name only
    if _present(volume.get("secret")) or _projected(volume, "secret"):
        return True
    for source_name in _SECRET_REF_VOLUMES:
        source = volume.get(source_name)
        if isinstance(source, Mapping) and _present(source.get("secretRef")):
            return True
    csi = volume.get("csi")
    return isinstance(csi, Mapping) and _present(csi.get("nodePublishSecretRef"))


def references_secrets(spec: Mapping[str, Any]) -> bool:
    if any(True for _ in _dicts(spec.get("imagePullSecrets"))):
        return True
    if any(_container_refers(c, "secretRef", "secretKeyRef") for c in _containers(spec)):
        return True
    return any(_volume_names_secret(volume) for volume in _dicts(spec.get("volumes")))


def references_configmaps(spec: Mapping[str, Any]) -> bool:
    if any(_container_refers(c, "configMapRef", "configMapKeyRef") for c in _containers(spec)):
        return True
    return any(
        _present(volume.get("configMap")) or _projected(volume, "configMap")
        for volume in _dicts(spec.get("volumes"))
    )


def _name(value: Any, key: str = "name") -> str:
    return str(value.get(key) or "") if isinstance(value, Mapping) else ""


def _container_names(spec: Mapping[str, Any], env_from: str, key_ref: str) -> Iterator[str]:
    for container in _containers(spec):
        for source in _dicts(container.get("envFrom")):
            if _present(source.get(env_from)):
                yield _name(source.get(env_from))
        for variable in _dicts(container.get("env")):
            value_from = variable.get("valueFrom")
            if isinstance(value_from, Mapping) and _present(value_from.get(key_ref)):
                yield _name(value_from.get(key_ref))


def _projected_names(volume: Mapping[str, Any], kind: str) -> Iterator[str]:
    projected = volume.get("projected")
    sources = projected.get("sources") if isinstance(projected, Mapping) else None
    for source in _dicts(sources):
        if _present(source.get(kind)):
            yield _name(source.get(kind))


def secret_names(spec: Mapping[str, Any]) -> Iterator[str]:
    """The Secrets the pod names (what the Node authorizer lets its node read)."""
    for secret in _dicts(spec.get("imagePullSecrets")):
        yield _name(secret)
    yield from _container_names(spec, "secretRef", "secretKeyRef")
    for volume in _dicts(spec.get("volumes")):
        azure_file = volume.get("azureFile")
        if isinstance(azure_file, Mapping) and azure_file.get("secretName"):
            yield _name(azure_file, "secretName")
        if _present(volume.get("secret")):
            yield _name(volume.get("secret"), "secretName")
        yield from _projected_names(volume, "secret")
        for source_name in _SECRET_REF_VOLUMES:
            source = volume.get(source_name)
            if isinstance(source, Mapping) and _present(source.get("secretRef")):
                yield _name(source.get("secretRef"))
        csi = volume.get("csi")
        if isinstance(csi, Mapping) and _present(csi.get("nodePublishSecretRef")):
            yield _name(csi.get("nodePublishSecretRef"))


def configmap_names(spec: Mapping[str, Any]) -> Iterator[str]:
    """The ConfigMaps the pod names."""
    yield from _container_names(spec, "configMapRef", "configMapKeyRef")
    for volume in _dicts(spec.get("volumes")):
        if _present(volume.get("configMap")):
            yield _name(volume.get("configMap"))
        yield from _projected_names(volume, "configMap")
