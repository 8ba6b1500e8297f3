"""stepwise on Kafka, with confluent-kafka: request runs, read approval
requests, publish signed decisions, and read what became of each.

Needs the ``kafka`` extra: ``pip install './sdk/python[kafka]'``. The
producers publish keyed by ``run_id`` and, given a producer name and key,
signed (docs/topics.md, "Signed decisions"):

- :class:`RunRequestProducer`: ``RunRequested`` v1 to ``<prefix>run-requests``;
- :class:`DecisionProducer`: ``Decision`` v1 to ``<prefix>decisions``.

The readers iterate a topic's messages as models:

- :class:`RunRequestOutcomes`: ``<prefix>run-request-outcomes``;
- :class:`ApprovalRequests`: ``<prefix>approval-requests``;
- :class:`DecisionOutcomes`: ``<prefix>decision-outcomes``.

An approval loop::

    from stepwise_client.kafka import ApprovalRequests, DecisionProducer

    with ApprovalRequests("localhost:9092", group_id="erp") as asks, \\
            DecisionProducer("localhost:9092", producer="erp", key=ERP_KEY) as decisions:
        for ask in asks:
            decisions.decide(ask.run_id, ask.call_id, "resume", args_hash=ask.args_hash)
            decisions.flush()
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, Generic, TypeVar

try:
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
except ImportError as e:  # the HTTP client needs only httpx
    raise ImportError("stepwise_client.kafka needs confluent-kafka: pip install 'stepwise-client[kafka]'") from e

from . import _core
from .models import (
    ApprovalRequested, Decision, DecisionAction, DecisionOutcome, Model, RunRequested, RunRequestOutcome,
)
from .signature import sign

DEFAULT_PREFIX = "stepwise."
"""The topic prefix of a deployment whose configuration names none."""

M = TypeVar("M", bound=Model)


class DeliveryError(Exception):
    """DeliveryError is raised by a producer's ``flush`` when the broker did
    not take some messages; ``failed`` maps each one's id (a decision's
    ``decision_id``, a run request's ``run_id``) to why."""

    def __init__(self, failed: dict[str, str]):
        super().__init__(f"{len(failed)} message(s) not delivered: {failed}")
        self.failed = failed


class _Publisher(Generic[M]):
    """_Publisher is what the producers share: it signs each message when
    given a producer and key, publishes it to ``<topic_prefix><topic>``
    keyed by ``run_id``, and keeps the books of deliveries for ``flush``.

    Messages are partitioned as stepwise's own producers partition them
    (murmur2), so one run's messages keep their order. ``config`` adds or
    overrides confluent-kafka settings (security, ...).
    """

    topic_name: ClassVar[str]
    message: type[M]
    id_field: ClassVar[str]

    def __init__(
        self, bootstrap_servers: str, topic_prefix: str = DEFAULT_PREFIX, *,
        producer: str | None = None, key: bytes | str | None = None,
        config: dict[str, Any] | None = None,
    ):
        if (producer is None) != (key is None):
            raise ValueError(f"{type(self).__name__}: give both producer and key to sign, or neither")
        self._signer = (producer, key) if producer is not None else None
        self.topic = (topic_prefix or DEFAULT_PREFIX) + self.topic_name
        self._failed: dict[str, str] = {}
        self._kafka = Producer({
            "bootstrap.servers": bootstrap_servers,
            "partitioner": "murmur2_random",
            "enable.idempotence": True,
            **(config or {}),
        })

    def _publish(self, fields: Mapping[str, Any]) -> M:
        message: dict[str, Any] = {"v": 1, **{k: v for k, v in fields.items() if v is not None}}
        if self._signer is not None:
            message = sign(message, *self._signer)
        value = json.dumps(message, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
        id_ = message[self.id_field]

        def delivered(err: KafkaError | None, _msg: Any) -> None:
            if err is not None:
                self._failed[id_] = err.str()

        self._kafka.produce(self.topic, value=value, key=message["run_id"].encode(), on_delivery=delivered)
        self._kafka.poll(0)
        return self.message.model_validate(message)

    def flush(self, timeout: float = 30.0) -> None:
        """flush waits up to timeout seconds until every message is
        delivered, and raises :class:`DeliveryError` naming those the broker
        refused or that are still waiting."""
        left = self._kafka.flush(timeout)
        failed, self._failed = self._failed, {}
        if left:
            failed["(queued)"] = f"{left} message(s) still waiting after {timeout}s"
        if failed:
            raise DeliveryError(failed)

    def close(self, timeout: float = 30.0) -> None:
        """close flushes (see :meth:`flush`)."""
        self.flush(timeout)

    def __enter__(self):
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if exc_type is None:
            self.close()


class DecisionProducer(_Publisher[Decision]):
    """DecisionProducer publishes decisions to ``<topic_prefix>decisions``.

    With ``producer`` and ``key`` each decision is signed as that producer
    (what ``decisions.require_signature`` needs); without them it goes
    unsigned. ``config`` adds or overrides confluent-kafka settings.
    """

    topic_name = "decisions"
    message = Decision
    id_field = "decision_id"

    def decide(
        self, run_id: str, call_id: str, action: DecisionAction, *,
        payload: Any = None, args_hash: str | None = None, decision_id: str | None = None,
        decided_by: str | None = None, reason: str | None = None,
    ) -> Decision:
        """decide publishes a decision to resume or cancel the parked call
        call_id of run run_id, and returns the message as sent.

        ``decision_id`` (a fresh one when None) makes it idempotent: send the
        same id again to retry. Quote the call's ``args_hash`` to have it
        rejected if the arguments differ. It is queued, not yet delivered:
        :meth:`flush` waits for the broker and raises what it refused.
        """
        if action not in ("resume", "cancel"):
            raise ValueError(f"decide: action {action!r} is not 'resume' or 'cancel'")
        return self._publish({
            "decision_id": decision_id or uuid.uuid4().hex, "run_id": run_id, "call_id": call_id,
            "action": action, "payload": payload, "args_hash": args_hash,
            "decided_by": decided_by, "reason": reason,
        })


class RunRequestProducer(_Publisher[RunRequested]):
    """RunRequestProducer requests runs on ``<topic_prefix>run-requests``.

    With ``producer`` and ``key`` each request is signed as that producer,
    as decisions are (with ``decisions.require_signature`` an unsigned one
    is rejected; a producer bound to a tenant requests that tenant's runs).
    ``config`` adds or overrides confluent-kafka settings.
    """

    topic_name = "run-requests"
    message = RunRequested
    id_field = "run_id"

    def request(
        self, agent: str, input: str | list[Mapping[str, Any]], *,
        run_id: str | None = None, batch_id: str | None = None,
        model: Mapping[str, Any] | None = None, metadata: Any = None,
    ) -> RunRequested:
        """request asks for a run of agent on input (text or messages), as
        ``POST /v1/runs`` would, and returns the message as sent.

        ``run_id`` (a fresh one when None) is the idempotency key: the same
        request again changes nothing, another body under it is rejected.
        ``batch_id`` puts the run in that batch (``GET /v1/batches/{id}``).
        Its answer comes on run-request-outcomes (:class:`RunRequestOutcomes`).
        It is queued, not yet delivered: :meth:`flush` waits for the broker
        and raises what it refused.
        """
        body = _core.run_body(agent, input, run_id or uuid.uuid4().hex, model, metadata)
        return self._publish({**body, "batch_id": batch_id})


class _Reader(Generic[M]):
    """_Reader is what the readers share: it iterates the messages of
    ``<topic_prefix><topic>`` as models.

    ``group_id`` names the consumer group (a fresh one, reading from the
    start of the topic, when None, so each instance sees every message).
    Iteration yields each message as it arrives and stops after ``idle``
    seconds without one (never when ``idle`` is None). Delivery is at least
    once. ``config`` adds or overrides confluent-kafka settings.
    """

    topic_name: ClassVar[str]
    message: type[M]

    def __init__(
        self, bootstrap_servers: str, topic_prefix: str = DEFAULT_PREFIX, *,
        group_id: str | None = None, idle: float | None = None, config: dict[str, Any] | None = None,
    ):
        self.topic = (topic_prefix or DEFAULT_PREFIX) + self.topic_name
        self.idle = idle
        self._kafka = Consumer({
            "bootstrap.servers": bootstrap_servers,
            "group.id": group_id or f"stepwise-client-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            **(config or {}),
        })
        self._kafka.subscribe([self.topic])

    def __iter__(self) -> Iterator[M]:
        while True:
            msg = self._kafka.poll(1.0 if self.idle is None else self.idle)
            if msg is None:
                if self.idle is None:
                    continue
                return
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(msg.error())
            yield self.message.model_validate_json(msg.value())

    def close(self) -> None:
        """close leaves the consumer group."""
        self._kafka.close()

    def __enter__(self):
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()


class DecisionOutcomes(_Reader[DecisionOutcome]):
    """DecisionOutcomes iterates the :class:`~stepwise_client.models.DecisionOutcome`
    v1 messages of ``<topic_prefix>decision-outcomes``: keep the first per
    (``decision_id``, ``outcome``)."""

    topic_name = "decision-outcomes"
    message = DecisionOutcome


class RunRequestOutcomes(_Reader[RunRequestOutcome]):
    """RunRequestOutcomes iterates the :class:`~stepwise_client.models.RunRequestOutcome`
    v1 messages of ``<topic_prefix>run-request-outcomes``: a request
    redelivered after its answer is answered again, as ``duplicate``."""

    topic_name = "run-request-outcomes"
    message = RunRequestOutcome


class ApprovalRequests(_Reader[ApprovalRequested]):
    """ApprovalRequests iterates the :class:`~stepwise_client.models.ApprovalRequested`
    v1 messages of ``<topic_prefix>approval-requests``, one per parking of
    a call: keep the first per (``run_id``, ``call_id``, ``parked_at``).
    Each is closed by its call's DecisionOutcome (:class:`DecisionOutcomes`):
    the decision applied, or stepwise's own ``timeout:<call_id>`` or
    ``cancel:<call_id>``."""

    topic_name = "approval-requests"
    message = ApprovalRequested
