"""The review APIs (create only, nothing stored): authentication.k8s.io/v1 TokenReview and
SelfSubjectReview, authorization.k8s.io/v1 SubjectAccessReview, LocalSubjectAccessReview,
SelfSubjectAccessReview and SelfSubjectRulesReview, as pkg/registry/authentication/* and
pkg/registry/authorization/* answer them (what ``kubectl auth whoami``, ``kubectl auth
can-i`` and ``kubectl auth can-i --list`` ask).

With ``--auth`` the requester is the one the guard authenticated and RBAC decides. Without it
the authorizer is AlwaysAllow and every request is ``system:unsecured`` in
``system:masters``: the user kube-apiserver gave requests on its insecure port (its
InsecureSuperuser), the one upstream way of serving clients that present no credentials
without authorization (upstream turns anonymous auth off under AlwaysAllow, so an
unauthenticated client would get 401 there).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request

from taintplane.admission.chain import UserInfo
from taintplane.admission.node_restriction import identify
from taintplane.api.decoding import format_time
from taintplane.api.field import FieldError, Path, aggregate_message
from taintplane.api.gofmt import GoStruct
from taintplane.api.scheme import ResourceType
from taintplane.apiserver import codec
from taintplane.apiserver.auth.attributes import Request as Attributes
from taintplane.apiserver.auth.chain import Authorizers
from taintplane.apiserver.auth.node import NodeAuthorizer
from taintplane.apiserver.auth.rbac import RBAC, Decision
from taintplane.apiserver.auth.review_proto import decode_review
from taintplane.apiserver.protobuf import ProtobufError
from taintplane.apiserver.registry import Registry
from taintplane.apiserver.requestinfo import RequestInfo
from taintplane.apiserver.status import APIError
from taintplane.clock import Clock

__all__ = ["REVIEW_GROUPS", "UNSECURED", "Reviews"]

AUTHENTICATION = "authentication.k8s.io"
AUTHORIZATION = "authorization.k8s.io"
REVIEW_GROUPS = (AUTHENTICATION, AUTHORIZATION)
UNSECURED = UserInfo("system:unsecured", ("system:masters", "system:authenticated"))

# The generic create handler's WipeObjectMetaSystemFields.
_SYSTEM_FIELDS = ("creationTimestamp", "uid", "deletionTimestamp", "deletionGracePeriodSeconds")
_OBJECT_META_ORDER = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
)
_ALL_RESOURCES = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
_ALL_URLS = {"verbs": ["*"], "nonResourceURLs": ["*"]}


def _field_selector(selector: Any) -> str:
    """``resourceAttributes.fieldSelector`` as a selector string: ``rawSelector``, or its
    ``requirements`` (``In``/``NotIn`` with one value are ``=``/``!=``, as upstream converts
    them; others select nothing a node authorizer could use)."""
    if not isinstance(selector, dict):
        return ""
    raw = selector.get("rawSelector")
    if isinstance(raw, str) and raw:
        return raw
    terms = []
    for requirement in selector.get("requirements") or []:
        if not isinstance(requirement, dict):
            continue
        values = requirement.get("values") or []
        operator = {"In": "=", "NotIn": "!="}.get(str(requirement.get("operator")))
        if operator and isinstance(values, list) and len(values) == 1:
            terms.append(f"{requirement.get('key')}{operator}{values[0]}")
    return ",".join(terms)


def _no_user() -> APIError:
    return APIError.bad_request("no user present on request")


class Reviews:
    def __init__(
        self, registry: Registry, clock: Clock, tokens: dict[str, UserInfo] | None
    ) -> None:
        self.clock = clock
        #: The token file (``--auth``); None: no authentication, AlwaysAllow.
        self.tokens = tokens
        self.rbac = RBAC(registry, registry.scheme) if tokens is not None else None
        self.authorizer = (
            Authorizers(self.rbac, NodeAuthorizer(registry, registry.scheme))
            if self.rbac is not None
            else None
        )

    async def create(self, request: Request, info: RequestInfo) -> dict[str, Any]:
        body = await _decode(request, info.resource)
        _prepare_metadata(body, info)
        handlers: dict[str, Callable[[dict[str, Any], UserInfo | None], Awaitable[None]]] = {
            "TokenReview": self._token_review,
            "SelfSubjectReview": self._self_subject_review,
            "SubjectAccessReview": self._subject_access_review,
            "LocalSubjectAccessReview": self._subject_access_review,
            "SelfSubjectAccessReview": self._self_subject_access_review,
            "SelfSubjectRulesReview": self._self_subject_rules_review,
        }
        await handlers[info.resource.kind](body, self._requester())
        return body

    def _requester(self) -> UserInfo | None:
        if self.tokens is None:
            return UNSECURED
        from taintplane.apiserver.auth.guard import CURRENT_USER  # guard imports this module

        return CURRENT_USER.get()

    async def _decide(self, attributes: Attributes) -> Decision:
        if self.authorizer is None:
            return Decision(True)  # AlwaysAllow: allowed, no reason
        return await self.authorizer.authorize(attributes)

    # ---- authentication.k8s.io ---------------------------------------------------------------

    async def _token_review(self, body: dict[str, Any], _: UserInfo | None) -> None:
        """tokenreview/storage.go: the token is authenticated as a request bearing it would be."""
        spec = _spec(body)
        token = spec.get("token")
        if not isinstance(token, str) or not token:
            raise APIError.bad_request("token is required for TokenReview in authentication")
        if self.tokens is None:  # no authenticator: the review comes back as it was sent
            return
        user = self.tokens.get(token)
        # The token file is audience-agnostic: it serves only the server's own audiences, and
        # taintplane has none (no service-account issuer), so naming any fails.
        if user is None or spec.get("audiences"):
            body["status"] = {"user": {}, "error": "invalid bearer token"}
            return
        if not {"system:authenticated", "system:unauthenticated"} & set(user.groups):
            user = UserInfo(user.name, (*user.groups, "system:authenticated"), user.uid)
        body["status"] = {"authenticated": True, "user": _user_info(user)}

    async def _self_subject_review(self, body: dict[str, Any], user: UserInfo | None) -> None:
        if user is None:
            raise _no_user()
        body.clear()
        body.update(
            kind="SelfSubjectReview",
            apiVersion=f"{AUTHENTICATION}/v1",
            metadata={"creationTimestamp": format_time(self.clock.now())},
            status={"userInfo": _user_info(user)},
        )

    # ---- authorization.k8s.io ----------------------------------------------------------------

    async def _subject_access_review(self, body: dict[str, Any], _: UserInfo | None) -> None:
        """SubjectAccessReview, and LocalSubjectAccessReview limited to its namespace."""
        spec = _spec(body)
        local = body["kind"] == "LocalSubjectAccessReview"
        errors = _access_spec_errors(spec, subject=True)
        errors += _metadata_errors(body, local)
        if local:
            errors += _local_errors(body, spec)
        _raise_invalid(body["kind"], errors)
        groups = spec.get("groups") or []
        subject = UserInfo(str(spec.get("user") or ""), tuple(groups), str(spec.get("uid") or ""))
        body["status"] = await self._access(subject, spec)

    async def _self_subject_access_review(
        self, body: dict[str, Any], user: UserInfo | None
    ) -> None:
        spec = _spec(body)
        errors = _access_spec_errors(spec, subject=False) + _metadata_errors(body, False)
        _raise_invalid("SelfSubjectAccessReview", errors)
        if user is None:
            raise _no_user()
        body["status"] = await self._access(user, spec)

    async def _access(self, user: UserInfo, spec: dict[str, Any]) -> dict[str, Any]:
        resource = spec.get("resourceAttributes")
        if isinstance(resource, dict):
            attributes = Attributes(
                user,
                str(resource.get("verb") or ""),
                True,
                str(resource.get("group") or ""),
                str(resource.get("version") or "*"),  # matchAllVersionIfEmpty
                str(resource.get("resource") or ""),
                str(resource.get("subresource") or ""),
                str(resource.get("namespace") or ""),
                str(resource.get("name") or ""),
                field_selector=_field_selector(resource.get("fieldSelector")),
            )
        else:
            other = spec.get("nonResourceAttributes") or {}
            verb, path = str(other.get("verb") or ""), str(other.get("path") or "")
            attributes = Attributes(user, verb, False, path=path)
        decision = await self._decide(attributes)
        status: dict[str, Any] = {"allowed": decision.allowed}
        if decision.reason:
            status["reason"] = decision.reason
        return status

    async def _self_subject_rules_review(self, body: dict[str, Any], user: UserInfo | None) -> None:
        """selfsubjectrulesreview/rest.go: the rules of every authorizer that resolves rules
        (RBAC; the system:masters authorizer resolves none), in a fresh object."""
        if user is None:
            raise _no_user()
        namespace = _spec(body).get("namespace")
        if not isinstance(namespace, str) or not namespace:
            raise APIError.bad_request("no namespace on request")
        status: dict[str, Any]
        if self.rbac is None:
            status = {
                "resourceRules": [dict(_ALL_RESOURCES)],
                "nonResourceRules": [dict(_ALL_URLS)],
                "incomplete": False,
            }
        else:
            status = await self._rbac_rules(user, namespace)
        body.clear()
        body.update(
            kind="SelfSubjectRulesReview",
            apiVersion=f"{AUTHORIZATION}/v1",
            metadata={"creationTimestamp": None},
            spec={},
            status=status,
        )

    async def _rbac_rules(self, user: UserInfo, namespace: str) -> dict[str, Any]:
        assert self.rbac is not None
        grants, errors = await self.rbac.grants(user, namespace)
        # The Node authorizer, before RBAC, resolves no rules for a node (its answers depend
        # on the objects asked for): the list is incomplete.
        is_node = identify(user)[1]
        if is_node:
            errors = ["node authorizer does not support user rule resolution", *errors]
        resource_rules: list[dict[str, Any]] = []
        url_rules: list[dict[str, Any]] = []
        for grant in grants:
            distinct: list[Any] = []
            for rule in grant.rules:  # an aggregated role holds each rule once upstream
                if rule not in distinct:
                    distinct.append(rule)
            for rule in distinct:
                # RBACAuthorizer.RulesFor: a rule may give both kinds, or neither.
                if rule.get("resources"):
                    entry: dict[str, Any] = {"verbs": rule.get("verbs")}
                    for key in ("apiGroups", "resources", "resourceNames"):
                        if rule.get(key):
                            entry[key] = rule[key]
                    resource_rules.append(entry)
                if rule.get("nonResourceURLs"):
                    url_rules.append(
                        {"verbs": rule.get("verbs"), "nonResourceURLs": rule["nonResourceURLs"]}
                    )
        status: dict[str, Any] = {
            "resourceRules": resource_rules,
            "nonResourceRules": url_rules,
            "incomplete": is_node,
        }
        if errors:
            status["evaluationError"] = _go_aggregate(errors)
        return status


# ---- request decoding and validation -------------------------------------------------------


async def _decode(request: Request, resource: ResourceType) -> dict[str, Any]:
    raw, content_type = await request.body(), request.headers.get("content-type")
    try:
        body = (
            decode_review(raw, resource.kind, resource.api_version)
            if codec.media_type(content_type) == codec.PROTOBUF
            else codec.decode_body(raw, content_type)
        )
    except ProtobufError as error:
        raise APIError.bad_request(f"error decoding protobuf body: {error}") from error
    if not isinstance(body, dict):
        raise APIError.bad_request("the request body must be a JSON or YAML object")
    body["kind"], body["apiVersion"] = resource.kind, resource.api_version
    return body


def _prepare_metadata(body: dict[str, Any], info: RequestInfo) -> None:
    """What the create handler does before the REST storage sees the object: system fields
    wiped, the namespace defaulted to (or checked against) the request's."""
    metadata = body.get("metadata")
    metadata = dict(metadata) if isinstance(metadata, dict) else {}
    for key in (*_SYSTEM_FIELDS, "selfLink"):
        metadata.pop(key, None)
    namespace = str(metadata.get("namespace") or "")
    if info.namespace and namespace and namespace != info.namespace:
        raise APIError.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    if info.namespace:
        metadata["namespace"] = info.namespace
    else:
        metadata.pop("namespace", None)
    ordered = {k: metadata[k] for k in _OBJECT_META_ORDER if k in metadata}
    ordered = {**ordered, **metadata}
    ordered["creationTimestamp"] = None
    body["metadata"] = ordered


def _spec(body: dict[str, Any]) -> dict[str, Any]:
    spec = body.get("spec")
    if spec is None:
        spec = body["spec"] = {}
    if not isinstance(spec, dict):
        raise APIError.bad_request("the request body's spec must be an object")
    return spec


def _non_resource_value(spec: dict[str, Any]) -> GoStruct | None:
    """The value a field error shows for spec.nonResourceAttributes (a nil pointer: null)."""
    other = spec.get("nonResourceAttributes")
    if not isinstance(other, dict):
        return None
    return GoStruct((("Path", other.get("path") or ""), ("Verb", other.get("verb") or "")))


def _access_spec_errors(spec: dict[str, Any], *, subject: bool) -> list[FieldError]:
    """ValidateSubjectAccessReviewSpec / ValidateSelfSubjectAccessReviewSpec."""
    errors: list[FieldError] = []
    root = Path.root("spec")
    has_resource = spec.get("resourceAttributes") is not None
    has_other = spec.get("nonResourceAttributes") is not None
    if has_resource and has_other:
        errors.append(
            FieldError.invalid(
                root.child("nonResourceAttributes"),
                _non_resource_value(spec),
                "cannot be specified in combination with resourceAttributes",
            )
        )
    if not has_resource and not has_other:
        errors.append(
            FieldError.invalid(
                root.child("resourceAttributes"),
                None,
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        )
    if subject and not spec.get("user") and not spec.get("groups"):
        errors.append(
            FieldError.invalid(
                root.child("user"),
                str(spec.get("user") or ""),
                "at least one of user or group must be specified",
            )
        )
    return errors


def _metadata_errors(body: dict[str, Any], local: bool) -> list[FieldError]:
    """The review's metadata must be empty (but for the namespace of a local one)."""
    metadata = {k: v for k, v in body["metadata"].items() if k != "managedFields"}
    rest = {k: v for k, v in metadata.items() if k != "creationTimestamp"}
    if local:
        rest.pop("namespace", None)
    if not any(v not in (None, "", 0, [], {}) for v in rest.values()):
        return []
    detail = "must be empty except for namespace" if local else "must be empty"
    return [FieldError.invalid(Path.root("metadata"), GoStruct(tuple(metadata.items())), detail)]


def _local_errors(body: dict[str, Any], spec: dict[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    resource = spec.get("resourceAttributes")
    if isinstance(resource, dict):
        namespace = str(resource.get("namespace") or "")
        if namespace != body["metadata"].get("namespace", ""):
            errors.append(
                FieldError.invalid(
                    Path.root("spec", "resourceAttributes", "namespace"),
                    namespace,
                    "must match metadata.namespace",
                )
            )
    if spec.get("nonResourceAttributes") is not None:
        errors.append(
            FieldError.invalid(
                Path.root("spec", "nonResourceAttributes"),
                _non_resource_value(spec),
                "disallowed on this kind of request",
            )
        )
    return errors


def _raise_invalid(kind: str, errors: list[FieldError]) -> None:
    """errors.NewInvalid(authorization.Kind(kind), "", errs): no name in the details."""
    if not errors:
        return
    causes = [{"reason": e.type.reason, "message": e.body, "field": e.field} for e in errors]
    details = {"group": AUTHORIZATION, "kind": kind, "causes": causes}
    message = f'{kind}.{AUTHORIZATION} "" is invalid: {aggregate_message(errors)}'
    raise APIError.make(422, "Invalid", message, details)


def _user_info(user: UserInfo) -> dict[str, Any]:
    """authentication/v1 UserInfo (every field omitempty)."""
    info: dict[str, Any] = {}
    if user.name:
        info["username"] = user.name
    if user.uid:
        info["uid"] = user.uid
    if user.groups:
        info["groups"] = list(user.groups)
    return info


def _go_aggregate(messages: list[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): duplicates once, several in ``[a, b]``."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
