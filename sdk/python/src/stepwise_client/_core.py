"""What the sync and async clients share: how each call is asked and read.

A method of either client's resources builds a :class:`Call` here, sends it
with its own httpx client, and reads the answer into the call's model with
:func:`decode`; the event stream is parsed by :class:`SSEDecoder`. So the
two clients differ only in awaiting.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import TypeAdapter

from .errors import APIError, WaitTimeout, error_for
from .models import (
    AcceptedCancel, AcceptedDecision, Batch, CancelledBatch, CreatedBatch, CreatedRun, Event, Message,
    PendingCall, RerunAccepted, Run, RunList, Schedule, TriggeredRun,
)

DEFAULT_URL = "http://localhost:8080"
"""The gateway ``stepwise dev`` serves by default."""

DEFAULT_TIMEOUT = 60.0
"""Seconds a request may take; a batch of 10 000 runs needs a while."""

STREAM_READ_TIMEOUT = 60.0
"""Seconds an event stream may stay silent: the gateway sends a heartbeat
every 15 s, so a longer silence is a dead connection, which is resumed."""

JSONL = "application/x-ndjson"


def settings(base_url: str | None, api_key: str | None) -> tuple[str, dict[str, str]]:
    """settings returns the base URL and the headers every request carries.

    Unset, they are read from STEPWISE_URL and STEPWISE_API_KEY; without
    either, the gateway of ``stepwise dev`` and no key.
    """
    url = (base_url or os.environ.get("STEPWISE_URL") or DEFAULT_URL).rstrip("/")
    key = api_key if api_key is not None else os.environ.get("STEPWISE_API_KEY")
    headers = {"Accept": "application/json", "User-Agent": "stepwise-client-python"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return url, headers


class Base:
    """Base holds what both clients share: the gateway's URL, the headers
    every request carries and the httpx client (theirs, or one of ours that
    close releases)."""

    def __init__(self, base_url: str | None, api_key: str | None, http: Any, make_http: Any) -> None:
        self._url, self._headers = settings(base_url, api_key)
        self._owned = http is None
        self._http = http or make_http()

    def _request(self, call: Call) -> tuple[str, str, dict[str, Any]]:
        """_request returns the method, URL and httpx arguments of call."""
        kw = call.kwargs()
        kw["headers"] = {**self._headers, **kw["headers"]}
        return call.method, self._url + call.path, kw

    def _events(self, run_id: str, after: str | None) -> dict[str, Any]:
        return {
            "method": "GET",
            "url": f"{self._url}/v1/runs/{seg(run_id)}/events",
            "headers": {**self._headers, **events_headers(after)},
            "timeout": httpx.Timeout(self._http.timeout.connect, read=STREAM_READ_TIMEOUT),
        }


@dataclass(frozen=True)
class Call:
    """One request of the API: its method, path, query and body, and
    ``into``, what reads its answer's JSON into its model."""

    method: str
    path: str
    into: Callable[[Any], Any]
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    content: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def kwargs(self) -> dict[str, Any]:
        """kwargs returns the arguments of httpx's ``request`` for the call."""
        out: dict[str, Any] = {
            "params": {k: v for k, v in self.params.items() if v is not None},
            "headers": self.headers,
        }
        if self.json is not None:
            out["json"] = self.json
        if self.content is not None:
            out["content"] = self.content
        return out


def seg(value: str) -> str:
    """seg quotes one path segment (a run or batch id)."""
    return quote(value, safe="")


def decode(response: httpx.Response, call: Call) -> Any:
    """decode returns the model of a successful answer to call, or raises
    its APIError."""
    if response.is_success:
        return call.into(response.json() if response.content else None)
    raise error_of(response)


def error_of(response: httpx.Response) -> APIError:
    """error_of returns the exception of an error answer (read in full)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict) or not isinstance(body.get("error"), dict):
        body = {"error": {"message": response.text.strip()[:500]}}
    return error_for(response.status_code, body)


_MESSAGES = TypeAdapter(list[Message])
_PENDING = TypeAdapter(list[PendingCall])
_SCHEDULES = TypeAdapter(list[Schedule])


def create_run(
    agent: str, input: Any, run_id: str | None, model: Any, metadata: Any, inference: str | None = None,
) -> Call:
    return Call("POST", "/v1/runs", CreatedRun.model_validate,
                json=run_body(agent, input, run_id, model, metadata, inference))


def run_body(
    agent: str, input: Any, run_id: str | None, model: Any, metadata: Any, inference: str | None = None,
) -> dict[str, Any]:
    """run_body is the body of POST /v1/runs (and of a RunRequested) with
    the fields given."""
    body: dict[str, Any] = {"agent": agent, "input": input}
    for k, v in (("run_id", run_id), ("model", model), ("metadata", metadata), ("inference", inference)):
        if v is not None:
            body[k] = v
    return body


def get_run(run_id: str) -> Call:
    return Call("GET", f"/v1/runs/{seg(run_id)}", Run.model_validate)


def messages(run_id: str) -> Call:
    return Call("GET", f"/v1/runs/{seg(run_id)}/messages", lambda j: _MESSAGES.validate_python(j["messages"]))


@dataclass(frozen=True)
class RunFilter:
    """RunFilter is what GET /v1/runs searches by: each field a query
    parameter, ``meta`` the metadata values of keys the configuration
    declares searchable (``runs.searchable_metadata``), ``since`` and
    ``until`` RFC 3339 times of creation."""

    status: str | None = None
    agent: str | None = None
    tenant: str | None = None
    batch_id: str | None = None
    termination: str | None = None
    since: str | None = None
    until: str | None = None
    meta: Mapping[str, str] | None = None

    def params(self) -> dict[str, Any]:
        """params are the filter's query parameters."""
        out: dict[str, Any] = {"status": self.status, "agent": self.agent, "tenant": self.tenant,
                               "batch_id": self.batch_id, "termination": self.termination,
                               "since": self.since, "until": self.until}
        out.update({f"meta.{k}": v for k, v in (self.meta or {}).items()})
        return out


def list_runs(f: RunFilter, limit: int | None, cursor: str | None) -> Call:
    return Call("GET", "/v1/runs", RunList.model_validate,
                params={**f.params(), "limit": limit, "cursor": cursor or None})


def cancel_run(run_id: str, reason: str | None, decided_by: str | None) -> Call:
    return Call("POST", f"/v1/runs/{seg(run_id)}/cancel", AcceptedCancel.model_validate,
                json=cancel_body(reason, decided_by))


def fork_run(
    run_id: str, from_step: int, new_run_id: str | None, input: str | None, model: Any, metadata: Any,
) -> Call:
    body: dict[str, Any] = {"from_step": from_step}
    for k, v in (("run_id", new_run_id), ("input", input), ("model", model), ("metadata", metadata)):
        if v is not None:
            body[k] = v
    return Call("POST", f"/v1/runs/{seg(run_id)}/fork", CreatedRun.model_validate, json=body)


def rerun(filter: Mapping[str, Any], request_id: str | None) -> Call:
    body: dict[str, Any] = {"filter": {k: v for k, v in filter.items() if v is not None}}
    if request_id is not None:
        body["request_id"] = request_id
    return Call("POST", "/v1/runs/rerun", RerunAccepted.model_validate, json=body)


def create_schedule(
    run: Mapping[str, Any], cron: str | None, every: str | None, schedule_id: str | None,
    timezone: str | None, overlap: str | None, catchup_window: str | None,
) -> Call:
    body: dict[str, Any] = {"run": dict(run)}
    for k, v in (("cron", cron), ("every", every), ("schedule_id", schedule_id), ("timezone", timezone),
                 ("overlap", overlap), ("catchup_window", catchup_window)):
        if v is not None:
            body[k] = v
    return Call("POST", "/v1/schedules", Schedule.model_validate, json=body)


def list_schedules() -> Call:
    return Call("GET", "/v1/schedules", lambda j: _SCHEDULES.validate_python(j["schedules"]))


def get_schedule(schedule_id: str) -> Call:
    return Call("GET", f"/v1/schedules/{seg(schedule_id)}", Schedule.model_validate)


def change_schedule(schedule_id: str, action: str) -> Call:
    """change_schedule is POST /v1/schedules/{id}/pause or resume."""
    return Call("POST", f"/v1/schedules/{seg(schedule_id)}/{action}", Schedule.model_validate)


def trigger_schedule(schedule_id: str, run_id: str | None) -> Call:
    return Call("POST", f"/v1/schedules/{seg(schedule_id)}/trigger", TriggeredRun.model_validate,
                json={"run_id": run_id} if run_id is not None else None)


def delete_schedule(schedule_id: str) -> Call:
    return Call("DELETE", f"/v1/schedules/{seg(schedule_id)}", lambda _: None)


def submit_batch(
    runs: Iterable[Mapping[str, Any]] | str | bytes,
    token_budget: int | None,
    cost_budget: float | None,
    inference: str | None = None,
) -> Call:
    if isinstance(runs, str):
        body = runs.encode()
    elif isinstance(runs, bytes):
        body = runs
    else:
        body = b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in runs)
    return Call(
        "POST", "/v1/runs/batch", CreatedBatch.model_validate,
        params={"token_budget": token_budget, "cost_budget": cost_budget, "inference": inference},
        content=body, headers={"Content-Type": JSONL},
    )


def get_batch(batch_id: str) -> Call:
    return Call("GET", f"/v1/batches/{seg(batch_id)}", Batch.model_validate)


def cancel_batch(batch_id: str, reason: str | None, decided_by: str | None) -> Call:
    return Call("POST", f"/v1/batches/{seg(batch_id)}/cancel", CancelledBatch.model_validate,
                json=cancel_body(reason, decided_by))


def cancel_body(reason: str | None, decided_by: str | None) -> dict[str, str]:
    return {k: v for k, v in (("reason", reason), ("decided_by", decided_by)) if v is not None}


def decide(
    run_id: str, call_id: str, action: str, payload: Any, args_hash: str | None,
    decision_id: str | None, decided_by: str | None, reason: str | None,
) -> Call:
    body: dict[str, Any] = {"call_id": call_id, "action": action}
    for k, v in (("payload", payload), ("args_hash", args_hash), ("decision_id", decision_id),
                 ("decided_by", decided_by), ("reason", reason)):
        if v is not None:
            body[k] = v
    return Call("POST", f"/v1/runs/{seg(run_id)}/decisions", AcceptedDecision.model_validate, json=body)


def pending(agent: str | None, tool: str | None, run_id: str | None, limit: int | None) -> Call:
    return Call("GET", "/v1/pending", lambda j: _PENDING.validate_python(j["pending"]),
                params={"agent": agent, "tool": tool, "run_id": run_id, "limit": limit})


def events_headers(after: str | None) -> dict[str, str]:
    headers = {"Accept": "text/event-stream"}
    if after:
        headers["Last-Event-ID"] = after
    return headers


def batch_finished(b: Batch) -> bool:
    """batch_finished reports whether every run of b is done (or expired)."""
    return b.counts.get("done", 0) + b.expired >= b.total


class Progress:
    """Progress tells a batch's readings that moved on (its counts, reasons
    or expired runs, not its usage) from repeats."""

    def __init__(self) -> None:
        self._seen: tuple[Any, ...] | None = None

    def changed(self, b: Batch) -> bool:
        now = (tuple(sorted(b.counts.items())), tuple(sorted(b.reasons.items())), b.expired)
        changed, self._seen = now != self._seen, now
        return changed


class Deadline:
    """Deadline raises WaitTimeout once timeout seconds have passed (never
    when timeout is None)."""

    def __init__(self, timeout: float | None) -> None:
        self._timeout = timeout
        self._at = None if timeout is None else time.monotonic() + timeout

    def check(self, what: str) -> None:
        if self._at is not None and time.monotonic() >= self._at:
            raise WaitTimeout(f"{what} after {self._timeout}s")


class Resumption:
    """Resumption keeps the books of a resumable event stream: the id to
    resume after and the connections that failed in a row.

    Per connection: ``opened`` with its Last-Event-ID, ``seen`` for each
    event (True once the run's last one came), ``dropped`` on a transport
    error (the seconds to wait before reconnecting, or None once
    ``reconnects`` failed in a row: re-raise then), and ``closed`` when the
    server ended it (True when a resumption brought nothing more: stop).
    """

    def __init__(self, last_event_id: str | None, reconnects: int) -> None:
        self.after = last_event_id
        self._reconnects = reconnects
        self._failures = 0
        self._got = False

    def opened(self) -> str | None:
        self._got = False
        return self.after

    def seen(self, ev: Event) -> bool:
        self._got, self._failures, self.after = True, 0, ev.id
        return ends(ev)

    def dropped(self) -> float | None:
        self._failures += 1
        return min(self._failures, 5) if self._failures <= self._reconnects else None

    def closed(self) -> bool:
        return not self._got


def ends(ev: Event) -> bool:
    """ends reports whether ev is a run's last event: run.finished, unless
    its reason is suspended (the run waits for a decision and goes on)."""
    if ev.type != "run.finished":
        return False
    data = ev.data
    return not (isinstance(data, dict) and data.get("reason") == "suspended")


class SSEDecoder:
    """SSEDecoder turns the lines of a Server-Sent Events stream into events.

    Feed it each line (without its line break); it returns an Event when a
    blank line completes one, else None. Comments (the heartbeats) and
    ``retry`` lines are skipped; an event's ``id`` is the SSE id, the one to
    resume after.
    """

    def __init__(self) -> None:
        self._id = ""
        self._data: list[str] = []

    def feed(self, line: str) -> Event | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "id":
            self._id = value
        elif name == "data":
            self._data.append(value)
        return None

    def _dispatch(self) -> Event | None:
        if not self._data:
            return None
        ev = json.loads("\n".join(self._data))
        self._data = []
        if self._id:
            ev["id"] = self._id
        return Event.model_validate(ev)
