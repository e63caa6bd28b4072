"""Structured device allocation for DRA (KEP-4381) with device taints (KEP-5055).

* :mod:`taintplane.dra.cel` — the CEL environment of DeviceClass and request selectors
  (``device.driver``, ``device.attributes["domain"].name``, ``device.capacity["domain"].name``);
* :mod:`taintplane.dra.claims` — claim names, reservations and allocated devices, as
  ``k8s.io/dynamic-resource-allocation/resourceclaim`` has them;
* :mod:`taintplane.dra.devices` — the pools and devices a node can use, with the taints of
  their slices plus the DeviceTaintRules that select them;
* :mod:`taintplane.dra.constraints` — claims' ``matchAttribute`` constraints;
* :mod:`taintplane.dra.config` — the configurations an allocation result carries;
* :mod:`taintplane.dra.allocator` — the structured allocator.

Only :mod:`taintplane.api` is imported, so the scheduler and the controllers can share it.
"""
