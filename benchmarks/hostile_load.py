"""Runs :mod:`taintplane.bench.hostile_load`, as `taintplane bench hostile_load`
does (its docstring says what it measures and how)."""

from taintplane.bench.hostile_load import main

if __name__ == "__main__":
    raise SystemExit(main())
