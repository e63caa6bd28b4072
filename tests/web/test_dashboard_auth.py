"""The dashboard under ``taintplane up --auth`` in headless Chromium: a browser that cannot send
a bearer token signs in with one (a cookie for the dashboard's path only), and what it then sees
is what RBAC lets that user read — never more; ``kubectl proxy`` is the other way in."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.auth.test_kubectl_tls import Server, _start, _stop
from tests.web.test_dashboard import CHROMIUM, screenshot

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl"),
]

TOKENS = "alice-token,alice,1001\nbob-token,bob,1002\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("dashboard-auth")
    tokens = tmp / "tokens.csv"
    tokens.write_text(TOKENS)
    running = _start(tmp, tokens)
    running.ok("wait", "--for=condition=Ready", "node/node-1", "node/node-2", "--timeout=30s")
    # alice may open the dashboard's pages but read nothing of the cluster; bob may read too.
    running.ok(
        *("create", "clusterrole", "dashboard-pages", "--verb=get"),
        *("--non-resource-url=/dashboard", "--non-resource-url=/dashboard/*"),
    )
    running.ok(
        *("create", "clusterrole", "dashboard-reader", "--verb=get,list"),
        "--resource=nodes,pods,events",
    )
    for user in ("alice", "bob"):
        running.ok(
            *("create", "clusterrolebinding", f"{user}-pages", "--clusterrole=dashboard-pages"),
            f"--user={user}",
        )
    running.ok(
        *("create", "clusterrolebinding", "bob-reads", "--clusterrole=dashboard-reader"),
        "--user=bob",
    )
    yield running
    _stop(running)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            yield launched
        finally:
            launched.close()


def sign_in(browser: Any, server: Server, token: str) -> Any:
    # The cluster's CA is its own: the browser is told to accept it, as a person would.
    page = browser.new_context(ignore_https_errors=True).new_page()
    response = page.goto(f"{server.url}/dashboard/")
    assert response.status == 403
    assert page.title() == "Not allowed"
    page.fill("#token", token)
    page.click("button[type=submit]")
    return page


def test_signing_in_with_a_token(server: Server, browser: Any) -> None:
    admin = yaml.safe_load(server.kubeconfig.read_text())["users"][0]["user"]["token"]
    page = sign_in(browser, server, admin)
    assert page.url == f"{server.url}/dashboard/"
    assert page.title() == "taintplane"
    assert page.locator("#nodes tr").count() == 3
    [cookie] = page.context.cookies()
    assert (cookie["path"], cookie["httpOnly"], cookie["sameSite"], cookie["secure"]) == (
        "/dashboard",
        True,
        "Strict",
        True,
    )
    # Scoped to the dashboard: the API itself does not take it.
    api = page.goto(f"{server.url}/api/v1/nodes")
    assert api.status == 403
    page.goto(f"{server.url}/dashboard/nodes/node-1")
    assert page.title() == "node node-1"
    screenshot(page, "dashboard-signed-in-node")
    page.click("#signout")
    assert page.title() == "Signed out"
    assert page.context.cookies() == []
    assert page.goto(f"{server.url}/dashboard/").status == 403


def test_a_bad_token_is_told_to_sign_in_again(server: Server, browser: Any) -> None:
    page = sign_in(browser, server, "not-a-token")
    assert page.title() == "Sign in needed"
    assert page.locator(".denied").inner_text() == "Unauthorized"
    assert page.locator("#token").count() == 1
    screenshot(page, "dashboard-sign-in")


def test_what_the_page_shows_is_what_rbac_allows(server: Server, browser: Any) -> None:
    alice = sign_in(browser, server, "alice-token")
    # Past the page's own check, but her reads of the cluster are refused, as kubectl's.
    assert alice.title() == "Not allowed"
    assert alice.locator(".denied").inner_text() == (
        'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at '
        "the cluster scope"
    )
    bob = sign_in(browser, server, "bob-token")
    assert bob.title() == "taintplane"
    assert re.match(r"clock \S+ · 2 of 2 nodes Ready", bob.locator(".summary").inner_text())


def test_kubectl_proxy_is_a_way_in(server: Server, browser: Any, tmp_path: Path) -> None:
    proxy = subprocess.Popen(
        ["kubectl", "proxy", "--port=0", f"--kubeconfig={server.kubeconfig}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={"HOME": str(server.home), "PATH": "/usr/bin:/bin"},
    )
    try:
        assert proxy.stdout is not None
        line = proxy.stdout.readline()
        port = re.search(r"Starting to serve on 127\.0\.0\.1:(\d+)", line)
        assert port, line
        page = browser.new_page()
        response = page.goto(f"http://127.0.0.1:{port[1]}/dashboard/")
        assert response.status == 200
        assert page.title() == "taintplane"
        with page.expect_navigation():  # the node page loaded, not only its URL committed
            page.locator("#nodes a", has_text="node-2").click()
        assert page.title() == "node node-2"
    finally:
        proxy.terminate()
        proxy.wait(10)
        if proxy.stdout is not None:
            proxy.stdout.close()
