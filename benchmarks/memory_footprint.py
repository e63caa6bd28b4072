"""Runs :mod:`taintplane.bench.memory_footprint`, as `taintplane bench memory_footprint`
does (its docstring says what it measures and how)."""

from taintplane.bench.memory_footprint import main

if __name__ == "__main__":
    main()
