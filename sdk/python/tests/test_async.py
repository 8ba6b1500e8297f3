"""The asyncio client: runs, events, batches and decisions."""

import asyncio

from stepwise_client import AsyncClient, NotFoundError
from stepwise_client.models import Run

from conftest import Dev


def run(coro):
    return asyncio.run(coro)


def test_the_async_client_creates_a_run_and_follows_its_events(dev: Dev, run_id: str):
    async def go():
        async with AsyncClient(dev.url, api_key=dev.key) as c:
            await c.runs.create(agent="quick", input="Say hello", run_id=run_id)
            events = [e async for e in c.runs.events(run_id)]
            rest = [e async for e in c.runs.events(run_id, last_event_id=events[1].id)]
            return events, rest, await c.runs.wait(run_id, timeout=30)

    events, rest, done = run(go())

    assert events[-1].type == "run.finished"
    assert [e.id for e in rest] == [e.id for e in events[2:]]
    assert isinstance(done, Run)
    assert done.termination.reason == "natural_end"


def test_the_async_client_follows_a_batch_and_decides_a_parked_call(dev: Dev, run_id: str):
    async def go():
        async with AsyncClient(dev.url, api_key=dev.key) as c:
            batch = await c.batches.submit([{"run_id": run_id, "agent": "refunds", "input": "Refund A-1001"}])
            while not (parked := await c.pending(run_id=run_id)):
                await asyncio.sleep(0.05)
            await c.decide(run_id, parked[0].call_id, "resume")
            seen = [b async for b in c.batches.follow(batch.batch_id, interval=0.1, timeout=60)]
            listed = [r.run_id async for r in c.runs.iter(agent="refunds", limit=2)]
            return seen[-1], listed

    last, listed = run(go())

    assert last.reasons == {"natural_end": 1}
    assert run_id in listed


def test_the_async_client_raises_the_envelope(dev: Dev):
    async def go():
        async with AsyncClient(dev.url, api_key=dev.key) as c:
            try:
                await c.runs.get("py-no-such-run")
            except NotFoundError as e:
                return e

    e = run(go())

    assert (e.status, e.code) == (404, "not_found")


def test_the_async_client_forks_a_run_and_triggers_a_schedule(dev: Dev, run_id: str):
    async def go():
        async with AsyncClient(dev.url, api_key=dev.key) as c:
            await c.runs.create(agent="quick", input="Say hello", run_id=run_id)
            await c.runs.wait(run_id, timeout=30)
            fork = await c.runs.wait((await c.runs.fork(run_id, 0)).run_id, timeout=30)
            schedule = await c.schedules.create({"agent": "quick", "input": "Say hello"}, cron="0 3 * * *",
                                                timezone="Asia/Tokyo", schedule_id=f"sched-{run_id}")
            started = await c.schedules.trigger(schedule.schedule_id)
            scheduled = await c.runs.wait(started.run_id, timeout=30)
            paused = await c.schedules.pause(schedule.schedule_id)
            await c.schedules.delete(schedule.schedule_id)
            try:
                await c.schedules.get(schedule.schedule_id)
                gone = False
            except NotFoundError:
                gone = True
            return fork, schedule, scheduled, paused, gone

    fork, schedule, scheduled, paused, gone = run(go())

    assert fork.forked_from == {"run_id": run_id, "step": 0}
    assert fork.termination.reason == "natural_end"
    assert (schedule.cron, schedule.timezone) == ("0 3 * * *", "Asia/Tokyo")
    assert scheduled.schedule_id == schedule.schedule_id
    assert paused.paused and gone
