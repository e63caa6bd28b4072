"""The sign-in wrapper on its own: the cookie becomes the Authorization header the server then
checks (never a way around it), refusals become pages, and bad forms are 4xx."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.testclient import TestClient
from starlette.types import Receive, Scope, Send

from taintplane.web.signin import COOKIE, MAX_FORM, SignIn

BASE = "https://127.0.0.1:6443"


async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
    """A stand-in for the authenticated app: 401 without the right bearer token, else it echoes
    the headers it was given."""
    headers = {k.decode(): v.decode() for k, v in scope["headers"]}
    if headers.get("authorization") != "Bearer good/token=":
        status = 401
        body = json.dumps({"kind": "Status", "message": "Unauthorized", "code": 401}).encode()
        kind = b"application/json"
    else:
        status, body, kind = 200, json.dumps(headers).encode(), b"application/json"
    await send(
        {"type": "http.response.start", "status": status, "headers": [(b"content-type", kind)]}
    )
    await send({"type": "http.response.body", "body": body})


@pytest.fixture
def client() -> TestClient:
    return TestClient(SignIn(guarded), base_url=BASE, follow_redirects=False)


def test_sign_in_sets_a_cookie_for_the_dashboard_only(client: TestClient) -> None:
    form = client.get("/dashboard/signin")
    assert form.status_code == 200
    assert 'name="token" type="password"' in form.text
    done = client.post("/dashboard/signin", data={"token": "good/token="}, headers={"Origin": BASE})
    assert done.status_code == 303
    assert done.headers["location"] == "/dashboard/"
    assert done.headers["set-cookie"] == (
        f"{COOKIE}=good%2Ftoken%3D; Path=/dashboard; HttpOnly; SameSite=Strict; Secure"
    )
    seen = client.get("/dashboard/", headers={"Cookie": f"{COOKIE}=good%2Ftoken%3D"})
    assert seen.status_code == 200
    assert seen.json()["authorization"] == "Bearer good/token="
    out = client.get("/dashboard/signout")
    assert "Max-Age=0" in out.headers["set-cookie"]


def test_a_header_the_request_brings_wins_over_the_cookie(
    client: TestClient,
) -> None:
    seen = client.get(
        "/dashboard/",
        headers={"Cookie": f"{COOKIE}=wrong", "Authorization": "Bearer good/token="},
    )
    assert seen.status_code == 200


def test_refusals_are_pages_with_the_form(client: TestClient) -> None:
    refused = client.get("/dashboard/", headers={"Cookie": f"{COOKIE}=wrong"})
    assert refused.status_code == 401
    assert refused.headers["content-type"] == "text/html; charset=utf-8"
    assert '<p class="denied">Unauthorized</p>' in refused.text
    assert 'action="/dashboard/signin"' in refused.text
    # Outside the dashboard, the API's own JSON, untouched, and no cookie looked at.
    api = client.get("/api/v1/pods", headers={"Cookie": f"{COOKIE}=good%2Ftoken%3D"})
    assert (api.status_code, api.json()["message"]) == (401, "Unauthorized")


@pytest.mark.parametrize(
    ("data", "headers", "status"),
    [
        ({"token": "x"}, {"Origin": "https://evil.example"}, 403),
        ({"token": ""}, {}, 400),
        ({"token": "two words"}, {}, 400),
        ({"token": "a\x00b"}, {}, 400),
        ({"token": "x" * (MAX_FORM + 1)}, {}, 400),
    ],
)
def test_bad_sign_ins_are_refused(
    client: TestClient, data: dict[str, str], headers: dict[str, str], status: int
) -> None:
    response = client.post("/dashboard/signin", data=data, headers=headers)
    assert response.status_code == status
    assert "set-cookie" not in response.headers


def test_only_get_and_post(client: TestClient) -> None:
    response: Any = client.put("/dashboard/signin", content=b"")
    assert response.status_code == 405
