"""Runs through the sync client: created, waited for, read, listed, cancelled."""

import httpx
import pytest

from stepwise_client import Client, ConflictError, InvalidRequestError
from stepwise_client.models import Run

from conftest import Dev, until


def test_a_created_run_is_waited_for_and_read_with_its_result(client: Client, run_id: str):
    created = client.runs.create(agent="quick", input="Say hello", run_id=run_id, metadata={"team": "py"})
    assert (created.run_id, created.status) == (run_id, "created")

    run = client.runs.wait(run_id, timeout=30)

    assert isinstance(run, Run)
    assert run.status == "done"
    assert run.termination.reason == "natural_end"
    assert (run.termination.code, run.termination.detail) == (None, None)
    assert run.metadata == {"team": "py"}
    assert [(c.tool, c.status, c.result) for c in run.tool_calls] == [("echo", "succeeded", {"said": "hello"})]
    last = client.runs.messages(run_id)[-1]
    assert (last.role, last.content) == ("assistant", "Done.")


def test_a_run_dumps_back_to_the_json_the_gateway_answered(dev: Dev, client: Client, run_id: str):
    client.runs.create(agent="quick", input="Say hello", run_id=run_id)
    run = client.runs.wait(run_id, timeout=30)

    raw = httpx.get(f"{dev.url}/v1/runs/{run_id}", headers={"Authorization": f"Bearer {dev.key}"}).json()

    assert run.model_dump() == raw


def test_fields_a_newer_gateway_adds_are_kept_and_readable():
    run = Run.model_validate({
        "run_id": "r-1", "agent": "a", "status": "done", "step": 1, "created_at": "t", "updated_at": "t",
        "usage": {"input_tokens": 1, "output_tokens": 2, "cached_tokens": 3}, "tool_calls": [],
        "priority": "high",
    })

    assert run.priority == "high"
    assert run.usage.cached_tokens == 3
    assert run.model_dump()["usage"] == {"input_tokens": 1, "output_tokens": 2, "cached_tokens": 3}


def test_the_same_create_again_is_a_replay_and_another_body_a_conflict(client: Client, run_id: str):
    client.runs.create(agent="quick", input="Say hello", run_id=run_id)
    assert client.runs.create(agent="quick", input="Say hello", run_id=run_id).run_id == run_id

    with pytest.raises(ConflictError) as e:
        client.runs.create(agent="quick", input="Say something else", run_id=run_id)

    assert (e.value.status, e.value.code) == (409, "conflict")


def test_listed_runs_include_a_created_one(client: Client, run_id: str):
    client.runs.create(agent="quick", input="Say hello", run_id=run_id)

    page = client.runs.list(agent="quick", limit=500)
    assert run_id in [r.run_id for r in page.runs]
    assert run_id in [r.run_id for r in client.runs.iter(agent="quick", limit=2)]


def test_runs_are_searched_by_a_declared_metadata_value(client: Client, run_id: str):
    client.runs.create(agent="quick", input="Say hello", run_id=run_id, metadata={"order": f"o-{run_id}"})
    client.runs.create(agent="quick", input="Say hello", run_id=f"{run_id}-other", metadata={"order": "another"})

    page = client.runs.list(meta={"order": f"o-{run_id}"}, agent="quick", since="2000-01-01T00:00:00Z")
    assert [r.run_id for r in page.runs] == [run_id]
    assert [r.run_id for r in client.runs.iter(meta={"order": f"o-{run_id}"}, limit=1)] == [run_id]

    with pytest.raises(InvalidRequestError):
        client.runs.list(meta={"undeclared": "x"})


def test_a_cancelled_run_ends_cancelled_and_a_second_cancel_is_a_conflict(client: Client, run_id: str):
    client.runs.create(agent="slow", input="Wait", run_id=run_id)
    until("the sleep starts", lambda: any(c.status == "running" for c in client.runs.get(run_id).tool_calls))

    accepted = client.runs.cancel(run_id, reason="no longer needed", decided_by="pytest")

    assert (accepted.run_id, accepted.status) == (run_id, "accepted")
    run = client.runs.wait(run_id, timeout=30)
    assert run.termination.reason == "cancelled"
    with pytest.raises(ConflictError):
        client.runs.cancel(run_id)


def test_the_client_reads_its_url_and_key_from_the_environment(dev: Dev, run_id: str, monkeypatch):
    monkeypatch.setenv("STEPWISE_URL", dev.url)
    monkeypatch.setenv("STEPWISE_API_KEY", dev.key)

    with Client() as c:
        assert c.runs.create(agent="quick", input="Say hello", run_id=run_id).status == "created"


def test_a_run_asks_for_an_inference_mode_and_batch_needs_a_batch_mode_model(client: Client, run_id: str):
    client.runs.create(agent="quick", input="Say hello", run_id=run_id, inference="live")
    assert client.runs.get(run_id).inference == "live"

    with pytest.raises(InvalidRequestError) as e:
        client.runs.create(agent="quick", input="Say hello", inference="batch")

    assert "has no batch mode" in str(e.value)
