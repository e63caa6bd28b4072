"""taintplane: a Kubernetes-compatible control plane for taints and tolerations."""

__version__ = "0.1.0"

__all__ = ["__version__"]
