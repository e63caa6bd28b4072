"""Runs :mod:`taintplane.bench.workload_controllers`, as `taintplane bench workload_controllers`
does (its docstring says what it measures and how)."""

from taintplane.bench.workload_controllers import main

if __name__ == "__main__":
    main()
