"""``python -m taintplane`` runs the command line."""

from taintplane.cli.main import main

main()
