"""apps/v1 workloads: Deployment, ReplicaSet and DaemonSet defaulting and update rules, and
the ControllerRevisions that record a DaemonSet's templates.

Defaults are upstream's ``SetDefaults_*`` from ``pkg/apis/apps/v1/defaults.go``; the pod
template gets the pod-spec defaults (not the pod-only ones such as ``enableServiceLinks``), so
a Deployment's template and its ReplicaSets' templates compare equal after a round trip.
"""

from __future__ import annotations

from typing import Any

from taintplane.api.field import FieldError, Path
from taintplane.apiserver.strategies.apps_status import (
    validate_deployment_status_update,
    validate_replicaset_status_update,
)
from taintplane.apiserver.strategies.apps_validation import (
    validate_controller_revision,
    validate_controller_revision_update,
    validate_daemonset_spec,
    validate_daemonset_status_update,
    validate_deployment_spec,
    validate_replicaset_spec,
)
from taintplane.apiserver.strategies.base import Strategy, meta, spec_of
from taintplane.apiserver.strategies.pods import DEFAULT_GRACE_SECONDS
from taintplane.apiserver.strategies.pods import _default_container as default_container
from taintplane.apiserver.strategies.policy import _selector_json

__all__ = [
    "ControllerRevisionStrategy",
    "DaemonSetStrategy",
    "DeploymentStrategy",
    "ReplicaSetStrategy",
]

DEFAULT_REVISION_HISTORY_LIMIT = 10
DEFAULT_PROGRESS_DEADLINE_SECONDS = 600


def default_template(spec: dict[str, Any]) -> None:
    """``SetDefaults_PodSpec`` and the container defaults on ``spec.template.spec``."""
    template = spec.get("template")
    if not isinstance(template, dict):
        return
    pod_spec = template.get("spec")
    if not isinstance(pod_spec, dict):
        return
    pod_spec.setdefault("restartPolicy", "Always")
    pod_spec.setdefault("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
    pod_spec.setdefault("dnsPolicy", "ClusterFirst")
    pod_spec.setdefault("securityContext", {})
    pod_spec.setdefault("schedulerName", "default-scheduler")
    for key in ("containers", "initContainers"):
        for container in pod_spec.get(key) or []:
            if isinstance(container, dict):
                default_container(container)


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, dict) else {}


def _sub(parent: dict[str, Any], key: str) -> dict[str, Any] | None:
    """``parent[key]`` as a dict, created when absent (None when it holds something else)."""
    value = parent.get(key)
    if value is None:
        value = parent[key] = {}
    return value if isinstance(value, dict) else None


class _AppsStrategy(Strategy):
    def default(self, obj: dict[str, Any]) -> None:
        super().default(obj)
        spec = spec_of(obj)
        if spec:
            self.default_spec(spec)
            default_template(spec)

    def default_spec(self, spec: dict[str, Any]) -> None:
        pass

    def validate_spec(self, spec: dict[str, Any]) -> list[FieldError]:
        return []

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return self.validate_object_meta(obj) + self.validate_spec(spec_of(obj))

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        # apps/v1 (unlike the extensions/v1beta1 it replaced) never lets a selector change:
        # the controller would lose track of the pods it already owns.
        selector, old_selector = spec_of(new).get("selector"), spec_of(old).get("selector")
        errors = self.validate(new)
        if _selector_json(selector) != _selector_json(old_selector):
            errors.append(
                FieldError.invalid(
                    Path.root("spec", "selector"), _selector_json(selector), "field is immutable"
                )
            )
        return errors


class DeploymentStrategy(_AppsStrategy):
    def validate_spec(self, spec: dict[str, Any]) -> list[FieldError]:
        return validate_deployment_spec(
            spec, comparison_operators=self.features.comparison_operators
        )

    def default_spec(self, spec: dict[str, Any]) -> None:
        spec.setdefault("replicas", 1)
        strategy = _sub(spec, "strategy")
        if strategy is not None:
            strategy.setdefault("type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                rolling = _sub(strategy, "rollingUpdate")
                if rolling is not None:
                    rolling.setdefault("maxUnavailable", "25%")
                    rolling.setdefault("maxSurge", "25%")
        spec.setdefault("revisionHistoryLimit", DEFAULT_REVISION_HISTORY_LIMIT)
        spec.setdefault("progressDeadlineSeconds", DEFAULT_PROGRESS_DEADLINE_SECONDS)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_for_update(new, old)
        # Annotations are copied from a Deployment to its ReplicaSets, so changing them is a
        # change the controller must observe: it bumps the generation as a spec change does.
        if new.get("spec") == old.get("spec") and meta(new).get("annotations") != meta(old).get(
            "annotations"
        ):
            meta(new)["generation"] = int(meta(old).get("generation") or 1) + 1

    #: deploymentStatusStrategy resets the spec and the labels (the controller records the
    #: revision annotation through the status subresource).
    status_resets_metadata = ("labels",)

    def validate_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        return super().validate_status_update(new, old) + validate_deployment_status_update(
            _status(new), _status(old)
        )


class ReplicaSetStrategy(_AppsStrategy):
    def validate_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        return super().validate_status_update(new, old) + validate_replicaset_status_update(
            _status(new)
        )

    def validate_spec(self, spec: dict[str, Any]) -> list[FieldError]:
        return validate_replicaset_spec(
            spec, comparison_operators=self.features.comparison_operators
        )

    def default_spec(self, spec: dict[str, Any]) -> None:
        spec.setdefault("replicas", 1)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        # ReplicaSetStatus.replicas is not omitempty: a new ReplicaSet says 0.
        obj["status"] = {"replicas": 0}


class DaemonSetStrategy(_AppsStrategy):
    def validate_spec(self, spec: dict[str, Any]) -> list[FieldError]:
        return validate_daemonset_spec(
            spec, comparison_operators=self.features.comparison_operators
        )

    def default_spec(self, spec: dict[str, Any]) -> None:
        strategy = _sub(spec, "updateStrategy")
        if strategy is not None:
            strategy.setdefault("type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                rolling = _sub(strategy, "rollingUpdate")
                if rolling is not None:
                    rolling.setdefault("maxUnavailable", 1)
                    rolling.setdefault("maxSurge", 0)
        spec.setdefault("revisionHistoryLimit", DEFAULT_REVISION_HISTORY_LIMIT)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        # DaemonSetStatus' four counts are not omitempty: a new DaemonSet says 0.
        obj["status"] = {
            "currentNumberScheduled": 0,
            "numberMisscheduled": 0,
            "desiredNumberScheduled": 0,
            "numberReady": 0,
        }
        _set_template_generation(obj, 1)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_for_update(new, old)
        # spec.templateGeneration (served as this annotation in apps/v1) is the server's:
        # one more for every template change, whatever the request says.
        generation = _template_generation(old)
        if spec_of(new).get("template") != spec_of(old).get("template"):
            generation += 1
        _set_template_generation(new, generation)

    def validate_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        status, old_status = new.get("status"), old.get("status")
        return super().validate_status_update(new, old) + validate_daemonset_status_update(
            status if isinstance(status, dict) else {},
            old_status if isinstance(old_status, dict) else {},
        )


#: apps/v1's rendering of the internal spec.templateGeneration.
TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"


def _template_generation(obj: dict[str, Any]) -> int:
    value = (meta(obj).get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0


def _set_template_generation(obj: dict[str, Any], generation: int) -> None:
    annotations = meta(obj).get("annotations")
    meta(obj)["annotations"] = {
        **(annotations if isinstance(annotations, dict) else {}),
        TEMPLATE_GENERATION_ANNOTATION: str(generation),
    }


class ControllerRevisionStrategy(Strategy):
    """No spec and no status: ``data`` and ``revision`` sit at the top level, and only
    ``revision`` (and metadata) may change once written."""

    has_spec = False

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return self.validate_object_meta(obj) + validate_controller_revision(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        return self.validate_object_meta(new) + validate_controller_revision_update(new, old)
