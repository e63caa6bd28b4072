"""Runs :mod:`taintplane.bench.eviction_layers`, as `taintplane bench eviction_layers`
does (its docstring says what it measures and how)."""

from taintplane.bench.eviction_layers import main

if __name__ == "__main__":
    main()
