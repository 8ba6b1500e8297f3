"""The JSON the stepwise gateway answers with, as TypedDicts.

Each type is the object a route returns, key for key, as the README's "HTTP
API" section and pipeline/gateway describe it. A value is the decoded JSON
itself: keys the type marks optional are absent when the gateway leaves them
out, times are RFC 3339 strings, and ``arguments``, ``result``, ``payload``,
``metadata`` and an event's ``data`` are whatever JSON they hold. Keys a newer
gateway adds are kept, not dropped.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

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
"""The actions ``POST /v1/runs/{id}/decisions`` takes."""


class _TerminationRequired(TypedDict):
    reason: TerminationReason


class Termination(_TerminationRequired, total=False):
    """Why a run ended; ``code`` and ``detail`` when the reason has them."""

    code: str
    detail: str


class _UsageRequired(TypedDict):
    input_tokens: int
    output_tokens: int


class Usage(_UsageRequired, total=False):
    """The tokens a run (or a batch's runs) spent; ``cost_usd`` with prices."""

    cost_usd: float


class _RunSummaryRequired(TypedDict):
    run_id: str
    agent: str
    status: RunStatus
    step: int
    usage: Usage
    created_at: str
    updated_at: str


class RunSummary(_RunSummaryRequired, total=False):
    """A run as ``GET /v1/runs`` lists it."""

    termination: Termination
    metadata: Any
    batch_id: str


class _ParkingRequired(TypedDict):
    ticket: str
    reason: str
    args_hash: str
    resume_mode: ResumeMode
    parked_at: str


class Parking(_ParkingRequired, total=False):
    """What a parked call waits with; it stays after the decision."""

    deadline: str
    on_timeout: Literal["resume", "cancel"]


class _DecisionRequired(TypedDict):
    decision_id: str
    action: str
    decided_by: str
    reason: str
    timeout: bool


class Decision(_DecisionRequired, total=False):
    """The decision applied to a call; ``timeout`` when the sweeper applied it."""

    signed_by: str


class _ToolCallRequired(TypedDict):
    call_id: str
    step: int
    tool: str
    status: ToolCallStatus
    arguments: Any


class ToolCall(_ToolCallRequired, total=False):
    """One tool call of a run."""

    result: Any
    error: str
    gate: Literal["allow", "block", "suspend", "set_result"]
    parking: Parking
    decision: Decision
    original_arguments: Any


class _RunCalls(TypedDict):
    tool_calls: list[ToolCall]


class Run(RunSummary, _RunCalls, total=False):
    """A run as ``GET /v1/runs/{id}`` answers: its summary, every tool call
    in step and call order, and ``state``, the run's persistent plugin
    state, when it has any.
    """

    state: dict[str, Any]


class RunList(TypedDict):
    """A page of ``GET /v1/runs``; ``next_cursor`` is ``""`` on the last."""

    runs: list[RunSummary]
    next_cursor: str


class CreatedRun(TypedDict):
    """The answer of ``POST /v1/runs``."""

    run_id: str
    status: RunStatus


class _MessageToolCall(TypedDict):
    id: str
    name: str
    arguments: Any


class _MessageRequired(TypedDict):
    role: str
    content: str


class Message(_MessageRequired, total=False):
    """One message of a run's conversation."""

    tool_calls: list[_MessageToolCall]
    tool_call_id: str


class _EventRequired(TypedDict):
    id: str
    type: str
    run_id: str
    step: int
    at: str


class Event(_EventRequired, total=False):
    """One entry of a run's event log; ``id`` resumes a stream after it."""

    call_id: str
    data: Any


class CreatedBatch(TypedDict, total=False):
    """The answer of ``POST /v1/runs/batch``.

    ``run_ids`` are in item order. ``batch_id`` is absent when the batch
    created or replayed no run for the key's tenant.
    """

    batch_id: str
    run_ids: list[str]


class _BatchRequired(TypedDict):
    batch_id: str
    total: int
    counts: dict[str, int]
    reasons: dict[str, int]
    usage: Usage


class Batch(_BatchRequired, total=False):
    """How far a batch's runs are: ``counts`` by status, ``reasons`` of the done.

    ``expired`` counts runs gone with the retention.
    """

    expired: int


class CancelledBatch(TypedDict):
    """The answer of ``POST /v1/batches/{id}/cancel``."""

    batch_id: str
    cancelled: int
    status: Literal["accepted"]


class _PendingCallWhere(TypedDict):
    run_id: str
    agent: str
    call_id: str
    step: int
    tool: str
    arguments: Any


class PendingCall(_PendingCallWhere, Parking):
    """A parked call awaiting a decision, as ``GET /v1/pending`` lists it:
    where it is, its arguments, and its parking's fields."""


class AcceptedDecision(TypedDict):
    """The answer of ``POST /v1/runs/{id}/decisions``."""

    decision_id: str
    run_id: str
    call_id: str
    status: Literal["accepted"]


class AcceptedCancel(TypedDict):
    """The answer of ``POST /v1/runs/{id}/cancel``."""

    run_id: str
    decision_id: str
    status: Literal["accepted"]


class _DecisionOutcomeRequired(TypedDict):
    v: int
    run_id: str
    decision_id: str
    outcome: Literal["applied", "held", "rejected"]


class DecisionOutcome(_DecisionOutcomeRequired, total=False):
    """What became of a decision: a ``DecisionOutcome`` v1 message of the
    ``decision-outcomes`` topic (docs/topics.md), read by
    :class:`stepwise_client.kafka.DecisionOutcomes`. ``call_id`` is absent
    for ``cancel_run``, ``reason`` for ``applied``."""

    call_id: str
    reason: str
