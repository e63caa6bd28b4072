"""Clusters as kind keeps them: ``up -d``, a context in the user's kubeconfig, ``get clusters``,
``stop`` and ``delete``, driven as a user would (real processes, real kubectl, no export)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

OTHER: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "prod", "cluster": {"server": "https://prod.example:6443"}}],
    "users": [{"name": "admin", "user": {"token": "s3cret"}}],
    "contexts": [{"name": "prod", "context": {"cluster": "prod", "user": "admin"}}],
    "current-context": "prod",
    "preferences": {"colors": True},
}


class User:
    """A shell with its own HOME: no KUBECONFIG, no TAINTPLANE_HOME (the defaults apply)."""

    def __init__(self, tmp_path: Path) -> None:
        self.cwd = tmp_path
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.env = {"HOME": str(self.home), "PATH": os.environ["PATH"]}

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "taintplane", *args],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.cwd,
            timeout=120,
            check=False,
        )

    def ok(self, *args: str) -> str:
        done = self.run(*args)
        assert done.returncode == 0, (done.stdout, done.stderr)
        return done.stdout

    def kubectl(self, *args: str) -> str:
        done = subprocess.run(
            ["kubectl", *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    @property
    def kubeconfig(self) -> dict[str, Any]:
        config: dict[str, Any] = yaml.safe_load((self.home / ".kube" / "config").read_text())
        return config


def test_a_detached_cluster_is_used_stopped_restarted_smaller_and_deleted(tmp_path):
    user = User(tmp_path)
    (user.home / ".kube").mkdir()
    (user.home / ".kube" / "config").write_text(yaml.safe_dump(OTHER))
    data_dir = user.home / ".taintplane" / "clusters" / "dev"

    out = user.ok("up", "-d", "--name", "dev", "--nodes", "2").splitlines()
    assert out[0].startswith("taintplane cluster is up in ")
    url = out[0].rsplit(" ", 1)[1]
    assert out[1] == f"export KUBECONFIG={data_dir / 'kubeconfig'}"
    assert out[2] == f"Dashboard: {url}/dashboard/"
    assert out[3] == f'Set kubectl context to "taintplane-dev" in {user.home / ".kube" / "config"}'
    assert out[4].startswith("Running in the background (pid ")
    assert out[4].endswith(f"logs in {data_dir / 'taintplane.log'}")
    assert out[5] == "Stop it with `taintplane stop dev`, remove it with `taintplane delete dev`"
    try:
        # kubectl with no export: the context was merged and made current; the rest is kept.
        assert user.kubectl("get", "nodes", "-o", "name") == "node/node-1\nnode/node-2\n"
        config = user.kubeconfig
        assert config["current-context"] == "taintplane-dev"
        for section in ("clusters", "users", "contexts"):
            assert config[section][0] == OTHER[section][0]
            assert [e["name"] for e in config[section]] == [
                OTHER[section][0]["name"],
                "taintplane-dev",
            ]
        assert config["preferences"] == {"colors": True}
        assert config["contexts"][1]["context"] == {
            "cluster": "taintplane-dev",
            "user": "taintplane-dev",
        }
        assert config["clusters"][1]["cluster"] == {"server": url}
        assert user.ok("get", "clusters") == (
            f"NAME   URL{' ' * (len(url) - 3)}   STATE     NODES\ndev    {url}   Running   2\n"
        )
        # A namesake elsewhere is refused while it runs.
        again = user.run("up", "-d", "--name", "dev", "--data-dir", str(tmp_path / "other"))
        assert again.returncode == 1
        assert again.stderr.startswith(
            f'Error: a cluster named "dev" is already running from {data_dir} (pid '
        )
        assert "stop it first (`taintplane stop dev`), or pick another --name" in again.stderr

        assert user.ok("stop", "dev") == 'Stopped cluster "dev"\n'
        assert user.ok("stop", "dev") == 'Cluster "dev" is not running\n'
        assert user.ok("get", "clusters") == (
            "NAME   URL   STATE     NODES\ndev    -     Stopped   2\n"
        )
        # Restarted with fewer nodes: the others are removed, and it says so.
        out = user.ok("up", "-d", "--name", "dev", "--nodes", "1").splitlines()
        assert out[4] == (
            "Removed 1 simulated node(s) the last start had and this one does not: node-2"
        )
        assert user.kubectl("get", "nodes", "-o", "name") == "node/node-1\n"
        assert user.kubectl("get", "leases", "-n", "kube-node-lease", "-o", "name") == (
            "lease.coordination.k8s.io/node-1\n"
        )
    finally:
        deleted = user.run("delete", "dev")
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout == 'Deleting cluster "dev" ...\n'
    assert not data_dir.exists()
    assert user.kubeconfig == {**OTHER, "current-context": ""}
    listed = user.run("get", "clusters")
    assert (listed.returncode, listed.stdout, listed.stderr) == (0, "", "No clusters found.\n")
    # Deleting again succeeds, as kind's delete does.
    assert user.ok("delete", "dev") == 'Deleting cluster "dev" ...\n'


def test_the_default_cluster_lives_in_dot_taintplane_where_up_ran(tmp_path):
    user = User(tmp_path)
    out = user.ok("up", "-d", "--port", "0").splitlines()
    try:
        assert out[1] == f"export KUBECONFIG={tmp_path / '.taintplane' / 'kubeconfig'}"
        assert out[5] == "Stop it with `taintplane stop`, remove it with `taintplane delete`"
        assert user.kubeconfig["current-context"] == "taintplane-taintplane"
        assert user.kubectl("get", "nodes", "-o", "name").count("node/") == 3
    finally:
        user.ok("delete")
    assert not (tmp_path / ".taintplane").exists()
    assert user.kubeconfig["contexts"] == []


def test_a_detached_start_that_fails_says_why_with_the_exit_code(tmp_path):
    user = User(tmp_path)
    done = user.run("up", "-d", "--port", "0", "--feature-gates", "Nope=true")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines()[-1] == "Error: --feature-gates: unrecognized feature gate: Nope"


@pytest.mark.parametrize("name", ["Dev", "-x", "a_b", "x" * 51])
def test_a_bad_cluster_name_is_a_usage_error(tmp_path, name):
    done = User(tmp_path).run("up", "--name", name)
    assert done.returncode == 2
    assert f"'{name}' is not a valid cluster name" in done.stderr


def test_stopping_an_unknown_cluster_says_how_to_list_them(tmp_path):
    done = User(tmp_path).run("stop", "nope")
    assert (done.returncode, done.stderr) == (
        1,
        'Error: no cluster named "nope": `taintplane get clusters` lists them\n',
    )


def test_a_kubeconfig_that_cannot_be_written_leaves_the_export_line(tmp_path):
    user = User(tmp_path)
    (tmp_path / "file").write_text("")
    kubeconfig = tmp_path / "file" / "config"  # its directory is a file
    out = user.ok("up", "-d", "--port", "0", "--nodes", "0", "--kubeconfig", str(kubeconfig))
    try:
        lines = out.splitlines()
        assert lines[1].startswith("export KUBECONFIG=")
        assert lines[3].startswith("Could not set the kubectl context (")
        assert lines[3].endswith("): use the export line")
    finally:
        user.ok("delete")
