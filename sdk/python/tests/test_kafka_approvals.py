"""The approval loop on Kafka alone: a parked call is announced once on
approval-requests, a signed DecisionProducer decision quoting it is
applied, and the run finishes."""

from __future__ import annotations

from stepwise_client import Client
from stepwise_client.kafka import ApprovalRequests, DecisionOutcomes, DecisionProducer
from stepwise_client.models import ApprovalRequested

from conftest import Dev, first, until


def approval_requests_of(dev: Dev, run_id: str) -> list[ApprovalRequested]:
    """approval_requests_of reads approval-requests from the start: every
    request of run_id, until 3 s pass without a message after the first."""
    with ApprovalRequests(dev.kafka, idle=30) as asks:
        got = [first(asks, lambda a: a.run_id == run_id, f"approval request of run {run_id}")]
        asks.idle = 3
        got += [a for a in asks if a.run_id == run_id]
    return got


def test_a_parked_call_is_announced_once_and_a_kafka_decision_closes_it_and_the_run_finishes(
    dev: Dev, client: Client, run_id: str,
):
    client.runs.create(agent="refunds", input="Refund order A-1001", run_id=run_id, metadata={"order": "A-1001"})
    pending = until("the refund parks", lambda: client.pending(run_id=run_id))[0]

    (ask,) = approval_requests_of(dev, run_id)

    assert (ask.call_id, ask.tool, ask.agent, ask.step) == (pending.call_id, "issue_refund", "refunds", pending.step)
    assert ask.arguments == {"order_id": "A-1001", "amount": 250}
    assert (ask.args_hash, ask.ticket, ask.resume_mode) == (pending.args_hash, pending.ticket, "replay")
    assert (ask.deadline, ask.parked_at) == (pending.deadline, pending.parked_at)
    assert ask.reason and ask.metadata == {"order": "A-1001"}

    with DecisionProducer(dev.kafka, producer="erp", key=dev.signing_key) as decisions:
        sent = decisions.decide(ask.run_id, ask.call_id, "resume", args_hash=ask.args_hash, decided_by="erp-rules")
    with DecisionOutcomes(dev.kafka, idle=30) as outcomes:
        closed = first(outcomes, lambda o: o.decision_id == sent.decision_id, f"outcome of {sent.decision_id}")

    assert (closed.outcome, closed.call_id) == ("applied", ask.call_id)
    run = client.runs.wait(run_id, timeout=30)
    assert run.termination.reason == "natural_end"
    assert run.tool_calls[0].decision.signed_by == "erp"
    assert len(approval_requests_of(dev, run_id)) == 1
