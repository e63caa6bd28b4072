"""Admission: plugins that mutate and police objects after defaulting, before validation.

Each plugin is one module. Plugins see a request as ``Attributes`` and reach other objects
only through a ``Lookup`` the server provides, so they import neither the store nor the
server. A plugin refuses a request by raising ``Forbidden`` with upstream's reason text; the
server renders it as ``<resource> "<name>" is forbidden: <reason>``.
"""

from taintplane.admission.chain import (
    Attributes,
    Chain,
    Forbidden,
    Lookup,
    NotFound,
    Plugin,
    Rejected,
)

__all__ = ["Attributes", "Chain", "Forbidden", "Lookup", "NotFound", "Plugin", "Rejected"]
