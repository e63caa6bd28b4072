import subprocess
import sys

from click.testing import CliRunner

from taintplane import __version__
from taintplane.cli.main import cli


def test_version_prints_name_and_version():
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"taintplane {__version__}\n"


def test_help_names_the_program():
    result = CliRunner().invoke(cli, ["--help"], prog_name="taintplane")
    assert result.exit_code == 0
    assert result.output.startswith("Usage: taintplane [OPTIONS] COMMAND [ARGS]...")


def test_the_module_runs_the_command_line():
    done = subprocess.run(
        [sys.executable, "-m", "taintplane", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, f"taintplane {__version__}\n")
