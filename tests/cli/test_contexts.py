"""Merging the context ``taintplane-NAME`` into a kubeconfig and removing it, as kind does."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import click
import pytest
import yaml

from taintplane.cli import contexts
from taintplane.cli.contexts import merge_context, merge_path, remove_context
from taintplane.sim.kubeconfig import write_kubeconfig


def own(tmp_path: Path, server: str, token: str | None = None) -> Path:
    return write_kubeconfig(tmp_path / f"own-{server[-4:]}", server, token=token)


def test_merge_path_follows_kind(tmp_path, monkeypatch):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    assert merge_path(str(a)) == a
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(a), "", str(b), str(a), str(c)]))
    assert merge_path(None) == c  # none exists: the last one
    b.write_text("")
    assert merge_path(None) == b  # the first that exists
    monkeypatch.setenv("KUBECONFIG", str(a))
    assert merge_path(None) == a
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert merge_path(None) == tmp_path / ".kube" / "config"


def test_merge_replaces_our_entries_in_place_and_keeps_the_rest(tmp_path):
    target = tmp_path / "config"
    target.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: a\n"
        "clusters:\n- name: a\n  cluster: {server: 'https://a', extensions: [{name: x}]}\n"
        "- name: taintplane-dev\n  cluster: {server: 'http://old'}\n- name: z\n  cluster: {}\n"
        "contexts:\n- name: a\n  context: {cluster: a, user: a, namespace: kube-system}\n"
        "users:\n- name: a\n  user: {exec: {command: aws}}\nx-unknown: [1, 2]\n"
    )
    target.chmod(0o640)
    before = yaml.safe_load(target.read_text())
    merge_context(target, "taintplane-dev", own(tmp_path, "http://127.0.0.1:7001", "t0k"))
    after = yaml.safe_load(target.read_text())
    assert after["clusters"] == [
        before["clusters"][0],
        {"name": "taintplane-dev", "cluster": {"server": "http://127.0.0.1:7001"}},
        before["clusters"][2],
    ]
    assert after["users"] == [
        before["users"][0],
        {"name": "taintplane-dev", "user": {"token": "t0k"}},
    ]
    assert after["contexts"][1] == {
        "name": "taintplane-dev",
        "context": {"cluster": "taintplane-dev", "user": "taintplane-dev"},
    }
    assert after["current-context"] == "taintplane-dev"
    assert after["x-unknown"] == [1, 2]
    assert target.stat().st_mode & 0o777 == 0o640
    assert not (tmp_path / "config.lock").exists()

    assert remove_context(target, "taintplane-dev") is True
    assert yaml.safe_load(target.read_text()) == {
        **before,
        "clusters": [before["clusters"][0], before["clusters"][2]],
        "current-context": "",
        "preferences": {},  # kubectl writes it too
    }
    assert remove_context(target, "taintplane-dev") is False


def test_a_new_kubeconfig_is_private(tmp_path):
    target = tmp_path / "new" / ".kube" / "config"
    merge_context(target, "taintplane-x", own(tmp_path, "http://127.0.0.1:7002"))
    assert target.stat().st_mode & 0o777 == 0o600
    assert yaml.safe_load(target.read_text())["current-context"] == "taintplane-x"


def test_concurrent_writers_lose_nothing(tmp_path):
    target = tmp_path / "config"
    sources = [own(tmp_path, f"http://127.0.0.1:{7100 + i}") for i in range(8)]
    threads = [
        threading.Thread(target=merge_context, args=(target, f"taintplane-c{i}", source))
        for i, source in enumerate(sources)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    names = sorted(e["name"] for e in yaml.safe_load(target.read_text())["contexts"])
    assert names == [f"taintplane-c{i}" for i in range(8)]


def test_a_lock_left_behind_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(contexts, "_LOCK_ATTEMPTS", 2)
    target = tmp_path / "config"
    (tmp_path / "config.lock").write_text("")
    with pytest.raises(click.ClickException) as raised:
        merge_context(target, "taintplane-x", own(tmp_path, "http://127.0.0.1:7003"))
    assert raised.value.message.startswith(f"cannot lock {target}: {target}.lock exists")
    assert not target.exists()


def test_a_kubeconfig_that_is_not_yaml_is_left_alone(tmp_path):
    target = tmp_path / "config"
    target.write_text("clusters: [unclosed\n")
    with pytest.raises(click.ClickException, match=r"^error loading config file "):
        merge_context(target, "taintplane-x", own(tmp_path, "http://127.0.0.1:7004"))
    assert target.read_text() == "clusters: [unclosed\n"
