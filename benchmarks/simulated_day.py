"""Runs :mod:`taintplane.bench.simulated_day`, as `taintplane bench simulated_day`
does (its docstring says what it measures and how)."""

from taintplane.bench.simulated_day import main

if __name__ == "__main__":
    main()
