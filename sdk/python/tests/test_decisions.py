"""A parked call: listed as pending, decided, and the run goes on."""

from stepwise_client import Client

from conftest import until


def test_a_parked_call_is_listed_pending_and_a_resume_finishes_the_run(client: Client, run_id: str):
    client.runs.create(agent="refunds", input="Refund order A-1001", run_id=run_id)

    call = until("the refund parks", lambda: client.pending(run_id=run_id))[0]

    assert (call.run_id, call.agent, call.tool) == (run_id, "refunds", "issue_refund")
    assert call.arguments == {"order_id": "A-1001", "amount": 250}
    assert call.resume_mode == "replay"
    assert len(call.args_hash) == 64 and call.deadline and call.ticket
    # the call is listed once parked; the run waits once its step has ended
    until("the run waits", lambda: client.runs.get(run_id).status == "waiting")

    accepted = client.decide(run_id, call.call_id, "resume", args_hash=call.args_hash,
                             decided_by="alice", reason="fine", decision_id=f"{run_id}-d1")

    assert accepted.model_dump() == {"decision_id": f"{run_id}-d1", "run_id": run_id, "call_id": call.call_id, "status": "accepted"}
    run = client.runs.wait(run_id, timeout=30)
    assert run.termination.reason == "natural_end"
    (refund,) = run.tool_calls
    assert refund.status == "succeeded"
    assert refund.decision.action == "resume"
    assert refund.decision.decision_id == f"{run_id}-d1"
    assert refund.parking.args_hash == call.args_hash
    assert client.pending(run_id=run_id) == []


def test_a_parked_call_cancelled_by_a_decision_is_cancelled(client: Client, run_id: str):
    client.runs.create(agent="refunds", input="Refund order A-1001", run_id=run_id)
    call = until("the refund parks", lambda: client.pending(run_id=run_id))[0]

    client.decide(run_id, call.call_id, "cancel", decided_by="bob", reason="too much")

    run = client.runs.wait(run_id, timeout=30)
    assert run.tool_calls[0].status == "cancelled"
    assert run.tool_calls[0].decision.decided_by == "pysdk (bob)"  # the key's name, then the note
