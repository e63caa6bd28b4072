"""Runs :mod:`taintplane.bench.deployment_scale`, as `taintplane bench deployment_scale`
does (its docstring says what it measures and how)."""

from taintplane.bench.deployment_scale import main

if __name__ == "__main__":
    main()
