"""Simulated node agents: kubelets (registration, heartbeats, conditions, admission,
pod lifecycle)."""
