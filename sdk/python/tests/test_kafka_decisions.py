"""Decisions published on Kafka from Python: signed as producer erp, they
resume a parked call; unsigned or signed with the wrong key, they are
rejected and the call stays parked. tests/stepwise.yaml requires signatures."""

from __future__ import annotations

from stepwise_client import Client
from stepwise_client.kafka import DecisionOutcomes, DecisionProducer
from stepwise_client.models import DecisionOutcome, PendingCall

from conftest import Dev, first, until


def parked_refund(client: Client, run_id: str) -> PendingCall:
    client.runs.create(agent="refunds", input="Refund order A-1001", run_id=run_id)
    return until("the refund parks", lambda: client.pending(run_id=run_id))[0]


def outcome_of(dev: Dev, decision_id: str) -> DecisionOutcome:
    """outcome_of reads decision-outcomes until decision_id's outcome."""
    with DecisionOutcomes(dev.kafka, idle=30) as outcomes:
        return first(outcomes, lambda o: o.decision_id == decision_id, f"outcome of decision {decision_id}")


def test_a_signed_decision_from_kafka_resumes_the_parked_call_and_the_run_finishes(
    dev: Dev, client: Client, run_id: str,
):
    call = parked_refund(client, run_id)

    with DecisionProducer(dev.kafka, producer="erp", key=dev.signing_key) as decisions:
        sent = decisions.decide(run_id, call.call_id, "resume", args_hash=call.args_hash,
                                decided_by="alice", reason="fine", decision_id=f"{run_id}-k1")

    assert sent.producer == "erp" and len(sent.signature) == 64
    assert outcome_of(dev, f"{run_id}-k1").model_dump() == {
        "v": 1, "run_id": run_id, "decision_id": f"{run_id}-k1", "call_id": call.call_id, "outcome": "applied",
    }
    run = client.runs.wait(run_id, timeout=30)
    assert run.termination.reason == "natural_end"
    (refund,) = run.tool_calls
    assert refund.status == "succeeded"
    assert refund.decision.decision_id == f"{run_id}-k1"
    assert (refund.decision.decided_by, refund.decision.signed_by) == ("alice", "erp")


def test_an_unsigned_or_wrongly_signed_decision_from_kafka_is_rejected_and_the_call_stays_parked(
    dev: Dev, client: Client, run_id: str,
):
    """... until a rightly signed one, even with the forgery's decision_id
    (a forgery does not use it up), resumes it."""
    call = parked_refund(client, run_id)

    with DecisionProducer(dev.kafka) as unsigned, \
            DecisionProducer(dev.kafka, producer="erp", key="not-erp's-key") as forger:
        unsigned.decide(run_id, call.call_id, "resume", decision_id=f"{run_id}-unsigned")
        forger.decide(run_id, call.call_id, "resume", decision_id=f"{run_id}-forged")

    for decision_id in (f"{run_id}-unsigned", f"{run_id}-forged"):
        assert outcome_of(dev, decision_id).model_dump() == {
            "v": 1, "run_id": run_id, "decision_id": decision_id, "call_id": call.call_id,
            "outcome": "rejected", "reason": "signature",
        }
    assert client.runs.get(run_id).status == "waiting"
    assert [c.call_id for c in client.pending(run_id=run_id)] == [call.call_id]

    with DecisionProducer(dev.kafka, producer="erp", key=dev.signing_key) as decisions:
        decisions.decide(run_id, call.call_id, "resume", decision_id=f"{run_id}-forged")
    assert client.runs.wait(run_id, timeout=30).termination.reason == "natural_end"
