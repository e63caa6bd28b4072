"""Runs :mod:`taintplane.bench.idle_cost` (its docstring says what it measures)."""

from taintplane.bench.idle_cost import main

if __name__ == "__main__":
    raise SystemExit(main())
