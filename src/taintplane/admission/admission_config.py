"""The admission configuration file (``--admission-config``), as kube-apiserver's
``--admission-control-config-file`` reads it (``k8s.io/apiserver/pkg/admission/config.go``)::

    apiVersion: apiserver.config.k8s.io/v1
    kind: AdmissionConfiguration
    plugins:
    - name: PodTolerationRestriction
      configuration:                      # the plugin's configuration, embedded
        apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1
        kind: Configuration
        default: [{key: dedicated, operator: Equal, value: banana, effect: NoSchedule}]
        whitelist: [...]
    - name: PodNodeSelector
      path: podnodeselector.yaml          # or in a file, relative to this one

A file holding only PodNodeSelector's legacy ``podNodeSelectorPluginConfig`` is accepted as
that plugin's configuration, as upstream does. Every problem is an ``AdmissionConfigError``
naming the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

__all__ = ["ADMISSION_CONFIG_VERSIONS", "AdmissionConfigError", "read_admission_configuration"]

ADMISSION_CONFIG_VERSIONS = (
    "apiserver.config.k8s.io/v1",
    "apiserver.config.k8s.io/v1alpha1",
    "apiserver.k8s.io/v1alpha1",
)
ADMISSION_CONFIG_KIND = "AdmissionConfiguration"
_LEGACY_KEYS = {"podnodeselectorpluginconfig": "PodNodeSelector", "imagepolicy": ""}


class AdmissionConfigError(ValueError):
    """A configuration file that cannot be used; the message names the file."""


def _load_yaml(path: Path) -> Any:
    try:
        text = path.read_text()
    except OSError as error:
        raise AdmissionConfigError(
            f'unable to read admission control configuration from "{path}" '
            f"[{error.strerror or error}]"
        ) from error
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise AdmissionConfigError(f"{path}: not YAML or JSON: {error}") from error


def read_admission_configuration(path: Path) -> dict[str, Mapping[str, Any] | None]:
    """Plugin name to its configuration object (None: the plugin's defaults)."""
    data = _load_yaml(path)
    if not isinstance(data, Mapping):
        raise AdmissionConfigError(
            f"{path}: want an {ADMISSION_CONFIG_KIND} object (apiVersion, kind, plugins)"
        )
    api_version, kind = data.get("apiVersion"), data.get("kind")
    if not api_version and not kind:
        legacy = [_LEGACY_KEYS[k.lower()] for k in data if str(k).lower() in _LEGACY_KEYS]
        if legacy:
            return {name: data for name in legacy if name}
    if not kind:
        raise AdmissionConfigError(f"{path}: Object 'Kind' is missing")
    if not api_version:
        raise AdmissionConfigError(f"{path}: Object 'apiVersion' is missing")
    if kind != ADMISSION_CONFIG_KIND or api_version not in ADMISSION_CONFIG_VERSIONS:
        raise AdmissionConfigError(
            f'{path}: no kind "{kind}" is registered for version "{api_version}" '
            f"(want apiVersion {ADMISSION_CONFIG_VERSIONS[0]}, kind {ADMISSION_CONFIG_KIND})"
        )
    plugins = data.get("plugins")
    plugins = [] if plugins is None else plugins
    if not isinstance(plugins, list):
        raise AdmissionConfigError(f"{path}: plugins: want a list of {{name, configuration}}")
    configs: dict[str, Mapping[str, Any] | None] = {}
    for i, entry in enumerate(plugins):
        where = f"{path}: plugins[{i}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise AdmissionConfigError(f"{where}: want a map with a plugin name")
        name = entry["name"]
        if name in configs:
            continue  # upstream uses the first entry for a plugin
        configuration = entry.get("configuration")
        if configuration is None and entry.get("path"):
            plugin_path = Path(str(entry["path"]))
            if not plugin_path.is_absolute():
                plugin_path = path.parent / plugin_path
            configuration = _load_yaml(plugin_path)
            where = f"{plugin_path} (plugin {name})"
        if configuration is not None and not isinstance(configuration, Mapping):
            raise AdmissionConfigError(f"{where}: configuration must be an object")
        configs[name] = configuration
    return configs
