"""kube-apiserver's authorizer chain for ``--authorization-mode=Node,RBAC``: the privileged
group ``system:masters`` first, then the Node authorizer, then RBAC; the first to allow wins,
and a refusal gives the reasons every authorizer had, one per line (union.go)."""

from __future__ import annotations

from taintplane.apiserver.auth.attributes import Request
from taintplane.apiserver.auth.node import NodeAuthorizer
from taintplane.apiserver.auth.rbac import RBAC, Decision
from taintplane.apiserver.auth.tokens import MASTERS

__all__ = ["Authorizers"]


class Authorizers:
    def __init__(self, rbac: RBAC, node: NodeAuthorizer) -> None:
        self.rbac = rbac
        self.node = node

    async def authorize(self, request: Request) -> Decision:
        if MASTERS in request.user.groups:
            return Decision(True)
        reasons = []
        for authorizer in (self.node, self.rbac):
            decision = await authorizer.authorize(request)
            if decision.allowed:
                return decision
            if decision.reason:
                reasons.append(decision.reason)
        return Decision(False, "\n".join(reasons))
