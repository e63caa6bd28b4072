"""kubectl -l with a malformed selector: kube-apiserver's labels.Parse errors, word for word,
as kubectl prints them (its own 'Unable to find …' around the server's message)."""

import pytest

NAME = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        # The colon typo of a well-known tutorial, as kubectl prints it against a real cluster.
        (
            "app:monolith",
            f'unable to parse requirement: <nil>: Invalid value: "app:monolith": {NAME}',
        ),
        ("app in (web", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("app,", "found '', expected: identifier after ','"),
    ],
)
def test_a_malformed_label_selector_is_refused_in_upstreams_words(kubectl, selector, message):
    done = kubectl.run("get", "pods", "-l", selector)
    assert done.returncode == 1
    assert done.stderr == (
        'Error from server (BadRequest): Unable to find "/v1, Resource=pods" that match label '
        f'selector "{selector}", field selector "": {message}\n'
    )


def test_an_empty_value_set_selects_the_empty_value(kubectl):
    """labels.Parse reads 'in ()' as the set of the empty value, not as an error."""
    kubectl(
        "create",
        "-f",
        "-",
        stdin="apiVersion: v1\nkind: Node\nmetadata:\n  name: sel-n\n  labels: {tier: ''}\n",
    )
    assert kubectl("get", "nodes", "-l", "tier in ()", "-o", "name") == "node/sel-n\n"
