"""The asyncio client: :class:`AsyncClient` and its resources,
:class:`~stepwise_client.Client`'s, awaited."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

import httpx

from . import _core
from ._core import Call
from .models import (
    AcceptedCancel, AcceptedDecision, Batch, CancelledBatch, CreatedBatch, CreatedRun,
    DecisionAction, Event, Message, PendingCall, RerunAccepted, Run, RunList, RunStatus, RunSummary,
    Schedule, TriggeredRun,
)


class AsyncClient(_core.Base):
    """AsyncClient calls a stepwise gateway's HTTP API from asyncio.

    Its resources (``runs``, ``batches``, ``schedules``) and methods are
    :class:`~stepwise_client.Client`'s, with the same arguments, defaults
    and errors, awaited; ``runs.events``, ``runs.iter`` and
    ``batches.follow`` are async iterators. Close it with ``await
    aclose()``, or use it in an ``async with`` block.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = _core.DEFAULT_TIMEOUT,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(base_url, api_key, http, lambda: httpx.AsyncClient(timeout=timeout))
        self.runs = AsyncRuns(self)
        self.batches = AsyncBatches(self)
        self.schedules = AsyncSchedules(self)

    async def aclose(self) -> None:
        """aclose releases the connections (not those of an ``http`` passed in)."""
        if self._owned:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _call(self, call: Call) -> Any:
        method, url, kw = self._request(call)
        return _core.decode(await self._http.request(method, url, **kw), call)

    async def pending(
        self, *, agent: str | None = None, tool: str | None = None,
        run_id: str | None = None, limit: int | None = None,
    ) -> list[PendingCall]:
        """pending: see Client.pending."""
        return await self._call(_core.pending(agent, tool, run_id, limit))

    async def decide(
        self, run_id: str, call_id: str, action: DecisionAction, *,
        payload: Any = None, args_hash: str | None = None, decision_id: str | None = None,
        decided_by: str | None = None, reason: str | None = None,
    ) -> AcceptedDecision:
        """decide: see Client.decide."""
        return await self._call(_core.decide(run_id, call_id, action, payload, args_hash, decision_id, decided_by, reason))


class AsyncRuns:
    """AsyncRuns is ``AsyncClient.runs``: see :class:`~stepwise_client.client.Runs`."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def create(
        self, agent: str, input: str | list[Mapping[str, Any]], *,
        run_id: str | None = None, model: Mapping[str, Any] | None = None, metadata: Any = None,
        inference: str | None = None,
    ) -> CreatedRun:
        """create: see Runs.create."""
        return await self._client._call(_core.create_run(agent, input, run_id, model, metadata, inference))

    async def get(self, run_id: str) -> Run:
        """get: see Runs.get."""
        return await self._client._call(_core.get_run(run_id))

    async def messages(self, run_id: str) -> list[Message]:
        """messages: see Runs.messages."""
        return await self._client._call(_core.messages(run_id))

    async def list(
        self, *, status: RunStatus | None = None, agent: str | None = None, tenant: str | None = None,
        batch_id: str | None = None, termination: str | None = None, since: str | None = None,
        until: str | None = None, meta: Mapping[str, str] | None = None,
        limit: int | None = None, cursor: str | None = None,
    ) -> RunList:
        """list: see Runs.list."""
        f = _core.RunFilter(status, agent, tenant, batch_id, termination, since, until, meta)
        return await self._client._call(_core.list_runs(f, limit, cursor))

    async def iter(
        self, *, status: RunStatus | None = None, agent: str | None = None, tenant: str | None = None,
        batch_id: str | None = None, termination: str | None = None, since: str | None = None,
        until: str | None = None, meta: Mapping[str, str] | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[RunSummary]:
        """iter: see Runs.iter."""
        cursor: str | None = None
        while True:
            page = await self.list(status=status, agent=agent, tenant=tenant, batch_id=batch_id,
                                   termination=termination, since=since, until=until, meta=meta,
                                   limit=limit, cursor=cursor)
            for run in page.runs:
                yield run
            cursor = page.next_cursor
            if not cursor:
                return

    async def wait(self, run_id: str, *, timeout: float | None = None, interval: float = 0.2) -> Run:
        """wait: see Runs.wait."""
        deadline = _core.Deadline(timeout)
        while True:
            run = await self.get(run_id)
            if run.status == "done":
                return run
            deadline.check(f"run {run_id} is {run.status}")
            await asyncio.sleep(interval)

    async def cancel(self, run_id: str, *, reason: str | None = None, decided_by: str | None = None) -> AcceptedCancel:
        """cancel: see Runs.cancel."""
        return await self._client._call(_core.cancel_run(run_id, reason, decided_by))

    async def fork(
        self, run_id: str, from_step: int, *, new_run_id: str | None = None, input: str | None = None,
        model: Mapping[str, Any] | None = None, metadata: Any = None,
    ) -> CreatedRun:
        """fork: see Runs.fork."""
        return await self._client._call(_core.fork_run(run_id, from_step, new_run_id, input, model, metadata))

    async def rerun(
        self, *, run_ids: list[str] | None = None, batch_id: str | None = None, agent: str | None = None,
        status: RunStatus | None = None, termination: str | None = None, since: str | None = None,
        until: str | None = None, request_id: str | None = None,
    ) -> RerunAccepted:
        """rerun: see Runs.rerun."""
        f = {"run_ids": run_ids, "batch_id": batch_id, "agent": agent, "status": status,
             "termination": termination, "since": since, "until": until}
        return await self._client._call(_core.rerun(f, request_id))

    async def events(self, run_id: str, *, last_event_id: str | None = None, reconnects: int = 5) -> AsyncIterator[Event]:
        """events: see Runs.events."""
        c, books = self._client, _core.Resumption(last_event_id, reconnects)
        while True:
            try:
                async with c._http.stream(**c._events(run_id, books.opened())) as resp:
                    if not resp.is_success:
                        await resp.aread()
                        raise _core.error_of(resp)
                    dec = _core.SSEDecoder()
                    async for line in resp.aiter_lines():
                        ev = dec.feed(line)
                        if ev is None:
                            continue
                        last = books.seen(ev)
                        yield ev
                        if last:
                            return
            except httpx.TransportError:
                wait = books.dropped()
                if wait is None:
                    raise
                await asyncio.sleep(wait)
                continue
            if books.closed():
                return


class AsyncBatches:
    """AsyncBatches is ``AsyncClient.batches``: see :class:`~stepwise_client.client.Batches`."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def submit(
        self, runs: Iterable[Mapping[str, Any]] | str | bytes, *,
        token_budget: int | None = None, cost_budget: float | None = None, inference: str | None = None,
    ) -> CreatedBatch:
        """submit: see Batches.submit."""
        return await self._client._call(_core.submit_batch(runs, token_budget, cost_budget, inference))

    async def get(self, batch_id: str) -> Batch:
        """get: see Batches.get."""
        return await self._client._call(_core.get_batch(batch_id))

    async def follow(self, batch_id: str, *, interval: float = 1.0, timeout: float | None = None) -> AsyncIterator[Batch]:
        """follow: see Batches.follow."""
        deadline, progress = _core.Deadline(timeout), _core.Progress()
        while True:
            b = await self.get(batch_id)
            if progress.changed(b):
                yield b
            if _core.batch_finished(b):
                return
            deadline.check(f"batch {batch_id}: {b.counts} of {b.total}")
            await asyncio.sleep(interval)

    async def cancel(self, batch_id: str, *, reason: str | None = None, decided_by: str | None = None) -> CancelledBatch:
        """cancel: see Batches.cancel."""
        return await self._client._call(_core.cancel_batch(batch_id, reason, decided_by))


class AsyncSchedules:
    """AsyncSchedules is ``AsyncClient.schedules``: see :class:`~stepwise_client.client.Schedules`."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def create(
        self, run: Mapping[str, Any], *, cron: str | None = None, every: str | None = None,
        schedule_id: str | None = None, timezone: str | None = None, overlap: str | None = None,
        catchup_window: str | None = None,
    ) -> Schedule:
        """create: see Schedules.create."""
        return await self._client._call(
            _core.create_schedule(run, cron, every, schedule_id, timezone, overlap, catchup_window))

    async def list(self) -> list[Schedule]:
        """list: see Schedules.list."""
        return await self._client._call(_core.list_schedules())

    async def get(self, schedule_id: str) -> Schedule:
        """get: see Schedules.get."""
        return await self._client._call(_core.get_schedule(schedule_id))

    async def pause(self, schedule_id: str) -> Schedule:
        """pause: see Schedules.pause."""
        return await self._client._call(_core.change_schedule(schedule_id, "pause"))

    async def resume(self, schedule_id: str) -> Schedule:
        """resume: see Schedules.resume."""
        return await self._client._call(_core.change_schedule(schedule_id, "resume"))

    async def trigger(self, schedule_id: str, run_id: str | None = None) -> TriggeredRun:
        """trigger: see Schedules.trigger."""
        return await self._client._call(_core.trigger_schedule(schedule_id, run_id))

    async def delete(self, schedule_id: str) -> None:
        """delete: see Schedules.delete."""
        await self._client._call(_core.delete_schedule(schedule_id))
