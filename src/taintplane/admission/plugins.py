"""Which admission plugins run, in which order, and with which configuration: kube-apiserver's
``--enable-admission-plugins``, ``--disable-admission-plugins`` and admission configuration
file (``pkg/kubeapiserver/options/plugins.go``, ``k8s.io/apiserver/.../options/admission.go``).

Plugins always run in upstream's ``AllOrderedPlugins`` order whatever order the flags give.
Names are upstream's; those taintplane does not implement are accepted and do nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from taintplane.admission import pod_node_selector, pod_toleration_restriction
from taintplane.admission.admission_config import AdmissionConfigError, read_admission_configuration
from taintplane.admission.chain import Plugin

__all__ = [
    "ALL_ORDERED_PLUGINS",
    "DEFAULT_ON_PLUGINS",
    "AdmissionOptions",
    "AdmissionSetup",
]

#: ``AllOrderedPlugins`` of Kubernetes 1.35 (run order).
ALL_ORDERED_PLUGINS = (
    "AlwaysAdmit",
    "NamespaceAutoProvision",
    "NamespaceLifecycle",
    "NamespaceExists",
    "LimitPodHardAntiAffinityTopology",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "TaintNodesByCondition",
    "AlwaysPullImages",
    "ImagePolicyWebhook",
    "PodSecurity",
    "PodNodeSelector",
    "Priority",
    "DefaultTolerationSeconds",
    "PodTolerationRestriction",
    "EventRateLimit",
    "ExtendedResourceToleration",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "OwnerReferencesPermissionEnforcement",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "DenyServiceExternalIPs",
    "PodTopologyLabels",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "AlwaysDeny",
)

#: Upstream's default-on plugins (``DefaultOffAdmissionPlugins`` is everything else), plus
#: NodeRestriction, which every kubeadm cluster enables and which only restricts node users.
DEFAULT_ON_PLUGINS = frozenset(
    {
        "NamespaceLifecycle",
        "LimitRanger",
        "ServiceAccount",
        "DefaultStorageClass",
        "PersistentVolumeClaimResize",
        "DefaultTolerationSeconds",
        "MutatingAdmissionWebhook",
        "ValidatingAdmissionWebhook",
        "ResourceQuota",
        "StorageObjectInUseProtection",
        "Priority",
        "TaintNodesByCondition",
        "RuntimeClass",
        "CertificateApproval",
        "CertificateSigning",
        "ClusterTrustBundleAttest",
        "CertificateSubjectRestriction",
        "DefaultIngressClass",
        "PodSecurity",
        "PodTopologyLabels",
        "MutatingAdmissionPolicy",
        "ValidatingAdmissionPolicy",
        "NodeRestriction",
    }
)


def _split(values: Iterable[str]) -> list[str]:
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


@dataclass(frozen=True)
class AdmissionSetup:
    """The plugins to run (upstream order) and their decoded configurations."""

    enabled: tuple[str, ...] = tuple(p for p in ALL_ORDERED_PLUGINS if p in DEFAULT_ON_PLUGINS)
    toleration_restriction: pod_toleration_restriction.PodTolerationRestrictionConfig = field(
        default_factory=pod_toleration_restriction.PodTolerationRestrictionConfig
    )
    node_selectors: Mapping[str, str] = field(default_factory=dict)

    def select(self, plugins: Sequence[Plugin]) -> list[Plugin]:
        """The enabled ones of ``plugins``, in upstream's order."""
        order = {name: i for i, name in enumerate(ALL_ORDERED_PLUGINS)}
        chosen = [p for p in plugins if p.name in self.enabled]
        return sorted(chosen, key=lambda p: order.get(p.name, len(order)))


@dataclass(frozen=True)
class AdmissionOptions:
    """The command-line flags, before they are checked."""

    enable: tuple[str, ...] = ()
    disable: tuple[str, ...] = ()
    config_file: Path | None = None

    def load(self) -> AdmissionSetup:
        """Check the flags and read the configuration file; ``AdmissionConfigError`` if not."""
        enable, disable = _split(self.enable), _split(self.disable)
        problems = [
            f'{flag} plugin "{name}" is unknown'
            for flag, names in (
                ("enable-admission-plugins", enable),
                ("disable-admission-plugins", disable),
            )
            for name in names
            if name not in ALL_ORDERED_PLUGINS
        ]
        overlap = sorted(set(enable) & set(disable))
        if overlap:
            problems.append(
                f"[{' '.join(overlap)}] in enable-admission-plugins and "
                "disable-admission-plugins overlapped"
            )
        if problems:
            raise AdmissionConfigError("; ".join(problems))
        off = (set(ALL_ORDERED_PLUGINS) - DEFAULT_ON_PLUGINS) | set(disable)
        off -= set(enable)
        enabled = tuple(name for name in ALL_ORDERED_PLUGINS if name not in off)
        configs: dict[str, Mapping[str, Any] | None] = {}
        if self.config_file is not None:
            configs = read_admission_configuration(self.config_file)
        where = str(self.config_file)
        try:
            restriction = pod_toleration_restriction.load_configuration(
                configs.get(pod_toleration_restriction.PLUGIN_NAME)
            )
        except ValueError as error:
            raise AdmissionConfigError(
                f"{where}: {pod_toleration_restriction.PLUGIN_NAME}: {error}"
            ) from error
        try:
            selectors = pod_node_selector.load_configuration(
                configs.get(pod_node_selector.PLUGIN_NAME)
            )
        except ValueError as error:
            raise AdmissionConfigError(
                f"{where}: {pod_node_selector.PLUGIN_NAME}: {error}"
            ) from error
        return AdmissionSetup(enabled, restriction, selectors)
