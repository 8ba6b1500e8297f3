"""Runs made from other runs and on a schedule, through the sync client:
a fork runs on from a step of a finished run, a re-run requests a run
again once, and a schedule is created, triggered, paused, resumed and
deleted."""

import pytest

from stepwise_client import Client, NotFoundError
from stepwise_client.models import Schedule

from conftest import until


def test_a_fork_runs_on_from_a_step_of_a_finished_run(client: Client, run_id: str):
    client.runs.create(agent="quick", input="Say hello", run_id=run_id)
    original = client.runs.wait(run_id, timeout=30)

    forked = client.runs.fork(run_id, 0, new_run_id=f"{run_id}-fork")
    run = client.runs.wait(forked.run_id, timeout=30)

    assert forked.run_id == f"{run_id}-fork"
    assert run.forked_from == {"run_id": run_id, "step": 0}
    assert run.termination.reason == "natural_end"
    assert run.step == original.step
    assert [m.content for m in client.runs.messages(forked.run_id)] == [m.content for m in client.runs.messages(run_id)]
    assert client.runs.fork(run_id, 0, new_run_id=f"{run_id}-fork").run_id == forked.run_id  # a replay


def test_a_rerun_requests_the_run_again_once(client: Client, run_id: str):
    client.runs.create(agent="quick", input="Say hello", run_id=run_id)
    client.runs.wait(run_id, timeout=30)

    first = client.runs.rerun(run_ids=[run_id], request_id=run_id)
    again = client.runs.rerun(run_ids=[run_id], request_id=run_id)

    assert (first.requested, first.status) == (1, "accepted")
    assert again.batch_id == first.batch_id

    def admitted():
        try:
            return client.batches.get(first.batch_id)
        except NotFoundError:  # until its first run is admitted from Kafka
            return None

    until("the re-run's batch", admitted)
    done = list(client.batches.follow(first.batch_id, interval=0.2, timeout=30))[-1]
    assert (done.total, done.counts.get("done")) == (1, 1)
    (rerun,) = [r for r in client.runs.iter(agent="quick") if getattr(r, "rerun_of", None) == run_id]
    assert client.runs.get(rerun.run_id).termination.reason == "natural_end"


def test_a_schedule_is_created_triggered_paused_resumed_and_deleted(client: Client, run_id: str):
    schedule_id = f"sched-{run_id}"
    created = client.schedules.create({"agent": "quick", "input": "Say hello"}, every="1h", schedule_id=schedule_id,
                                      overlap="skip")

    assert isinstance(created, Schedule)
    assert (created.schedule_id, created.every, created.overlap, created.paused) == (schedule_id, "1h0m0s", "skip", False)  # as Go writes a duration
    assert created.next_tick
    assert schedule_id in [s.schedule_id for s in client.schedules.list()]

    started = client.schedules.trigger(schedule_id)
    run = client.runs.wait(started.run_id, timeout=30)
    assert (run.schedule_id, run.termination.reason) == (schedule_id, "natural_end")

    named = [client.schedules.trigger(schedule_id, run_id=f"{schedule_id}-by-hand") for _ in range(2)]
    assert [t.run_id for t in named] == [f"{schedule_id}-by-hand"] * 2  # the retry starts no other run
    assert client.runs.wait(named[0].run_id, timeout=30).schedule_id == schedule_id

    assert client.schedules.pause(schedule_id).paused is True
    assert client.schedules.get(schedule_id).paused is True
    assert client.schedules.resume(schedule_id).paused is False

    client.schedules.delete(schedule_id)
    with pytest.raises(NotFoundError):
        client.schedules.get(schedule_id)
