"""Runs :mod:`taintplane.bench.scheduler_churn`, as `taintplane bench scheduler_churn` does
(its docstring says what it measures and how)."""

from taintplane.bench.scheduler_churn import main

if __name__ == "__main__":
    raise SystemExit(main())
