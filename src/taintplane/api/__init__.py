"""The semantic core: taints, tolerations, matching, validation and the kubectl taint grammar.

Modules here import nothing else of taintplane's; every other package builds on them. The
names below are the public surface; import modules directly for everything else.
"""

from taintplane.api.device_taints import DeviceTaint, DeviceTaintEffect, DeviceToleration
from taintplane.api.features import FeatureGates
from taintplane.api.field import ErrorType, FieldError, Path
from taintplane.api.taints import Taint, TaintEffect
from taintplane.api.tolerations import TaintFilter, Toleration, TolerationOperator

__all__ = [
    "DeviceTaint",
    "DeviceTaintEffect",
    "DeviceToleration",
    "ErrorType",
    "FeatureGates",
    "FieldError",
    "Path",
    "Taint",
    "TaintEffect",
    "TaintFilter",
    "Toleration",
    "TolerationOperator",
]
