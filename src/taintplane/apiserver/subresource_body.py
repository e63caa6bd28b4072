"""The body of a create-only subresource (``pods/binding``, ``pods/eviction``), decoded as
kube-apiserver's create handler decodes it into the subresource's internal type.

The decoder looks the body's kind up in the legacy scheme (every built-in group): a kind it
does not know there is ``no kind "K" is registered for version "G/V"``; a kind it knows but
that is not the subresource's becomes that type and then fails to convert
(``converting (v1.Pod) to (core.Binding): unknown conversion``); either answers 400 ``K in
version "V" cannot be handled as a T: …`` (transformDecodeError). The subresource's own kind
is then checked field by field: under ``fieldValidation=Strict`` an unknown or duplicate
field is that same 400 (``strict decoding error: unknown field "x"``), under ``Warn`` (the
default) a warning and the field is dropped, under ``Ignore`` only dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from taintplane.api.scheme import Scheme
from taintplane.apiserver import typecheck, warning
from taintplane.apiserver.status import APIError
from taintplane.apiserver.strict_decoding import NO_NOTES, DecodeNotes

__all__ = ["BINDING", "EVICTION", "BodyType", "decode_body"]


@dataclass(frozen=True)
class BodyType:
    kind: str
    #: The Go package of the internal type the body is converted to (``core.Binding``).
    internal_package: str
    #: The group/version the endpoint fills in when the body names none.
    default_api_version: str
    #: The group/versions whose ``kind`` the endpoint takes (AcceptsGroupVersion).
    accepted: tuple[str, ...]
    schema: str


BINDING = BodyType("Binding", "core", "v1", ("v1",), "io.k8s.api.core.v1.Binding")
EVICTION = BodyType(
    "Eviction",
    "policy",
    "policy/v1",
    ("policy/v1", "policy/v1beta1"),
    "io.k8s.api.policy.v1.Eviction",
)

#: core/v1 kinds upstream's scheme registers beyond those served here.
_CORE_V1_KINDS = frozenset(
    {
        "Binding",
        "ComponentStatus",
        "ConfigMap",
        "Endpoints",
        "EphemeralContainers",
        "LimitRange",
        "NodeProxyOptions",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "PodAttachOptions",
        "PodExecOptions",
        "PodLogOptions",
        "PodPortForwardOptions",
        "PodProxyOptions",
        "PodStatusResult",
        "PodTemplate",
        "RangeAllocation",
        "ReplicationController",
        "ResourceQuota",
        "Secret",
        "SerializedReference",
        "Service",
        "ServiceAccount",
        "ServiceProxyOptions",
    }
)
#: metav1's types: the options and WatchEvent in every group/version, the unversioned ones
#: in v1; their Go package is metav1's, "v1", whatever the version.
_META_KINDS = frozenset(
    {"WatchEvent", "ListOptions", "GetOptions", "DeleteOptions", "CreateOptions"}
    | {"UpdateOptions", "PatchOptions"}
)
#: Kinds other groups register that are served only as subresources here.
_SUBRESOURCE_KINDS = frozenset(
    {("policy/v1", "Eviction"), ("policy/v1beta1", "Eviction"), ("autoscaling/v1", "Scale")}
)
_UNVERSIONED_KINDS = frozenset(
    {"Status", "APIVersions", "APIGroupList", "APIGroup", "APIResourceList"}
)


def decode_body(
    body: Any,
    target: BodyType,
    scheme: Scheme,
    *,
    field_validation: str = "Warn",
    notes: DecodeNotes = NO_NOTES,
) -> None:
    """Refuse ``body`` as upstream's decoder would, or check its fields (unknown ones
    dropped unless refused)."""
    if not isinstance(body, dict):
        raise APIError.bad_request("the request body must be a JSON or YAML object")
    api_version = str(body.get("apiVersion") or target.default_api_version)
    kind = str(body.get("kind") or target.kind)
    version = api_version.rpartition("/")[2]

    def cannot(why: str) -> APIError:
        return APIError.bad_request(
            f'{kind} in version "{version}" cannot be handled as a {target.kind}: {why}'
        )

    if kind != target.kind or api_version not in target.accepted:
        if _registered(scheme, api_version, kind):
            package = "v1" if kind in _META_KINDS | _UNVERSIONED_KINDS else version
            raise cannot(
                f"converting ({package}.{kind}) to ({target.internal_package}.{target.kind}): "
                "unknown conversion"
            )
        raise cannot(
            f'no kind "{kind}" is registered for version "{api_version}" in scheme '
            '"pkg/api/legacyscheme/scheme.go:30"'
        )
    strict = field_validation == "Strict"
    try:
        report = typecheck.check_object(
            body,
            target.schema,
            drop_unknown=not strict,
            duplicates=notes.inline if field_validation != "Ignore" else frozenset(),
            sorted_walk=notes.sorted_walk,
        )
    except typecheck.TypeCheckError as error:
        raise cannot(error.message) from error
    if strict and (notes.leading or report.problems):
        raise cannot(
            "strict decoding error: " + ", ".join([*notes.leading_for_error, *report.problems])
        )
    if field_validation == "Warn":
        for text in [*notes.leading, *report.problems]:
            warning.add(text)


def _registered(scheme: Scheme, api_version: str, kind: str) -> bool:
    """Whether upstream's scheme knows ``kind`` in ``api_version`` (as far as we can tell:
    what is served here, core/v1's other kinds, their lists and metav1's types)."""
    if api_version == "v1" and kind in _CORE_V1_KINDS | _UNVERSIONED_KINDS:
        return True
    if (api_version, kind) in _SUBRESOURCE_KINDS:
        return True
    base = kind.removesuffix("List") if kind != "List" else kind
    if scheme.by_kind(api_version, kind) or scheme.by_kind(api_version, base):
        return True
    if api_version == "v1" and base in _CORE_V1_KINDS:
        return True
    group, _, version = api_version.rpartition("/")
    return kind in _META_KINDS and (group, version) in scheme.group_versions()
