"""A run's events as Server-Sent Events, and resumed after an id."""

from stepwise_client import Client


def test_the_events_of_a_run_end_with_its_run_finished(client: Client, run_id: str):
    client.create_run("quick", "Say hello", run_id=run_id)

    events = list(client.events(run_id))

    types = [e["type"] for e in events]
    assert types[0] == "run.created"
    assert types[-1] == "run.finished"
    assert events[-1]["data"]["reason"] == "natural_end"
    assert "tool_call.finished" in types
    assert all(e["run_id"] == run_id and e["id"] for e in events)


def test_events_resumed_from_a_last_event_id_are_the_rest_and_nothing_else(client: Client, run_id: str):
    client.create_run("quick", "Say hello", run_id=run_id)
    every = list(client.events(run_id))
    cut = len(every) // 2

    rest = list(client.events(run_id, last_event_id=every[cut - 1]["id"]))

    assert [e["id"] for e in rest] == [e["id"] for e in every[cut:]]


def test_events_resumed_after_the_last_event_end_at_once(client: Client, run_id: str):
    client.create_run("quick", "Say hello", run_id=run_id)
    every = list(client.events(run_id))

    assert list(client.events(run_id, last_event_id=every[-1]["id"])) == []
