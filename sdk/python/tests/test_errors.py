"""Error answers raise exceptions carrying the envelope."""

import pytest

from stepwise_client import APIError, Client, ForbiddenError, InvalidRequestError, NotFoundError, UnauthorizedError

from conftest import Dev


@pytest.mark.parametrize("key", [None, "not-a-key-of-this-gateway"])
def test_a_missing_or_unknown_api_key_raises_unauthorized(dev: Dev, key):
    with Client(dev.url, api_key=key) as c, pytest.raises(UnauthorizedError) as e:
        c.runs.list()

    assert (e.value.status, e.value.code) == (401, "unauthorized")
    assert "API key" in e.value.message


def test_a_key_without_the_scope_raises_forbidden(dev: Dev):
    with Client(dev.url, api_key=dev.read_key) as c, pytest.raises(ForbiddenError) as e:
        c.runs.create(agent="quick", input="Say hello")

    assert (e.value.status, e.value.code) == (403, "forbidden")
    assert "runs:write" in e.value.message


def test_an_unknown_run_raises_not_found(client: Client):
    with pytest.raises(NotFoundError) as e:
        client.runs.get("py-no-such-run")

    assert (e.value.status, e.value.code) == (404, "not_found")


def test_an_invalid_run_raises_invalid_request_with_every_problem(client: Client):
    with pytest.raises(InvalidRequestError) as e:
        client.runs.create(agent="no-such-agent", input="", run_id="bad id")

    assert e.value.code == "invalid_request"
    assert len(e.value.details) >= 2, e.value.details
    assert isinstance(e.value, APIError)
