"""The benchmarks behind BENCHMARKS.md: ``taintplane bench NAME [ARGS…]`` runs one, and
``benchmarks/NAME.py`` in a checkout does the same."""
