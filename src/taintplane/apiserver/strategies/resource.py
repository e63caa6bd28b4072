"""resource.k8s.io (DRA): DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate and
DeviceTaintRule, as ``pkg/registry/resource/*/strategy.go`` and the v1 defaults do it.

Defaulting gives every device taint without ``timeAdded`` the server's clock (whole seconds),
on create and update; requests get ``allocationMode: ExactCount`` and ``count: 1``, toleration
operators ``Equal``. A DeviceTaintRule update that changes the effect but keeps the old
``timeAdded`` gets the current time, so the time tracks when the *effect* was set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taintplane.api.decoding import format_time
from taintplane.api.dra_validation import (
    DEVICE_TAINT_RULE_MAX_CONDITIONS,
    as_dict,
    as_list,
    validate_claim_spec,
    validate_conditions,
    validate_device_class_spec,
    validate_device_taint_rule_spec,
)
from taintplane.api.field import FieldError, Path
from taintplane.api.gofmt import GoStruct
from taintplane.api.resourceslice_validation import validate_resource_slice_spec
from taintplane.apiserver.strategies.base import Strategy, spec_of
from taintplane.clock import Clock, RealClock

__all__ = [
    "ClockedStrategy",
    "DeviceClassStrategy",
    "DeviceTaintRuleStrategy",
    "ResourceClaimStrategy",
    "ResourceClaimTemplateStrategy",
    "ResourceSliceStrategy",
]


class ClockedStrategy(Strategy):
    #: Set by ``strategy_for`` from the registry's clock.
    clock: Clock = RealClock()

    def _now(self) -> str:
        return format_time(self.clock.now())

    def _default_taint(self, taint: object) -> None:
        if isinstance(taint, dict) and taint.get("timeAdded") is None:
            taint["timeAdded"] = self._now()


def _default_request(request: object) -> None:
    if not isinstance(request, dict):
        return
    if not request.get("allocationMode"):
        request["allocationMode"] = "ExactCount"
    if request["allocationMode"] == "ExactCount" and not request.get("count"):
        request["count"] = 1
    for toleration in as_list(request.get("tolerations")):
        if isinstance(toleration, dict) and not toleration.get("operator"):
            toleration["operator"] = "Equal"


def _default_claim_spec(spec: Mapping[str, Any]) -> None:
    for request in as_list(as_dict(spec.get("devices")).get("requests")):
        request = as_dict(request)
        _default_request(request.get("exactly"))
        for sub in as_list(request.get("firstAvailable")):
            _default_request(sub)


def _device_tolerations_in_use(spec: Mapping[str, Any] | None) -> bool:
    for request in as_list(as_dict(as_dict(spec).get("devices")).get("requests")):
        request = as_dict(request)
        if as_list(as_dict(request.get("exactly")).get("tolerations")):
            return True
        if any(
            as_list(as_dict(sub).get("tolerations"))
            for sub in as_list(request.get("firstAvailable"))
        ):
            return True
    return False


def _drop_device_tolerations(
    enabled: bool, spec: Mapping[str, Any], old: Mapping[str, Any] | None
) -> None:
    """``resourceclaimspec.DropDisabledFields`` for DRADeviceTaints: with the gate off, a claim
    spec's tolerations are dropped unless the old spec already had some."""
    if enabled or _device_tolerations_in_use(old):
        return
    for request in as_list(as_dict(spec.get("devices")).get("requests")):
        request = as_dict(request)
        for sub in [request.get("exactly"), *as_list(request.get("firstAvailable"))]:
            if isinstance(sub, dict):
                sub.pop("tolerations", None)


def _admin_access_in_use(spec: Mapping[str, Any] | None, status: Mapping[str, Any]) -> bool:
    for request in as_list(as_dict(as_dict(spec).get("devices")).get("requests")):
        if as_dict(as_dict(request).get("exactly")).get("adminAccess") is not None:
            return True
    results = as_dict(as_dict(status.get("allocation")).get("devices")).get("results")
    return any(as_dict(result).get("adminAccess") is not None for result in as_list(results))


def _drop_admin_access(
    enabled: bool,
    spec: Mapping[str, Any],
    status: Mapping[str, Any],
    old: tuple[Mapping[str, Any], Mapping[str, Any]] | None,
) -> None:
    """``dropDisabledDRAAdminAccessFields``: with DRAAdminAccess off, ``adminAccess`` is
    dropped from requests and allocation results unless the old claim (spec and status) had
    it set anywhere. Only ``exactly`` requests carry it."""
    if enabled or (old is not None and _admin_access_in_use(*old)):
        return
    for request in as_list(as_dict(spec.get("devices")).get("requests")):
        exactly = as_dict(request).get("exactly")
        if isinstance(exactly, dict):
            exactly.pop("adminAccess", None)
    results = as_dict(as_dict(status.get("allocation")).get("devices")).get("results")
    for result in as_list(results):
        if isinstance(result, dict):
            result.pop("adminAccess", None)


def _slice_taints_in_use(spec: Mapping[str, Any] | None) -> bool:
    return any(as_list(as_dict(d).get("taints")) for d in as_list(as_dict(spec).get("devices")))


def _spec_immutable(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    if spec_of(new) == spec_of(old):
        return []
    value = GoStruct(tuple(spec_of(new).items()))
    return [FieldError.invalid(Path.root("spec"), value, "field is immutable")]


class DeviceClassStrategy(ClockedStrategy):
    tracks_generation = True

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return self.validate_object_meta(obj) + validate_device_class_spec(
            spec_of(obj), Path.root("spec")
        )

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        return self.validate_object_meta(new) + validate_device_class_spec(
            spec_of(new), Path.root("spec"), spec_of(old)
        )


class ResourceSliceStrategy(ClockedStrategy):
    tracks_generation = True

    def default(self, obj: dict[str, Any]) -> None:
        super().default(obj)
        for device in as_list(spec_of(obj).get("devices")):
            for taint in as_list(as_dict(device).get("taints")):
                self._default_taint(taint)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        self._drop_disabled_taints(obj, None)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        self._drop_disabled_taints(new, old)
        super().prepare_for_update(new, old)

    def _drop_disabled_taints(self, new: dict[str, Any], old: dict[str, Any] | None) -> None:
        """``dropDisabledDRADeviceTaintsFields``: with DRADeviceTaints off, device taints are
        dropped unless the old slice already had some."""
        if self.features.device_taints or (old is not None and _slice_taints_in_use(spec_of(old))):
            return
        for device in as_list(spec_of(new).get("devices")):
            if isinstance(device, dict):
                device.pop("taints", None)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return self.validate_object_meta(obj) + validate_resource_slice_spec(
            spec_of(obj), None, Path.root("spec")
        )

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        return self.validate_object_meta(new) + validate_resource_slice_spec(
            spec_of(new), spec_of(old), Path.root("spec")
        )

    def field_values(self, obj: Mapping[str, Any]) -> dict[str, str]:
        fields = super().field_values(obj)
        spec = obj.get("spec") or {}
        fields["spec.nodeName"] = str(spec.get("nodeName") or "")
        fields["spec.driver"] = str(spec.get("driver") or "")
        return fields


class ResourceClaimStrategy(ClockedStrategy):
    def default(self, obj: dict[str, Any]) -> None:
        super().default(obj)
        _default_claim_spec(spec_of(obj))

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {}
        _drop_device_tolerations(self.features.device_taints, spec_of(obj), None)
        _drop_admin_access(self.features.admin_access, spec_of(obj), {}, None)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        _drop_device_tolerations(self.features.device_taints, spec_of(new), spec_of(old))
        old_claim = (spec_of(old), as_dict(old.get("status")))
        _drop_admin_access(self.features.admin_access, spec_of(new), {}, old_claim)
        super().prepare_for_update(new, old)

    def prepare_for_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_for_status_update(new, old)
        old_claim = (spec_of(old), as_dict(old.get("status")))
        status = new.get("status")
        if isinstance(status, dict):
            _drop_admin_access(self.features.admin_access, spec_of(new), status, old_claim)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return self.validate_object_meta(obj) + validate_claim_spec(spec_of(obj), Path.root("spec"))

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        return self.validate_object_meta(new) + _spec_immutable(new, old)

    def validate_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        errors = self.validate_object_meta(new)
        status = as_dict(new.get("status"))
        reserved = as_list(status.get("reservedFor"))
        at = Path.root("status", "reservedFor")
        if reserved and not isinstance(status.get("allocation"), dict):
            errors.append(
                FieldError.forbidden(at, "may not be specified when `allocated` is not set")
            )
        for i, ref in enumerate(reserved):
            ref = as_dict(ref)
            for key in ("resource", "name", "uid"):
                if not ref.get(key):
                    errors.append(FieldError.required(at.index(i).child(key)))
        old_allocation = as_dict(old.get("status")).get("allocation")
        allocation = status.get("allocation")
        if (
            isinstance(old_allocation, dict)
            and isinstance(allocation, dict)
            and allocation != old_allocation
        ):
            errors.append(
                FieldError.invalid(
                    Path.root("status", "allocation"),
                    GoStruct(tuple(allocation.items())),
                    "field is immutable",
                )
            )
        return errors


class ResourceClaimTemplateStrategy(ClockedStrategy):
    def default(self, obj: dict[str, Any]) -> None:
        super().default(obj)
        _default_claim_spec(as_dict(spec_of(obj).get("spec")))

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        spec = as_dict(spec_of(obj).get("spec"))
        _drop_device_tolerations(self.features.device_taints, spec, None)
        _drop_admin_access(self.features.admin_access, spec, {}, None)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        spec, old_spec = as_dict(spec_of(new).get("spec")), as_dict(spec_of(old).get("spec"))
        _drop_device_tolerations(self.features.device_taints, spec, old_spec)
        _drop_admin_access(self.features.admin_access, spec, {}, (old_spec, {}))
        super().prepare_for_update(new, old)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return self.validate_object_meta(obj) + validate_claim_spec(
            as_dict(spec_of(obj).get("spec")), Path.root("spec", "spec")
        )

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        return self.validate_object_meta(new) + _spec_immutable(new, old)


class DeviceTaintRuleStrategy(ClockedStrategy):
    def default(self, obj: dict[str, Any]) -> None:
        super().default(obj)
        self._default_taint(spec_of(obj).get("taint"))

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {}

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        taint, old_taint = spec_of(new).get("taint"), as_dict(spec_of(old).get("taint"))
        if (
            isinstance(taint, dict)
            and taint.get("effect") != old_taint.get("effect")
            and taint.get("timeAdded") == old_taint.get("timeAdded")
        ):
            taint["timeAdded"] = self._now()
        super().prepare_for_update(new, old)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return self.validate_object_meta(obj) + validate_device_taint_rule_spec(
            spec_of(obj), None, Path.root("spec")
        )

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        return self.validate_object_meta(new) + validate_device_taint_rule_spec(
            spec_of(new), spec_of(old), Path.root("spec")
        )

    def validate_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        conditions = as_dict(new.get("status")).get("conditions")
        return self.validate_object_meta(new) + validate_conditions(
            conditions, Path.root("status", "conditions"), DEVICE_TAINT_RULE_MAX_CONDITIONS
        )
