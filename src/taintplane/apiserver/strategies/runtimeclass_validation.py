"""A RuntimeClass's overhead, as ``pkg/apis/node/validation`` checks it: ``podFixed`` is
validated as a container's resource limits (``ValidateContainerResourceRequirements`` with
``Limits: podFixed``) under the path ``overhead``, so errors read ``overhead.limits[cpu]``."""

from __future__ import annotations

from typing import Any

from taintplane.api.field import FieldError, Path
from taintplane.apiserver.strategies.resource_requirements import (
    container_resource_name_errors,
    validate_resource_requirements,
)

__all__ = ["validate_overhead"]


def validate_overhead(overhead: Any, path: Path) -> list[FieldError]:
    if not isinstance(overhead, dict):
        return []
    pod_fixed = overhead.get("podFixed")
    if not isinstance(pod_fixed, dict):
        return []
    return validate_resource_requirements(
        {"limits": pod_fixed}, path, container_resource_name_errors
    )
