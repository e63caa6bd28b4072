"""Runs :mod:`taintplane.bench.admission_cost`, as `taintplane bench admission_cost`
does (its docstring says what it measures and how)."""

from taintplane.bench.admission_cost import main

if __name__ == "__main__":
    main()
