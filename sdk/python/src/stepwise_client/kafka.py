"""Deciding parked calls on Kafka, with confluent-kafka.

Needs the ``kafka`` extra: ``pip install './sdk/python[kafka]'``.
:class:`DecisionProducer` publishes ``Decision`` v1 messages to
``<prefix>decisions``, keyed by ``run_id`` and signed when given a producer
and key (docs/topics.md, "Decision" and "Signed decisions");
:class:`DecisionOutcomes` reads what became of them from
``<prefix>decision-outcomes``::

    from stepwise_client.kafka import DecisionOutcomes, DecisionProducer

    with DecisionProducer("localhost:9092", producer="erp", key=ERP_KEY) as p:
        sent = p.decide("r-1", "c-1", "resume", decided_by="erp")
    with DecisionOutcomes("localhost:9092") as outcomes:
        for o in outcomes:
            if o["decision_id"] == sent["decision_id"]:
                print(o["outcome"], o.get("reason"))
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

try:
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
except ImportError as e:  # the HTTP client needs only httpx
    raise ImportError("stepwise_client.kafka needs confluent-kafka: pip install 'stepwise-client[kafka]'") from e

from .models import DecisionAction, DecisionOutcome
from .signature import sign

DEFAULT_PREFIX = "stepwise."
"""The topic prefix of a deployment whose configuration names none."""


class DeliveryError(Exception):
    """DeliveryError is raised by :meth:`DecisionProducer.flush` when the
    broker did not take some decisions; ``failed`` maps each one's
    ``decision_id`` to why."""

    def __init__(self, failed: dict[str, str]):
        super().__init__(f"{len(failed)} decision(s) not delivered: {failed}")
        self.failed = failed


class DecisionProducer:
    """DecisionProducer publishes decisions to ``<topic_prefix>decisions``.

    With ``producer`` and ``key`` each decision is signed as that producer
    (what ``decisions.require_signature`` needs); without them it goes
    unsigned. ``config`` adds or overrides confluent-kafka settings
    (security, ...). Messages are partitioned as stepwise's own producers
    partition them (murmur2), so one run's decisions keep their order.
    """

    def __init__(
        self, bootstrap_servers: str, topic_prefix: str = DEFAULT_PREFIX, *,
        producer: str | None = None, key: bytes | str | None = None,
        config: dict[str, Any] | None = None,
    ):
        if (producer is None) != (key is None):
            raise ValueError("DecisionProducer: give both producer and key to sign, or neither")
        self._signer = (producer, key) if producer is not None else None
        self.topic = (topic_prefix or DEFAULT_PREFIX) + "decisions"
        self._failed: dict[str, str] = {}
        self._kafka = Producer({
            "bootstrap.servers": bootstrap_servers,
            "partitioner": "murmur2_random",
            "enable.idempotence": True,
            **(config or {}),
        })

    def decide(
        self, run_id: str, call_id: str, action: DecisionAction, *,
        payload: Any = None, args_hash: str | None = None, decision_id: str | None = None,
        decided_by: str | None = None, reason: str | None = None,
    ) -> dict[str, Any]:
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

    def _publish(self, fields: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"v": 1, **{k: v for k, v in fields.items() if v is not None}}
        if self._signer is not None:
            message = sign(message, *self._signer)
        value = json.dumps(message, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
        decision_id = message["decision_id"]

        def delivered(err: KafkaError | None, _msg: Any) -> None:
            if err is not None:
                self._failed[decision_id] = err.str()

        self._kafka.produce(self.topic, value=value, key=message["run_id"].encode(), on_delivery=delivered)
        self._kafka.poll(0)
        return message

    def flush(self, timeout: float = 30.0) -> None:
        """flush waits up to timeout seconds until every decision is
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

    def __enter__(self) -> DecisionProducer:
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if exc_type is None:
            self.close()


class DecisionOutcomes:
    """DecisionOutcomes iterates the ``DecisionOutcome`` v1 messages of
    ``<topic_prefix>decision-outcomes``.

    ``group_id`` names the consumer group (a fresh one, reading from the
    start of the topic, when None, so each instance sees every outcome).
    Iteration yields each outcome as it arrives and stops after ``idle``
    seconds without one (never when ``idle`` is None). Delivery is at least
    once: keep the first per (``decision_id``, ``outcome``).
    """

    def __init__(
        self, bootstrap_servers: str, topic_prefix: str = DEFAULT_PREFIX, *,
        group_id: str | None = None, idle: float | None = None, config: dict[str, Any] | None = None,
    ):
        self.topic = (topic_prefix or DEFAULT_PREFIX) + "decision-outcomes"
        self.idle = idle
        self._kafka = Consumer({
            "bootstrap.servers": bootstrap_servers,
            "group.id": group_id or f"stepwise-client-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            **(config or {}),
        })
        self._kafka.subscribe([self.topic])

    def __iter__(self) -> Iterator[DecisionOutcome]:
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
            yield json.loads(msg.value())

    def close(self) -> None:
        """close leaves the consumer group."""
        self._kafka.close()

    def __enter__(self) -> DecisionOutcomes:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()
