"""Logging for the commands that run a cluster of their own only to report on it."""

from __future__ import annotations

import logging

__all__ = ["quiet_components"]


def quiet_components() -> None:
    """What the copy's components log (a garbage collector retrying an owner of a kind the copy
    does not serve, a controller's conflict) is not the user's business: the report says what
    the copy could not simulate. Only a component's crash would be, and that fails the run."""
    logging.getLogger("taintplane").setLevel(logging.CRITICAL)
