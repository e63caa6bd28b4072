"""Composition: the in-process cluster that ``taintplane up`` and the tests run."""
