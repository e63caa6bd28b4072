"""The ``taintplane`` command line."""
