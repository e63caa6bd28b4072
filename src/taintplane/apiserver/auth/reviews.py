"""SelfSubjectAccessReview and SelfSubjectRulesReview (authorization.k8s.io/v1, create only):
what ``kubectl auth can-i`` and ``kubectl auth can-i --list`` ask."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

from taintplane.admission.chain import UserInfo
from taintplane.apiserver import codec
from taintplane.apiserver.auth.attributes import Request as Attributes
from taintplane.apiserver.auth.review_proto import decode_review
from taintplane.apiserver.protobuf import ProtobufError
from taintplane.apiserver.status import APIError

if TYPE_CHECKING:
    from taintplane.apiserver.auth.rbac import RBAC

__all__ = ["ACCESS_REVIEW", "REVIEWS", "RULES_REVIEW", "review"]

_PREFIX = "/apis/authorization.k8s.io/v1/"
ACCESS_REVIEW = _PREFIX + "selfsubjectaccessreviews"
RULES_REVIEW = _PREFIX + "selfsubjectrulesreviews"
REVIEWS = (ACCESS_REVIEW, RULES_REVIEW)


async def review(rbac: RBAC, request: Request, user: UserInfo, path: str) -> Response:
    kind = "SelfSubjectAccessReview" if path == ACCESS_REVIEW else "SelfSubjectRulesReview"
    raw, content_type = await request.body(), request.headers.get("content-type")
    try:
        body = (
            decode_review(raw, kind)
            if codec.media_type(content_type) == codec.PROTOBUF
            else codec.decode_body(raw, content_type)
        )
    except ProtobufError as error:
        raise APIError.bad_request(f"error decoding protobuf body: {error}") from error
    if not isinstance(body, dict):
        raise APIError.bad_request("the request body must be a JSON or YAML object")
    spec = body.get("spec") or {}
    if path == ACCESS_REVIEW:
        status = await _access(rbac, user, spec)
    else:
        status = await _rules(rbac, user, str(spec.get("namespace") or ""))
    metadata = dict(body.get("metadata") or {})
    metadata.setdefault("creationTimestamp", None)
    answer = {
        "kind": kind,
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }
    return Response(codec.encode(answer), status_code=201, media_type="application/json")


async def _access(rbac: RBAC, user: UserInfo, spec: dict[str, Any]) -> dict[str, Any]:
    resource = spec.get("resourceAttributes")
    other = spec.get("nonResourceAttributes")
    if resource:
        attributes = Attributes(
            user,
            str(resource.get("verb") or ""),
            True,
            str(resource.get("group") or ""),
            str(resource.get("version") or ""),
            str(resource.get("resource") or ""),
            str(resource.get("subresource") or ""),
            str(resource.get("namespace") or ""),
            str(resource.get("name") or ""),
        )
    elif other:
        attributes = Attributes(
            user, str(other.get("verb") or ""), False, path=str(other.get("path") or "")
        )
    else:
        raise APIError.make(
            422,
            "Invalid",
            'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: '
            'spec.resourceAttributes: Invalid value: "null": exactly one of '
            "nonResourceAttributes or resourceAttributes must be specified",
        )
    decision = await rbac.authorize(attributes)
    status: dict[str, Any] = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return status


async def _rules(rbac: RBAC, user: UserInfo, namespace: str) -> dict[str, Any]:
    if "system:masters" in user.groups:
        grants = [
            [
                {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                {"verbs": ["*"], "nonResourceURLs": ["*"]},
            ]
        ]
    else:
        found, _ = await rbac.grants(user, namespace)
        grants = [list(g.rules) for g in found]
    resource_rules: list[dict[str, Any]] = []
    url_rules: list[dict[str, Any]] = []
    for rules in grants:
        for rule in rules:
            if rule.get("nonResourceURLs"):
                url_rules.append(
                    {"verbs": rule.get("verbs") or [], "nonResourceURLs": rule["nonResourceURLs"]}
                )
            else:
                entry = {
                    "verbs": rule.get("verbs") or [],
                    "apiGroups": rule.get("apiGroups") or [],
                    "resources": rule.get("resources") or [],
                }
                if rule.get("resourceNames"):
                    entry["resourceNames"] = rule["resourceNames"]
                resource_rules.append(entry)
    return {
        "resourceRules": resource_rules,
        "nonResourceRules": url_rules,
        "incomplete": False,
    }
