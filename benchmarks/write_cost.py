"""Runs :mod:`taintplane.bench.write_cost`, as `taintplane bench write_cost` does (its
docstring says what it measures and how)."""

from taintplane.bench.write_cost import main

if __name__ == "__main__":
    main()
