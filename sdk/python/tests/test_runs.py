"""Runs through the sync client: created, waited for, read, listed, cancelled."""

import pytest

from stepwise_client import Client, ConflictError

from conftest import until


def test_a_created_run_is_waited_for_and_read_with_its_result(client: Client, run_id: str):
    created = client.create_run("quick", "Say hello", run_id=run_id, metadata={"team": "py"})
    assert created == {"run_id": run_id, "status": "created"}

    run = client.wait_run(run_id, timeout=30)

    assert run["status"] == "done"
    assert run["termination"] == {"reason": "natural_end"}
    assert run["metadata"] == {"team": "py"}
    assert [(c["tool"], c["status"], c["result"]) for c in run["tool_calls"]] == [("echo", "succeeded", {"said": "hello"})]
    assert client.messages(run_id)[-1] == {"role": "assistant", "content": "Done."}


def test_the_same_create_again_is_a_replay_and_another_body_a_conflict(client: Client, run_id: str):
    client.create_run("quick", "Say hello", run_id=run_id)
    assert client.create_run("quick", "Say hello", run_id=run_id)["run_id"] == run_id

    with pytest.raises(ConflictError) as e:
        client.create_run("quick", "Say something else", run_id=run_id)

    assert (e.value.status, e.value.code) == (409, "conflict")


def test_listed_runs_include_a_created_one(client: Client, run_id: str):
    client.create_run("quick", "Say hello", run_id=run_id)

    page = client.list_runs(agent="quick", limit=500)
    assert run_id in [r["run_id"] for r in page["runs"]]
    assert run_id in [r["run_id"] for r in client.iter_runs(agent="quick", limit=2)]


def test_a_cancelled_run_ends_cancelled_and_a_second_cancel_is_a_conflict(client: Client, run_id: str):
    client.create_run("slow", "Wait", run_id=run_id)
    until("the sleep starts", lambda: any(c["status"] == "running" for c in client.get_run(run_id)["tool_calls"]))

    accepted = client.cancel_run(run_id, reason="no longer needed", decided_by="pytest")

    assert (accepted["run_id"], accepted["status"]) == (run_id, "accepted")
    run = client.wait_run(run_id, timeout=30)
    assert run["termination"]["reason"] == "cancelled"
    with pytest.raises(ConflictError):
        client.cancel_run(run_id)
