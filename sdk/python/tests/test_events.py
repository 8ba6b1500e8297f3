"""A run's events as Server-Sent Events, and resumed after an id."""

import httpx

from stepwise_client import Client

from conftest import Dev


def test_the_events_of_a_run_end_with_its_run_finished(client: Client, run_id: str):
    client.runs.create(agent="quick", input="Say hello", run_id=run_id)

    events = list(client.runs.events(run_id))

    types = [e.type for e in events]
    assert types[0] == "run.created"
    assert types[-1] == "run.finished"
    assert events[-1].data["reason"] == "natural_end"
    assert "tool_call.finished" in types
    assert all(e.run_id == run_id and e.id for e in events)


def test_events_resumed_from_a_last_event_id_are_the_rest_and_nothing_else(client: Client, run_id: str):
    client.runs.create(agent="quick", input="Say hello", run_id=run_id)
    every = list(client.runs.events(run_id))
    cut = len(every) // 2

    rest = list(client.runs.events(run_id, last_event_id=every[cut - 1].id))

    assert [e.id for e in rest] == [e.id for e in every[cut:]]


def test_events_resumed_after_the_last_event_end_at_once(client: Client, run_id: str):
    client.runs.create(agent="quick", input="Say hello", run_id=run_id)
    every = list(client.runs.events(run_id))

    assert list(client.runs.events(run_id, last_event_id=every[-1].id)) == []


class CutOnce(httpx.BaseTransport):
    """CutOnce passes requests to the real transport, but drops the first
    event stream after `after` events, as a network would."""

    def __init__(self, after: int) -> None:
        self.inner = httpx.HTTPTransport()
        self.after = after
        self.cut = False
        self.resumed_with: list[str | None] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        resp = self.inner.handle_request(request)
        if not request.url.path.endswith("/events"):
            return resp
        self.resumed_with.append(request.headers.get("Last-Event-ID"))
        if self.cut:
            return resp
        self.cut = True
        return httpx.Response(resp.status_code, headers=resp.headers, stream=_Cut(resp.stream, self.after))


class _Cut(httpx.SyncByteStream):
    def __init__(self, inner, after: int) -> None:
        self.inner, self.after = inner, after

    def __iter__(self):
        buf = b""
        for chunk in self.inner:
            buf += chunk
            while b"\n\n" in buf:
                block, buf = buf.split(b"\n\n", 1)
                if block.startswith(b"id:"):
                    if self.after == 0:
                        raise httpx.ReadError("connection cut by the test")
                    self.after -= 1
                yield block + b"\n\n"
        yield buf

    def close(self) -> None:
        self.inner.close()


def test_a_dropped_event_stream_is_resumed_from_the_last_event_id(dev: Dev, client: Client, run_id: str):
    client.runs.create(agent="quick", input="Say hello", run_id=run_id)
    every = list(client.runs.events(run_id))
    cut = CutOnce(after=3)

    with Client(dev.url, api_key=dev.key, http=httpx.Client(transport=cut)) as c:
        got = list(c.runs.events(run_id))

    assert [e.id for e in got] == [e.id for e in every]
    assert cut.resumed_with == [None, every[2].id]
