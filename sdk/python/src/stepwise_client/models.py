"""The JSON stepwise answers and publishes, as pydantic models.

Each model is the object a route returns (or a topic carries), field for
field, as the README's "HTTP API" section, pipeline/gateway and
docs/topics.md describe it; read it by attribute: ``run.status``,
``run.termination.reason``, ``run.tool_calls[0].decision.signed_by``. A
field the answer leaves out is ``None``; times are RFC 3339 strings; and
``arguments``, ``result``, ``payload``, ``metadata`` and an event's ``data``
are whatever JSON they hold. Fields a newer gateway adds are kept, readable
by attribute too. ``model_dump()`` gives the JSON back as it came: the
fields it held, none it left out.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

RunStatus = Literal["created", "running", "waiting", "done"]
"""A run's status."""

ToolCallStatus = Literal[
    "new", "running", "suspended", "resuming", "succeeded", "failed", "cancelled"
]
"""A tool call's status."""

TerminationReason = Literal[
    "natural_end", "behavior_requested", "stopped", "cancelled", "blocked", "error", "suspended"
]
"""Why a run ended (``suspended`` while it waits for a decision)."""

ResumeMode = Literal["replay", "pass_decision_to_tool", "use_decision_as_result"]
"""What a resume decision's payload becomes for a parked call."""

DecisionAction = Literal["resume", "cancel"]
"""The actions a decision takes, over HTTP or on Kafka."""


class Model(BaseModel):
    """Model is the base of every model here: fields it does not name are
    kept (``extra="allow"``), and ``model_dump`` and ``model_dump_json``
    leave out the fields the JSON did not hold (``exclude_unset`` is True
    unless asked otherwise), so they give back what came."""

    model_config = ConfigDict(extra="allow")

    def model_dump(self, *, exclude_unset: bool = True, **kwargs: Any) -> dict[str, Any]:
        return super().model_dump(exclude_unset=exclude_unset, **kwargs)

    def model_dump_json(self, *, exclude_unset: bool = True, **kwargs: Any) -> str:
        return super().model_dump_json(exclude_unset=exclude_unset, **kwargs)


class Termination(Model):
    """Why a run ended; ``code`` and ``detail`` when the reason has them."""

    reason: TerminationReason
    code: str | None = None
    detail: str | None = None


class Usage(Model):
    """The tokens a run (or a batch's runs) spent; ``cost_usd`` with prices."""

    input_tokens: int
    output_tokens: int
    cost_usd: float | None = None


class RunSummary(Model):
    """A run as ``GET /v1/runs`` lists it."""

    run_id: str
    agent: str
    status: RunStatus
    step: int
    usage: Usage
    created_at: str
    updated_at: str
    termination: Termination | None = None
    metadata: Any = None
    batch_id: str | None = None
    current_agent: str | None = None
    """The agent that holds the run now: ``agent`` until a handoff gave it to another."""
    inference: str | None = None
    """The inference mode the run asked for or was given (``batch``, ``live``); None: its model's default."""


class Parking(Model):
    """What a parked call waits with; it stays after the decision."""

    ticket: str
    reason: str
    args_hash: str
    resume_mode: ResumeMode
    parked_at: str
    deadline: str | None = None
    on_timeout: DecisionAction | None = None


class CallDecision(Model):
    """The decision applied to a call; ``timeout`` when the sweeper applied
    it, ``signed_by`` the producer whose signature it carried."""

    decision_id: str
    action: str
    decided_by: str
    reason: str
    timeout: bool
    signed_by: str | None = None


class ToolCall(Model):
    """One tool call of a run."""

    call_id: str
    step: int
    tool: str
    status: ToolCallStatus
    arguments: Any = None
    result: Any = None
    error: str | None = None
    gate: Literal["allow", "block", "suspend", "set_result"] | None = None
    parking: Parking | None = None
    decision: CallDecision | None = None
    original_arguments: Any = None


class Run(RunSummary):
    """A run as ``GET /v1/runs/{id}`` answers: its summary, every tool call
    in step and call order, and ``state``, the run's persistent plugin
    state, when it has any.
    """

    tool_calls: list[ToolCall]
    state: dict[str, Any] | None = None


class RunList(Model):
    """A page of ``GET /v1/runs``; ``next_cursor`` is ``""`` on the last."""

    runs: list[RunSummary]
    next_cursor: str


class CreatedRun(Model):
    """The answer of ``POST /v1/runs``."""

    run_id: str
    status: RunStatus


class RerunAccepted(Model):
    """The answer of ``POST /v1/runs/rerun``: the batch the new runs join
    and how many were requested."""

    batch_id: str
    requested: int
    status: Literal["accepted"]


class ScheduledRun(Model):
    """The run a schedule starts at each tick: a ``POST /v1/runs`` body."""

    agent: str
    input: Any
    model: Any = None
    metadata: Any = None


class Schedule(Model):
    """A schedule, as ``GET /v1/schedules/{id}`` answers it: ``cron`` (in
    ``timezone``) or ``every``, its overlap policy and catch-up window, the
    run it starts, and ``next_tick`` unless paused."""

    schedule_id: str
    overlap: Literal["skip", "buffer_one", "allow_all"]
    catchup_window: str
    run: ScheduledRun
    paused: bool
    created_at: str
    updated_at: str
    cron: str | None = None
    every: str | None = None
    timezone: str | None = None
    next_tick: str | None = None
    buffered_tick: str | None = None
    last_run_id: str | None = None


class TriggeredRun(Model):
    """The answer of ``POST /v1/schedules/{id}/trigger``: the run started now."""

    schedule_id: str
    run_id: str


class MessageToolCall(Model):
    """A tool call an assistant message proposes."""

    id: str
    name: str
    arguments: Any = None


class Message(Model):
    """One message of a run's conversation."""

    role: str
    content: str
    tool_calls: list[MessageToolCall] | None = None
    tool_call_id: str | None = None


class Event(Model):
    """One entry of a run's event log; ``id`` resumes a stream after it."""

    id: str
    type: str
    run_id: str
    step: int
    at: str
    call_id: str | None = None
    data: Any = None


class CreatedBatch(Model):
    """The answer of ``POST /v1/runs/batch``.

    ``run_ids`` are in item order. ``batch_id`` is None when the batch
    created or replayed no run for the key's tenant.
    """

    batch_id: str | None = None
    run_ids: list[str] = []


class Batch(Model):
    """How far a batch's runs are: ``counts`` by status, ``reasons`` of the done.

    ``expired`` counts runs gone with the retention.
    """

    batch_id: str
    total: int
    counts: dict[str, int]
    reasons: dict[str, int]
    usage: Usage
    expired: int = 0


class CancelledBatch(Model):
    """The answer of ``POST /v1/batches/{id}/cancel``."""

    batch_id: str
    cancelled: int
    status: Literal["accepted"]


class PendingCall(Parking):
    """A parked call awaiting a decision, as ``GET /v1/pending`` lists it:
    where it is, its arguments, and its parking's fields."""

    run_id: str
    agent: str
    call_id: str
    step: int
    tool: str
    arguments: Any = None


class AcceptedDecision(Model):
    """The answer of ``POST /v1/runs/{id}/decisions``."""

    decision_id: str
    run_id: str
    call_id: str
    status: Literal["accepted"]


class AcceptedCancel(Model):
    """The answer of ``POST /v1/runs/{id}/cancel``."""

    run_id: str
    decision_id: str
    status: Literal["accepted"]


# Kafka messages (docs/topics.md).


class TopicMessage(Model):
    """TopicMessage is what every message on stepwise's topics has: its
    schema version ``v`` and the ``run_id`` it is keyed by."""

    v: int
    run_id: str


class SignedMessage(TopicMessage):
    """SignedMessage is a message other systems publish, signed as
    ``producer`` when ``signature`` is set (docs/topics.md, "Signed
    decisions")."""

    producer: str | None = None
    signature: str | None = None


class Decision(SignedMessage):
    """A ``Decision`` v1 message of the ``decisions`` topic, as
    :class:`stepwise_client.kafka.DecisionProducer` sends it: resume or
    cancel the parked call ``call_id`` of run ``run_id``; ``producer`` and
    ``signature`` when signed."""

    decision_id: str
    call_id: str
    action: DecisionAction
    payload: Any = None
    args_hash: str | None = None
    decided_by: str | None = None
    reason: str | None = None


class DecisionOutcome(TopicMessage):
    """What became of a decision: a ``DecisionOutcome`` v1 message of the
    ``decision-outcomes`` topic, read by
    :class:`stepwise_client.kafka.DecisionOutcomes`. ``call_id`` is None
    for a run's cancel, ``reason`` for ``applied``."""

    decision_id: str
    outcome: Literal["applied", "held", "rejected"]
    call_id: str | None = None
    reason: str | None = None


class RunRequested(SignedMessage):
    """A ``RunRequested`` v1 message of the ``run-requests`` topic, as
    :class:`stepwise_client.kafka.RunRequestProducer` sends it: the body of
    ``POST /v1/runs`` with ``run_id`` required, the batch it joins, and
    ``producer`` and ``signature`` when signed."""

    agent: str
    input: Any = None
    model: Any = None
    metadata: Any = None
    batch_id: str | None = None


class RunRequestOutcome(TopicMessage):
    """What became of a run request: a ``RunRequestOutcome`` v1 message of
    the ``run-request-outcomes`` topic, read by
    :class:`stepwise_client.kafka.RunRequestOutcomes`. ``created`` (the run
    exists and is queued), ``duplicate`` (seen before: the run is
    unchanged) or ``rejected`` with ``code``, the error code ``POST
    /v1/runs`` answers for the same refusal, and ``reason``, its message."""

    outcome: Literal["created", "duplicate", "rejected"]
    batch_id: str | None = None
    code: str | None = None
    reason: str | None = None


class ApprovalRequested(TopicMessage):
    """A parked call announced on the ``approval-requests`` topic
    (``ApprovalRequested`` v1), read by
    :class:`stepwise_client.kafka.ApprovalRequests`: decide it with a
    :class:`Decision` quoting its ``run_id``, ``call_id`` and
    ``args_hash``; its close is that call's :class:`DecisionOutcome`.
    ``arguments_omitted`` or ``metadata_omitted`` say they were left out to
    fit the broker's message size (``GET /v1/runs/{id}`` has them)."""

    call_id: str
    step: int
    tool: str
    args_hash: str
    ticket: str
    reason: str
    resume_mode: ResumeMode
    parked_at: str
    agent: str
    arguments: Any = None
    deadline: str | None = None
    on_timeout: DecisionAction | None = None
    tenant: str | None = None
    metadata: Any = None
    arguments_omitted: bool = False
    metadata_omitted: bool = False
