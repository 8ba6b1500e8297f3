"""The synchronous client: :class:`Client` and its resources."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import httpx

from . import _core
from ._core import Call
from .models import (
    AcceptedCancel, AcceptedDecision, Batch, CancelledBatch, CreatedBatch, CreatedRun,
    DecisionAction, Event, Message, PendingCall, RerunAccepted, Run, RunList, RunStatus, RunSummary,
    Schedule, TriggeredRun,
)


class Client(_core.Base):
    """Client calls a stepwise gateway's HTTP API.

    ``base_url`` defaults to STEPWISE_URL, else http://localhost:8080;
    ``api_key``, sent as ``Authorization: Bearer <key>``, to
    STEPWISE_API_KEY, else none (a gateway without keys takes every
    request). ``timeout`` is in seconds, per request. An ``http`` client of
    your own (proxies, TLS, a mock transport) is used as it is and not
    closed. A Client may be shared by threads, as httpx.Client may; close it,
    or use it in a ``with`` block. Every error answer raises an
    :class:`~stepwise_client.APIError` carrying the envelope's code.

    Runs are under ``runs`` (:class:`Runs`), batches under ``batches``
    (:class:`Batches`), schedules under ``schedules`` (:class:`Schedules`);
    :meth:`pending` and :meth:`decide` answer parked calls.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = _core.DEFAULT_TIMEOUT,
        http: httpx.Client | None = None,
    ) -> None:
        super().__init__(base_url, api_key, http, lambda: httpx.Client(timeout=timeout))
        self.runs = Runs(self)
        self.batches = Batches(self)
        self.schedules = Schedules(self)

    def close(self) -> None:
        """close releases the connections (not those of an ``http`` passed in)."""
        if self._owned:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, call: Call) -> Any:
        method, url, kw = self._request(call)
        return _core.decode(self._http.request(method, url, **kw), call)

    def pending(
        self, *, agent: str | None = None, tool: str | None = None,
        run_id: str | None = None, limit: int | None = None,
    ) -> list[PendingCall]:
        """pending lists parked calls awaiting a decision, oldest first."""
        return self._call(_core.pending(agent, tool, run_id, limit))

    def decide(
        self, run_id: str, call_id: str, action: DecisionAction, *,
        payload: Any = None, args_hash: str | None = None, decision_id: str | None = None,
        decided_by: str | None = None, reason: str | None = None,
    ) -> AcceptedDecision:
        """decide resumes or cancels a parked call.

        The gateway publishes the decision; the step worker applies it (or
        rejects it, with a decision.rejected event). Quote the call's
        args_hash to have it rejected if the arguments differ; send the same
        decision_id again to retry safely. Behind an API key the decision is
        recorded as decided by the key's name, decided_by following it as a
        note: ``"ops (alice)"``.
        """
        return self._call(_core.decide(run_id, call_id, action, payload, args_hash, decision_id, decided_by, reason))


class Runs:
    """Runs is ``Client.runs``: create, read, list, wait for, cancel and
    follow runs."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def create(
        self, agent: str, input: str | list[Mapping[str, Any]], *,
        run_id: str | None = None, model: Mapping[str, Any] | None = None, metadata: Any = None,
        inference: str | None = None,
    ) -> CreatedRun:
        """create starts a run of agent on input (text or messages).

        With a run_id it is idempotent: the same request again answers the
        run's current status; another body under the same id raises
        ConflictError. inference ("batch" or "live") is how its steps infer
        when its agent's model has a batch mode; None: the model's default.
        """
        return self._client._call(_core.create_run(agent, input, run_id, model, metadata, inference))

    def get(self, run_id: str) -> Run:
        """get returns the run with its tool calls."""
        return self._client._call(_core.get_run(run_id))

    def messages(self, run_id: str) -> list[Message]:
        """messages returns the run's conversation, input first."""
        return self._client._call(_core.messages(run_id))

    def list(
        self, *, status: RunStatus | None = None, agent: str | None = None, tenant: str | None = None,
        batch_id: str | None = None, termination: str | None = None, since: str | None = None,
        until: str | None = None, meta: Mapping[str, str] | None = None,
        limit: int | None = None, cursor: str | None = None,
    ) -> RunList:
        """list returns one page of the runs the filter selects (GET
        /v1/runs's search: ``meta`` holds values of the keys the
        configuration declares searchable, ``since`` and ``until`` RFC 3339
        times of creation), newest first.

        A page may hold fewer runs than limit and still have a next_cursor;
        :meth:`iter` follows the cursors.
        """
        f = _core.RunFilter(status, agent, tenant, batch_id, termination, since, until, meta)
        return self._client._call(_core.list_runs(f, limit, cursor))

    def iter(
        self, *, status: RunStatus | None = None, agent: str | None = None, tenant: str | None = None,
        batch_id: str | None = None, termination: str | None = None, since: str | None = None,
        until: str | None = None, meta: Mapping[str, str] | None = None,
        limit: int | None = None,
    ) -> Iterator[RunSummary]:
        """iter yields every run :meth:`list` finds, page after page."""
        cursor: str | None = None
        while True:
            page = self.list(status=status, agent=agent, tenant=tenant, batch_id=batch_id, termination=termination,
                             since=since, until=until, meta=meta, limit=limit, cursor=cursor)
            yield from page.runs
            cursor = page.next_cursor
            if not cursor:
                return

    def wait(self, run_id: str, *, timeout: float | None = None, interval: float = 0.2) -> Run:
        """wait returns the run once it is done, reading it every interval.

        A run waiting for a decision is not done. Raises WaitTimeout after
        timeout seconds (never, when None).
        """
        deadline = _core.Deadline(timeout)
        while True:
            run = self.get(run_id)
            if run.status == "done":
                return run
            deadline.check(f"run {run_id} is {run.status}")
            time.sleep(interval)

    def cancel(self, run_id: str, *, reason: str | None = None, decided_by: str | None = None) -> AcceptedCancel:
        """cancel asks for the run to end cancelled; ConflictError when it is done."""
        return self._client._call(_core.cancel_run(run_id, reason, decided_by))

    def fork(
        self, run_id: str, from_step: int, *, new_run_id: str | None = None, input: str | None = None,
        model: Mapping[str, Any] | None = None, metadata: Any = None,
    ) -> CreatedRun:
        """fork makes a new run whose history is run_id's through step
        from_step (``input`` replacing the text of its last user message,
        ``model`` and ``metadata`` the original's) and which runs on from
        the next step. new_run_id makes it idempotent."""
        return self._client._call(_core.fork_run(run_id, from_step, new_run_id, input, model, metadata))

    def rerun(
        self, *, run_ids: list[str] | None = None, batch_id: str | None = None, agent: str | None = None,
        status: RunStatus | None = None, termination: str | None = None, since: str | None = None,
        until: str | None = None, request_id: str | None = None,
    ) -> RerunAccepted:
        """rerun requests again, as new linked runs, the runs the filter
        selects (``GET /v1/runs``'s filter; at least one field), in a batch
        of their own. The same filter and request_id again re-run nothing
        more."""
        f = {"run_ids": run_ids, "batch_id": batch_id, "agent": agent, "status": status,
             "termination": termination, "since": since, "until": until}
        return self._client._call(_core.rerun(f, request_id))

    def events(self, run_id: str, *, last_event_id: str | None = None, reconnects: int = 5) -> Iterator[Event]:
        """events yields the run's event log, strictly after last_event_id.

        It follows the log live and ends after the run's last run.finished
        (not one whose reason is suspended: the run waits and goes on). A
        connection that drops, or closes before that event, is resumed after
        the last event yielded (Last-Event-ID), nothing lost or repeated;
        after ``reconnects`` failures in a row the last error is raised. A
        resumption that brings nothing more ends the iteration. Pass an
        event's ``id`` as last_event_id to resume in another process.
        """
        c, books = self._client, _core.Resumption(last_event_id, reconnects)
        while True:
            try:
                with c._http.stream(**c._events(run_id, books.opened())) as resp:
                    if not resp.is_success:
                        resp.read()
                        raise _core.error_of(resp)
                    dec = _core.SSEDecoder()
                    for line in resp.iter_lines():
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
                time.sleep(wait)
                continue
            if books.closed():
                return


class Batches:
    """Batches is ``Client.batches``: submit batches of runs as JSON Lines,
    follow and cancel them."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def submit(
        self, runs: Iterable[Mapping[str, Any]] | str | bytes, *,
        token_budget: int | None = None, cost_budget: float | None = None, inference: str | None = None,
    ) -> CreatedBatch:
        """submit creates runs from objects like ``runs.create``'s body.

        They are sent as JSON Lines; a str or bytes is sent as it is (a
        JSONL file's content). One invalid item refuses the whole batch
        (InvalidRequestError, a detail per problem). token_budget and
        cost_budget (USD) bound what the batch's runs use together;
        inference ("batch" or "live") is the mode of the runs naming none.
        """
        return self._client._call(_core.submit_batch(runs, token_budget, cost_budget, inference))

    def get(self, batch_id: str) -> Batch:
        """get returns how far the batch's runs are."""
        return self._client._call(_core.get_batch(batch_id))

    def follow(self, batch_id: str, *, interval: float = 1.0, timeout: float | None = None) -> Iterator[Batch]:
        """follow yields the batch's progress: first as it is, then each
        time its counts change, until every run is done (the last one
        yielded). Raises WaitTimeout after timeout seconds.
        """
        deadline, progress = _core.Deadline(timeout), _core.Progress()
        while True:
            b = self.get(batch_id)
            if progress.changed(b):
                yield b
            if _core.batch_finished(b):
                return
            deadline.check(f"batch {batch_id}: {b.counts} of {b.total}")
            time.sleep(interval)

    def cancel(self, batch_id: str, *, reason: str | None = None, decided_by: str | None = None) -> CancelledBatch:
        """cancel cancels every run of the batch that is not done."""
        return self._client._call(_core.cancel_batch(batch_id, reason, decided_by))


class Schedules:
    """Schedules is ``Client.schedules``: schedules that start runs on a
    cron expression or an interval."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def create(
        self, run: Mapping[str, Any], *, cron: str | None = None, every: str | None = None,
        schedule_id: str | None = None, timezone: str | None = None, overlap: str | None = None,
        catchup_window: str | None = None,
    ) -> Schedule:
        """create makes a schedule starting run (a ``runs.create`` body) at
        each tick of ``cron`` (in ``timezone``) or ``every`` (a duration such
        as ``"1h"``). overlap is skip, buffer_one or allow_all. With a
        schedule_id it is idempotent."""
        return self._client._call(_core.create_schedule(run, cron, every, schedule_id, timezone, overlap, catchup_window))

    def list(self) -> list[Schedule]:
        """list returns the schedules of the key's tenant."""
        return self._client._call(_core.list_schedules())

    def get(self, schedule_id: str) -> Schedule:
        """get returns the schedule, with its next tick."""
        return self._client._call(_core.get_schedule(schedule_id))

    def pause(self, schedule_id: str) -> Schedule:
        """pause stops the schedule's ticks until resume."""
        return self._client._call(_core.change_schedule(schedule_id, "pause"))

    def resume(self, schedule_id: str) -> Schedule:
        """resume restarts the ticks from the next one."""
        return self._client._call(_core.change_schedule(schedule_id, "resume"))

    def trigger(self, schedule_id: str, run_id: str | None = None) -> TriggeredRun:
        """trigger starts a run of the schedule now; ``run_id`` names it, and
        the same trigger again then answers with that run, starting no other."""
        return self._client._call(_core.trigger_schedule(schedule_id, run_id))

    def delete(self, schedule_id: str) -> None:
        """delete removes the schedule; its runs stay."""
        self._client._call(_core.delete_schedule(schedule_id))
